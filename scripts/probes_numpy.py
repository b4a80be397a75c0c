#!/usr/bin/python3
"""Writes tests/fixtures/probes_numpy.json: Wang & Chen's two position probes on a slice of a real default-run table
(seed 1, step 1500, rows 0-39, columns 0-15), computed by NumPy, for the C++ cross-check in
tests/analysis/test_probes.cpp. The fixture holds the shuffled order of the rows, so both sides use the same folds.

Usage: /usr/bin/python3 scripts/probes_numpy.py   (needs python3-numpy)

Absolute probe: 5-fold CV over the rows in the shuffled order (fold f = the f-th fifth); least squares on centred
rows and indices, minimum-norm (np.linalg.lstsq, as scikit-learn's LinearRegression); MAE of the rounded
predictions. Relative probe: every ordered pair (i, j), i != j, in row-major order, pair k in fold k mod 5;
logistic regression on [w_i; w_j] -> (i < j) with an L2 penalty of 1/2 |w|^2 (C = 1) and an unpenalised intercept,
fitted by Newton steps on the same objective, as the C++ does; held-out accuracy.
"""
import json
import os

import numpy as np

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
FIX = os.path.join(ROOT, "tests", "fixtures")
FOLDS = 5


def absolute(w, order):
    p = len(w)
    err = 0.0
    for f in range(FOLDS):
        lo, hi = f * p // FOLDS, (f + 1) * p // FOLDS
        test = order[lo:hi]
        train = np.concatenate([order[:lo], order[hi:]])
        x, y = w[train], train.astype(np.float64)
        mx, my = x.mean(0), y.mean()
        beta = np.linalg.lstsq(x - mx, y - my, rcond=None)[0]
        pred = (w[test] - mx) @ beta + my
        err += np.abs(np.round(pred) - test).sum()
    return err / p


def logistic(x, t):
    xb = np.hstack([x, np.ones((len(x), 1))])
    reg = np.ones(xb.shape[1])
    reg[-1] = 0
    w = np.zeros(xb.shape[1])
    for _ in range(50):
        prob = 1 / (1 + np.exp(-(xb @ w)))
        grad = reg * w + xb.T @ (prob - t)
        h = np.diag(reg) + (xb.T * (prob * (1 - prob))) @ xb
        step = np.linalg.solve(h, grad)
        w -= step
        if np.abs(step).max() < 1e-10:
            break
    return w


def relative(w):
    p = len(w)
    pairs = np.array([(i, j) for i in range(p) for j in range(p) if i != j])
    x = np.hstack([w[pairs[:, 0]], w[pairs[:, 1]]])
    t = (pairs[:, 0] < pairs[:, 1]).astype(np.float64)
    fold = np.arange(len(pairs)) % FOLDS
    correct = 0
    for f in range(FOLDS):
        coef = logistic(x[fold != f], t[fold != f])
        score = x[fold == f] @ coef[:-1] + coef[-1]
        correct += ((score > 0) == t[fold == f]).sum()
    return correct / len(pairs), len(pairs)


def main():
    table = np.load(os.path.join(FIX, "runs", "default_float32_seed1", "wpe_step001500.npy")).astype(np.float64)
    w = table[:40, :16]
    order = np.random.default_rng(7).permutation(len(w))
    acc, pairs = relative(w)
    out = {"rows": [0, 40], "columns": [0, 16], "order": order.tolist(), "absolute_mae": absolute(w, order),
           "relative_accuracy": acc, "pairs": pairs}
    path = os.path.join(FIX, "probes_numpy.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1)
        f.write("\n")
    print("wrote", path, {k: out[k] for k in ("absolute_mae", "relative_accuracy", "pairs")})


if __name__ == "__main__":
    main()
