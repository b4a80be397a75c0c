#!/usr/bin/python3
"""Where the circle rule finds two planted circles: cos and sin at a period T1 and, scaled by a, at T2, on four random
orthonormal directions of a 128 x 32 table with noise, for the period pairs (16, 40), (8, 20) and (32, 12), two
seeds, noise of sd 0.01 and 0.1 per entry, and the second circle's variance 0.5 to 2 times the first's. Each table
goes through `poslab analyze --json`. Prints the tables where fewer than two circles were found and the count of
tables with both, per variance ratio.

Usage: /usr/bin/python3 scripts/circles_planted.py [POSLAB]   (needs python3-numpy; POSLAB defaults to build/poslab)

Two circles of nearly equal variance come out of the PCA mixed, each component holding both periods, and the rule,
which pairs components, then finds one of them or none (docs/analysis.md, "circles").
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

poslab = sys.argv[1] if len(sys.argv) > 1 else "build/poslab"
P, d = 128, 32
PAIRS, SEEDS, NOISES = ((16, 40), (8, 20), (32, 12)), (0, 1), (0.01, 0.1)
pos = np.arange(P)
both = {}
with tempfile.TemporaryDirectory() as tmp:
    npy, js = os.path.join(tmp, "t.npy"), os.path.join(tmp, "t.json")
    for ratio in (0.5, 0.8, 0.9, 0.95, 1, 1.05, 1.1, 1.25, 2):
        for t1, t2 in PAIRS:
            for seed in SEEDS:
                for noise in NOISES:
                    rng = np.random.default_rng(100 * seed + t1 + int(100 * ratio) + int(1000 * noise))
                    Q, _ = np.linalg.qr(rng.standard_normal((d, 4)))
                    a = np.sqrt(ratio)
                    coords = np.stack([np.cos(2 * np.pi * pos / t1 + seed), np.sin(2 * np.pi * pos / t1 + seed),
                                       a * np.cos(2 * np.pi * pos / t2), a * np.sin(2 * np.pi * pos / t2)], 1)
                    np.save(npy, (coords @ Q.T + noise * rng.standard_normal((P, d))).astype("<f4"))
                    subprocess.run([poslab, "analyze", npy, "--json", js, "--force"], check=True,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                    found = sorted(round(c["period"], 1) for c in json.load(open(js))["circles"])
                    both[ratio] = both.get(ratio, 0) + (len(found) >= 2)
                    if len(found) < 2:
                        print(f"variance {ratio:>4} x  periods {t1:>2} and {t2:>2}  seed {seed}  noise {noise}: "
                              f"circles found at {found}")
n = len(PAIRS) * len(SEEDS) * len(NOISES)
for ratio, k in both.items():
    print(f"second circle {ratio} x the first's variance: both found in {k} of {n}")
