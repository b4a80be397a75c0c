"""Checks a TensorBoard folder of poslab's with TensorBoard's own readers: a run's live folder (RUN_DIR/tensorboard,
written as it trains) or one written by `poslab export RUN --to tensorboard`. TensorBoard's EventAccumulator finds
the scalars (losses, learning rate, the table's headline metrics) and the projector's config names every snapshot's
table with one row per position. Given the run folder, every value of its metrics.jsonl and every snapshot of its
index must be there once: no step missing, none twice (read record by record with TensorBoard's event file loader,
which does not hide a repeated step as the accumulator does), none that the run's files do not hold.

Usage: python3 scripts/check_tensorboard_export.py DIR [RUN_DIR]
       (a Python with tensorboard: bash scripts/libtorch.sh pip installs it into ~/.cache/poslab/torch-2.11.0)
Prints what it found; exits 1 when something is missing.
"""
import collections
import json
import os
import sys

import numpy as np
from google.protobuf import text_format
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.backend.event_processing.event_file_loader import EventFileLoader
from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig
from tensorboard.util import tensor_util

TAGS = {"loss": "loss/batch", "train_loss": "loss/train", "val_loss": "loss/val", "lr": "lr",
        "tokens_per_s": "tokens_per_s"}


def raw_scalars(d):
    """(tag, step) -> [values], over the event files in the order TensorBoard reads them."""
    seen = collections.defaultdict(list)
    for name in sorted(f for f in os.listdir(d) if "tfevents" in f):
        for event in EventFileLoader(os.path.join(d, name)).Load():
            for v in event.summary.value:  # the loader turns simple_value into a tensor
                value = v.simple_value if v.WhichOneof("value") == "simple_value" else tensor_util.make_ndarray(v.tensor)
                seen[(v.tag, event.step)].append(float(value))
    return seen


def check_against_run(d, run, failed):
    seen = raw_scalars(d)
    twice = [k for k, v in seen.items() if len(v) > 1]
    print(f"{'FAIL' if twice else 'ok  '} no step twice: {len(seen)} (tag, step) pairs"
          + (f"; twice: {sorted(twice)[:5]}" if twice else ""))
    failed += bool(twice)
    expected = {}
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            for key, tag in TAGS.items():
                if r.get(key) is not None:
                    expected[(tag, r["step"])] = np.float32(r[key])
    index = os.path.join(run, "snapshots", "index.jsonl")
    snapshots = [json.loads(line)["step"] for line in open(index)] if os.path.exists(index) else []
    table_steps = sorted({s for (t, s) in seen if t.startswith("table/")})
    wrong = [k for k, v in expected.items() if k not in seen or np.float32(seen[k][0]) != v]
    extra = [k for k in seen if not k[0].startswith("table/") and k not in expected]
    ok = not wrong and not extra
    failed += not ok
    print(f"{'ok  ' if ok else 'FAIL'} metrics.jsonl: {len(expected)} values, each an event of its step"
          + (f"; missing or other: {sorted(wrong)[:5]}" if wrong else "")
          + (f"; not in metrics.jsonl: {sorted(extra)[:5]}" if extra else ""))
    ok = table_steps == sorted(snapshots)
    failed += not ok
    print(f"{'ok  ' if ok else 'FAIL'} table metrics at the snapshots' steps {table_steps}"
          + ("" if ok else f" (the index: {sorted(snapshots)})"))
    return failed


def main():
    d = sys.argv[1]
    run = sys.argv[2] if len(sys.argv) > 2 else None
    acc = EventAccumulator(d, size_guidance={"scalars": 0})
    acc.Reload()
    tags = acc.Tags()["scalars"]
    failed = 0
    for need in ["loss/batch", "loss/val", "lr", "table/signal_share", "table/adjacent_cosine_z"]:
        ok = need in tags
        failed += not ok
        steps = [e.step for e in acc.Scalars(need)] if ok else []
        print(f"{'ok  ' if ok else 'FAIL'} scalar {need}: steps {steps}")
    if run:
        failed = check_against_run(d, run, failed)
    config = ProjectorConfig()
    with open(os.path.join(d, "projector_config.pbtxt")) as f:
        text_format.Parse(f.read(), config)
    positions = open(os.path.join(d, "positions.tsv")).read().split("\n")[:-1]
    for e in config.embeddings:
        rows = open(os.path.join(d, e.tensor_path)).read().split("\n")[:-1]
        ok = len(rows) == len(positions) and e.metadata_path == "positions.tsv"
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} projector {e.tensor_name}: {len(rows)} rows x {len(rows[0].split(chr(9)))}, "
              f"{len(positions)} positions")
    if not config.embeddings:
        print("FAIL projector: no embeddings")
        failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
