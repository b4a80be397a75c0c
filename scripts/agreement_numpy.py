#!/usr/bin/python3
"""Writes tests/fixtures/agreement_numpy.json: the agreement up to rotation of two real default-run tables (seeds 1
and 2 at step 1500) and of one run's tables at steps 800 and 1500, computed by NumPy, for the C++ cross-check in
tests/analysis/test_agreement.cpp.

Usage: /usr/bin/python3 scripts/agreement_numpy.py   (needs python3-numpy)

Definitions (docs/analysis.md, "Seed agreement"): A_c, B_c column-centred; linear CKA = |B_c^T A_c|_F^2 /
(|A_c^T A_c|_F |B_c^T B_c|_F); Procrustes residual = sqrt(1 - (sum of singular values of Ah^T Bh)^2) with
Ah = A_c / |A_c|_F (the least |s Ah R - Bh|_F over orthogonal R and scale s); similarity correlation = Pearson r of
the off-diagonal cosines of the rows as they are; principal angles between the top-k left singular vectors of A_c
and B_c. Here the Procrustes residual is computed the long way: R from the SVD, s from the trace, then the norm.
"""
import json
import os

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FIX = os.path.join(ROOT, "tests", "fixtures")
K = 5


def agreement(a, b):
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    ac, bc = a - a.mean(0), b - b.mean(0)
    cka = np.linalg.norm(bc.T @ ac) ** 2 / (np.linalg.norm(ac.T @ ac) * np.linalg.norm(bc.T @ bc))
    ah, bh = ac / np.linalg.norm(ac), bc / np.linalg.norm(bc)
    u, s, vt = np.linalg.svd(ah.T @ bh)
    r = u @ vt                      # argmax over orthogonal R of tr(R^T Ah^T Bh)
    scale = np.trace(r.T @ ah.T @ bh)
    residual = np.linalg.norm(scale * ah @ r - bh)

    def cos(m):
        n = m / np.linalg.norm(m, axis=1, keepdims=True)
        return n @ n.T

    off = ~np.eye(len(a), dtype=bool)
    sim = np.corrcoef(cos(a)[off], cos(b)[off])[0, 1]
    ua = np.linalg.svd(ac, full_matrices=False)[0][:, :K]
    ub = np.linalg.svd(bc, full_matrices=False)[0][:, :K]
    c = np.clip(np.linalg.svd(ua.T @ ub, compute_uv=False), 0, 1)
    angles = np.degrees(np.arccos(c))
    return {"cka": cka, "procrustes_residual": residual, "similarity_correlation": sim, "k": K,
            "principal_angles_degrees": sorted(angles.tolist())}


def main():
    runs = os.path.join(FIX, "runs")
    s1 = np.load(os.path.join(runs, "default_float32_seed1", "wpe_step001500.npy"))
    s1_800 = np.load(os.path.join(runs, "default_float32_seed1", "wpe_step000800.npy"))
    s2 = np.load(os.path.join(runs, "default_float32_seed2", "wpe_step001500.npy"))
    out = {
        "seed1_vs_seed2_step1500": agreement(s1, s2),
        "seed1_step800_vs_step1500": agreement(s1_800, s1),
    }
    path = os.path.join(FIX, "agreement_numpy.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=2)
        f.write("\n")
    print("wrote", path)
    for name, g in out.items():
        print(f"{name}: CKA {g['cka']:.4f} | Procrustes {g['procrustes_residual']:.4f} | "
              f"similarity r {g['similarity_correlation']:.4f} | angles {np.round(g['principal_angles_degrees'], 1)}")


if __name__ == "__main__":
    main()
