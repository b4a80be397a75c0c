#!/usr/bin/env bash
# Benchmark of data-parallel training on this machine: configs/default.yaml trained as 1 process x 2 threads and as
# 2 processes x 1 thread (poslab train --nproc 2: Gloo over loopback), each `steps` steps (default 60) with evals
# and snapshots out of the way, ROUNDS times (default 2) in turns. Prints tokens/s, the ratio 2x1 / 1x2 and the
# all-reduce time per step with its share of the step. Asserts nothing.
# Usage: bash scripts/bench_dist.sh [STEPS] [ROUNDS]     (POSLAB=path/to/poslab to pick a build)
set -euo pipefail
cd "$(dirname "$0")/.."
poslab=${POSLAB:-build/poslab}
[ -x "$poslab" ] || poslab="$(bash scripts/build.sh)/poslab"
steps=${1:-60}
rounds=${2:-2}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--set "train.max_steps=$steps" --set "train.eval_every=100000" --set "snapshot.every=100000"
        --set "train.log_every=100000" --set "run.report=false" --set "run.out_dir=$tmp" --set "train.dtype=float32")

# Warm the tokenizer and token cache, so that neither layout pays for them.
"$poslab" train configs/default.yaml "${common[@]}" --set run.name=warm --set train.max_steps=1 >/dev/null 2>&1

run() {  # name, extra args...: prints "tok/s ms_per_step allreduce_ms share%"
  local name=$1
  shift
  "$poslab" train configs/default.yaml "${common[@]}" --set "run.name=$name" "$@" >/dev/null 2>"$tmp/$name.log"
  local tok ms ar share
  tok=$(sed -n 's/.*done: .* | \([0-9.]*k\{0,1\}\) tok\/s.*/\1/p' "$tmp/$name.log" | tail -1)
  ar=$(sed -n 's/.*gradient all-reduce .* = \([0-9.]*\) ms per step = \([0-9.]*\)% .*/\1 \2/p' "$tmp/$name.log" | tail -1)
  echo "$tok ${ar:-0 0}"
}

echo "configs/default.yaml, $steps steps, float32, $(nproc) cores; $("$poslab" --version)"
tokens() { awk -v s="$1" 'BEGIN { n = s + 0; if (s ~ /k$/) n *= 1000; print n }'; }
printf '%-6s %-22s %-23s %-8s %s\n' round "1 process x 2 threads" "2 processes x 1 thread" "2x1/1x2" \
  "gradient all-reduce per step (share of the step; waits for the slower rank included)"
for r in $(seq 1 "$rounds"); do
  read -r one _ _ <<<"$(run "one-$r" --set run.threads=2)"
  read -r two ar share <<<"$(run "two-$r" --nproc 2)"
  ratio=$(awk -v a="$(tokens "$two")" -v b="$(tokens "$one")" 'BEGIN { printf "%.2f", a / b }')
  printf '%-6s %-22s %-23s %-8s %s ms (%s%%)\n' "$r" "$one tok/s" "$two tok/s" "$ratio" "$ar" "$share"
done
