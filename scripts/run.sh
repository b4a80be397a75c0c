#!/usr/bin/env bash
# The main job: set up, build, and train the default config. Extra arguments go to `poslab train`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/poslab train configs/default.yaml "$@"
