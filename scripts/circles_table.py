"""The circle study's table (docs/results.md, "What grows the circles"): for each variant of each sweep folder, the
last snapshot's circle count, circle share, helix share, PC1's share and period, the sinusoid R² of the strongest
frequencies, translation invariance and the val loss, as mean ± sd over its seeds, read from each run's snapshot
analysis (snapshots/wpe_stepN.json, written by poslab train) and metrics.jsonl. Standard library only.

Usage: python3 scripts/circles_table.py SWEEP_DIR [SWEEP_DIR ...]   prints a Markdown table
"""
import json
import os
import statistics
import sys


def last_snapshot(run):
    index = [json.loads(line) for line in open(os.path.join(run, "snapshots", "index.jsonl"))]
    last = max(index, key=lambda r: r["step"])
    return last["step"], json.load(open(os.path.join(run, "snapshots", last["file"].replace(".npy", ".json"))))


def val_loss(run):
    vals = [json.loads(line) for line in open(os.path.join(run, "metrics.jsonl"))]
    return [r["val_loss"] for r in vals if r.get("val_loss") is not None][-1]


def cell(values, fmt):
    values = [0.0 if v is None else v for v in values]  # no circle: a share of 0
    if len(values) == 1:
        return format(values[0], fmt)
    return f"{format(statistics.mean(values), fmt)} ± {format(statistics.stdev(values), fmt)}"


def main():
    print("| sweep / variant | seeds | step | val loss | circles | circle share | helix share | PC1 share | PC1 period "
          "| sinusoid R² (8 strongest) | translation invariance |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for sweep in sys.argv[1:]:
        index = json.load(open(os.path.join(sweep, "sweep.json")))
        variants = {}
        for r in index["runs"]:
            variants.setdefault(r["variant"], []).append(os.path.join(sweep, r["run_dir"]))
        for variant, runs in variants.items():
            rows = [(last_snapshot(run), val_loss(run)) for run in runs]
            a = [snap for (_, snap), _ in rows]
            counts = [s["circle_count"] for s in a]
            print(f"| {os.path.basename(os.path.normpath(sweep))} / {variant} | {len(runs)} | {rows[0][0][0]} "
                  f"| {cell([v for _, v in rows], '.3f')} | {cell(counts, '.1f')} ({sum(c > 0 for c in counts)} of "
                  f"{len(counts)} with one) | {cell([s['circle_share'] for s in a], '.3f')} "
                  f"| {cell([s['helix_share'] for s in a], '.3f')} | {cell([s['top_component_share'] for s in a], '.3f')} "
                  f"| {cell([s['pc1_period'] for s in a], '.0f')} | {cell([s['sinusoid_r2_strongest'] for s in a], '.3f')} "
                  f"| {cell([s['translation_invariance'] for s in a], '.3f')} |")


if __name__ == "__main__":
    main()
