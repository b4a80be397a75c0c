#!/usr/bin/python3
"""Writes tests/fixtures/noise_floor_numpy.json (and the planted table it reads): the noise floor of two tables
computed by NumPy, for the C++ cross-check in tests/analysis/test_noise_floor.cpp.

Usage: /usr/bin/python3 scripts/noise_floor_numpy.py   (needs python3-numpy; Debian's python3-torch brings it)

The noise floor is Gavish & Donoho's optimal hard threshold for noise of unknown level (IEEE Trans. Inf. Theory
60(8), 2014): of the centred table W_c ((P - 1) x d in effect), the m = min(P - 1, d) singular values, n = max(P - 1, d),
beta = m / n; tau = omega(beta) * median(sigma) with omega = lambda*(beta) / sqrt(mu_beta), mu_beta the median of the
Marchenko-Pastur law, and tau at least 1e-6 sigma_1 (a table without noise has only float32's rounding as its bulk).
The noise level is the smaller of median(sigma) / sqrt(n mu_beta) and, where beta <= 1/4 and m >= 8, twice the bound
of the smallest singular value, 2 sigma_m / (sqrt(n) (1 - sqrt(beta))); where that bound decides,
tau = lambda*(beta) sqrt(n) times it. Here mu_beta comes from a trapezoid rule on a fine grid of the law's CDF (the C++
code uses Simpson's rule and bisection): two independent routes to the same number.
"""
import json
import os

import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FIX = os.path.join(ROOT, "tests", "fixtures")


def mp_median(beta):
    a, b = (1 - np.sqrt(beta)) ** 2, (1 + np.sqrt(beta)) ** 2
    phi = np.linspace(0.0, np.pi / 2, 2_000_001)          # t = a + (b - a) sin^2(phi)
    s, c = np.sin(phi), np.cos(phi)
    t = a + (b - a) * s * s
    with np.errstate(divide="ignore", invalid="ignore"):
        f = np.where(t > 0, (b - a) ** 2 * s * s * c * c / (np.pi * beta * t), (b - a) * c * c / (np.pi * beta))
    cdf = np.concatenate([[0.0], np.cumsum((f[1:] + f[:-1]) / 2 * np.diff(phi))])
    return float(np.interp(0.5, cdf / cdf[-1], t))


def lambda_star(beta):
    return np.sqrt(2 * (beta + 1) + 8 * beta / (beta + 1 + np.sqrt(beta * beta + 14 * beta + 1)))


def noise_floor(W):
    P, d = W.shape
    Wc = W - W.mean(axis=0)
    m, n = min(P - 1, d), max(P - 1, d)
    beta = m / n
    sigma = np.linalg.svd(Wc, compute_uv=False)[:m]
    mu = mp_median(beta)
    omega = lambda_star(beta) / np.sqrt(mu)
    med = np.median(sigma)
    from_median = med / np.sqrt(n * mu)
    smallest = 2 * sigma.min() / (np.sqrt(n) * (1 - np.sqrt(beta))) if beta <= 0.25 and m >= 8 else np.inf
    noise = min(from_median, smallest)
    tau = lambda_star(beta) * np.sqrt(n) * noise
    tau = max(tau, 1e-6 * sigma.max())  # never below a millionth of sigma_1: float32's rounding is ~1e-8
    rank = int((sigma > tau).sum())
    return {"beta": beta, "mp_median": mu, "omega": float(omega), "threshold": float(tau),
            "noise_sigma": float(noise), "smallest_decides": bool(smallest < from_median), "signal_rank": rank,
            "signal_share": float((sigma[:rank] ** 2).sum() / (sigma ** 2).sum())}


def planted(P, d, r, seed):
    """rank-r signal (singular values 3, 4, 5, ... x sqrt(n) x 0.02, orthogonal to the mean) + N(0, 0.02^2) noise"""
    rng = np.random.default_rng(seed)
    n = max(P - 1, d)
    U = rng.standard_normal((P, r)); U -= U.mean(axis=0); U, _ = np.linalg.qr(U)
    V, _ = np.linalg.qr(rng.standard_normal((d, r)))
    S = np.diag([(3 + k) * np.sqrt(n) * 0.02 for k in range(r)])
    return U @ S @ V.T + rng.normal(0, 0.02, (P, d))


def sinusoidal(P, d):
    """the fixed sinusoidal table (Vaswani et al. 2017): sin and cos of p / 10000^(2i/d) in columns 2i and 2i + 1"""
    angle = np.arange(P)[:, None] / 10000.0 ** (np.arange(0, d, 2)[None, :] / d)
    W = np.zeros((P, d))
    W[:, 0::2], W[:, 1::2] = np.sin(angle), np.cos(angle)
    return W


def main():
    table = planted(96, 40, 3, 7)
    np.save(os.path.join(FIX, "planted_rank3_96x40.npy"), table)
    long = sinusoidal(200, 16) + np.random.default_rng(11).normal(0, 0.02, (200, 16))
    np.save(os.path.join(FIX, "sinusoidal_noisy_200x16.npy"), long)
    gpt2 = np.load(os.path.join(FIX, "gpt2_wpe_rows0-63.npy")).astype(np.float64)[1:64]
    out = {
        "command": "/usr/bin/python3 scripts/noise_floor_numpy.py",
        "numpy": np.__version__,
        "tables": {
            "planted_rank3_96x40.npy": noise_floor(table),
            "gpt2_wpe_rows0-63.npy[1:64]": noise_floor(gpt2),
            "sinusoidal_noisy_200x16.npy": noise_floor(long),
        },
    }
    with open(os.path.join(FIX, "noise_floor_numpy.json"), "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
