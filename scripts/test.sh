#!/usr/bin/env bash
# The test command: set up, build, run every test.
#   bash scripts/test.sh                    against Debian's LibTorch 1.13 (the README's command)
#   bash scripts/test.sh --libtorch pip     against PyTorch's LibTorch 2.x from PyPI (CUDA build; the tests run on the
#                                           CPU, and their CUDA cases too when a GPU is present)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
build=$(bash scripts/build.sh "$@")
ctest --test-dir "$build" --output-on-failure -j"$(nproc)"
