#!/usr/bin/python3
"""poslab against the same model in PyTorch's Python API, measured side by side in one run.

For each (config, dtype): `poslab bench --export DIR` trains a few steps and writes its initial weights and batches;
scripts/torch_reference.py trains from the same weights on the same batches. Prints tokens/s of both, the ratio
poslab / PyTorch, and whether the two agree (loss at step 0, and the loss curves). Needs Debian's python3-torch.

Usage: /usr/bin/python3 scripts/bench_vs_pytorch.py [--quick] [--rounds=N] [--only=default|char|wide|medium]
                                                   [--dtype=float32|bfloat16] [--device=cpu|cuda] [--poslab=PATH]
       (default 3 rounds; --quick: 1 round, fewer steps; --only: one of the four configs; --dtype: one of the two dtypes; --device: where both
       train (cuda: the machine's PyTorch with CUDA, as scripts/gpu_check.sh runs it); --poslab: the binary,
       default build/poslab)
"""
import json
import os
import subprocess
import sys
import tempfile

try:
    import numpy  # noqa: F401  (needed by torch_reference.py)
    import torch  # noqa: F401
except ImportError as e:
    sys.exit(f"error: {e}\nhint: apt-get install python3-torch python3-numpy, and run this with /usr/bin/python3")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
POSLAB = os.path.join(ROOT, "build", "poslab")
DEVICE = "cpu"
for a in sys.argv[1:]:
    if a.startswith("--poslab="):
        POSLAB = os.path.abspath(a.split("=", 1)[1])
    elif a.startswith("--device="):
        DEVICE = a.split("=", 1)[1]
        if DEVICE not in ("cpu", "cuda"):
            sys.exit(f"error: {a}: not a device\nhint: --device=cpu or --device=cuda")
if not os.access(POSLAB, os.X_OK):
    sys.exit(f"error: {POSLAB} is missing\nhint: bash scripts/build.sh")
quick = "--quick" in sys.argv

# (name, config, overrides, timed steps, warm-up steps)
CASES = [
    ("default", "configs/default.yaml", [], 5 if quick else 20, 3),
    # nanoGPT's baby GPT at character level (tinyshakespeare, ~65 characters), as a new user would first try it
    ("char", "configs/shakespeare_char.yaml", ["model.block_size=64", "train.batch_size=32"], 5 if quick else 20, 3),
    # a wider, longer shape: 4 layers of 256 channels, 256 positions, batch 8
    ("wide", "configs/default.yaml",
     ["model.n_layer=4", "model.n_embd=256", "model.block_size=256", "train.batch_size=8"], 3 if quick else 10, 2),
    ("medium", "configs/default.yaml",
     ["model.n_layer=6", "model.n_head=6", "model.n_embd=384", "model.block_size=256", "train.batch_size=8"],
     3 if quick else 8, 2),
]
DTYPES = ["float32", "bfloat16"]
# Agreement: same weights and batches, so step 0's loss must match to float tolerance; later steps drift apart
# only by rounding (bf16 rounds much more coarsely).
TOL0 = {"float32": 1e-4, "bfloat16": 2e-2}
TOL_CURVE = {"float32": 2e-2, "bfloat16": 1e-1}

env = dict(os.environ)
if "OPENBLAS_CORETYPE" not in env:  # what poslab picks for itself, so that both sides use the same BLAS kernels
    env["OPENBLAS_CORETYPE"] = (
        "SkylakeX" if "avx512f" in open("/proc/cpuinfo").read() else "Haswell")

ROUNDS = 1 if quick else 3
for a in sys.argv[1:]:
    if a.startswith("--rounds="):
        ROUNDS = int(a.split("=", 1)[1])
    elif a.startswith("--only="):
        names = [c[0] for c in CASES]
        if a.split("=", 1)[1] not in names:
            sys.exit(f"error: {a}: no such config\nhint: one of {', '.join(names)}")
        CASES = [c for c in CASES if c[0] == a.split("=", 1)[1]]
    elif a.startswith("--dtype="):
        if a.split("=", 1)[1] not in DTYPES:
            sys.exit(f"error: {a}: no such dtype\nhint: --dtype=float32 or --dtype=bfloat16")
        DTYPES = [a.split("=", 1)[1]]
    elif a != "--quick" and not a.startswith(("--poslab=", "--device=")):
        sys.exit(f"error: unknown argument {a}\nhint: [--quick] [--rounds=N] [--only=default|char|wide|medium] "
                 "[--dtype=float32|bfloat16] [--device=cpu|cuda] [--poslab=PATH]")


