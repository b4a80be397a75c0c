#!/usr/bin/python3
"""Writes tests/fixtures/periodicity_numpy.json: each component's period, power share and spectral entropy, the
circles and the helix, the periodogram, the sinusoid R² of the K lowest and K strongest frequencies, translation
invariance and monotonicity of three tables (a planted helix in noise, GPT-2's rows 1-63, a real default run's table
at step 1500), computed by NumPy, for the C++ cross-check in tests/analysis/test_periodicity_numpy.cpp.

Usage: /usr/bin/python3 scripts/periodicity_numpy.py   (needs python3-numpy)

Definitions (docs/analysis.md, "Periods, circles and the helix"). Computed here another way than the C++ does:
peaks between bins by a dense grid (steps of 1e-4 bin) of np.linalg.lstsq fits instead of golden-section search
on the closed form; the
spectrum by np.fft.rfft instead of a direct DFT; monotonicity by counting every triple instead of merge sort; the
diagonal means of translation invariance by np.diagonal.
"""
import itertools
import json
import os

import numpy as np

from noise_floor_numpy import noise_floor

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FIX = os.path.join(ROOT, "tests", "fixtures")
K = 8
MAX_COMPONENTS = 64
TOP_PCS = 4


def dtft(z, f):
    p = np.arange(len(z))
    return np.sum(z * np.exp(-2j * np.pi * f * p / len(z)))


def sinusoid_energy(x, f):
    """Energy of x's least-squares fit by a + b cos + c sin at f cycles per table (np.linalg.lstsq), less that of
    its mean a."""
    p = np.arange(len(x))
    B = np.stack([np.ones(len(x)), np.cos(2 * np.pi * f * p / len(x)), np.sin(2 * np.pi * f * p / len(x))], axis=1)
    coef, *_ = np.linalg.lstsq(B, x, rcond=None)
    return float(np.sum((B @ coef) ** 2) - len(x) * np.mean(x) ** 2)


def dense_argmax(g, lo, hi):
    grid = np.arange(lo, hi + 1e-12, 1e-4)
    values = np.array([g(f) for f in grid])
    return float(grid[int(np.argmax(values))])


def curve_period(x):
    P = len(x)
    power = np.abs(np.fft.rfft(x)) ** 2
    ac = power[1:]
    total = ac.sum()
    if total <= 1e-20 * P * np.dot(x, x):
        return {"frequency": 0.0, "period": 0.0, "power_share": 0.0, "spectral_entropy": 0.0}
    peak = int(np.argmax(ac)) + 1
    f = dense_argmax(lambda f: sinusoid_energy(x, f), max(0.5, peak - 0.5), min(P / 2, peak + 0.5))
    p = ac / total
    p = p[p > 0]
    entropy = float(-(p * np.log(p)).sum() / np.log(len(ac))) if len(ac) > 1 else 0.0
    return {"frequency": f, "period": P / f, "power_share": float(ac[peak - 1] / total), "spectral_entropy": entropy}


def circles(curves, explained, periods):
    found = []
    for a, b in itertools.combinations(range(len(curves)), 2):
        fa, fb = periods[a]["frequency"], periods[b]["frequency"]
        if abs(fa - fb) > 1.0:
            continue
        x, y = curves[a], curves[b]
        z = x / np.linalg.norm(x) + 1j * y / np.linalg.norm(y)
        P = len(z)
        f = dense_argmax(lambda f: abs(dtft(z, f)) ** 2 + abs(dtft(z, -f)) ** 2, max(0.25, min(fa, fb) - 0.5),
                         min(P / 2, max(fa, fb) + 0.5))
        plus, minus = abs(dtft(z, f)) ** 2, abs(dtft(z, -f)) ** 2
        conc = (plus + minus) / (2 * P)
        circ = abs(plus - minus) / (plus + minus)
        if f >= 0.9 and conc >= 0.5 and circ >= 0.8:
            found.append({"components": [a + 1, b + 1], "period": P / f, "explained": explained[a] + explained[b],
                          "concentration": conc, "circularity": circ, "frequency": f})
    found.sort(key=lambda c: -c["explained"])
    used, out = set(), []
    for c in found:
        if not used & set(c["components"]):
            used |= set(c["components"])
            out.append(c)
    return out


def helix(found, explained, periods):
    if not found:
        return None
    c = found[0]
    used = {k for o in found for k in o["components"]}
    best = None
    for k, p in enumerate(periods):
        if k + 1 in used or p["frequency"] >= 1.5 or p["frequency"] > c["frequency"] or p["power_share"] < 0.5:
            continue
        if best is None or explained[k] > explained[best]:
            best = k
    if best is None:
        return None
    return {"slow_component": best + 1, "slow_period": periods[best]["period"], "explained": c["explained"] + explained[best]}


