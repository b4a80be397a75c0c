"""Checks a folder written by `poslab export RUN --to tensorboard` with TensorBoard's own readers: its event reader
finds the scalars (losses, learning rate, the table's headline metrics) and the projector's config names every
snapshot's table with one row per position.

Usage: python3 scripts/check_tensorboard_export.py DIR
       (a Python with tensorboard: bash scripts/libtorch.sh pip installs it into ~/.cache/poslab/torch-2.11.0)
Prints what it found; exits 1 when something is missing.
"""
import os
import sys

from google.protobuf import text_format
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.projector.projector_config_pb2 import ProjectorConfig


def main():
    d = sys.argv[1]
    acc = EventAccumulator(d)
    acc.Reload()
    tags = acc.Tags()["scalars"]
    failed = 0
    for need in ["loss/batch", "loss/val", "lr", "table/signal_share", "table/adjacent_cosine_z"]:
        ok = need in tags
        failed += not ok
        n = len(acc.Scalars(need)) if ok else 0
        print(f"{'ok  ' if ok else 'FAIL'} scalar {need}: {n} points")
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
