#!/usr/bin/env bash
# The GPU check: on a machine with a GPU and PyTorch but no package registry, build poslab against that PyTorch's
# LibTorch (or take a build carried there) and run these parts, the most wanted first, within a time budget:
#   cases    the unit tests' CUDA cases, each named with its result (its output in $OUT/cuda_cases.log)
#   graph    the step captured as a CUDA graph against the eager step (train.cuda_graph; poslab bench at two shapes
#            and dtypes, the losses compared bit for bit, with the attention kernel each chose)
#   compare  tokens/s against the same model in PyTorch's Python on the same GPU (scripts/bench_vs_pytorch.py):
#            GPT-2 small's shape in bf16 against eager and torch.compile, then the default and wide shapes against
#            eager (poslab with the graph where it ran)
#   profile  GPT-2 small's step by GPU kernel (Kineto; $OUT/gpt2_profile.txt and the gzipped trace)
#   resume   configs/default.yaml trained on the GPU, then stopped halfway and resumed: bit for bit against the
#            uninterrupted run
#   gpt2     configs/gpt2_small.yaml trained for up to --gpt2-steps steps or what the budget leaves, and analysed
#   tests    the unit tests' CPU cases and the shell tests (CI runs them against the same LibTorch version: on a GPU
#            only when --parts names them)
# Each part starts only with 20 s of the budget left (gpt2 60), and each of its commands is stopped at the deadline
# (SIGTERM: a training run stops at the end of its step with its checkpoint and snapshot); a part cut or left out is
# named in the summary. Prints one summary, each line also appended to $OUT/gpu_check.txt as it is said when OUT is set.
#
#   bash scripts/gpu_check.sh prepare     HERE (Debian 12 with its archive): download the libraries poslab builds
#                                         with (spdlog, fmt, yaml-cpp, GoogleTest, CLI11, nlohmann-json,
#                                         sentencepiece, pkgconf, zlib) and the fortunes corpus as .deb files, and unpack
#                                         them with dpkg -x into .gpu-deps/root (not into /). About 13 MB.
#   bash scripts/gpu_check.sh prebuild    HERE, after prepare (no GPU needed): build-gpu against PyPI's LibTorch (the
#                                         version of bash scripts/libtorch.sh pip, with CUDA) and the carried
#                                         libraries, its programs copied into .gpu-deps/build, so that the GPU
#                                         machine need not build (about 15 minutes on 2 cores; carry .gpu-deps, 26
#                                         MB, and run the check with --no-build; the GPU machine's PyTorch must be
#                                         that same version)
#   bash scripts/gpu_check.sh [run]       THERE (carry .gpu-deps): the check.
#   bash scripts/gpu_check.sh cases LOG   the CUDA cases a GoogleTest log reports, one "NAME STATUS" line each
#                                         (tests/test_gpu_check.sh holds this parser to GoogleTest's formats)
#   bash scripts/gpu_check.sh case-verdict RC CPU   how the CUDA cases' exit status RC reads: "ok" or "failed: WHY"
#                                         (77, every case skipped, is ok with --cpu, CPU=1, and a failure on a GPU)
#
# Options of run:
#   --libtorch python|pip|DIR   the LibTorch to build against (default python: the torch python3 imports)
#   --deps DIR                  the unpacked libraries (default .gpu-deps/root)
#   --steps N                   training steps of the default run (default 300 on a GPU, 20 with --cpu)
#   --gpt2-steps N              training steps of configs/gpt2_small.yaml at most (default 300; 2 with --cpu)
#   --no-build                  reuse build-gpu from an earlier call (a machine kept warm between calls), or the
#                               programs prebuild put in .gpu-deps/build (built in another folder: CTest's files then point
#                               elsewhere, so the unit tests run as the test program alone, the shell tests left
#                               to CI; the libraries load from --deps and the LibTorch's lib/)
#   --budget SECONDS            the time the whole call may take, its build included (default 540 on a GPU, so that
#                               the check and the machine's start fit a lent GPU's 15 minutes; 0: no limit, the
#                               default with --cpu)
#   --parts LIST                the parts to run, comma-separated (default all but tests on a GPU, all with --cpu);
#                               they run in the order above whatever the list's
#   --cpu                       the CPU-side self-test, for a machine without a GPU: the same build against the
#                               carried libraries, the unit tests (CUDA cases skipped), 20 training steps (2 of
#                               GPT-2 small's shape) and the comparison on the CPU
# POSLAB_PYTHON names the Python with torch and numpy for the comparison (default python3). Needs g++, cmake and,
# for a LibTorch with CUDA, the CUDA toolkit's nvcc (on PATH or in /usr/local/cuda); the GPU machine has all three.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