def run_pair(config, sets, steps, warmup, dtype):
    """One round: poslab bench, then the PyTorch reference on poslab's exported weights and batches."""
    with tempfile.TemporaryDirectory() as d:
        args = [POSLAB, "bench", os.path.join(ROOT, config), "--steps", str(steps), "--warmup", str(warmup),
                "--export", d, "--json", "-", "--set", "train.dtype=" + dtype, "--set", "run.report=false",
                "--set", "run.device=" + DEVICE]
        for s in sets:
            args += ["--set", s]
        ours = json.loads(subprocess.run(args, check=True, capture_output=True, text=True, env=env).stdout)
        ref = json.loads(subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "torch_reference.py"), d],
                                        check=True, capture_output=True, text=True, env=env).stdout)
    return ours, ref


# The machine is shared and its speed drifts by tens of percent between runs: each case runs ROUNDS rounds,
# poslab and PyTorch back to back in each, and the table compares the best round of each (the least disturbed
# one: "ratio"), the median of the per-round ratios ("median": each round's two runs see much the same machine)
# and their spread ("rounds").
rows, ok = [], True
for name, config, sets, steps, warmup in CASES:
    for dtype in DTYPES:
        rounds = [run_pair(config, sets, steps, warmup, dtype) for _ in range(ROUNDS)]
        ours, ref = rounds[0]
        d0 = abs(ours["losses"][0] - ref["losses"][0])
        dmax = max(abs(a - b) for a, b in zip(ours["losses"], ref["losses"]))
        agree = d0 <= TOL0[dtype] and dmax <= TOL_CURVE[dtype]
        ok = ok and agree
        best_ours = max(rounds, key=lambda r: r[0]["tokens_per_s"])[0]
        best_ref = max(r[1]["tokens_per_s"] for r in rounds)
        ratios = sorted(r[0]["tokens_per_s"] / r[1]["tokens_per_s"] for r in rounds)
        median = ratios[len(ratios) // 2] if len(ratios) % 2 else 0.5 * (ratios[len(ratios) // 2 - 1] + ratios[len(ratios) // 2])
        rows.append((name, dtype, best_ours["tokens_per_s"], best_ref, best_ours["tokens_per_s"] / best_ref,
                     f"{min(ratios):.2f}-{max(ratios):.2f}", best_ours["mfu"], best_ours["matmul_gflops"], d0, dmax,
                     "yes" if agree else "NO", median))
        for i, (o, r) in enumerate(rounds):
            print(f"{name} {dtype} round {i + 1}: poslab {o['tokens_per_s']:.0f} tok/s, PyTorch {r['tokens_per_s']:.0f} "
                  f"tok/s, loss at step 0 {o['losses'][0]:.5f} vs {r['losses'][0]:.5f}", file=sys.stderr, flush=True)

where = f"GPU {ours.get('gpu', '')}" if DEVICE == "cuda" else f"threads {ours['threads']} (batch split {ours.get('batch_split', 1)}), {ours['blas']}"
print(f"{where}; poslab on LibTorch {ours.get('libtorch', '?')}, PyTorch {ref.get('torch', '?')}; best of {ROUNDS} rounds")
print(f"{'config':<8} {'dtype':<9} {'poslab tok/s':>12} {'PyTorch tok/s':>13} {'ratio':>6} {'median':>6} {'rounds':>10} "
      f"{'MFU':>6} {'matmul GF/s':>11} {'|dloss| step0':>13} {'max |dloss|':>11} {'agree':>5}")
for r in rows:
    print(f"{r[0]:<8} {r[1]:<9} {r[2]:>12.0f} {r[3]:>13.0f} {r[4]:>6.2f} {r[11]:>6.2f} {r[5]:>10} {100 * r[6]:>5.1f}% "
          f"{r[7]:>11.0f} {r[8]:>13.2e} {r[9]:>11.2e} {r[10]:>5}")
sys.exit(0 if ok else 1)
