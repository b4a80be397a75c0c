#!/usr/bin/env bash
# Benchmark of the position-table analysis: every metric on a 1024 x 768 table (GPT-2's wpe shape), and the
# cost of snapshots with their analysis inside a short run of the default config. Prints figures, asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/poslab ] || bash scripts/build.sh >/dev/null
steps=${1:-300}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "== every metric on a 1024 x 768 table (3 runs each)"
for kind in random sinusoidal handbook; do
  ms=""
  for _ in 1 2 3; do
    ms+=" $(./build/poslab analyze --synthetic "$kind" --positions 1024 --dim 768 2>/dev/null | sed -n 's/^analysed in \([0-9.]*\) ms.*/\1/p')"
  done
  echo "  $kind:$ms ms"
done

echo "== snapshots + analysis inside training: configs/default.yaml, $steps steps, snapshot.every=100"
./build/poslab train configs/default.yaml --set "train.max_steps=$steps" --set "run.out_dir=$tmp" 2>"$tmp/log" >/dev/null
grep -E "snapshot step|snapshots with their analysis|done:" "$tmp/log" | sed 's/^[0-9:]* info /  /'
