#!/usr/bin/env bash
# Benchmark of the bf16 causal attention (scripts/bench_attention.cpp): poslab's fused kernel with bf16 pair
# products, with widened products, and LibTorch's ops, timed in turns in one process, at the char, default and
# wide shapes of scripts/bench_vs_pytorch.py. Compiles against the Debian build (build/libposlab_lib.a, Debian's
# LibTorch). Prints figures, asserts nothing. Usage: bash scripts/bench_attention.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f build/libposlab_lib.a ] || bash scripts/build.sh >/dev/null
rounds=${1:-30}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
g++ -O2 -std=c++17 -Isrc -I/usr/include/torch/csrc/api/include scripts/bench_attention.cpp -o "$tmp/bench_attention" \
  build/libposlab_lib.a -ltorch -ltorch_cpu -lc10 -lspdlog -lfmt -lyaml-cpp -fopenmp -ldl
"$tmp/bench_attention" 32 64 128 4 "$rounds"    # char: configs/shakespeare_char.yaml, block 64, batch 32
"$tmp/bench_attention" 32 128 128 4 "$rounds"   # default: configs/default.yaml
"$tmp/bench_attention" 8 256 256 4 "$rounds"    # wide: 4 x 256, block 256, batch 8
