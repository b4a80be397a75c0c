#!/usr/bin/python3
"""Where the helix rule finds a planted helix, and where it finds none: cos and sin at a period T plus a ramp along
position, on random orthonormal directions of a 128 x 32 table with noise, for periods 8, 16, 32, 64, ramps of
0.25 to 9 times the variance of one circle coordinate, two seeds and two noise levels; and, as controls, the same
circle with a third direction that is not slow (a wave of period 5, or white noise) of a coordinate's
variance; and slow curves that are not straight, as trained tables' ramps are not (2 and 9 times). Each table
goes through `poslab analyze --json`. Prints one line per table (the circles found, the helix
and whether it was turned apart) and the count found per ramp and per control.

Usage: /usr/bin/python3 scripts/helix_planted.py [POSLAB]   (needs python3-numpy; POSLAB defaults to build/poslab)

A ramp of about a coordinate's variance mixes with the circle's principal components; the rule then turns the three
apart (docs/analysis.md, "helix").
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

poslab = sys.argv[1] if len(sys.argv) > 1 else "build/poslab"
P, d = 128, 32
PERIODS, SEEDS, NOISES = (8, 16, 32, 64), (0, 1), (0.01, 0.1)
pos = np.arange(P)


def analyse(third, period, seed, noise, tmp):
    """The helix of a circle at `period` with `third` (a curve along position) on a third direction, or None."""
    rng = np.random.default_rng(1000 * seed + period + int(1000 * noise))
    Q, _ = np.linalg.qr(rng.standard_normal((d, 3)))
    coords = np.stack([np.cos(2 * np.pi * pos / period + seed), np.sin(2 * np.pi * pos / period + seed), third], 1)
    table = (coords @ Q.T + noise * rng.standard_normal((P, d))).astype("<f4")
    npy, js = os.path.join(tmp, "t.npy"), os.path.join(tmp, "t.json")
    np.save(npy, table)
    subprocess.run([poslab, "analyze", npy, "--json", js, "--force"], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    a = json.load(open(js))
    circles = [(c["components"], round(c["period"], 1)) for c in a.get("circles") or []]
    return circles, a.get("helix")


def words(circles, helix):
    if not helix:
        return f"circles {circles}  helix none"
    how = "turned apart within PC%d,%d,%d" % tuple(helix["components"]) if helix["rotated"] else \
        "slow PC%d" % helix["slow_component"]
    return f"circles {circles}  helix period {helix['circle']['period']:.1f}, {how}"


def scaled(curve, ratio):
    """curve centred and scaled to `ratio` times a circle coordinate's variance (0.5)."""
    curve = curve - curve.mean()
    return curve / curve.std() * np.sqrt(0.5 * ratio)


def peak_share(curve):
    """The share of the curve's non-DC power at its strongest bin."""
    power = np.abs(np.fft.rfft(curve - curve.mean()))[1:] ** 2
    return power.max() / power.sum()


# Slow but not straight, as trained tables' ramps are not: their power leaks from the peak (below half of it for
# these), their variance stays mostly in half a cycle and one cycle (74-94 %).
u = 2 * pos / (P - 1.0) - 1  # -1 … 1
BENT = {"a ramp bent at one end, log(p + 1)": np.log(pos + 1.0), "a ramp steep at both ends, u + u^5/2": u + u**5 / 2,
        "a ramp flat in the middle, u^3": u**3}

found, turned, controls, bent, named = {}, {}, {}, {}, {}
with tempfile.TemporaryDirectory() as tmp:
    for ratio in (0.25, 0.5, 0.8, 1, 1.25, 2, 4, 9):
        for noise in NOISES:
            for period in PERIODS:
                for seed in SEEDS:
                    circles, helix = analyse(scaled(pos / (P - 1.0), ratio), period, seed, noise, tmp)
                    ok = helix is not None and abs(helix["circle"]["period"] / period - 1) < 0.05
                    found[ratio] = found.get(ratio, 0) + ok
                    turned[ratio] = turned.get(ratio, 0) + (ok and helix["rotated"])
                    print(f"ramp {ratio:>4} x  noise {noise}  period {period:>2}  seed {seed}: {words(circles, helix)}")
    for name, curve in BENT.items():
        for ratio in (2, 9):
            for noise in NOISES:
                for period in PERIODS:
                    for seed in SEEDS:
                        circles, helix = analyse(scaled(curve, ratio), period, seed, noise, tmp)
                        ok = helix is not None and abs(helix["circle"]["period"] / period - 1) < 0.05
                        bent[name] = bent.get(name, 0) + ok
                        named[name] = named.get(name, 0) + (helix is not None)
                        print(f"{name} {ratio} x  noise {noise}  period {period:>2}  seed {seed}: "
                              f"{words(circles, helix)}")
    for name in ("a wave of period 5", "white noise"):
        for noise in NOISES:
            for period in PERIODS:
                for seed in SEEDS:
                    rng = np.random.default_rng(7 + seed)
                    third = np.cos(2 * np.pi * pos / 5) if name.startswith("a wave") else rng.standard_normal(P)
                    circles, helix = analyse(scaled(third, 1), period, seed, noise, tmp)
                    controls[name] = controls.get(name, 0) + (helix is not None)
                    print(f"{name}  noise {noise}  period {period:>2}  seed {seed}: {words(circles, helix)}")
n = len(PERIODS) * len(SEEDS) * len(NOISES)
for ratio in found:
    print(f"ramp {ratio} x a coordinate's variance: helix found in {found[ratio]} of {n} "
          f"({turned[ratio]} turned apart)")
for name, k in bent.items():
    print(f"{name} (2 and 9 x; {100 * peak_share(BENT[name]):.0f} % of its power at its peak): helix found in {k} "
          f"of {2 * n} at its period (within 5 %), named in {named[name]}")
for name, k in controls.items():
    print(f"circle with {name} (no helix planted): a helix named in {k} of {n}")
