#!/usr/bin/python3
"""Where the helix rule finds a planted helix: cos and sin at a period T plus a ramp along position, on random
orthonormal directions of a 128 x 32 table with a little noise, for periods 8, 16, 32, 64, ramps of 0.25, 1, 4 and
9 times the variance of one circle coordinate, and two seeds; each table through `poslab analyze --json`. Prints
one line per table (the circle found, the helix's slow component) and the count found per ramp.

Usage: /usr/bin/python3 scripts/helix_planted.py [POSLAB]   (needs python3-numpy; POSLAB defaults to build/poslab)

The rule reads principal components (docs/analysis.md, "helix"): a ramp of about a coordinate's variance mixes with
the circle's components, and the helix is missed there.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

poslab = sys.argv[1] if len(sys.argv) > 1 else "build/poslab"
P, d = 128, 32
found = {}
with tempfile.TemporaryDirectory() as tmp:
    for ratio in (0.25, 1, 4, 9):
        for period in (8, 16, 32, 64):
            for seed in (0, 1):
                rng = np.random.default_rng(1000 * seed + period + int(10 * ratio))
                Q, _ = np.linalg.qr(rng.standard_normal((d, 3)))
                pos = np.arange(P)
                ramp = pos / (P - 1) - 0.5
                ramp = ramp / ramp.std() * np.sqrt(0.5 * ratio)  # a circle coordinate's variance is 0.5
                coords = np.stack([np.cos(2 * np.pi * pos / period + seed), np.sin(2 * np.pi * pos / period + seed),
                                   ramp], 1)
                table = (coords @ Q.T + 0.01 * rng.standard_normal((P, d))).astype("<f4")
                npy, js = os.path.join(tmp, "t.npy"), os.path.join(tmp, "t.json")
                np.save(npy, table)
                subprocess.run([poslab, "analyze", npy, "--json", js, "--force"], check=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                a = json.load(open(js))
                circles = [(c["components"], round(c["period"], 1)) for c in a.get("circles") or []]
                helix = a.get("helix")
                ok = helix is not None and abs(helix["circle"]["period"] / period - 1) < 0.05
                found[ratio] = found.get(ratio, 0) + ok
                print(f"ramp {ratio:>4} x  period {period:>2}  seed {seed}: circles {circles}  helix "
                      f"{'slow PC%d' % helix['slow_component'] if helix else 'none'}")
for ratio, n in found.items():
    print(f"ramp {ratio} x a coordinate's variance: helix found in {n} of 8")
