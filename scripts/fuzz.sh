#!/usr/bin/env bash
# Fuzzes every reader of files poslab did not just write itself, with libFuzzer (clang from Debian's clang-14 and
# libclang-rt-14-dev, installed here when missing): .npy tables, .safetensors files, a model folder's config.json
# and model.safetensors.index.json, YAML configs, the files of a
# run folder and a sweep folder (metrics.jsonl, snapshots/index.jsonl, model_stepN.json, kernel_paths.json, the
# eval CSVs, extension JSON, sweep.json, config.yaml, TensorBoard's event files), sweep files, sentencepiece models
# (through sentencepiece, and poslab's own reading of them), the kernel-path cache and checkpoints.
#
# Each target compiles its reader's own files with AddressSanitizer, UBSan and libFuzzer's coverage, and links
# the rest of poslab from the main build (build/libposlab_lib.a: scripts/build.sh runs first when it is missing).
# Seeds: tests/fuzz/seeds/TARGET (in the repository), plus a tiny checkpoint and two tokenizer models the targets
# write themselves. Any input that crashes, hangs, or lets an exception other than poslab::Error out is a failure;
# libFuzzer writes it to build/fuzz/crash-*.
#
# Usage: scripts/fuzz.sh [SECONDS]   each target runs SECONDS (default 60)
#        scripts/fuzz.sh --ci        each target runs 10 s (.ci/run); exit 1 on a crash, 2 on a build error
#        scripts/fuzz.sh --sources   prints the poslab sources the targets compile themselves (CMakeLists.txt keeps
#                                    them out of its unity batches, whose objects would clash with these)
set -uo pipefail
cd "$(dirname "$0")/.."
targets=(npy safetensors hf_config config run_files sweep tokenizer kernel_cache checkpoint)
declare -A sources=(
  [npy]="src/formats/npy.cpp src/util/fs.cpp"
  [safetensors]="src/formats/safetensors.cpp"
  [hf_config]="src/hf/model_folder.cpp src/hf/families.cpp src/formats/safetensors.cpp src/util/fs.cpp"
  [config]="src/config/config.cpp src/config/fields.cpp src/config/validate.cpp"
  [run_files]="src/run/run_files.cpp src/run/json_records.cpp src/run/eval_csv.cpp src/run/extension_info.cpp
    src/run/sweep_index.cpp src/run/run_folder.cpp src/run/tensorboard_files.cpp src/formats/tfevents.cpp"
  [sweep]="src/sweep/sweep_file.cpp"
  [tokenizer]="src/data/tokenizer.cpp src/formats/spm_model.cpp src/export/hf_tokenizer.cpp"
  [kernel_cache]="src/tune/kernel_cache.cpp"
  [checkpoint]="src/train/checkpoint.cpp src/formats/zip_check.cpp"
)
# shellcheck disable=SC2086
all_sources() { for t in "${targets[@]}"; do printf '%s\n' ${sources[$t]}; done | sort -u; }
if [ "${1:-}" = "--sources" ]; then all_sources; exit 0; fi
seconds=${1:-60}
[ "$seconds" = "--ci" ] && seconds=10
case $seconds in '' | *[!0-9]*) echo "error: $1: not a number of seconds; hint: scripts/fuzz.sh [SECONDS] or --ci" >&2; exit 2 ;; esac

clang=$(command -v clang++-14 || command -v clang++)
if [ -z "$clang" ] || [ ! -d /usr/lib/llvm-14/lib/clang ] || ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "fuzz: installing clang-14 and libclang-rt-14-dev (libFuzzer)"
  if [ "$(id -u)" -ne 0 ]; then
    echo "error: clang-14 with libFuzzer is missing; hint: sudo apt-get install clang-14 libclang-rt-14-dev" >&2
    exit 2
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang-14 libclang-rt-14-dev >/dev/null ||
    { echo "error: apt-get could not install clang-14; hint: apt-get update, then run this again" >&2; exit 2; }
  clang=$(command -v clang++-14)
