#!/usr/bin/env bash
# The main job: set up, build, and train the default config; the run ends by writing its report and printing
# the path of index.html. Run it again and it continues the same run (or, when finished, rewrites the report).
# Extra arguments go to `poslab train` (e.g. --set train.max_steps=3000).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh --target poslab  # the program alone: the tests build with bash scripts/test.sh
if [ -f runs/default/checkpoints/latest.pt ]; then
  ./build/poslab train --resume runs/default "$@"
else
  ./build/poslab train configs/default.yaml "$@"
fi