die() { echo "error: $1" >&2; [ -n "${2:-}" ] && echo "hint: $2" >&2; exit 2; }

# Debian 12 packages, unpacked side by side; their own library dependencies are glibc and libstdc++ only.
DEBS=(libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 libyaml-cpp-dev libyaml-cpp0.7 libgtest-dev libgmock-dev
      libcli11-dev nlohmann-json3-dev libsentencepiece-dev libsentencepiece0 pkgconf pkgconf-bin libpkgconf3
      libgloo-dev zlib1g-dev zlib1g fortunes fortunes-min)

prepare() {
  local dir=.gpu-deps
  rm -rf "$dir"
  mkdir -p "$dir/debs" "$dir/root"
  # apt-get download needs the package lists: fetch them once if it fails without.
  (cd "$dir/debs" && apt-get download "${DEBS[@]}" >/dev/null 2>&1) ||
    { apt-get update -qq && (cd "$dir/debs" && apt-get download "${DEBS[@]}" >/dev/null); } ||
    die "apt-get download failed" "check that Debian's archive is reachable (as root, or with sudo for apt-get update)"
  for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$dir/root"; done
  # A link to an absolute path (zlib1g-dev's libz.so -> /lib/…/libz.so.1.2.13) points into the unpacked root instead,
  # relatively: the root is carried to another folder on another machine.
  find "$dir/root" -type l | while read -r link; do
    target=$(readlink "$link")
    case $target in /*) [ -e "$dir/root$target" ] &&
      ln -sfn "$(realpath --relative-to="$(dirname "$link")" "$dir/root$target")" "$link" ;; esac
  done
  rm -rf "$dir/debs" "$dir/root/usr/share/doc" "$dir/root/usr/share/man"
  echo "gpu_check: $(du -sh "$dir" | cut -f1) of libraries in $dir/root; carry .gpu-deps to the GPU machine and run"
  echo "  bash scripts/gpu_check.sh"
}

# case_results LOG: one "Devices/Suite.Name/cuda STATUS" line per CUDA case that GoogleTest's LOG reports, STATUS OK,
# SKIPPED or FAILED: "[       OK ] Devices/Suite.Name/cuda (812 ms)", "[  SKIPPED ] ...", and a failed case twice (at
# its end and in the list at the bottom) as "[  FAILED  ] Devices/Suite.Name/cuda, where GetParam() = "cuda" (3 ms)".
case_results() { sed -nE 's/^\[ *(OK|SKIPPED|FAILED) *\] (Devices\/[^ ,]*\/cuda)[ ,].*/\2 \1/p' "$1" | sort -u; }

# The CUDA cases' exit status, RC, read: 0 passed; 77 every case skipped (tests/test_main.cpp), as a run without a GPU
# (CPU=1, --cpu) has them and on a GPU a failure; any other a failure. Prints "ok" or "failed: WHY".
cases_verdict() {
  case "$1" in
    0) echo ok ;;
    77) if [ "$2" = 1 ]; then echo ok; else echo "failed: every CUDA case skipped: the test program found no GPU"; fi ;;
    *) echo "failed: exit $1" ;;
  esac
}

if [ "${1:-}" = prepare ]; then prepare; exit 0; fi
prebuild=0
if [ "${1:-}" = prebuild ]; then prebuild=1; shift; set -- --cpu --libtorch pip "$@"; fi
if [ "${1:-}" = cases ]; then case_results "${2:?cases needs a GoogleTest log}"; exit 0; fi
if [ "${1:-}" = case-verdict ]; then cases_verdict "${2:?case-verdict needs RC CPU}" "${3:?case-verdict needs RC CPU}"; exit 0; fi
[ "${1:-}" = run ] && shift
libtorch=python deps=.gpu-deps/root steps="" gpt2_steps=300 cpu=0 build=1 budget="" parts=""
all_parts=cases,graph,compare,profile,resume,gpt2,tests
usage="bash scripts/gpu_check.sh [prepare | prebuild | run [--libtorch python|pip|DIR] [--deps DIR] [--steps N] [--gpt2-steps N] [--budget SECONDS] [--parts LIST] [--cpu] [--no-build]]"
while [ $# -gt 0 ]; do
  case "$1" in
    --budget)
      budget="${2:?--budget needs a number of seconds}"; shift 2
      [[ "$budget" =~ ^[0-9]+$ ]] || die "--budget $budget: not a whole number of seconds" "--budget 540 (0: no limit)" ;;
    --parts)
      parts="${2:?--parts needs a list}"; shift 2
      for p in ${parts//,/ }; do
        [[ ",$all_parts," == *",$p,"* ]] || die "--parts: no part '$p'" "a comma-separated list of $all_parts"
      done ;;
    --libtorch) libtorch="${2:?--libtorch needs python, pip or a folder}"; shift 2 ;;
    --deps) deps="${2:?--deps needs a folder}"; shift 2 ;;
    --steps) steps="${2:?--steps needs a number}"; shift 2 ;;
    --gpt2-steps) gpt2_steps="${2:?--gpt2-steps needs a number}"; shift 2 ;;
    --cpu) cpu=1; shift ;;
    --no-build) build=0; shift ;;
    *) die "unknown argument $1" "$usage" ;;
  esac
