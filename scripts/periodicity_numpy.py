#!/usr/bin/python3
"""Writes tests/fixtures/periodicity_numpy.json: each component's period, power share, spectral entropy and slow
share, the circles and the helix, the periodogram, the sinusoid R² of the K lowest and K strongest frequencies,
translation invariance and monotonicity of five tables (two planted helices in noise, the second's ramp of a circle
coordinate's variance, GPT-2's rows 1-63, the tables of a real default run and of a 128-row run that grew a circle,
at step 1500), computed by NumPy, for the C++ cross-check in tests/analysis/test_frequencies.cpp.

Usage: /usr/bin/python3 scripts/periodicity_numpy.py   (needs python3-numpy)

Definitions: docs/analysis.md, "What each metric means". Computed here another way than the C++ does:
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


def slow_share(x):
    """The variance about the mean held by half a cycle and one cycle, cos(πk(p + ½)/P), k = 1, 2: a least-squares
    fit with the constant (the C++ projects on the two cosines, orthogonal on the grid)."""
    P = len(x)
    if P < 3:
        return 0.0
    t = (np.arange(P) + 0.5) / P
    B = np.stack([np.ones(P), np.cos(np.pi * t), np.cos(2 * np.pi * t)], axis=1)
    coef, *_ = np.linalg.lstsq(B, x, rcond=None)
    variance = float(np.sum((x - x.mean()) ** 2))
    return float(np.sum((B[:, 1:] @ coef[1:]) ** 2)) / variance if variance > 0 else 0.0


def curve_period(x):
    P = len(x)
    power = np.abs(np.fft.rfft(x)) ** 2
    ac = power[1:]
    total = ac.sum()
    if total <= 1e-20 * P * np.dot(x, x):
        return {"frequency": 0.0, "period": 0.0, "power_share": 0.0, "spectral_entropy": 0.0, "slow_share": 0.0}
    peak = int(np.argmax(ac)) + 1
    f = dense_argmax(lambda f: sinusoid_energy(x, f), max(0.5, peak - 0.5), min(P / 2, peak + 0.5))
    p = ac / total
    p = p[p > 0]
    entropy = float(-(p * np.log(p)).sum() / np.log(len(ac))) if len(ac) > 1 else 0.0
    return {"frequency": f, "period": P / f, "power_share": float(ac[peak - 1] / total), "spectral_entropy": entropy,
            "slow_share": slow_share(x)}


def circle_of(x, y, px, py):
    """Two curves (with their curve_period) as a circle: its period, frequency, concentration and circularity, or
    None."""
    fa, fb = px["frequency"], py["frequency"]
    if not (fa > 0 and fb > 0) or abs(fa - fb) > 1.0:
        return None
    xn, yn = x / np.linalg.norm(x), y / np.linalg.norm(y)
    z = xn + 1j * yn
    P = len(z)
    # the frequency both coordinates fit best, each by a constant, a cosine and a sine
    f = dense_argmax(lambda f: sinusoid_energy(xn, f) + sinusoid_energy(yn, f), max(0.25, min(fa, fb) - 0.5),
                     min(P / 2, max(fa, fb) + 0.5))
    plus, minus = abs(dtft(z, f)) ** 2, abs(dtft(z, -f)) ** 2
    conc, circ = (plus + minus) / (2 * P), abs(plus - minus) / (plus + minus)
    if f >= 0.9 and conc >= 0.5 and circ >= 0.8:
        return {"period": P / f, "frequency": f, "concentration": conc, "circularity": circ}
    return None


def circles(curves, explained, periods):
    found = []
    for a, b in itertools.combinations(range(len(curves)), 2):
        c = circle_of(curves[a], curves[b], periods[a], periods[b])
        if c is not None:
            found.append(dict(c, components=[a + 1, b + 1], explained=explained[a] + explained[b]))
    # a pair with a ramp (a slow curve beside a circle of 1.75 turns or more) only where no other pair claims its parts
    with_ramp = lambda c: c["frequency"] >= 1.75 and any(periods[k - 1]["slow_share"] >= 0.5 for k in c["components"])
    found.sort(key=lambda c: (with_ramp(c), -c["explained"]))
    used, out = set(), []
    for c in found:
        if not used & set(c["components"]):
            used |= set(c["components"])
            out.append(c)
    out.sort(key=lambda c: -c["explained"])
    return out


def is_slow(p, circle_frequency):
    return 0 < p["frequency"] <= circle_frequency and p["slow_share"] >= 0.5


def turned_apart(c, k, curves, explained):
    """The circle's components and component k (0-based) turned apart: the slow axis u minimizes u'Du / u'Gu, D the
    Gram matrix of the curves' differences over a quarter of the circle's period, G theirs (here the least
    eigenvalue of G^-1 D by np.linalg.eig); the circle's axes are the principal axes of u's complement."""
    a, b = c["components"][0] - 1, c["components"][1] - 1
    Y = np.stack([curves[a], curves[b], curves[k]], axis=1)  # (P, 3)
    lag = int(min(max(round(c["period"] / 4), 1), len(Y) - 1))
    dY = Y[lag:] - Y[:-lag]
    G, D = Y.T @ Y, dY.T @ dY
    values, vectors = np.linalg.eig(np.linalg.solve(G, D))
    u = np.real(vectors[:, int(np.argmin(np.real(values)))])
    u /= np.linalg.norm(u)
    basis = np.linalg.svd(u[None, :])[2][1:]  # (2, 3): u's orthogonal complement
    w, v = np.linalg.eigh(basis @ G @ basis.T)
    axes = [basis.T @ v[:, 1], basis.T @ v[:, 0], u]  # the plane's larger axis first, then the slow axis
    x, y = Y @ axes[0], Y @ axes[1]
    circle = circle_of(x, y, curve_period(x), curve_period(y))
    slow = curve_period(Y @ axes[2])
    if circle is None or not is_slow(slow, circle["frequency"]):
        return None
    per_unit = (explained[a] + explained[b] + explained[k]) / np.trace(G)
    shares = [per_unit * float(np.sum((Y @ x) ** 2)) for x in axes]
    circle["explained"] = shares[0] + shares[1]
    return {"slow_component": k + 1, "slow_period": slow["period"], "explained": sum(shares), "rotated": True,
            "components": [a + 1, b + 1, k + 1], "circle": circle}


def helix(found, curves, explained, periods):
    if not found:
        return None
    c = found[0]
    used = {k for o in found for k in o["components"]}
    best = None
    for k, p in enumerate(periods):
        if k + 1 in used or not is_slow(p, c["frequency"]):
            continue
        if best is None or explained[k] > explained[best]:
            best = k
    coordinate = c["explained"] / 2  # components mix where their variances nearly match: within 3x a coordinate's
    if best is not None:
        # a slow component at the circle's own frequency, of about a coordinate's variance: turned apart, if that holds
        if abs(periods[best]["frequency"] - c["frequency"]) <= 1.0 and coordinate / 3 <= explained[best] <= 3 * coordinate:
            h = turned_apart(c, best, curves, explained)
            if h is not None:
                return h
        return {"slow_component": best + 1, "slow_period": periods[best]["period"],
                "explained": c["explained"] + explained[best], "rotated": False}
    for k in range(len(periods)):
        if k + 1 not in used and coordinate / 3 <= explained[k] <= 3 * coordinate:
            h = turned_apart(c, k, curves, explained)
            if h is not None:
                return h
    return None


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
        "helix": helix(found, [curves[k] for k in keep], list(explained[keep]), [periods[k] for k in keep]),
        "periodogram": [float(v) for v in periodogram],
        "sinusoid_r2": fit_r2(W, list(range(1, k + 1))),
        "strongest_frequencies": strongest,
        "sinusoid_r2_strongest": fit_r2(W, strongest),
        "translation_invariance": translation_invariance(C),
        "monotonicity": monotonicity(C),
    }


def planted_helix(P=96, d=24, seed=3, ramp=None):
    """A helix (3.5 turns over the table, on two random orthonormal directions, with a slow ramp on a third) in noise:
    the ramp from -1.25 to 1.25, or of variance `ramp` (a circle coordinate's is 0.5)."""
    rng = np.random.default_rng(seed)
    Q, _ = np.linalg.qr(rng.standard_normal((d, 3)))
    p = np.arange(P)
    angle = 2 * np.pi * 3.5 * p / P
    line = 2.5 * (p / (P - 1) - 0.5)
    if ramp is not None:
        line = line / line.std() * np.sqrt(ramp)
    coords = np.stack([np.cos(angle), np.sin(angle), line], axis=1)
    return (coords @ Q.T + 0.05 * rng.standard_normal((P, d))).astype(np.float32)


def main():
    helix_path = os.path.join(FIX, "planted_helix_96x24.npy")
    np.save(helix_path, planted_helix())
    turned_path = os.path.join(FIX, "planted_helix_even_96x24.npy")
    np.save(turned_path, planted_helix(ramp=0.5, seed=5))
    tables = {
        "planted_helix_96x24.npy": np.load(helix_path),
        "planted_helix_even_96x24.npy": np.load(turned_path),
        "gpt2_wpe_rows0-63.npy[1:64]": np.load(os.path.join(FIX, "gpt2_wpe_rows0-63.npy"))[1:64],
        "runs/default_float32_seed1/wpe_step001500.npy": np.load(os.path.join(FIX, "runs/default_float32_seed1/wpe_step001500.npy")),
        "runs/circles_rows128_seed1/wpe_step001500.npy": np.load(os.path.join(FIX, "runs/circles_rows128_seed1/wpe_step001500.npy")),
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
