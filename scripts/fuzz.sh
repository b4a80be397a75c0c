#!/usr/bin/env bash
# Fuzzes the readers of untrusted input with libFuzzer (clang, from Debian's clang-14 / libclang-rt-14-dev):
# the .npy reader, the .safetensors parser, the YAML config reader and the checkpoint reader (the last links the
# system LibTorch, which is not instrumented: coverage comes from poslab's own checks). Builds each target with ASan, writes
# seed inputs, runs each for SECONDS (default 60), and ends with one line: inputs run and crashes found.
# Not part of the test command. Usage: scripts/fuzz.sh [SECONDS]
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
command -v clang++ >/dev/null || { echo "error: clang++ not found; hint: apt-get install clang-14 libclang-rt-14-dev" >&2; exit 2; }
out=build/fuzz
mkdir -p "$out/generated"
# What CMake generates for the main build: the fuzzers link Debian's LibTorch, which has no CUDA.
[ -f "$out/generated/build_config.h" ] || echo "#define POSLAB_WITH_CUDA 0" >"$out/generated/build_config.h"
flags="-std=c++17 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -Isrc -I$out/generated"
torch_flags="-isystem /usr/include/torch/csrc/api/include -D_GLIBCXX_USE_CXX11_ABI=1 -DFMT_SHARED -DSPDLOG_COMPILED_LIB
  -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB"
build() {  # build NAME SOURCES... [-- EXTRA FLAGS]
  local name=$1; shift
  local sources=() extra=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do sources+=("$1"); shift; done
  [ $# -gt 0 ] && shift && extra=("$@")
  [ -x "$out/$name" ] && [ -z "$(find tests/fuzz src -newer "$out/$name" -name '*.cpp' -o -newer "$out/$name" -name '*.h' | head -1)" ] && return 0
  echo "building $name"
  clang++ $flags "${sources[@]}" -o "$out/$name" -lyaml-cpp "${extra[@]}" || exit 2
}
build fuzz_npy tests/fuzz/fuzz_npy.cpp src/util/npy.cpp src/util/fs.cpp
build fuzz_safetensors tests/fuzz/fuzz_safetensors.cpp src/analysis/safetensors.cpp
build fuzz_config tests/fuzz/fuzz_config.cpp src/config/config.cpp src/util/kernel_paths.cpp src/util/platform.cpp src/util/cuda.cpp \
  -- $torch_flags -ltorch -ltorch_cpu -lc10 -lspdlog -lfmt
build fuzz_checkpoint tests/fuzz/fuzz_checkpoint.cpp src/train/checkpoint.cpp src/train/optim.cpp \
  src/train/adamw_kernel.cpp src/model/gpt.cpp src/config/config.cpp src/util/fs.cpp src/util/kernel_paths.cpp \
  src/util/platform.cpp src/util/cuda.cpp src/ops/attention.cpp src/ops/attention_kernel.cpp src/ops/bf16_products.cpp \
  src/ops/cross_entropy.cpp src/ops/cross_entropy_kernel.cpp src/ops/causal_softmax.cpp \
  src/ops/causal_softmax_kernel.cpp src/ops/layer_norm.cpp src/ops/layer_norm_kernel.cpp src/util/simd_math.cpp \
  src/ops/gelu.cpp src/ops/gelu_kernel.cpp src/ops/residual.cpp src/ops/head_loss.cpp src/util/positions.cpp \
  -- -fopenmp-simd -Wno-pass-failed $torch_flags -ltorch -ltorch_cpu -lc10 -lspdlog -lfmt

# Seeds: one valid input of each kind, written here (no data file is needed).
mkdir -p "$out/seeds/npy" "$out/seeds/safetensors" "$out/seeds/config" "$out/seeds/checkpoint"
/usr/bin/python3 - "$out/seeds" <<'PY'
import json, struct, sys
d = sys.argv[1]
hdr = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
hdr += " " * (64 - (10 + len(hdr) + 1) % 64) + "\n"
open(f"{d}/npy/ok.npy", "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr.encode() + struct.pack("<6f", *range(6)))
h = json.dumps({"wpe.weight": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, "__metadata__": {}}).encode()
open(f"{d}/safetensors/ok.safetensors", "wb").write(struct.pack("<Q", len(h)) + h + struct.pack("<6f", *range(6)))
PY
cp configs/*.yaml "$out/seeds/config/"
# A valid checkpoint of a tiny model (raw mode) and an undamaged structured input, written by the target itself.
POSLAB_FUZZ_SEED_DIR="$out/seeds/checkpoint" ASAN_OPTIONS=detect_leaks=0 "$out/fuzz_checkpoint" -runs=0 \
  "$out/seeds/checkpoint" >/dev/null 2>&1

total=0
crashes=0
for target in fuzz_npy:npy fuzz_safetensors:safetensors fuzz_config:config fuzz_checkpoint:checkpoint; do
  name=${target%%:*}
  seeds=${target##*:}
  mkdir -p "$out/corpus/$seeds"
  log="$out/$name.log"
  (cd "$out" && ASAN_OPTIONS=detect_leaks=0 "./$name" -max_total_time="$seconds" -rss_limit_mb=2048 \
     "corpus/$seeds" "seeds/$seeds" >"$name.log" 2>&1)
  rc=$?
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  [ -n "$runs" ] || runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  runs=${runs:-0}
  total=$((total + runs))
  if [ "$rc" -ne 0 ]; then
    crashes=$((crashes + 1))
    echo "$name: CRASH after $runs inputs (exit $rc); see $log and the crash-* file in $out"
  else
    echo "$name: $runs inputs, no crash"
  fi
done
echo "fuzz: $total inputs across 4 readers in ${seconds}s each, $crashes crashed"
[ "$crashes" -eq 0 ]