def fit_r2(W, freqs):
    P = W.shape[0]
    p = np.arange(P)[:, None]
    f = np.array(freqs, dtype=np.float64)[None, :]
    B = np.hstack([np.ones((P, 1)), np.sin(2 * np.pi * p * f / P), np.cos(2 * np.pi * p * f / P)])
    coef, *_ = np.linalg.lstsq(B, W, rcond=None)
    return float(1 - ((W - B @ coef) ** 2).sum() / ((W - W.mean(0)) ** 2).sum())


def translation_invariance(C):
    P = C.shape[0]
    values, fitted = [], []
    for k in range(1, P):
        d = np.diagonal(C, k)
        values.append(d)
        fitted.append(np.full_like(d, d.mean()))
    v, m = np.concatenate(values), np.concatenate(fitted)
    return float(1 - ((v - m) ** 2).sum() / ((v - v.mean()) ** 2).sum())


def monotonicity(C):
    P = C.shape[0]
    hits, n = 0.0, 0
    for i, j, k in itertools.combinations(range(P), 3):
        for near, far in ((C[i, j], C[i, k]), (C[k, j], C[k, i])):
            hits += 1.0 if near > far else 0.5 if near == far else 0.0
            n += 1
    return hits / n


def analyse(W):
    W = W.astype(np.float64)
    P = W.shape[0]
    Wc = W - W.mean(0)
    _, S, Vt = np.linalg.svd(Wc, full_matrices=False)
    explained = S ** 2 / (S ** 2).sum()
    signal_rank = noise_floor(W)["signal_rank"]
    above = min(signal_rank, MAX_COMPONENTS)
    n = min(max(TOP_PCS, above), len(S))
    curves = [Wc @ Vt[k] for k in range(n)]
    periods = [curve_period(c) for c in curves]
    keep = [k for k in range(above) if explained[k] > 1e-9]
    found = circles([curves[k] for k in keep], list(explained[keep]), [periods[k] for k in keep])
    power = (np.abs(np.fft.rfft(Wc, axis=0)) ** 2).sum(1)[1:]
    periodogram = power / power.sum()
    k = max(1, min(K, (P - 1) // 2))
    bins = np.arange(1, (P - 1) // 2 + 1)
    strongest = [int(b) for b in bins[np.argsort(-periodogram[bins - 1], kind="stable")][:k]]
    U = W / np.maximum(np.linalg.norm(W, axis=1, keepdims=True), 1e-300)
    C = U @ U.T
    return {
        "signal_rank": int(signal_rank),
        "components": [dict(component=i + 1, explained=float(explained[i]), **periods[i]) for i in range(n)],
        "circles": found,
        "helix": helix(found, list(explained[keep]), [periods[k] for k in keep]),
        "periodogram": [float(v) for v in periodogram],
        "sinusoid_r2": fit_r2(W, list(range(1, k + 1))),
        "strongest_frequencies": strongest,
        "sinusoid_r2_strongest": fit_r2(W, strongest),
        "translation_invariance": translation_invariance(C),
        "monotonicity": monotonicity(C),
    }


def planted_helix(P=96, d=24, seed=3):
    """A helix (3.5 turns over the table, on two random orthonormal directions, with a slow ramp on a third) in noise."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, 3)))
    p = np.arange(P)
    angle = 2 * np.pi * 3.5 * p / P
    coords = np.stack([np.cos(angle), np.sin(angle), 2.5 * (p / (P - 1) - 0.5)], axis=1)
    return (coords @ Q.T + 0.05 * rng.standard_normal((P, d))).astype(np.float32)


def main():
    helix_path = os.path.join(FIX, "planted_helix_96x24.npy")
    np.save(helix_path, planted_helix())
    tables = {
        "planted_helix_96x24.npy": np.load(helix_path),
        "gpt2_wpe_rows0-63.npy[1:64]": np.load(os.path.join(FIX, "gpt2_wpe_rows0-63.npy"))[1:64],
        "runs/default_float32_seed1/wpe_step001500.npy": np.load(os.path.join(FIX, "runs/default_float32_seed1/wpe_step001500.npy")),
    }
    out = {"command": "/usr/bin/python3 scripts/periodicity_numpy.py", "numpy": np.__version__,
           "tables": {name: analyse(W) for name, W in tables.items()}}
    with open(os.path.join(FIX, "periodicity_numpy.json"), "w") as f:
        json.dump(out, f, indent=1)
    for name, r in out["tables"].items():
        print(name, "signal rank", r["signal_rank"], "circles", [(c["components"], round(c["period"], 2)) for c in r["circles"]],
              "helix", r["helix"], "TI %.3f mono %.3f" % (r["translation_invariance"], r["monotonicity"]))


if __name__ == "__main__":
    main()