done
# On a GPU: every part but the CPU tests (CI's), within 540 s, so that the check and its start fit a lent machine's
# 15 minutes and one call's 10; --cpu: every part, no limit.
[ -z "$parts" ] && { [ "$cpu" = 1 ] && parts=$all_parts || parts=${all_parts%,tests}; }
[ -z "$budget" ] && { [ "$cpu" = 1 ] && budget=0 || budget=540; }
budget=$((10#$budget))  # "0540" is 540 seconds, not octal
[ -d "$deps/usr/include/spdlog" ] || die "$deps holds no unpacked libraries" "run bash scripts/gpu_check.sh prepare where Debian's archive is reachable, and carry .gpu-deps"
deps=$(cd "$deps" && pwd)
device=cuda; [ "$cpu" = 1 ] && device=cpu
py="${POSLAB_PYTHON:-python3}"
export CUBLAS_WORKSPACE_CONFIG="${CUBLAS_WORKSPACE_CONFIG:-:4096:8}"  # as poslab sets it for itself on a GPU
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
t_start=$SECONDS
summary=()
tests_ok=yes
say() { echo "gpu_check: $*" >&2; }
# A line of the summary, also appended to $OUT/gpu_check.txt as it is said: a call cut short still brings back the
# lines said before.
note() { summary+=("$*"); say "$*"; if [ -n "${OUT:-}" ]; then echo "$*" >>"$OUT/gpu_check.txt"; fi; }
if [ -n "${OUT:-}" ]; then : >"$OUT/gpu_check.txt"; fi

# --- the machine -------------------------------------------------------------------------------------------
torch_dir=$(bash scripts/libtorch.sh "$libtorch")
command -v g++ >/dev/null || die "no C++ compiler (g++) on this machine"
command -v cmake >/dev/null || die "no cmake on this machine" "pip's cmake wheel can travel as a wheel"
if [ "$build" = 1 ] && [ -e "$torch_dir/lib/libtorch_cuda.so" ] && ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  die "$torch_dir has CUDA, and building against it needs the CUDA toolkit's nvcc, which is not here" \
    "install the CUDA toolkit (or put its bin/ on PATH)"
fi
if [ "$device" = cuda ] && [ "$prebuild" = 0 ]; then
  "$py" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null ||
    die "$py's torch sees no GPU" "run with --cpu for the CPU-side self-test"
  note "GPU: $("$py" -c 'import torch; p = torch.cuda.get_device_properties(0); print(f"{p.name}, {p.total_memory / 2**30:.0f} GiB, {p.multi_processor_count} SMs")' || true)"
fi
note "LibTorch: $torch_dir"

# --- build against that LibTorch and the carried libraries ------------------------------------------------
# pkg-config: the carried pkgconf, reading only the carried .pc files, their paths under the carried root.
mkdir -p build-gpu
cat >build-gpu/pkg-config <<EOF
#!/bin/sh
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export PKG_CONFIG_LIBDIR="$deps/usr/lib/x86_64-linux-gnu/pkgconfig:$deps/usr/share/pkgconfig"
export PKG_CONFIG_SYSROOT_DIR="$deps"
exec "$deps/usr/bin/pkgconf" "\$@"
EOF
chmod +x build-gpu/pkg-config
t0=$SECONDS
cmake_args=(-DCMAKE_BUILD_TYPE=Release "-DCMAKE_PREFIX_PATH=$torch_dir;$deps/usr"
            "-DPKG_CONFIG_EXECUTABLE=$root/build-gpu/pkg-config")
# Self-test on a machine that has these libraries in /usr too: /usr is left out of CMake's search, so every
# library comes from the carried folder, as on the GPU machine (where /usr may hold the CUDA toolkit: kept there).
[ "$cpu" = 1 ] && cmake_args+=(-DCMAKE_IGNORE_PREFIX_PATH=/usr)
if [ "$build" = 0 ] && [ ! -x build-gpu/poslab ] && [ -x "$deps/../build/poslab" ]; then  # carried from prebuild
  cp "$deps"/../build/* build-gpu/
fi
if [ "$build" = 1 ] || [ ! -x build-gpu/poslab ]; then
  cmake -S . -B build-gpu "${cmake_args[@]}" >build-gpu/configure.log 2>&1 ||
    { tail -30 build-gpu/configure.log >&2; die "cmake could not configure the build (build-gpu/configure.log)"; }
  grep -m1 '^-- poslab: LibTorch' build-gpu/configure.log | sed 's/^-- //' >&2 || true
  cmake --build build-gpu -j"$(nproc)" >build-gpu/build.log 2>&1 ||
    { grep -m20 -B2 -A10 'error' build-gpu/build.log >&2 || true; die "the build failed (build-gpu/build.log)"; }
fi
# A carried build-gpu has this machine's paths in its RUNPATH: the carried libraries and this LibTorch's come first.
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:$torch_dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
note "build: $((SECONDS - t0)) s on $(nproc) cores; $(build-gpu/poslab --version)"
if [ "$prebuild" = 1 ]; then
  # The programs beside the libraries: .gpu-deps is then all there is to carry (build-gpu's objects are ~700 MB).
  mkdir -p "$deps/../build"
  cp build-gpu/poslab build-gpu/poslab_tests build-gpu/libposlab_spm.so "$deps/../build/"
  echo "gpu_check: built; $(du -sh "$deps/.." | cut -f1) in $(cd "$deps/.." && pwd) with the programs in its build/;" \
    "carry .gpu-deps and run there: bash scripts/gpu_check.sh --no-build" >&2
  exit 0
fi
libdir="$deps/usr/lib/x86_64-linux-gnu"  # the carried libraries are the ones loaded, not the machine's
ldd build-gpu/poslab >"$work/ldd" 2>&1 || true  # into a file: grep -q on a pipe can SIGPIPE ldd under pipefail
ldd build-gpu/libposlab_spm.so >>"$work/ldd" 2>&1 || true
for lib in spdlog fmt yaml-cpp sentencepiece; do
  grep -q "$libdir/lib$lib" "$work/ldd" || die "build-gpu loads lib$lib from outside $deps" "see ldd build-gpu/poslab"
done

# --- the parts, most wanted first, each within the time left ------------------------------------------------
# A part starts only with at least 20 s of the budget left (gpt2 60); each command runs under `timeout` to the deadline
# (SIGTERM: poslab train stops at the end of its step with a checkpoint and snapshot, as on Ctrl-C). A part the
# budget cut or left out is named in the summary; neither counts as a failure.
left() { if [ "$budget" = 0 ]; then echo 1000000; else echo $((budget - (SECONDS - t_start))); fi; }
within() {  # within CMD...: CMD, stopped at the deadline less $reserve seconds; 124 without running if none is left
  local l=$(( $(left) - ${reserve:-0} ))
  [ "$budget" = 0 ] && { "$@"; return; }
  [ "$l" -gt 0 ] || return 124
  timeout --preserve-status -k 20 -s TERM "$l" "$@"
}
# Whether the deadline (less $reserve) stopped the last command, to SECONDS' grain.
out_of_time() { [ "$(left)" -le $(( ${reserve:-0} + 2 )) ]; }
not_run=()
starts() {  # starts PART [SECONDS]: whether PART is asked for and the budget has SECONDS (20) for it (saying if not)
  [[ ",$parts," == *",$1,"* ]] || return 1
  if [ "$(left)" -lt "${2:-20}" ]; then
    note "$1: not run, the budget was spent (--budget $budget)"
    not_run+=("$1")
    return 1
  fi
}

# A run folder's steps, median tokens/s and first and last val loss, in one line.
run_summary() {
  "$py" - "$1" <<'PY' || echo "(metrics.jsonl unreadable)"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1] + "/metrics.jsonl") if l.strip()]
rates = [r["tokens_per_s"] for r in rows if "tokens_per_s" in r]
vals = [r for r in rows if "val_loss" in r]
line = f"{rows[-1]['step']} steps"
if rates:
    line += f", {sorted(rates)[len(rates) // 2]:.0f} tok/s (median of the logged intervals)"
if vals:
    line += f", val loss {vals[0]['val_loss']:.3f} -> {vals[-1]['val_loss']:.3f}"
print(line)
PY
}

# --- the CUDA cases (CTest's "cuda" test), by themselves, so that each is counted ----------------------------
if starts cases; then
  t0=$SECONDS
  cuda_log="build-gpu/cuda_cases.log"
  cases_rc=0
  POSLAB_TEST_TMP="$root/build-gpu/test-tmp" within build-gpu/poslab_tests --gtest_filter='*/cuda' >"$cuda_log" 2>&1 ||
    cases_rc=$?
  verdict=$(cases_verdict "$cases_rc" "$cpu")
  if [ "$verdict" = ok ]; then
    cases_rc=0
  elif [ "$cases_rc" = 77 ]; then
    note "  ${verdict#failed: }"
  fi
  cases_cut=no
  [ "$cases_rc" != 0 ] && out_of_time && cases_cut=yes  # the budget stopped them: not a failure of theirs
  [ "$cases_rc" != 0 ] && [ "$cases_cut" = no ] && tests_ok=NO
  cuda_cases=$(case_results "$cuda_log")
  echo "$cuda_cases" >&2
  reported=$(echo "$cuda_cases" | grep -c . || true)
  note "CUDA cases: $reported run, $(echo "$cuda_cases" | grep -c ' OK' || true) passed, $(echo "$cuda_cases" | grep -c ' SKIPPED' || true) skipped, $(echo "$cuda_cases" | grep -c ' FAILED' || true) failed ($((SECONDS - t0)) s)"
  while IFS= read -r name; do note "  failed: $name"; done < <(echo "$cuda_cases" | sed -n 's/ FAILED$//p')
  # A case that printed no result (the process died in it, or the deadline stopped it) is counted against those
  # the binary lists.
  listed=$(build-gpu/poslab_tests --gtest_list_tests --gtest_filter='*/cuda' 2>/dev/null | grep -c '^  ' || true)
  if [ "$listed" -ne "$reported" ]; then
    [ "$cases_cut" = no ] && tests_ok=NO
    note "  $((listed - reported)) of the $listed CUDA cases printed no result ($([ "$cases_cut" = yes ] && echo 'the budget ran out' || echo 'the test process ended early'))"
  fi
  if [ -n "${OUT:-}" ]; then cp "$cuda_log" "$OUT/cuda_cases.log"; fi  # every case's output, passed or not
fi

# --- the step as a CUDA graph (train.cuda_graph) against the eager step --------------------------------------
# poslab bench with the graph off and on, the default and the wide shape (bench_vs_pytorch.py's), float32 and bf16:
# tokens/s of each and whether every step's loss is the same bit for bit. Where every case runs, the comparison
# with PyTorch below runs poslab with the graph.
graph_ok=no
if [ "$cpu" = 1 ] && [[ ",$parts," == *",graph,"* ]]; then
  note "CUDA graph: not run (--cpu: a graph needs a GPU)"
elif starts graph; then
  graph_ok=yes
  t0=$SECONDS
  note "CUDA graph against the eager step (poslab bench, 30 timed steps):"
  for shape in default wide; do
    shape_sets=()
    [ "$shape" = wide ] && shape_sets=(--set model.n_layer=4 --set model.n_embd=256 --set model.block_size=256 --set train.batch_size=8)
    for dtype in float32 bfloat16; do
      out_of_time && continue
      for graph in false true; do
        # the same warm-up steps both ways (a graph's capture comes after its 3 eager steps, in the warm-up): the same
        # losses, one for each step, bit for bit
        within build-gpu/poslab bench configs/default.yaml --steps 30 --warmup 4 --json - --set run.device=cuda --set "train.dtype=$dtype" \
          "${shape_sets[@]}" --set "train.cuda_graph=$graph" >"$work/bench_$graph.json" 2>"$work/bench_$graph.log" ||
          { tail -5 "$work/bench_$graph.log" >&2; out_of_time || graph_ok=NO; }
      done
      if out_of_time; then
        note "  $shape $dtype: stopped by the budget"
        [ "$graph_ok" = NO ] || graph_ok=no  # a failure seen before stays one
        continue
      fi
      line=$("$py" - "$work/bench_false.json" "$work/bench_true.json" <<'PY' || echo "FAILED (see above)"
import json, sys
off, on = (json.load(open(p)) for p in sys.argv[1:])
same = "equal" if off["losses"] == on["losses"] else "DIFFER"
# the attention kernel chosen (kernel path sdpa) and each candidate's ms per forward + backward
k = off["kernel_paths"]
kernels = ", ".join(r["paths"].split("sdpa=")[-1] + (" cannot run" if "unavailable" in r else f" {r['ms']:.2f}")
                    for r in k["timings"])
print(f"eager {off['tokens_per_s']:.0f} tok/s, graph {on['tokens_per_s']:.0f} tok/s "
      f"({on['tokens_per_s'] / off['tokens_per_s']:.2f}x; {off['ms_per_step']:.2f} -> {on['ms_per_step']:.2f} ms a step); "
      f"losses {same}; attention {k['chosen'].split('sdpa=')[-1]} ({k.get('sdpa_kernel', '?')} kernel"
      f"{'; ms: ' + kernels if kernels else ''})")
PY
)
      note "  $shape $dtype: $line"
      case "$line" in *DIFFER*|FAILED*) graph_ok=NO ;; esac
    done
  done
  note "  ($((SECONDS - t0)) s)"
  [ "$graph_ok" = NO ] && tests_ok=NO
fi

# --- against PyTorch's Python on the same device ----------------------------------------------------------
# The goals' comparisons first: GPT-2 small's shape in bf16 against PyTorch eager and compiled (torch.compile's
# compilation takes minutes, outside the timed steps), then the default and wide shapes against eager. --cpu: the
# default config alone, 1 round, fewer steps.
if starts compare; then
  t0=$SECONDS
  cmp_args=(--poslab=build-gpu/poslab "--device=$device" --rounds=1)
  [ "$graph_ok" = yes ] && cmp_args+=(--poslab-set=train.cuda_graph=true)
  if [ "$cpu" = 1 ]; then
    comparisons=("--quick --only=default")
  else
    comparisons=("--only=gpt2 --dtype=bfloat16" "--only=default,wide --peers=eager")
  fi
  compare_ok=yes
  note "poslab vs PyTorch on $device:"
  for c in "${comparisons[@]}"; do
    if out_of_time; then note "  bench_vs_pytorch.py $c: not run, the budget was spent"; not_run+=("compare $c"); continue; fi
    # shellcheck disable=SC2086  # $c: the comparison's own arguments
    if ! within "$py" scripts/bench_vs_pytorch.py "${cmp_args[@]}" $c >"$work/compare.txt" 2>"$work/compare.log"; then
      if out_of_time; then
        note "  bench_vs_pytorch.py $c: stopped by the budget; what it measured:"
        while IFS= read -r line; do note "    $line"; done < <(grep -E ' tok/s' "$work/compare.log" | grep -v ' round ' || true)
      else
        compare_ok=NO
        tail -5 "$work/compare.log" >&2 || true
      fi
    fi
    while IFS= read -r line; do note "  $line"; done <"$work/compare.txt"
  done
  note "  ($((SECONDS - t0)) s; agree: $compare_ok)"
  [ "$compare_ok" = NO ] && tests_ok=NO
fi

# --- where GPT-2 small's step spends the GPU's time ---------------------------------------------------------
# poslab bench of configs/gpt2_small.yaml in bf16 under Kineto (--profile): every kernel the GPU ran in 3 steps, summed
# by kernel (scripts/profile_table.py), the table that says which of poslab's ops a fused CUDA kernel would pay for.
# The trace comes back gzipped as $OUT/gpt2_trace.json.gz (chrome://tracing, ui.perfetto.dev).
if [ "$cpu" = 1 ] && [[ ",$parts," == *",profile,"* ]]; then
  note "GPT-2 small's profile: not run (--cpu: one step takes minutes on a CPU)"
elif starts profile; then
  t0=$SECONDS
  if within build-gpu/poslab bench configs/gpt2_small.yaml --steps 3 --warmup 3 --set run.device=cuda --set train.dtype=bfloat16 \
       --profile "$work/gpt2_trace.json" >"$work/gpt2_profile.out" 2>"$work/gpt2_profile.log" &&
     "$py" scripts/profile_table.py "$work/gpt2_trace.json" 20 >"$work/gpt2_profile.txt"; then
    note "GPT-2 small's step on $device, bf16, by GPU kernel (3 steps under Kineto, $((SECONDS - t0)) s):"
    while IFS= read -r line; do note "  $line"; done < <(sed -n '/^GPU kernel/,$p' "$work/gpt2_profile.txt")
    if [ -n "${OUT:-}" ]; then
      cp "$work/gpt2_profile.txt" "$OUT/gpt2_profile.txt"
      gzip -c "$work/gpt2_trace.json" >"$OUT/gpt2_trace.json.gz"
    fi
  elif out_of_time; then
    note "GPT-2 small's profile on $device: stopped by the budget"
  else
    tail -5 "$work/gpt2_profile.log" >&2
    note "GPT-2 small's profile on $device: FAILED (see above)"
  fi
fi

# --- the default run on the device, then stopped halfway and resumed: the same run, bit for bit ---------------
# The default run again under another name, stopped at half its steps (--stop-at, as if interrupted) and resumed:
# its last table and logged losses must equal the uninterrupted run's exactly (one device, one thread count).
sets=(--set "run.device=$device" --set "data.corpus=$deps/usr/share/games/fortunes" --set "run.out_dir=$work"
      --set run.report=false --set "data.cache_dir=$work/cache")
[ -n "$steps" ] && sets+=(--set "train.max_steps=$steps")
[ "$cpu" = 0 ] && [ -z "$steps" ] && sets+=(--set train.max_steps=300)
[ "$cpu" = 1 ] && [ -z "$steps" ] && sets+=(--set train.max_steps=20 --set train.eval_every=10 --set train.eval_batches=2)
if starts resume; then
  t0=$SECONDS
  rc=0
  within build-gpu/poslab train configs/default.yaml "${sets[@]}" >"$work/train.out" 2>"$work/train.log" || rc=$?
  run_dir=$(head -1 "$work/train.out" 2>/dev/null || true)
  if [ "$rc" = 0 ]; then
    note "train configs/default.yaml on $device: $(run_summary "$run_dir"), $((SECONDS - t0)) s wall"
    # The verdict's paragraph (wrapped at 80 columns), as one line.
    verdict=$(within build-gpu/poslab analyze "$run_dir" 2>/dev/null |
      sed -n '/^verdict (/,/^  at steps/{/^  at steps/!p}' | tr '\n' ' ' | tr -s ' ' || true)
    [ -n "$verdict" ] && note "  $verdict"
    grep -m1 'device:' "$work/train.log" | sed 's/^[0-9:]* info /  /' >&2 || true
  elif out_of_time; then
    note "train configs/default.yaml on $device: stopped by the budget${run_dir:+ after $(run_summary "$run_dir")}; no resume compared"
    run_dir=""
  else
    tail -20 "$work/train.log" >&2
    note "train configs/default.yaml on $device: FAILED (see above)"
    tests_ok=NO
    run_dir=""
  fi
  if [ -n "$run_dir" ]; then
    t0=$SECONDS
    total=$("$py" -c 'import json,sys; print(max(json.loads(l)["step"] for l in open(sys.argv[1])))' "$run_dir/metrics.jsonl")
    half=$((total / 2))
    last=$(ls "$run_dir/snapshots" | grep '^wpe_step.*\.npy$' | sort | tail -1)
    losses() { grep -o '"loss":[^,]*' "$1/metrics.jsonl"; }
    if within build-gpu/poslab train configs/default.yaml "${sets[@]}" --set run.name=resumed --stop-at "$half" \
         >/dev/null 2>"$work/resumed.log" &&
       within build-gpu/poslab train --resume "$work/resumed" >/dev/null 2>>"$work/resumed.log"; then
      if cmp -s "$run_dir/snapshots/$last" "$work/resumed/snapshots/$last" &&
         [ "$(losses "$run_dir")" = "$(losses "$work/resumed")" ]; then
        note "stopped at step $half of $total and resumed on $device: the last table ($last) and every logged loss equal the uninterrupted run's, bit for bit ($((SECONDS - t0)) s)"
      else
        note "stopped at step $half of $total and resumed on $device: DIFFERS from the uninterrupted run"
        tests_ok=NO
      fi
    elif out_of_time; then
      note "stopped and resumed on $device: stopped by the budget before the resumed run ended"
    else
      tail -20 "$work/resumed.log" >&2
      note "stopped and resumed on $device: FAILED (see above)"
      tests_ok=NO
    fi
  fi
fi

# --- GPT-2 small's shape, for what the budget leaves ---------------------------------------------------------
# configs/gpt2_small.yaml: 12 layers of 768 channels, 1,024 positions. On the GPU up to --gpt2-steps steps, stopped
# 30 s before the deadline (with its checkpoint and last snapshot) to leave time for its analysis; with --cpu two
# steps of a batch of 2, to check that the config trains at all.
[ "$cpu" = 1 ] && gpt2_steps=2
gpt2_sets=(--set "run.device=$device" --set "data.corpus=$deps/usr/share/games/fortunes" --set "run.out_dir=$work"
           --set run.report=false --set "data.cache_dir=$work/cache" --set train.eval_every=100 --set train.eval_batches=4
           --set snapshot.every=100 --set "train.max_steps=$gpt2_steps")
[ "$cpu" = 1 ] && gpt2_sets+=(--set train.batch_size=2 --set train.eval_every=2 --set train.eval_batches=1)
if starts gpt2 60; then  # 30 s of them are kept for its analysis
  t0=$SECONDS
  rc=0
  reserve=30 within build-gpu/poslab train configs/gpt2_small.yaml "${gpt2_sets[@]}" >"$work/gpt2.out" 2>"$work/gpt2.log" ||
    rc=$?
  gpt2_dir=$(head -1 "$work/gpt2.out" 2>/dev/null || true)
  if [ -n "$gpt2_dir" ] && { [ "$rc" = 0 ] || reserve=30 out_of_time; }; then
    how=""; [ "$rc" != 0 ] && how=" (stopped by the budget)"
    note "train configs/gpt2_small.yaml on $device: $(run_summary "$gpt2_dir")$how, $((SECONDS - t0)) s wall"
    while IFS= read -r line; do note "  $line"; done < <(within build-gpu/poslab analyze "$gpt2_dir" 2>/dev/null | tail -4 || true)
  elif reserve=30 out_of_time; then
    note "train configs/gpt2_small.yaml on $device: stopped by the budget before its first step ended"
  else
    tail -20 "$work/gpt2.log" >&2
    note "train configs/gpt2_small.yaml on $device: FAILED (see above)"
    tests_ok=NO
  fi
fi

# --- the unit tests' CPU cases and the shell tests -----------------------------------------------------------
# CI runs these against the same LibTorch version; on a GPU they run only when asked (--parts ...,tests). Tests that
# need a program or file the machine may lack are left to CI there (each named in the summary): the figures' gnuplot
# (the report, the table atlas, a run's ending and a sweep's comparison, the CLI tests, the full disk's resumed
# report), Debian's chromium (the watch page), the default corpus in /usr/share/games/fortunes (the CLI's and its
# faults' runs of configs/default.yaml) and torchrun.
if [ "$cpu" = 0 ] && [[ ",$parts," != *",tests,"* ]]; then
  note "CPU tests: left to CI (--parts ...,tests runs them here)"
elif starts tests; then
  t0=$SECONDS
  ctest_log="build-gpu/ctest.log"
  exclude='^cuda$'
  command -v gnuplot >/dev/null ||
    exclude="$exclude|^Report\$|^TableAtlas\$|^cli_models\$|^RunEnding\$|^SweepTest\$|^disk_full\$|^cli\$"
  command -v chromium >/dev/null || exclude="$exclude|^watch_page\$"
  [ -d /usr/share/games/fortunes ] || exclude="$exclude|^cli\$|^cli_faults\$"
  command -v torchrun >/dev/null || exclude="$exclude|^torchrun\$"
  units_ok=yes
  if ! grep -qF "$root" build-gpu/CTestTestfile.cmake 2>/dev/null; then
    # A build carried from another folder: its CTest files name that folder. The test program runs by itself (its
    # CPU cases), the shell tests are left to CI.
    exclude="the shell tests (build-gpu was built in another folder)"
    units_rc=0
    POSLAB_TEST_TMP="$root/build-gpu/test-tmp" within build-gpu/poslab_tests --gtest_filter='-*/cuda' >"$ctest_log" 2>&1 ||
      units_rc=$?
    [ "$units_rc" = 0 ] || units_ok=NO  # 77 too: every CPU case skipped is no pass
    echo "$(grep -cE '^\[       OK \]' "$ctest_log" || true) tests passed, $(grep -cE '^\[  FAILED  \].*ms\)$' "$ctest_log" || true) failed (poslab_tests)" >>"$ctest_log"
  elif ! within ctest --test-dir build-gpu -E "$exclude" -j"$(( $(nproc) > 8 ? 8 : $(nproc) ))" --timeout 600 --output-on-failure >"$ctest_log" 2>&1; then
    units_ok=NO
    grep -E '\*\*\*(Failed|Exception)|Failure' "$ctest_log" | head -20 >&2 || true
  fi
  note "CPU tests: $(grep -E 'tests passed' "$ctest_log" | tail -1 || true) in $((SECONDS - t0)) s; left out: $exclude"
  if [ "$units_ok" = NO ]; then
    if out_of_time; then
      note "  stopped by the budget"
    else
      tests_ok=NO
      # the failed tests by name ("  12 - Trainer (Failed)"), and their whole output beside the summary
      if [ "${units_rc:-}" = 77 ]; then
        note "  every CPU case skipped (exit 77): the carried build's tests ran nothing"
      else
        note "  failed: $( { sed -n 's/^[[:space:]]*[0-9]* - \([^ ]*\) (.*)$/\1/p' "$ctest_log"
                           sed -nE 's/^\[  FAILED  \] ([^ ,]+).* ms\)$/\1/p' "$ctest_log"; } | sort -u | tr '\n' ' ')"
      fi
      if [ -n "${OUT:-}" ]; then cp "$ctest_log" "$OUT/ctest.log"; note "  their output: \$OUT/ctest.log"; fi
    fi
  fi
fi

note "total: $((SECONDS - t_start)) s$([ "$budget" != 0 ] && echo " of a budget of $budget s"); tests $tests_ok$([ ${#not_run[@]} -gt 0 ] && echo "; not run for time: ${not_run[*]}")"
printf '%s\n' "" "=== gpu_check summary ===" "${summary[@]}"
[ "$tests_ok" = yes ]