fi
[ -f build/libposlab_lib.a ] || bash scripts/build.sh || exit 2
# A source compiled here and also inside one of the main build's unity batches would be defined twice at link time.
for src in $(all_sources); do
  batch=$(grep -l "^#include \"$src\"" build/unity/*.cpp 2>/dev/null | head -1)
  if [ -n "$batch" ]; then
    echo "error: $src is compiled in the unity batch $batch and by this script; hint: configure build/ again" \
      "(cmake -S . -B build), which keeps the sources of 'scripts/fuzz.sh --sources' out of the batches" >&2
    exit 2
  fi
done

out=build/fuzz
mkdir -p "$out/obj"
# The main build's include folders and definitions (LibTorch's headers, the generated build_paths.h, …).
flags_make=build/CMakeFiles/poslab_lib.dir/flags.make
read -r -a includes <<<"$(sed -n 's/^CXX_INCLUDES = //p' "$flags_make")"
read -r -a defines <<<"$(sed -n 's/^CXX_DEFINES = //p' "$flags_make")"
cflags=(-std=c++17 -O1 -g -fno-sanitize-recover=undefined
  -D_GLIBCXX_USE_CXX11_ABI=1 -Wno-unused-command-line-argument "${defines[@]}" "${includes[@]}" -Ibuild/generated)
libs=(build/libposlab_lib.a -ltorch -ltorch_cpu -lc10 -lspdlog -lfmt -lyaml-cpp -lz -lgomp -ldl -lpthread)

# Each source compiles to its own object through ccache where it is installed (as the main build does, its paths
# hashed relative to this clone), so a fresh clone reuses the objects a build of the same sources stored.
launcher=()
command -v ccache >/dev/null && launcher=(bash scripts/ccache_compile.sh "$(pwd)" "$(command -v ccache)")

# build NAME SANITIZERS SOURCES...: compiles the sources and links build/fuzz/NAME (skipped when nothing changed)
build() {
  local name=$1 sanitize=$2; shift 2
  local bin="$out/$name" log="$out/$name.build.log" objs=() src obj
  if [ -x "$bin" ] && [ -z "$(find src tests/fuzz build/libposlab_lib.a -newer "$bin" \( -name '*.cpp' -o -name '*.h' -o -name '*.a' \) | head -1)" ]; then
    return 0
  fi
  echo "fuzz: building $name"
  : >"$log"
  for src in "$@"; do
    obj="$out/obj/$name-$(basename "${src%.cpp}").o"
    "${launcher[@]}" "$clang" "${cflags[@]}" -fsanitize="$sanitize" -c "$src" -o "$obj" >>"$log" 2>&1 || break
    objs+=("$obj")
  done
  [ ${#objs[@]} -eq $# ] && "$clang" -fsanitize="$sanitize" "${objs[@]}" -o "$bin" "${libs[@]}" >>"$log" 2>&1 ||
    { cat "$log" >&2; echo "error: $name does not compile (log above: $log)" >&2; return 1; }
}

# AddressSanitizer everywhere but in the tokenizer's target: ASan cannot run a library opened with RTLD_DEEPBIND,
# as the sentencepiece shim is (a crash there is still a crash to libFuzzer; UBSan stays).
declare -A sanitizers=([tokenizer]=fuzzer,undefined)
# Two builds at a time (the torch-including ones take ~40 s each).
failed=0
pids=()
for t in "${targets[@]}"; do
  # shellcheck disable=SC2086
  build "fuzz_$t" "${sanitizers[$t]:-fuzzer,address,undefined}" "tests/fuzz/fuzz_$t.cpp" ${sources[$t]} &
  pids+=($!)
  if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}" || failed=1; pids=("${pids[@]:1}"); fi
done
for p in "${pids[@]}"; do wait "$p" || failed=1; done
[ "$failed" -eq 0 ] || exit 2

# The targets' scratch files (a run folder, a sweep folder, a checkpoint, a kernel cache per process) go to a folder
# of this build's, taken away when they have run.
export TMPDIR=$PWD/$out/tmp
rm -rf "$TMPDIR"
mkdir -p "$TMPDIR"

# Seeds the targets write themselves: a valid checkpoint of a tiny model (raw mode) and an undamaged structured
# input; a char and a BPE tokenizer model.
for t in checkpoint tokenizer; do
  mkdir -p "$out/seeds/$t"
  POSLAB_FUZZ_SEED_DIR="$out/seeds/$t" ASAN_OPTIONS=detect_leaks=0 "$out/fuzz_$t" -runs=0 "$out/seeds/$t" >/dev/null 2>&1
done

# Two targets at a time (each runs on one core); their lines print in order when all have run.
run() {
  local t=$1 seeds=tests/fuzz/seeds/$1
  rm -f "$out/fuzz_$t.rc"
  mkdir -p "$out/corpus/$t"
  [ -d "$seeds" ] || seeds=$out/seeds/$t
  ASAN_OPTIONS=detect_leaks=0 "$out/fuzz_$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$out/" "$out/corpus/$t" "$seeds" >"$out/fuzz_$t.log" 2>&1
  echo $? >"$out/fuzz_$t.rc"
}
pids=()
for t in "${targets[@]}"; do
  run "$t" &
  pids+=($!)
  if [ ${#pids[@]} -ge 2 ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
wait
rm -rf "$TMPDIR"
total=0
crashes=0
for t in "${targets[@]}"; do
  log="$out/fuzz_$t.log"
  rc=$(cat "$out/fuzz_$t.rc" 2>/dev/null || echo 1)
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  [ -n "$runs" ] || runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
  runs=${runs:-0}
  total=$((total + runs))
  if [ "$rc" -ne 0 ]; then
    crashes=$((crashes + 1))
    echo "fuzz_$t: CRASH after $runs inputs (exit $rc); the input: $(grep -o "$out/[a-z]*-[0-9a-f]*" "$log" | tail -1)"
    grep -m3 -E "ERROR|terminate|SUMMARY|uncaught" "$log" | sed 's/^/  /'
  else
    echo "fuzz_$t: $runs inputs, no crash"
  fi
done
echo "fuzz: $total inputs across ${#targets[@]} readers in ${seconds}s each, $crashes crashed"
[ "$crashes" -eq 0 ]
