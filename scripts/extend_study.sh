#!/usr/bin/env bash
# The extension study of docs/results.md ("What extending the default run showed"): train configs/default.yaml, extend it from
# 128 to 256 positions by each method, evaluate, fine-tune 150 steps, evaluate again, plus the control that is not
# extended, and write the run's report. About 40 minutes on 2 cores. Usage: bash scripts/extend_study.sh [POSLAB]
set -euo pipefail
cd "$(dirname "$0")/.."
P=${1:-./build/poslab}
R=runs/default
[ -f $R/checkpoints/latest.pt ] || $P train configs/default.yaml
$P eval $R/checkpoints/latest.pt
fine_tune=(--set train.max_steps=150 --set train.warmup_steps=10 --set train.eval_every=25 --set train.eval_batches=10
           --set train.log_every=25 --set run.report=false)
for m in linear cubic nearest copy random; do
  $P extend $R/checkpoints/latest.pt --to 256 --method $m --force
  $P eval $R/extend/256-$m/checkpoint.pt
done
for m in linear cubic nearest copy random; do
  [ -f runs/default-ext256-$m/checkpoints/latest.pt ] ||
    $P train --init-from $R/extend/256-$m/checkpoint.pt "${fine_tune[@]}"
  $P eval runs/default-ext256-$m/checkpoints/latest.pt
done
# The control: the same fine-tuning without an extension.
[ -f runs/default-more150/checkpoints/latest.pt ] ||
  $P train --init-from $R/checkpoints/latest.pt --set run.name=default-more150 "${fine_tune[@]}"
$P report $R
