#!/usr/bin/env bash
# The poslab binary end to end: bad input gives one "error:" line and a non-zero exit; a short run of the
# real default config works with --set overrides. Usage: test_cli.sh PATH/TO/poslab SOURCE_DIR
set -u
poslab=$1
src=$2
# shellcheck source=tests/cli/lib.sh
source "$(dirname "$0")/lib.sh"

cd "$src"
# What this test needs beyond the repository: the packages scripts/setup.sh installs. Missing ones fail the test.
missing=""
[ -d /usr/share/games/fortunes ] || missing="$missing fortunes (/usr/share/games/fortunes, the default corpus)"
command -v gnuplot >/dev/null || missing="$missing gnuplot-nox (gnuplot, the report's figures)"
command -v strace >/dev/null || missing="$missing strace (the count of the program's starts)"
command -v script >/dev/null || missing="$missing script (util-linux: a terminal for sample)"
if [ -n "$missing" ]; then
  echo "FAIL cli: missing$missing; install them with bash scripts/setup.sh"
  echo "cli: 0 passed, 1 failed"
  exit 1
fi
# --version names poslab's version and commit, the LibTorch it was built with (and the GPU, in a CUDA build) and the BLAS it runs. poslab answers
# OpenBLAS's getenv with its variables (src/util/platform.cpp): with AVX2 the OpenBLAS of Debian's build must show the
# core type poslab chose, with the variables unset, and the program must start once (strace counts its execve calls:
# re-executing itself to set them cost a second start of LibTorch).
if env -u OPENBLAS_CORETYPE -u OPENBLAS_NUM_THREADS -u POSLAB_NO_REEXEC \
     strace -f -qq -e trace=execve -o "$tmp/execs" "$poslab" --version >"$tmp/out" 2>"$tmp/err" &&
   [ "$(grep -c 'execve(' "$tmp/execs")" = 1 ] &&
   grep -Eq "^poslab [0-9]+\.[0-9]+\.[0-9]+ \((commit [0-9a-f]{12}( with uncommitted changes)?|not built from a git checkout|commit unknown: .*)\)$" \
     "$tmp/out" &&
   grep -Eq "^built with LibTorch [0-9]+\.[0-9]+\.[0-9]+.* (\(CPU only\)|with CUDA [0-9]+\.[0-9]+; GPU: )" "$tmp/out" &&
   grep -Eq "^BLAS: " "$tmp/out" &&
   { ! grep -q "^BLAS: OpenBLAS" "$tmp/out" || ! grep -qw avx2 /proc/cpuinfo ||
     grep -Eq "^BLAS: OpenBLAS core (Haswell|SkylakeX) .*, OPENBLAS_CORETYPE=(Haswell|SkylakeX)" "$tmp/out"; }; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL --version"; cat "$tmp/out" "$tmp/err" "$tmp/execs"
fi
expect_error "missing config" "^error: config: nonexistent.yaml: no such file$" train nonexistent.yaml
grep -q "^hint: check the path; a relative one is read from the folder poslab runs in ($PWD)$" "$tmp/err" &&
  passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL missing config: the hint"; cat "$tmp/err"; }
# A path of the wrong kind says which kind was wanted.
expect_error "a folder as the config" "^error: config: $tmp: a folder, not a file$" train "$tmp"
expect_error "a file to resume" "^error: --resume: configs/default.yaml: a file, not a folder$" \
  train --resume configs/default.yaml
expect_error "compare of nothing" "^error: inputs: $tmp/nosuch: no such file or folder$" compare "$tmp/nosuch"
# A slip of a name in its folder is named; a checkpoint given for a run folder names the run folder.
expect_error "a config's name mistyped" "^error: config: configs/defualt.yaml: no such file; did you mean configs/default.yaml\?$" \
  train configs/defualt.yaml
mkdir -p "$tmp/run-a/checkpoints" && : >"$tmp/run-a/checkpoints/latest.pt"
expect_error "a checkpoint to resume" "^error: --resume: $tmp/run-a/checkpoints/latest.pt: a checkpoint, not a run folder: pass the run folder, $tmp/run-a$" \
  train --resume "$tmp/run-a/checkpoints/latest.pt"
expect_error "unknown key" "^error: --set: unknown config key 'train.lrate'" train configs/default.yaml --set train.lrate=1
expect_error "wrong type" "^error: --set: train.lr = fast: expected finite number" train configs/default.yaml --set train.lr=fast
# The README's example of a bad input (docs/cli.md shows it too): the program prints these two lines word for word,
# and both pages show them, so the docs and the program cannot drift apart.
impossible_error="error: --set: model.n_head = 3: must divide model.n_embd (128, poslab's default)"
impossible_hint='hint: change model.n_head in --set'
"$poslab" train configs/default.yaml --set model.n_head=3 >"$tmp/out" 2>"$tmp/err"
rc=$?
missing_from=""
for f in stderr README.md docs/cli.md; do
  file=$f; [ "$f" = stderr ] && file=$tmp/err
  { grep -Fxq -e "$impossible_error" "$file" && grep -Fxq -e "$impossible_hint" "$file"; } || missing_from="$missing_from $f"
done
if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && [ -z "$missing_from" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL impossible value: exit $rc; these lines are missing from:$missing_from"
  printf '  %s\n' "$impossible_error" "$impossible_hint"; echo "stderr:"; cat "$tmp/err"
fi
expect_error "missing corpus" "^error: --set: data.corpus: $tmp/no-such-dir: corpus path not found" \
  train configs/default.yaml --set "data.corpus=$tmp/no-such-dir" --set "run.out_dir=$tmp/runs"
if [ -e "$tmp/runs/default" ]; then  # stopped before the run folder was made
  failed=$((failed + 1)); echo "FAIL missing corpus: $tmp/runs/default was made"
else
  passed=$((passed + 1))
fi
# a relative path is read from the current folder, and the error says which folder that was
expect_error "missing corpus, a relative path" "^error: --set: data.corpus: no-such-dir/x.txt: corpus path not found in the current folder $(pwd -P)$" \
  train configs/default.yaml --set "data.corpus=no-such-dir/x.txt" --set "run.out_dir=$tmp/runs"
grep -q "^hint: relative paths are read from the folder poslab runs in" "$tmp/err" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL missing corpus, a relative path: the hint"; cat "$tmp/err"; }
expect_error "resume of a folder that is no run" "^error: --resume $tmp: not a run folder \\(it holds no config.yaml and no checkpoints/latest.pt\\)$" train --resume "$tmp"
expect_error "config and resume" "^error: .*not both" train configs/default.yaml --resume "$tmp"
# A bad option value: the hint names the command's own help.
expect_error "a bad option's hint names its command" "^hint: poslab help analyze lists its options$" \
  analyze tests/fixtures/planted_helix_96x24.npy --top-pcs 0
# A mistyped option is named as typed, with the options it is a slip of; words a command does not take, in order.
expect_error "a mistyped option" "^error: poslab train: no option --sett$" \
  train configs/default.yaml --sett train.max_steps=5
grep -q "^hint: did you mean --set? poslab help train lists its options$" "$tmp/err" && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL a mistyped option's hint"; cat "$tmp/err"; }
expect_error "a mistyped option before the command" "^hint: did you mean --version\\? poslab help lists" --versio
expect_error "an option of no likeness" "^hint: poslab help compare lists its options$" compare --frobnicate
expect_error "no command" "^error: poslab: name a command \(train, analyze, report, …\)$"
expect_error "an option given twice" "^error: --tokens: given more than once \(it takes one value\)$" sample x --tokens=3 --tokens=4
expect_error "words a command does not take" "^error: poslab train: unexpected arguments 'one two'$" \
  train configs/default.yaml one two
expect_error "a value of the wrong kind" "^error: --top-pcs: must be a whole number above 0, not '2.5'$" \
  analyze tests/fixtures/planted_helix_96x24.npy --top-pcs 2.5
expect_error "a word for a whole number" "^error: --shift: must be a whole number, not 'a'$" eval "$tmp" --shift a
expect_error "a lone dash is no option" "^error: poslab train: unexpected argument '-'$" train configs/default.yaml -
expect_error "a mistyped option where an argument is missing" "^error: poslab eval: no option --hlep$" eval --hlep
expect_error "a mistyped option whose value was read as the argument" "^error: poslab train: no option --stopat$" \
  train --stopat 5
# its hint names the options, not the path the value was read as
grep -q "^hint: did you mean --stop-at? poslab help train lists its options$" "$tmp/err" && ! grep -q "check the path" "$tmp/err" &&
  passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL the --stopat hint"; cat "$tmp/err"; }
expect_error "a hexadecimal start row" "^error: --shift: write 0x10 as a decimal number$" eval "$tmp/none.pt" --shift 0,0x10
expect_error "an option before the command is poslab's" "^error: poslab: no option --bogus$" --bogus train configs/default.yaml
expect_error "a value missing, beside a word too many: the value first" "^error: --resume: 1 required" \
  train configs/default.yaml extra --resume
# An output's folder is made when the output is written, not when it is checked: a failed command leaves none.
expect_error "analyze of no file, with --json into a new folder" "^error: nope.npy: not found" \
  analyze nope.npy --json "$tmp/never/a.json"
[ ! -e "$tmp/never" ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL a failed analyze made $tmp/never"; }
# Nothing to train from: an error, not a run of the built-in defaults.
expect_error "train without a config" "^error: train: name a config, --resume RUN_DIR or --init-from CHECKPOINT$" \
  train --set "run.out_dir=$tmp/noconfig"
[ ! -e "$tmp/noconfig" ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL train without a config wrote $tmp/noconfig"; }
expect_error "no subcommand" "^error: " 
expect_error "unknown subcommand" "^error: unknown command 'frob'" frob configs/default.yaml
# "poslab help" is --help; "poslab help train" is train's --help.
if "$poslab" help >"$tmp/out" 2>&1 && grep -q "^Subcommands:" "$tmp/out" && grep -q "^  compare" "$tmp/out" &&
   "$poslab" help train >"$tmp/out" 2>&1 && grep -q "^Usage: .*train" "$tmp/out" && grep -q -- "--resume" "$tmp/out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL poslab help"; cat "$tmp/out"
fi
expect_error "help for an unknown command" "^error: unknown command 'frob'" help frob
expect_error "help with words after its command" "^error: poslab help: one command at most, not 'extra' after train$" help train extra
# Every command's help reads on an 80-column terminal (where it is not a terminal too): no line wider, each value
# named for what it is with its default after the description, not CLI11's "INT:NUMBER > 0=20".
help_faults=""
for command in "" train config bench analyze report inspect sample eval extend export sweep compare; do
  # shellcheck disable=SC2086 # no command: poslab's own help
  "$poslab" $command --help >"$tmp/out" 2>&1 || help_faults="$help_faults; $command: exit $?"
  width=$(LC_ALL=C.UTF-8 wc -L <"$tmp/out")
  [ "$width" -le 80 ] || help_faults="$help_faults; ${command:-poslab}: a line of $width columns"
  # The options' column: a type (INT, UINT, FLOAT), a check's name (:FILE, NUMBER > 0) or =DEFAULT is CLI11's.
  cli11=$(cut -c1-28 "$tmp/out" | grep -E "^  [-a-z]" | grep -E "\<(INT|UINT|FLOAT)\>|NUMBER [<>]|:(FILE|DIR|PATH|SEED|NUMBER|\{)|=[0-9a-z]" |
    head -1)
  [ -z "$cli11" ] || help_faults="$help_faults; ${command:-poslab}: CLI11's type text: $cli11"
done
"$poslab" bench --help >"$tmp/out" 2>&1
grep -Eq "^  --steps N +timed steps \(default: 20\)$" "$tmp/out" || help_faults="$help_faults; bench: no '--steps N ... (default: 20)'"
grep -Eq "^  config FILE +YAML config \(keys it leaves out keep their$" "$tmp/out" || help_faults="$help_faults; bench: no 'config FILE'"
"$poslab" eval --help >"$tmp/out" 2>&1
grep -Eq "^  --device \{auto,cpu,cuda\} +auto" "$tmp/out" || help_faults="$help_faults; eval: no '--device {auto,cpu,cuda}'"
if [ -z "$help_faults" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL every command's help at 80 columns${help_faults}"
fi
expect_error "a run name that leaves run.out_dir" "^error: --set: run.name = '../escaped': must be one folder name" \
  train configs/default.yaml --set run.name=../escaped --set "run.out_dir=$tmp/runs"
expect_error "config refuses the run name train refuses" "^error: --set: run.name = '..': must be one folder name" \
  config configs/default.yaml --set run.name=..
expect_error "a count below 0" "^error: --tokens: must be a number 0 or above, not '-1'" sample "$tmp/none.pt" --tokens -1
expect_error "a count too large for its type" "^error: --tokens: 99999999999 is too large \(at most 2147483647\)$" \
  sample "$tmp/none.pt" --tokens 99999999999
expect_error "a leading 0 (octal to CLI11)" "^error: --tokens: write 08 without its leading 0 \(a whole number with one reads as octal\)$" \
  sample "$tmp/none.pt" --tokens 08
expect_error "a leading 0 that octal reads (010 = 8)" "^error: --steps: write 010 without its leading 0" bench --steps 010
expect_error "a start row with a leading 0" "^error: --shift: write 010 without its leading 0" eval "$tmp/none.pt" --shift 0,010
expect_error "no start row" "^error: --shift: expected start rows, e.g. --shift 0,16,64" eval "$tmp/none.pt" --shift ""
expect_error "a signed number with a leading 0" "^error: --positions: write \+010 without its leading 0" \
  analyze --synthetic random --positions +010
expect_error "a seed with a leading 0" "^error: --seed: write 07 without its leading 0" sample "$tmp/none.pt" --seed 07
expect_error "a hexadecimal number" "^error: --smooth-z: write 0x10 as a decimal number$" \
  analyze --synthetic random --smooth-z 0x10
expect_error "a hexadecimal share" "^error: --min-signal-share: write 0x0.8p0 as a decimal number$" \
  analyze --synthetic random --min-signal-share 0x0.8p0
expect_error "a seed below 0" "^error: --seed: must be a whole number from 0 to 9223372036854775807, not '-1'" \
  sample "$tmp/none.pt" --seed -1
expect_error "a seed too large" "^error: --seed: must be a whole number .*, not '99999999999999999999'" \
  extend "$tmp/none.pt" --to 8 --seed 99999999999999999999
# at the edge of the seed's range: the largest int64 is a seed (the error is the missing checkpoint's), one more is not
expect_error "a seed one past the largest" "^error: --seed: must be a whole number .*, not '9223372036854775808'" \
  sample "$tmp/none.pt" --seed 9223372036854775808
expect_error "the largest seed" "^error: .*none.pt: checkpoint not found" sample "$tmp/none.pt" --seed 9223372036854775807
expect_error "a share that is not a number" "^error: --min-signal-share: must be a number from 0 to 1, not 'nan'" \
  analyze "$tmp/none" --min-signal-share nan
expect_error "a share below 0" "^error: --min-signal-share: must be a number from 0 to 1, not '-0.1'" \
  analyze "$tmp/none" --min-signal-share -0.1
expect_error "a count past int64" "^error: --tokens: 99999999999999999999 is too large$" \
  sample "$tmp/none.pt" --tokens 99999999999999999999
expect_error "a count that is not a number" "^error: --batches: must be a number above 0, not 'abc'" eval "$tmp/none.pt" --batches abc
printf 'base: %s/configs/default.yaml\nseeds: [1]\ngrid: {model.n_layers: [1, 2]}\n' "$src" >"$tmp/bad_sweep.yaml"
expect_error "sweep with an unknown config key" "^error: .*bad_sweep.yaml: variant n_layers-1: .*model.n_layers" \
  sweep "$tmp/bad_sweep.yaml"
expect_error "compare without runs" "^error: .*configs: neither a run folder" compare configs
WORLD_SIZE=2 RANK=0 MASTER_ADDR=127.0.0.1 expect_error "nproc under a launcher" "^rank 0: error: --nproc 2 inside a process that a launcher already started" \
  train configs/default.yaml --nproc 2
expect_error "nproc that does not divide the batch" "^error: train.batch_size = 32 does not divide among 3 processes" \
  train configs/default.yaml --nproc 3
printf 'tiny\n' >"$tmp/tiny.txt"
expect_error "corpus too small" "tokens split into .* block_size \+ 1" \
  train configs/default.yaml --set "data.corpus=$tmp/tiny.txt" --set data.tokenizer.type=char --set "run.out_dir=$tmp/runs"


# config prints the effective config; bench prints its figures as JSON.
if "$poslab" config configs/default.yaml --set model.n_layer=2 >"$tmp/out" 2>"$tmp/err" &&
   grep -q "^  n_layer: 2$" "$tmp/out" && grep -q "^  block_size: 128$" "$tmp/out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL config"; cat "$tmp/out" "$tmp/err"
fi
# and says what train would refuse of the paths the config names, the config still shown
if "$poslab" config configs/default.yaml --set "data.corpus=$tmp/nope.txt" --set "train.init_from=$tmp/nope.pt" \
     >"$tmp/out" 2>"$tmp/err" && grep -q "^  init_from: $tmp/nope.pt$" "$tmp/out" &&
   grep -q "warning --set: data.corpus: $tmp/nope.txt: corpus path not found (fix data.corpus: list existing files or folders); poslab train would stop there" "$tmp/err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL config of a missing corpus"; cat "$tmp/out" "$tmp/err"
fi
# and says, as train does, a key set that the config never reads (the YAML still printed)
if "$poslab" config configs/default.yaml --set model.position=sinusoidal --set model.wpe_init_std=0.1 \
     >"$tmp/out" 2>"$tmp/err" && grep -q "^  wpe_init_std: 0.1$" "$tmp/out" &&
   grep -q "warning.*--set: model.wpe_init_std = 0.1 is not read: it draws a learned table's start, and model.position is sinusoidal" "$tmp/err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL config's unread key"; cat "$tmp/err"
fi
if "$poslab" bench configs/default.yaml --steps 1 --warmup 0 --set model.n_layer=1 --json - >"$tmp/b.json" 2>"$tmp/err" &&
   grep -q '"tokens_per_s"' "$tmp/b.json" && grep -q '"mfu"' "$tmp/b.json" && grep -q "ms/step" "$tmp/err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL bench"; cat "$tmp/err"
fi
# bench --profile writes LibTorch's trace of the timed steps and scripts/profile_table.py sums it by op; a trace
# from a GPU also holds the GPU's kernels (Kineto's "kernel" events), summed in a table of their own: two of that
# form are added to this CPU's trace to check that table. A trace that cannot be written is an error up front.
if "$poslab" bench configs/default.yaml --steps 1 --warmup 0 --set model.n_layer=1 --profile "$tmp/trace.json" \
     >/dev/null 2>"$tmp/err" &&
   python3 scripts/profile_table.py "$tmp/trace.json" 5 >"$tmp/table" 2>>"$tmp/err" &&
   grep -Eq "^aten::(mm|addmm) +[0-9.]+ +[0-9.]+% " "$tmp/table" && grep -Eq "^total +[0-9.]+$" "$tmp/table" &&
   ! grep -q "GPU kernel" "$tmp/table" &&
   python3 - "$tmp/trace.json" "$tmp/gpu.json" <<'EOF' &&
import json, sys
trace = json.load(open(sys.argv[1]))
events = trace["traceEvents"] if isinstance(trace, dict) else trace
t0 = min(float(e["ts"]) for e in events if e.get("ph") == "X")
gelu = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&)>"
for i, (name, dur) in enumerate([(gelu, 30), ("sm90_xmma_gemm_bf16bf16_bf16f32", 70), (gelu, 30)]):
    events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": t0 + 100 * i, "dur": dur})
    # the host's CUDA API calls and the final wait: not ops
    events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1,
                   "ts": t0 - 50 + 5 * i, "dur": 3})
events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "pid": 1, "tid": 1, "ts": t0 - 30,
               "dur": 9e6})
json.dump(trace, open(sys.argv[2], "w"))
EOF
   python3 scripts/profile_table.py "$tmp/gpu.json" 5 >"$tmp/gtable" 2>>"$tmp/err" &&
   grep -Eq "^vectorized_elementwise_kernel<4, GeluCUDAKernelImpl\(TensorIteratorBase&\)> +0\.06 +46\.2% +2$" "$tmp/gtable" &&
   grep -Eq "^sm90_xmma_gemm_bf16bf16_bf16f32 +0\.07 +53\.8% +1$" "$tmp/gtable" &&
   grep -Eq "^total kernel time +0\.13$" "$tmp/gtable" &&
   [ "$(grep -c "^aten::" "$tmp/gtable")" = "$(grep -c "^aten::" "$tmp/table")" ] &&
   ! grep -q "^cuda" "$tmp/gtable" && [ "$(grep "^total " "$tmp/gtable" | head -1)" = "$(grep "^total " "$tmp/table")" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL bench --profile"; cat "$tmp/err" "$tmp/table" "$tmp/gtable" 2>/dev/null
fi
expect_error "bench --profile into a folder that is a file" \
  "^error: --profile $tmp/table/trace.json: cannot be written there \\($tmp/table is a file\\)" \
  bench configs/default.yaml --steps 1 --profile "$tmp/table/trace.json"
expect_error "bench --profile given a folder" "^error: --profile $tmp/: is a folder, not a file" \
  bench configs/default.yaml --steps 1 --profile "$tmp/"
# bench's outputs apart: one file for --json and --profile, either in the --export folder, a trace to stdout.
expect_error "bench --json and --profile one file" \
  "^error: --json $tmp/both.json and --profile $tmp/./both.json: one file for two outputs$" \
  bench configs/default.yaml --steps 1 --json "$tmp/both.json" --profile "$tmp/./both.json"
expect_error "bench --json in its --export folder" \
  "^error: --json $tmp/bx/batches.npy: is in the --export folder $tmp/bx/, which the export fills with files of its own$" \
  bench configs/default.yaml --steps 1 --export "$tmp/bx/" --json "$tmp/bx/batches.npy"
expect_error "bench --profile -" "^error: --profile -: the trace is a file" bench configs/default.yaml --steps 1 --profile -
[ ! -e "$tmp/both.json" ] && [ ! -e "$tmp/bx" ] && [ ! -e ./- ] && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL a refused bench wrote a file"; }
# bench measures the kernel paths when nothing forces them (the tests' environment does), shows each candidate's
# time, and a second bench of the same shape reads the measurement from the cache.
small=(--steps 1 --warmup 0 --set model.n_layer=1 --set model.n_embd=64 --set model.block_size=64 --set "data.cache_dir=$tmp/kcache")
# bf16_products is among the paths a bfloat16 run names, not a float32 one's (train.dtype auto: by the CPU)
k1_products() { python3 -c 'import json, sys; print("bf16_products=[a-z]+," if json.load(open(sys.argv[1]))["config"]["dtype"] == "bfloat16" else "")' "$tmp/k1.json"; }
if env -u POSLAB_KERNELS "$poslab" bench configs/default.yaml "${small[@]}" --json "$tmp/k1.json" >"$tmp/out" 2>"$tmp/err" &&
   cat "$tmp/out" "$tmp/err" >"$tmp/k1.txt" &&
   grep -A1 "^kernel paths (measured in [0-9.]* s):$" "$tmp/k1.txt" |
     grep -Eq "^  $(k1_products)attention=[a-z]+,pointwise=[a-z]+,batch_split=[a-z]+,step=[a-z]+,sdpa=[a-z]+$" &&
   grep -q "^kernel paths, ms per forward + backward:" "$tmp/k1.txt" &&
   grep -q "kernel paths: measuring which run fastest for this model here (once for its shape, threads and machine: kept in $tmp/kcache/kernel_paths.json; run.kernels=default skips it)$" "$tmp/err" &&
   [ "$(grep -c "vs chosen$" "$tmp/k1.txt")" = 1 ] &&  # in the report, not again in the log
   [ "$(grep -Ec "^  [a-z0-9_ ]+ +[0-9]+\.[0-9]{2}[* ] +([+-][0-9]+ %|chosen)$" "$tmp/k1.txt")" -ge 6 ] &&
   grep -Eq "[0-9][* ] +chosen$" "$tmp/k1.txt" && grep -q '"timings"' "$tmp/k1.json" &&
   env -u POSLAB_KERNELS "$poslab" bench configs/default.yaml "${small[@]}" >"$tmp/out" 2>"$tmp/err" &&
   unwrapped "$tmp/out" | grep -q " kernel paths (cached on [0-9-]* in $tmp/kcache/kernel_paths.json): "; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL bench measures the kernel paths"; cat "$tmp/out" "$tmp/err"
fi
POSLAB_KERNELS=attention=warp "$poslab" bench configs/default.yaml --steps 1 >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -q '^error: POSLAB_KERNELS = attention=warp: attention has no candidate "warp"' "$tmp/err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL a bad POSLAB_KERNELS is named"; cat "$tmp/err"
fi
# train names it before its run folder is made
POSLAB_KERNELS=attention=warp "$poslab" train configs/default.yaml --set "run.out_dir=$tmp/kruns" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && grep -q '^error: POSLAB_KERNELS = attention=warp: ' "$tmp/err" &&
   [ ! -e "$tmp/kruns" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL train: a bad POSLAB_KERNELS before the run folder"; cat "$tmp/err"; ls -R "$tmp/kruns"
fi
# and with --nproc, once, before any worker starts
POSLAB_KERNELS=attention=warp "$poslab" train configs/default.yaml --nproc 2 --set "run.out_dir=$tmp/kruns" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] && [ "$(grep -c '^error: POSLAB_KERNELS = attention=warp: ' "$tmp/err")" = 1 ] &&
   [ ! -e "$tmp/kruns" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL train --nproc: a bad POSLAB_KERNELS once, before the workers"; cat "$tmp/err"
fi
expect_error "a bad run.kernels" '^error: .*run.kernels = fastest: "fastest" is not NAME=VALUE' \
  config configs/default.yaml --set run.kernels=fastest

# analyze: synthetic tables, JSON on stdout, the GPT-2 table (tests/fixtures), bad inputs.
if "$poslab" analyze --synthetic handbook --positions 64 --dim 32 --json - >"$tmp/a.json" 2>"$tmp/err" &&
   grep -q '"k90_uncentered"' "$tmp/a.json" && grep -q '"sinusoid_r2"' "$tmp/a.json" && grep -q "spectrum" "$tmp/err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL analyze --synthetic --json -"; cat "$tmp/err"
fi
# --json into a folder that is not there yet: made, as the commands make the folders they write
if "$poslab" analyze --synthetic random --positions 16 --dim 8 --json "$tmp/new/deeper/a.json" >/dev/null 2>"$tmp/err" &&
   grep -q '"sinusoid_r2"' "$tmp/new/deeper/a.json"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL analyze --json into a missing folder"; cat "$tmp/err"
fi
# The analysis options each reach the analysis: the synthetic table's scale (row norms of std √dim), the top PCs and
# sinusoid frequencies counted, every boundary row an outlier at a tiny |z|, the three baselines beside the table.
if "$poslab" analyze --synthetic random --positions 64 --dim 16 --std 0.5 --top-pcs 5 --sinusoid-k 3 --outlier-z 1e-9 \
     --baselines --json "$tmp/options.json" >/dev/null 2>"$tmp/err" &&
   python3 -c 'import json, sys; j = json.load(open(sys.argv[1]))
sys.exit(not (1.8 < j["mean_row_norm"] < 2.2 and len(j["pc_frequencies"]) == 5 and j["sinusoid_k"] == 3 and
              len(j["boundary_outliers"]) == len(j["boundary"]) == 6 and
              sorted(j["baselines"]) == ["handbook", "random", "sinusoidal", "walk"]))' "$tmp/options.json"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL analyze's options"; cat "$tmp/err"
fi
# a table of one column has no plane of two components: its report says so in that figure (gnuplot had no data)
if "$poslab" report --synthetic random --positions 16 --dim 1 --out "$tmp/one_column" >"$tmp/out" 2>"$tmp/err" &&
   [ -s "$tmp/one_column/helix.png" ] && grep -q "fewer than two principal components" "$tmp/one_column/index.html"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL report of a one-column table"; cat "$tmp/err"
fi
expect_error "analyze a zero-sized synthetic table" "^error: --dim: must be a number above 0, not '0'" analyze --synthetic random --dim 0
if "$poslab" analyze tests/fixtures/gpt2_wpe_rows0-63.npy --rows 1:64 >"$tmp/out" 2>"$tmp/err" &&
   grep -q "top PCs       72.0%, 19.9%, 5.4%" "$tmp/out" && grep -q "k90 2 " "$tmp/out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL analyze GPT-2 rows 1:64"; cat "$tmp/out" "$tmp/err"
fi
mkdir -p "$tmp/empty-run"
printf 'x' >"$tmp/table.txt"
printf 'abc' >"$tmp/bad.safetensors"
expect_error "analyze missing file" "^error: $tmp/nope.npy: not found" analyze "$tmp/nope.npy"
expect_error "analyze unknown kind" "unknown kind of input '.txt'" analyze "$tmp/table.txt"
expect_error "analyze safetensors without --tensor" "bad.safetensors: truncated" analyze "$tmp/bad.safetensors"
expect_error "analyze truncated safetensors" "bad.safetensors: truncated" analyze "$tmp/bad.safetensors" --tensor wpe.weight
expect_error "analyze of an empty folder" "empty-run: neither a run folder" analyze "$tmp/empty-run"
mkdir -p "$tmp/unsnapped" && cp configs/default.yaml "$tmp/unsnapped/config.yaml"
expect_error "analyze of a run folder without snapshots" "unsnapped: no snapshots" analyze "$tmp/unsnapped"
# An option that does not apply to the input is an error, never ignored.
fixture=tests/fixtures/gpt2_wpe_rows0-63.npy
expect_error "--tensor with a .npy" "^error: --tensor wpe: applies to a .safetensors file or a model folder, not $fixture" \
  analyze "$fixture" --tensor wpe
expect_error "--against-tensor without --against" "^error: --against-tensor wpe applies to --against" \
  analyze "$fixture" --against-tensor wpe
expect_error "report --out of a run" "^error: --out $tmp/r: a run's report is written inside it, to $tmp/empty-run/report" \
  report "$tmp/empty-run" --out "$tmp/r"
expect_error "report --rows of a run" "^error: --rows applies to a single table, not to a run folder" \
  report "$tmp/empty-run" --rows 1:8
mkdir -p "$tmp/site" && echo "<html>mine</html>" >"$tmp/site/index.html"
expect_error "report into a folder of other files" "^error: --out $tmp/site: holds 1 file or folder \\(index.html\\) and no poslab page" \
  report "$fixture" --out "$tmp/site"
if grep -q mine "$tmp/site/index.html" && "$poslab" report "$fixture" --out "$tmp/site" --force >/dev/null 2>&1 &&
   grep -q 'name="generator" content="poslab"' "$tmp/site/index.html" &&
   "$poslab" report "$fixture" --out "$tmp/site" >/dev/null 2>"$tmp/err"; then  # poslab's own page: again
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL report --force, or a report over its own page"; cat "$tmp/err"
fi
expect_error "compare a table twice" "^error: compare: ./$fixture is given twice \\(as $fixture and as ./$fixture\\)" \
  compare "$fixture" "./$fixture" --out "$tmp/twice"
# A table refused while the page is drawn (its last value NaN) takes the comparison's new folder away again: the next
# try, with the table mended, is not refused as a folder of other files.
{ head -c -4 "$fixture"; printf '\x00\x00\xc0\x7f'; } >"$tmp/nan.npy" && cp "$fixture" "$tmp/fine.npy"
expect_error "compare of a table that holds NaN" "^error: .*nan.npy: .*NaN" compare "$tmp/fine.npy" "$tmp/nan.npy" --out "$tmp/cmp-nan"
cp "$fixture" "$tmp/nan.npy"
if [ ! -e "$tmp/cmp-nan" ] && "$poslab" compare "$tmp/fine.npy" "$tmp/nan.npy" --out "$tmp/cmp-nan" >/dev/null 2>"$tmp/err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL a refused comparison left its folder"; ls "$tmp/cmp-nan"; cat "$tmp/err"
fi
expect_error "verdict share out of range" "^error: --min-signal-share: must be a number from 0 to 1, not '2'" analyze "$tmp/empty-run" --min-signal-share 2
expect_error "verdict z not a number" "^error: --smooth-z: must be a number 0 or above, not 'abc'" report "$tmp/empty-run" --smooth-z abc
expect_error "old verdict option" "^error: --rank-ratio is no longer an option.*noise floor" analyze "$tmp/empty-run" --rank-ratio 0.5
expect_error "analyze unknown synthetic" "helix: unknown kind|use random, sinusoidal, handbook or walk" analyze --synthetic helix
expect_error "analyze bad rows" "--rows 9:3" analyze --synthetic random --positions 16 --dim 4 --rows 9:3
expect_error "analyze one table with a verdict's threshold" \
  "^error: --smooth-z applies to a run folder's verdict, not to one table \(which gets none\)$" \
  analyze tests/fixtures/gpt2_wpe_rows0-63.npy --smooth-z 3
expect_error "analyze nothing" "^error: no table given: name the table to read$" analyze
expect_error "compare nothing" "^error: poslab compare: no inputs given: run folders and/or sweep folders; or tables" compare
expect_error "inspect nothing" "^error: poslab inspect: no checkpoint given: RUN_DIR/checkpoints/latest.pt or best.pt" inspect
if "$poslab" analyze tests/fixtures/gpt2_wpe_rows0-63.npy --probes --json - >"$tmp/a.json" 2>"$tmp/err" &&
   grep -q '"relative_accuracy"' "$tmp/a.json" && grep -q "Wang & Chen probes (5-fold): absolute MAE" "$tmp/err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL analyze --probes"; cat "$tmp/err"
fi
expect_error "analyze --probes on a run folder" "^error: --probes applies to one table" analyze "$tmp/empty-run" --probes
printf 'PK\003\004 not a checkpoint' >"$tmp/other.pt"
expect_error "inspect another format" "other.pt: not a readable checkpoint" inspect "$tmp/other.pt"
expect_error "sample another format" "other.pt: not a readable checkpoint" sample "$tmp/other.pt"
expect_error "eval another format" "other.pt: not a readable checkpoint" eval "$tmp/other.pt"
expect_error "inspect missing" "missing.pt: checkpoint not found" inspect "$tmp/missing.pt"
expect_error "inspect a config" "default.yaml: not a checkpoint \(a poslab checkpoint is a zip archive; this file is not one\)$" \
  inspect configs/default.yaml
expect_error "report empty run folder" "empty-run: no snapshots" report "$tmp/empty-run"
expect_error "report missing input" "nope: not found" report "$tmp/nope"

# The default config, shortened: it must train, snapshot and checkpoint.
if LC_ALL=C "$poslab" train configs/default.yaml --set train.max_steps=6 --set train.eval_every=3 --set train.eval_batches=2 \
    --set snapshot.every=3 --set "run.out_dir=$tmp/x" >"$tmp/out" 2>"$tmp/err" &&
   [ "$(sed -n 1p "$tmp/out")" = "$tmp/x/default" ] &&
   grep -q "info config: these keys differ from poslab's defaults (every key: $tmp/x/default/config.yaml)$" "$tmp/err" &&
   grep -qx "  train.max_steps: 6 (--set)" "$tmp/err" && grep -qx "  model.block_size: 128 (configs/default.yaml)" "$tmp/err" &&
   grep -Eqx "  train.dtype: (bfloat16|float32) \(auto in configs/default.yaml\)" "$tmp/err" &&  # auto, and what it became
   ! grep -q "^  train.lr: " "$tmp/err" &&  # a key at its default is left to config.yaml
   [ -f "$tmp/x/default/checkpoints/latest.pt" ] && [ -f "$tmp/x/default/snapshots/wpe_step000006.npy" ] &&
   [ "$(wc -l <"$tmp/x/default/snapshots/index.jsonl")" -eq 3 ] &&
   grep -Eq "BLAS: (OpenBLAS|MKL \(inside LibTorch\))" "$tmp/err" && [ "$(sed -n 2p "$tmp/out")" = "$tmp/x/default/report/index.html" ] &&
   tail -14 "$tmp/err" | grep -q "^verdict (not formed): " &&
   tail -14 "$tmp/err" | grep -q "^  components above the noise floor  0 -> 0$" &&
   tail -14 "$tmp/err" | grep -q "^layer-0 heads at step 6: " &&
   [ "$(tail -1 "$tmp/err")" = "watch:  $tmp/x/default/report/watch.html" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAIL default config short run (trained, snapshots, the run's last lines):"
  tail -20 "$tmp/err"
fi
# A folder of runs is not one to compare: the hint names its runs and the command that compares them.
expect_error "compare a folder of runs" "^hint: it holds 1 run or sweep folder: default; compare them with poslab compare $tmp/x/default$" \
  compare "$tmp/x" --out "$tmp/cmp-x"
# On a terminal (script(1)'s pseudo-terminal) training draws its progress bar on one line, each redrawn and erased
# ("\r\e[K") before a log line takes its place: no line of the screen holds a bar left behind or a bar beside a log
# line, and the last step's bar was drawn. Into a pipe it draws none.
cmd="LC_ALL=C $poslab train configs/default.yaml --set train.max_steps=6 --set train.eval_every=3 \
  --set train.eval_batches=2 --set snapshot.every=3 --set run.out_dir=$tmp/tty-run"
script -qec "$cmd" /dev/null </dev/null >"$tmp/tty.raw" 2>&1
# the screen's lines: colours dropped, each line what follows its last carriage return
sed 's/\x1b\[[0-9;]*m//g; s/\r$//' "$tmp/tty.raw" | awk -F'\r' '{print $NF}' | sed 's/^\x1b\[K//' >"$tmp/tty.screen"
if [ "$(grep -c $'\r\x1b\\[K\\[[#.]*\\] ' "$tmp/tty.raw")" -ge 2 ] && grep -q "\] 100% step 6/6 ETA" "$tmp/tty.raw" &&
   ! grep -Eq "% step [0-9]+/6 ETA" "$tmp/tty.screen" && ! grep -Eq ".[0-9]{2}:[0-9]{2}:[0-9]{2} (info|warning)" "$tmp/tty.screen" &&
   grep -q "eval step 6 " "$tmp/tty.screen" && [ -f "$tmp/tty-run/default/checkpoints/latest.pt" ] &&
   ! grep -q $'\r' "$tmp/err"; then  # (the short run above wrote its log to a file)
  passed=$((passed + 1))
else
  failed=$((failed + 1))
  echo "FAIL the progress bar on a terminal (or a carriage return into a pipe):"
  cat -v "$tmp/tty.raw" | tail -20
fi
# Its analysis reads on an 80-column terminal: the snapshots' metrics in three tables (spectrum, order, form), each
# with its half-way row; no line wider, the checkpoint's analysis neither.
if LC_ALL=C.UTF-8 "$poslab" analyze "$tmp/x/default" >"$tmp/out" 2>"$tmp/err" && grep -q "^verdict (" "$tmp/out" &&
   tail -14 "$tmp/out" | grep -q "^  components above the noise floor  0 → 0  *▁▁▁$" &&
   [ "$(grep -c "^half-way " "$tmp/out")" -eq 3 ] && grep -Eq "^    step  val loss signal rk" "$tmp/out" &&
   [ "$(LC_ALL=C.UTF-8 wc -L <"$tmp/out")" -le 80 ] &&
   [ -f "$tmp/x/default/analysis/verdict.json" ] && [ -f "$tmp/x/default/analysis/trajectory.csv" ] &&
   [ -f "$tmp/x/default/snapshots/wpe_step000006.json" ] &&
   "$poslab" analyze "$tmp/x/default/checkpoints/latest.pt" >"$tmp/out" 2>"$tmp/err" &&
   [ "$(LC_ALL=C.UTF-8 wc -L <"$tmp/out")" -le 80 ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL analyze run folder / checkpoint"; cat "$tmp/out" "$tmp/err"
fi
# The verdict's thresholds given on the command line are the ones it reads and stores (then the defaults again).
thresholds() {  # FILE SHARE Z: verdict.json's thresholds are these
  python3 -c 'import json, sys; t = json.load(open(sys.argv[1]))["thresholds"]
sys.exit(t != {"min_signal_share": float(sys.argv[2]), "smooth_z": float(sys.argv[3])})' "$@"
}
cp -r "$tmp/x/default" "$tmp/thresholds"
if "$poslab" analyze "$tmp/thresholds" --min-signal-share 0.3 --smooth-z 1.5 >"$tmp/out" 2>"$tmp/err" &&
   thresholds "$tmp/thresholds/analysis/verdict.json" 0.3 1.5 &&
   "$poslab" analyze "$tmp/thresholds" >/dev/null 2>&1 && thresholds "$tmp/thresholds/analysis/verdict.json" 0.5 5.0; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL analyze's verdict thresholds"; cat "$tmp/err"; cat "$tmp/thresholds/analysis/verdict.json"
fi
# A run folder whose analysis/ cannot be written (here a file of that name) still gets its analysis printed, then
# the error.
cp -r "$tmp/x/default" "$tmp/unwritable" && rm -rf "$tmp/unwritable/analysis" && touch "$tmp/unwritable/analysis"
"$poslab" analyze "$tmp/unwritable" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 2 ] && grep -q "^verdict (" "$tmp/out" && ! grep -q "^wrote trajectory" "$tmp/out" &&
   grep -q "^error: $tmp/unwritable/analysis: .* (the analysis is printed above; its files in $tmp/unwritable/analysis are not all written)$" "$tmp/err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL analyze of a run folder it cannot write to"; cat "$tmp/out" "$tmp/err"
fi
ckpt="$tmp/x/default/checkpoints/latest.pt"
# analyze A --against B: two checkpoints, a snapshot against a checkpoint (the same table), two safetensors tensors.
if "$poslab" analyze "$ckpt" --against "$ckpt" >"$tmp/out" 2>"$tmp/err" && grep -q "linear CKA  *1.0000" "$tmp/out" &&
   "$poslab" analyze "$tmp/x/default/snapshots/wpe_step000006.npy" --against "$ckpt" --json - >"$tmp/a.json" 2>"$tmp/err" &&
   python3 -c 'import json, math, sys; v = json.load(open(sys.argv[1]))["procrustes_residual"]
sys.exit(not (isinstance(v, float) and math.isfinite(v) and v < 1e-4))' "$tmp/a.json" &&
   "$poslab" analyze tests/fixtures/gpt_reference.safetensors --tensor fp32.final.wpe.weight \
     --against tests/fixtures/gpt_reference.safetensors --against-tensor param.wpe.weight --k 2 >"$tmp/out" 2>"$tmp/err" &&
   grep -q "principal angles (top 2, --k)" "$tmp/out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL analyze --against"; cat "$tmp/out" "$tmp/err"
fi
expect_error "analyze --against another shape" "gpt2_wpe_rows0-63.npy is \(64, 768\) and .*latest.pt is \(" \
  analyze tests/fixtures/gpt2_wpe_rows0-63.npy --against "$ckpt"
expect_error "analyze --k without --against" "^error: --k applies to --against" analyze "$ckpt" --k 3
if "$poslab" inspect "$ckpt" >"$tmp/out" 2>"$tmp/err" && grep -q "^step         6 of train.max_steps 6" "$tmp/out" &&
   grep -q "^position table" "$tmp/out" &&
   grep -Eq "^parameters   [0-9]{1,3}(,[0-9]{3})+ \([0-9]{1,3}(,[0-9]{3})+ without the position table\)$" "$tmp/out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL inspect"; cat "$tmp/out" "$tmp/err"
fi
# A run stopped between evals (train.eval_every 3, stopped at 7): its losses are named as step 6's, in the run's last
# line and by inspect.
cp -r "$tmp/x/default" "$tmp/between"
# The keys that differ from the defaults name where each came from: the --set, or the checkpoint's stored config.
if "$poslab" train --resume "$tmp/between" --set train.max_steps=9 --stop-at 7 >"$tmp/out" 2>"$tmp/err" &&
   grep -q "done: 7 steps | the eval of step 6: train [0-9.]* | val " "$tmp/err" &&
   grep -qx "  train.max_steps: 9 (--set)" "$tmp/err" &&
   grep -qx "  run.out_dir: $tmp/x (the stored config of $tmp/between/checkpoints/latest.pt)" "$tmp/err" &&
   "$poslab" inspect "$tmp/between" >"$tmp/out" 2>"$tmp/err" &&
   grep -q "^loss         the eval of step 6: train [0-9.]* | val [0-9.]* | best val " "$tmp/out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL losses of an earlier eval named"; cat "$tmp/out" "$tmp/err"
fi
# Its lines, and a model folder's, within 80 columns (the config's YAML after them is short).
if "$poslab" inspect "$ckpt" >"$tmp/out" 2>"$tmp/err" && [ "$(LC_ALL=C.UTF-8 wc -L <"$tmp/out")" -le 80 ] &&
   "$poslab" inspect tests/fixtures/hf/bart >"$tmp/out" 2>"$tmp/err" && [ "$(LC_ALL=C.UTF-8 wc -L <"$tmp/out")" -le 80 ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL inspect at 80 columns"; cat "$tmp/out"
fi
# inspect's output (a few KB) goes to a pipe in one piece at its end, as std::cout's does: a reader that stops at
# its first match (grep -q) leaves poslab's exit status 0, which scripts under pipefail read
# (tests/distributed/test_torchrun.sh does). A flush after its first lines made it 141 (SIGPIPE) most times.
"$poslab" inspect "$ckpt" 2>/dev/null | grep -q "^step "
inspect_rc=${PIPESTATUS[0]}
if [ "$inspect_rc" = 0 ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL inspect read by grep -q: exit $inspect_rc"
fi
"$poslab" sample "$ckpt" --prompt "The" --tokens 20 --seed 3 >"$tmp/s1" 2>/dev/null
"$poslab" sample "$ckpt" --prompt "The" --tokens 20 --seed 3 >"$tmp/s2" 2>/dev/null
"$poslab" sample "$ckpt" --prompt "The" --tokens 20 --seed 4 >"$tmp/s3" 2>/dev/null
"$poslab" sample "$ckpt" --prompt "$(printf 'The\377')" --tokens 2 >/dev/null 2>"$tmp/s4"
"$poslab" sample "$ckpt" --tokens 2 --top-k 5000 >/dev/null 2>"$tmp/s5"  # more than the vocabulary: said
if cmp -s "$tmp/s1" "$tmp/s2" && ! cmp -s "$tmp/s1" "$tmp/s3" && grep -q "^The" "$tmp/s1" &&
   grep -q "warning --prompt: 1 byte of invalid UTF-8 replaced by U+FFFD" "$tmp/s4" &&
   grep -q "warning --top-k 5000: the vocabulary has 2048 tokens, so every token is sampled from" "$tmp/s5"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL sample determinism / prompt"; cat "$tmp/s1" "$tmp/s2" "$tmp/s3" "$tmp/s4"
fi
# No new token: the prompt as it was, or an empty line (the start token is not printed).
if [ "$("$poslab" sample "$ckpt" --prompt "ab" --tokens 0 2>"$tmp/err")" = "ab" ] &&
   [ "$("$poslab" sample "$ckpt" --tokens 0 2>>"$tmp/err" | od -An -c | tr -d ' ')" = '\n' ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL sample --tokens 0"; cat "$tmp/err"
fi
# eval's line "SPLIT loss L | perplexity X ...": X is exp(L), to the rounding of the two printed numbers (X to 0.005,
# L to 5e-5, which moves exp(L) by 5e-5 of itself).
perplexity_is_exp_loss() {  # SPLIT FILE
  awk -v s="$1" '$1 == s && $2 == "loss" && $5 == "perplexity" {
                   n++; e = exp($3); d = $6 - e; if (d < 0) d = -d; if (d > 0.0051 + 6e-5 * e) bad++ }
                 END { exit !(n == 1 && !bad) }' "$2"
}
if "$poslab" eval "$ckpt" --batches 2 >"$tmp/out" 2>"$tmp/err" && grep -q "^val loss .* perplexity" "$tmp/out" &&
   perplexity_is_exp_loss val "$tmp/out" &&
   head -1 "$tmp/out" | grep -Eq "^$ckpt \(step [0-9]+\)$" &&  # which model it scored
   [ "$(wc -l <"$tmp/x/default/eval/per_position_loss_val.csv")" -eq 129 ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL eval"; cat "$tmp/out" "$tmp/err"
fi
# A run trained on a relative data.corpus (text.txt in the folder it was trained in), scored from another folder:
# the error says where it looked and names --corpus, which scores the same windows from the corpus's place; another
# text is warned of.
mkdir -p "$tmp/trained-here" "$tmp/elsewhere"
head -c 60000 data/tinyshakespeare.txt >"$tmp/trained-here/text.txt"
rel="$tmp/rel/r/checkpoints/latest.pt"
if (cd "$tmp/trained-here" && "$poslab" train "$src/configs/default.yaml" --set data.corpus=text.txt \
      --set data.tokenizer.type=char --set model.n_layer=1 --set model.n_embd=16 --set model.n_head=2 \
      --set model.block_size=16 --set train.batch_size=4 --set train.max_steps=1 --set train.eval_batches=1 \
      --set run.kernels=default --set run.report=false --set run.name=r --set "run.out_dir=$tmp/rel" \
      --set "data.cache_dir=$tmp/rel-cache" >/dev/null 2>"$tmp/err") &&
   (cd "$tmp/trained-here" && "$poslab" eval "$rel" --batches 2 >"$tmp/out" 2>"$tmp/err") &&
   val_line=$(grep "^val loss" "$tmp/out") &&
   ! (cd "$tmp/elsewhere" && "$poslab" eval "$rel" --batches 2 >"$tmp/out" 2>"$tmp/err") &&
   grep -q "^error: $rel: the run's corpus text.txt is not there (data.corpus in the checkpoint's config), read from the current folder $tmp/elsewhere$" "$tmp/err" &&
   grep -q "^hint: run eval from the folder the run was trained in, or give its place with --corpus PATH" "$tmp/err" &&
   (cd "$tmp/elsewhere" && "$poslab" eval "$rel" --batches 2 --corpus ../trained-here/text.txt >"$tmp/out" 2>"$tmp/err") &&
   [ "$(grep "^val loss" "$tmp/out")" = "$val_line" ] && ! grep -q warning "$tmp/err" &&
   head -c 50000 data/tinyshakespeare.txt >"$tmp/elsewhere/other.txt" &&
   (cd "$tmp/elsewhere" && "$poslab" eval "$rel" --batches 2 --corpus other.txt >"$tmp/out" 2>"$tmp/err") &&
   grep -q "warning --corpus other.txt: not the text $rel was trained on" "$tmp/err" &&
   ! "$poslab" eval "$rel" --corpus "$tmp/elsewhere/none.txt" >"$tmp/out" 2>"$tmp/err" &&
   grep -q "^error: --corpus $tmp/elsewhere/none.txt: not found$" "$tmp/err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL eval elsewhere, and --corpus"; cat "$tmp/out" "$tmp/err"
fi
# The train split: scored on its own windows, into its own file.
if "$poslab" eval "$ckpt" --split train --batches 1 >"$tmp/out" 2>"$tmp/err" &&
   grep -Eq "^train loss [0-9.]+ \| perplexity" "$tmp/out" && perplexity_is_exp_loss train "$tmp/out" &&
   [ "$(wc -l <"$tmp/x/default/eval/per_position_loss_train.csv")" -eq 129 ] &&
   ! cmp -s "$tmp/x/default/eval/per_position_loss_train.csv" "$tmp/x/default/eval/per_position_loss_val.csv"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL eval --split train"; cat "$tmp/out" "$tmp/err"
fi
# Windows of many times the split's tokens are said to overlap; a quarter of the table checked at each end at most.
if "$poslab" eval "$ckpt" --batches 4 --batch-size 512 --out "$tmp/many.csv" >"$tmp/out" 2>"$tmp/err" &&
   grep -Eq "warning --batches 4: 2,048 windows of 128 tokens hold [0-9]+× the val split's [0-9,]+ tokens, so they overlap" "$tmp/err" &&
   "$poslab" eval "$ckpt" --batches 2 --out "$tmp/few.csv" >/dev/null 2>"$tmp/err2" && ! grep -q "warning --batches" "$tmp/err2" &&
   "$poslab" analyze "$ckpt" --boundary-rows 100 --sinusoid-k 100 >"$tmp/out" 2>"$tmp/err" &&
   grep -q "warning --boundary-rows 100: a table of 128 rows is checked at its 31 first and last" "$tmp/err" &&
   grep -q "warning --sinusoid-k 100: a table of 128 rows has 63 frequencies below its Nyquist" "$tmp/err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL eval's overlapping windows, analyze's boundary rows and sinusoid K"; cat "$tmp/err"
fi
# The corpus's files that are not text (fortune's .dat index files) are one info line, not a warning; with
# SPDLOG_LEVEL=debug each is listed with why.
if grep -Eq "^[0-9:]{8} info corpus: [0-9]+ files left out, not text \(first: .*\); SPDLOG_LEVEL=debug lists them all$" "$tmp/err" &&
   ! grep -q " warning corpus" "$tmp/err" &&
   SPDLOG_LEVEL=debug "$poslab" eval "$ckpt" --batches 1 >"$tmp/out" 2>"$tmp/err" &&
   grep -Eq "^[0-9:]{8} debug corpus: skipped /usr/share/games/fortunes/[^ ]+\.dat: binary" "$tmp/err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL the corpus's left-out files: an info line, each listed at SPDLOG_LEVEL=debug"; cat "$tmp/err"
fi
expect_error "eval --shift a row twice" "^error: --shift: 16 is given twice$" eval "$ckpt" --batches 1 --shift 0,16,16
# eval --shift: windows of 128 - 32 tokens at rows 0, 16 and 32; one CSV row per shift and position. Each later
# shift's "(D against shift 0)" is its loss less shift 0's, to the rounding of the three printed numbers (5e-5 each).
if "$poslab" eval "$ckpt" --batches 1 --shift 0,16,32 >"$tmp/out" 2>"$tmp/err" &&
   grep -q "windows of 96 tokens" "$tmp/out" && grep -q "^  shift   32: loss .* against shift 0" "$tmp/out" &&
   awk '$1 == "shift" && $2 == "0:" { l0 = $4; next }
        $1 == "shift" && $6 == "against" { n++; e = $4 - l0 - substr($5, 2); if (e < 0) e = -e; if (e > 1.6e-4) bad++ }
        END { exit !(l0 != "" && n == 2 && !bad) }' "$tmp/out" &&
   [ "$(wc -l <"$tmp/x/default/eval/shift_loss_val.csv")" -eq $((3 * 96 + 1)) ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL eval --shift"; cat "$tmp/out" "$tmp/err"
fi
expect_error "eval --shift past the table" "^error: --shift 127: a start row must be in 0 … 126" eval "$ckpt" --shift 0,127
if "$poslab" report "$tmp/x/default" >"$tmp/out" 2>"$tmp/err" && grep -q "position_loss.png" "$tmp/x/default/report/index.html" &&
   grep -q "shift_loss.png" "$tmp/x/default/report/index.html" && grep -q "How the model reads its table" "$tmp/x/default/report/index.html" &&
   grep -q "attention_on_text.png" "$tmp/x/default/report/index.html" &&
   grep -q "<h2>Position probes</h2>" "$tmp/x/default/report/index.html"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL report with the eval figure"; cat "$tmp/out" "$tmp/err"
fi
# analyze and report show the same numbers for the same run: step 0, the end and the three baselines (the console's
# table names each metric by its column at 80 columns, the report by its label).
"$poslab" analyze "$tmp/x/default" >"$tmp/out" 2>"$tmp/err"
same=0
for pair in "k90|components for 90 % (k90)" "eff rank|entropy effective rank" "adj cos|adjacent cosine" "sin R²|sinusoid R²"; do
  column=${pair%%|*} label=${pair#*|}
  console=$(grep -F "$column  " "$tmp/out" | grep -v "^ *step" | tail -1 | sed "s/^$column *//" | tr -s ' ')
  html=$(grep -o "<tr><td>$label</td>.*</tr>" "$tmp/x/default/report/index.html" | head -1 |
         sed -e "s|<tr><td>$label</td>||" -e 's|</td><td>| |g' -e 's|<[^>]*>||g')
  if [ -n "$console" ] && [ "$console" = "$html" ]; then same=$((same + 1)); else echo "  $label: analyze '$console', report '$html'"; fi
done
if [ "$same" -eq 4 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL analyze and report differ"; fi
# Both say the controls are one draw each, the random table's z a draw of about N(0, 1).
if grep -q "^Each control is one draw (seed 0): the random table's adjacent-cosine z" "$tmp/out" &&
   grep -q "Each control is one draw (seed 0): the random table's adjacent-cosine z (adj z), against its own shuffled copies, is itself a draw of about N(0, 1)" "$tmp/x/default/report/index.html"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL the controls' note"; tail -5 "$tmp/out"
fi
# The report's probes of the last snapshot are analyze --probes' numbers for that .npy.
last=$(ls "$tmp/x/default/snapshots"/wpe_step*.npy | tail -1)
step=$((10#$(basename "$last" .npy | sed 's/wpe_step//')))
"$poslab" analyze "$last" --probes >"$tmp/out" 2>&1
console=$(unwrapped "$tmp/out" |  # the line wraps at 80 columns
          sed -n 's/.*absolute MAE \([0-9.]*\) positions.*relative accuracy \([0-9.]*\) over.*/\1 \2/p')
html=$(grep -o "<tr><td>step $step</td><td>[0-9.]*</td><td>[0-9.]*</td>" "$tmp/x/default/report/index.html" |
       sed -e "s|<tr><td>step $step</td><td>||" -e 's|</td><td>| |' -e 's|</td>||')
if [ -n "$console" ] && [ "$console" = "$html" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL report and analyze --probes differ: '$console' vs '$html'"
fi
# A prompt with a tab and a run of spaces comes back byte for byte (byte-fallback tokenizer, no normalisation).
if "$poslab" sample "$ckpt" --prompt "$(printf '\t--  x')" --tokens 5 --temperature 0 >"$tmp/s4" 2>"$tmp/err" &&
   [ "$(head -c 6 "$tmp/s4")" = "$(printf '\t--  x')" ] && ! grep -q "⁇" "$tmp/s4"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL sample keeps a tab prompt"; od -c "$tmp/s4" | head -3; cat "$tmp/err"
fi
# A run folder stands for its latest checkpoint in inspect, sample, eval and extend, as in export.
if "$poslab" inspect "$tmp/x/default" | grep -q "^checkpoint   $tmp/x/default/checkpoints/latest.pt " &&
   "$poslab" sample "$tmp/x/default" --tokens 5 --seed 2 >"$tmp/s_run" 2>/dev/null &&
   "$poslab" sample "$ckpt" --tokens 5 --seed 2 >"$tmp/s_ckpt" 2>/dev/null && [ -s "$tmp/s_run" ] &&
   cmp -s "$tmp/s_run" "$tmp/s_ckpt" &&
   "$poslab" eval "$tmp/x/default" --batches 1 --out "$tmp/run_eval.csv" >"$tmp/out" 2>/dev/null &&
   head -1 "$tmp/out" | grep -q "^$ckpt (step 6)$" &&
   "$poslab" extend "$tmp/x/default" --to 144 --out "$tmp/run_ext.pt" >/dev/null 2>&1 &&
   "$poslab" inspect "$tmp/run_ext.pt" | grep -q "block_size 144"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL a run folder for its checkpoint"; "$poslab" inspect "$tmp/x/default" | head -2
fi
expect_error "a folder that is no run" "^error: $tmp/x: is a folder, not a checkpoint \\(a run folder stands for" sample "$tmp/x"
expect_error "export of a folder that is no run" "^error: $tmp/x: is a folder, not a checkpoint" export "$tmp/x"
[ ! -e "$tmp/x/export" ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL export of no run wrote"; }
# A folder of model folders is neither kind of folder: inspect and analyze name both, and what they take.
expect_error "inspect of a folder that is neither" \
  "^error: tests/fixtures/hf: neither a run folder \\(no checkpoints/latest.pt\\) nor a model folder" inspect tests/fixtures/hf
expect_error "analyze of a folder that is neither" \
  "^hint: analyze takes a run folder, a checkpoint .pt, a .npy, a Hugging Face model folder" analyze tests/fixtures/hf
# A resume of a finished run trains no step: it says so rather than a rate of 0 tok/s, and how to go on.
if "$poslab" train --resume "$tmp/x/default" --set run.report=false >/dev/null 2>"$tmp/err" &&
   grep -q "done: 6 steps | .* | no step to train | " "$tmp/err" &&
   unwrapped "$tmp/err" | grep -q "the run already reached train.max_steps = 6; raise it with --set train.max_steps=N to go on"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL resume of a finished run"; grep "done:" "$tmp/err"
fi
# export's check commands name the pip build's Python where there is one, the newest torch (2.11 after 2.9).
mkdir -p "$tmp/pc/torch-2.9.0/bin" "$tmp/pc/torch-2.11.0/bin"
touch "$tmp/pc/torch-2.9.0/.complete" "$tmp/pc/torch-2.11.0/.complete" "$tmp/pc/torch-2.9.0/bin/python" \
  "$tmp/pc/torch-2.11.0/bin/python"
# inspect reads the export as a model folder: its weights alone (poslab_check.safetensors, the check's, is none).
if POSLAB_CACHE="$tmp/pc" "$poslab" export "$tmp/x/default" --out "$tmp/hf" >/dev/null 2>"$tmp/err" &&
   grep -q "^  $tmp/pc/torch-2.11.0/bin/python scripts/check_hf_export.py $tmp/hf$" "$tmp/err" &&
   [ -f "$tmp/hf/poslab_check.safetensors" ] && "$poslab" inspect "$tmp/hf" 2>>"$tmp/err" | grep -q "^model .*(1 file, "; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL export's check commands"; cat "$tmp/err"
fi
# On a terminal (script(1) gives sample one) the text's control characters are shown as symbols: an ESC in the prompt
# comes back as ␛ and cannot recolour the terminal; a pipe gets the bytes as they are (above).
esc_prompt=$(printf 'a\033[31mb')
SHELL=/bin/bash script -qec "$(printf '%q ' "$poslab" sample "$ckpt" --prompt "$esc_prompt" --tokens 3 \
  --temperature 0) 2>/dev/null" /dev/null >"$tmp/tty" 2>&1
"$poslab" sample "$ckpt" --prompt "$esc_prompt" --tokens 3 --temperature 0 >"$tmp/pipe" 2>/dev/null
if grep -qF "a␛[31mb" "$tmp/tty" && ! grep -qF "$esc_prompt" "$tmp/tty" && grep -qF "$esc_prompt" "$tmp/pipe"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL sample on a terminal shows control characters as symbols"
  od -c "$tmp/tty" | head -4; od -c "$tmp/pipe" | head -2
fi
# --device: cpu always works; cuda works with a GPU, else it is an error saying so; anything else is refused.
if "$poslab" eval "$ckpt" --batches 1 --device cpu --out "$tmp/pos.csv" >"$tmp/out" 2>"$tmp/err" &&
   "$poslab" sample "$ckpt" --tokens 3 --device cpu >/dev/null 2>>"$tmp/err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL eval/sample --device cpu"; cat "$tmp/err"
fi
"$poslab" eval "$ckpt" --batches 1 --device cuda --out "$tmp/pos_cuda.csv" >"$tmp/out" 2>"$tmp/err"
rc=$?
if [ "$rc" -eq 0 ] || { [ "$rc" -eq 2 ] && grep -Eq "^error: --device = cuda: (this poslab was built against a LibTorch without CUDA|this LibTorch has CUDA, but it sees no GPU)" "$tmp/err"; }; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL eval --device cuda: exit $rc"; cat "$tmp/err"
fi
expect_error "eval unknown device" "^error: --device: gpu not in" eval "$ckpt" --device gpu
expect_error "sample missing checkpoint" "nope.pt: checkpoint not found" sample "$tmp/nope.pt"
expect_error "eval bad split" "split" eval "$ckpt" --split test
# An output file is never one of the command's inputs, nor an existing file without --force; either stays as it was.
cp "$ckpt" "$tmp/keep.pt" && cp tests/fixtures/gpt2_wpe_rows0-63.npy "$tmp/keep.npy" && cp "$tmp/pos.csv" "$tmp/pos.before"
# A table or a checkpoint where the other goes says what it is and which command reads it.
expect_error "eval of a table" "^error: $tmp/keep.npy: a NumPy table \\(.npy\\), not a poslab checkpoint" eval "$tmp/keep.npy"
expect_error "config of a checkpoint" "^error: $tmp/keep.pt: binary data, not a YAML config" config "$tmp/keep.pt"
expect_error "eval --shift past the table" "^hint: pass start rows within the table, e.g. --shift 0,31,63" \
  eval "$ckpt" --shift 0,200
expect_error "eval --out onto its checkpoint" "^error: --out $tmp/keep.pt: is the file this command reads" \
  eval "$tmp/keep.pt" --batches 1 --out "$tmp/keep.pt"
expect_error "eval --out onto an existing file" "^error: --out $tmp/pos.csv: already exists" eval "$ckpt" --out "$tmp/pos.csv"
# A run's own record is no output, --force or not: its log, its checkpoints.
sum_before=$(cat "$tmp/x/default/metrics.jsonl" "$tmp/x/default/checkpoints/best.pt" | md5sum)
expect_error "eval --out --force onto a run's log" \
  "^error: --out $tmp/x/default/metrics.jsonl: is a file of the training run in $tmp/x/default, which no other command writes$" \
  eval "$ckpt" --out "$tmp/x/default/metrics.jsonl" --force
expect_error "analyze --json --force onto a run's checkpoint" "^error: --json $tmp/x/default/checkpoints/best.pt: is in $tmp/x/default/checkpoints, a folder of the training run" \
  analyze "$ckpt" --json "$tmp/x/default/checkpoints/best.pt" --force
[ "$(cat "$tmp/x/default/metrics.jsonl" "$tmp/x/default/checkpoints/best.pt" | md5sum)" = "$sum_before" ] &&
  passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL a run's own files replaced by --force"; }
expect_error "analyze --json onto its table" "^error: --json $tmp/keep.npy: is the file this command reads" \
  analyze "$tmp/keep.npy" --json "$tmp/keep.npy"
# A name left out before the next option is not that option taken as the name (a file ./--force); an empty name names
# nothing (it had meant the default).
expect_error "an option taken for a file's name" "^error: --json: expected a name, got the option --force \(the name is missing before it" \
  analyze "$tmp/keep.npy" --json --force
expect_error "the --against table's tensor" "^hint: pass one of its names with --against-tensor" \
  analyze "$tmp/keep.npy" --against tests/fixtures/hf/gpt2 --against-tensor nope
expect_error "a synthetic table's option beside a file" "^error: --positions: applies to a --synthetic table, not to $tmp/keep.npy$" \
  analyze "$tmp/keep.npy" --positions 5
expect_error "an empty folder name" "^error: --out: expected a name, got an empty one$" report "$tmp/keep.npy" --out ""
[ ! -e ./--force ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL a file named --force was made"; }
expect_error "bench --profile where no file can be made" \
  "^error: --profile /proc/poslab-trace.json: cannot be written there \(/proc: " \
  bench configs/default.yaml --steps 1 --profile /proc/poslab-trace.json
if cmp -s "$ckpt" "$tmp/keep.pt" && cmp -s tests/fixtures/gpt2_wpe_rows0-63.npy "$tmp/keep.npy" &&
   cmp -s "$tmp/pos.csv" "$tmp/pos.before" &&
   "$poslab" eval "$ckpt" --batches 1 --out "$tmp/pos.csv" --force >/dev/null 2>"$tmp/err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL a refused output changed a file, or --force was refused"; cat "$tmp/err"
fi
# poslab extend: the extended checkpoint evaluates at its new length, names the trained and the new positions,
# starts a fine-tuning run with --init-from (named after the extension), and the run's report shows them all.
# float32 and 2 eval batches keep the training runs below quick on any CPU (without AVX512-BF16 or AMX, bf16 is
# no faster than float32).
quick=(--set train.dtype=float32 --set train.eval_batches=2)
ext="$tmp/x/default/extend/160-cubic/checkpoint.pt"
if "$poslab" extend "$ckpt" --to 160 --method cubic >"$tmp/out" 2>"$tmp/err" && [ "$(cat "$tmp/out")" = "$ext" ] &&
   unwrapped "$tmp/err" | grep -q "from 128 to 160 positions by cubic" &&
   "$poslab" eval "$ext" --batches 1 >"$tmp/out" 2>>"$tmp/err" &&
   grep -q "^extended from 128 by cubic: val loss at the trained positions 0-127: .* | at the new 128-159: " "$tmp/out" &&
   [ "$(wc -l <"$tmp/x/default/extend/160-cubic/eval/per_position_loss_val.csv")" -eq 161 ] &&
   "$poslab" train --init-from "$ext" "${quick[@]}" --set train.max_steps=2 --set train.eval_every=1 \
     --set train.trainable=wpe --set run.report=false >"$tmp/out" 2>>"$tmp/err" &&
   [ "$(sed -n 1p "$tmp/out")" = "$tmp/x/default-ext160-cubic" ] &&
   "$poslab" report "$tmp/x/default" >/dev/null 2>>"$tmp/err" &&
   grep -q "Extending the context" "$tmp/x/default/report/index.html" &&
   grep -q "<td>default-ext160-cubic</td>" "$tmp/x/default/report/index.html" &&
   [ -f "$tmp/x/default/report/extension_loss.png" ] && [ -f "$tmp/x/default/report/extension_similarity.png" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL extend, eval, train --init-from, report"; cat "$tmp/out"; tail -20 "$tmp/err"
fi
# --init-from a run folder: its latest.pt, as sample, eval and export take it; config.yaml names that checkpoint.
if "$poslab" train --init-from "$tmp/x/default" "${quick[@]}" --set train.max_steps=1 --set run.name=from-folder \
     --set run.report=false >"$tmp/out" 2>"$tmp/err" &&
   grep -q "^  init_from: $ckpt$" "$tmp/x/from-folder/config.yaml"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL train --init-from a run folder"; cat "$tmp/out"; tail -5 "$tmp/err"
fi
# The fine-tuning run's analysis reads its start from the extension; moved away, the rest of it still stands.
tuned="$tmp/x/default-ext160-cubic/checkpoints/latest.pt"
if "$poslab" analyze "$tuned" >"$tmp/out" 2>"$tmp/err" && grep -q "^ the same at initialisation:$" "$tmp/out" &&
   mv "$ext" "$tmp/ext.moved" && "$poslab" analyze "$tuned" >"$tmp/out" 2>"$tmp/err" &&
   unwrapped "$tmp/out" | grep -q " the same at initialisation: not measured (train.init_from $ext, the checkpoint the run started from, is not there)" &&
   grep -Eq "^  max \|cos\| token row vs position row +[0-9.]+ +–$" "$tmp/out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL analyze of a run started from a checkpoint, that checkpoint gone"; cat "$tmp/out" "$tmp/err"
fi
[ -e "$ext" ] || mv "$tmp/ext.moved" "$ext"
expect_error "extend to fewer positions" "^error: --to 64: the table already has 128 rows" extend "$ckpt" --to 64
expect_error "extend unknown method" "^error: --method: spline not in" extend "$ckpt" --to 256 --method spline
expect_error "extend over an existing file" "^error: .*160-cubic/checkpoint.pt: already exists" extend "$ckpt" --to 160 --method cubic
# An extension stopped once its checkpoint was written (the table and record beside it missing) is named so; another
# checkpoint of the name is an existing file.
mkdir -p "$tmp/half" && "$poslab" extend "$ckpt" --to 150 --out "$tmp/half/m.pt" >/dev/null 2>&1 &&
  rm "$tmp/half/m.wpe.npy" "$tmp/half/m.extension.json" && cp "$ckpt" "$tmp/half/n.pt"
expect_error "extend over a checkpoint whose table and record are missing" \
  "^error: --out $tmp/half/m.pt: already exists, without m.wpe.npy and m.extension.json beside it: an extension that stopped before it was whole$" \
  extend "$ckpt" --to 150 --out "$tmp/half/m.pt"
expect_error "extend over a checkpoint of that name" "^error: --out $tmp/half/n.pt: already exists$" \
  extend "$ckpt" --to 150 --out "$tmp/half/n.pt"
mkdir -p "$tmp/side" && echo mine >"$tmp/side/m.wpe.npy"
expect_error "extend over a file beside --out" "^error: --out's table or record beside it, $tmp/side/m.wpe.npy: already exists" \
  extend "$ckpt" --to 160 --out "$tmp/side/m.pt"
expect_error "extend to a checkpoint not named .pt" "^error: --out $tmp/side/m.safetensors: a checkpoint's name ends in .pt" \
  extend "$ckpt" --to 160 --out "$tmp/side/m.safetensors"
mkdir -p "$tmp/ext-as-run/checkpoints" && cp "$ext" "$tmp/ext-as-run/checkpoints/latest.pt"
expect_error "resume from an extension" "holds no optimizer state" train --resume "$tmp/ext-as-run"
expect_error "a seed for a method that draws nothing" "^error: --seed 5: applies to --method random" \
  extend "$tmp/x/default" --to 160 --method linear --seed 5
expect_error "an extension's curves to TensorBoard" \
  "^error: $ext: no run's log beside it \($tmp/x/default/extend/160-cubic/metrics.jsonl\): --to tensorboard exports a run's curves" \
  export "$ext" --to tensorboard
expect_error "init-from and resume" "^error: .*not both" train --init-from "$ckpt" --resume "$tmp/x/default"
expect_error "init-from a missing checkpoint" "^error: --init-from: train.init_from = .*nope.pt: no such checkpoint" \
  train --init-from "$tmp/nope.pt"
expect_error "init_from a run folder in the config" "^hint: name the run's checkpoint: train.init_from: $ckpt " \
  train configs/default.yaml --set "train.init_from=$tmp/x/default"
expect_error "init-from a folder of no run" "^error: --init-from: train.init_from = $tmp/x: a folder, not a checkpoint" \
  train --init-from "$tmp/x"
expect_error "a run folder as the config" \
  "^hint: to go on with that run: poslab train --resume $tmp/x/default; a new run with its settings: poslab train $tmp/x/default/config.yaml --set run.name=NEW_NAME$" \
  train "$tmp/x/default"
printf '# nothing here yet\n' >"$tmp/nothing.yaml"  # a config that sets no key: said before the run (here refused)
expect_error "a config that sets no key" "warn.*nothing.yaml: sets no key \(an empty file, or comments only\)" \
  train "$tmp/nothing.yaml" --set model.n_head=3
expect_error "a run folder as poslab config's config" "^hint: its config is $tmp/x/default/config.yaml$" \
  config "$tmp/x/default"
expect_error "compare a run with a config" "^error: compare: configs/default.yaml: neither a run or sweep folder nor a table$" \
  compare "$tmp/x/default" configs/default.yaml
expect_error "trainable table without a table" "train.trainable = wpe: needs a learned table" \
  train configs/default.yaml --set train.trainable=wpe --set model.position=none
expect_error "fresh run into a used folder" "already holds a run" train configs/default.yaml --set "run.out_dir=$tmp/x"
# --out naming a file where a folder goes: refused, the file as it was.
echo mine >"$tmp/a-file"
expect_error "report --out a file" "^error: --out $tmp/a-file: is a file, not a folder to write a report into$" \
  report tests/fixtures/gpt2_wpe_rows0-63.npy --out "$tmp/a-file"
expect_error "export --out a file" "^error: --out $tmp/a-file: is a file, not a folder$" \
  export "$ckpt" --out "$tmp/a-file"
[ "$(cat "$tmp/a-file")" = mine ] && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL --out a file changed it"; }
# The corpus is no output, --force or not: neither a file of it nor a new file in a folder of it. A run's own folders
# take no export, and bench --export fills a folder that holds files only with --force.
echo "to be or not to be" >"$tmp/keep-corpus.txt"
expect_error "eval --out --force into the run's corpus folder" \
  "^error: --out /usr/share/games/fortunes/poslab.csv: is in the corpus folder /usr/share/games/fortunes \(data.corpus\): the output would join the corpus$" \
  eval "$ckpt" --batches 1 --out /usr/share/games/fortunes/poslab.csv --force
expect_error "export --force into the run's corpus folder" \
  "^error: --out /usr/share/games/fortunes/hf: is in the corpus folder /usr/share/games/fortunes \(data.corpus\): what is written there would join the corpus$" \
  export "$ckpt" --out /usr/share/games/fortunes/hf --force
expect_error "bench --json --force onto its corpus" \
  "^error: --json $tmp/keep-corpus.txt: is a file of the corpus \(data.corpus: $tmp/keep-corpus.txt\)" \
  bench configs/default.yaml --steps 1 --set "data.corpus=$tmp/keep-corpus.txt" --json "$tmp/keep-corpus.txt" --force
expect_error "export --force into a run's own tensorboard folder" \
  "^error: --out $tmp/x/default/tensorboard: is a folder of the training run in $tmp/x/default, which no other command writes into$" \
  export "$ckpt" --to tensorboard --out "$tmp/x/default/tensorboard" --force
expect_error "export into a new folder inside a run's snapshots" \
  "^error: --out $tmp/x/default/snapshots/hf: is a folder of the training run in $tmp/x/default, which no other command writes into$" \
  export "$ckpt" --to hf --out "$tmp/x/default/snapshots/hf"
mkdir -p "$tmp/other-run/checkpoints" "$tmp/other-run/snapshots" && echo "model: {}" >"$tmp/other-run/config.yaml"
expect_error "export into another run's folder: the hint names this run's default" \
  "^hint: name a folder outside the run's own record \(e.g. $tmp/x/default/export/hf, or elsewhere\)$" \
  export "$ckpt" --to hf --out "$tmp/other-run/snapshots/hf"
expect_error "export --out a checkpoint file" "^error: --out $ckpt: is a file, not a folder$" \
  export "$ckpt" --to hf --out "$ckpt"
# The checkpoints/ folder named: the run's, its default folder the run's own.
if "$poslab" export "$tmp/x/default/checkpoints" --to tensorboard >"$tmp/out" 2>"$tmp/err" &&
   [ "$(readlink -f "$(cat "$tmp/out")")" = "$(readlink -f "$tmp/x/default")/export/tensorboard" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL export of a run's checkpoints/ folder"; cat "$tmp/out" "$tmp/err"
fi
# A checkpoint named from inside its checkpoints/ folder: its run is found all the same, the default folder its own.
if (cd "$tmp/x/default/checkpoints" && "$poslab" export latest.pt --to tensorboard >"$tmp/out" 2>"$tmp/err") &&
   [ "$(readlink -f "$(cat "$tmp/out")")" = "$(readlink -f "$tmp/x/default")/export/tensorboard" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL export of latest.pt from inside checkpoints/"; cat "$tmp/out" "$tmp/err"
fi
mkdir -p "$tmp/bexp" && echo '{"mine": 1}' >"$tmp/bexp/bench.json"
expect_error "bench --export into a folder that holds files" \
  "^error: --export $tmp/bexp: already holds 1 file or folder \(bench.json\)$" \
  bench configs/default.yaml --steps 1 --export "$tmp/bexp"
[ "$(cat "$tmp/keep-corpus.txt")" = "to be or not to be" ] && [ "$(cat "$tmp/bexp/bench.json")" = '{"mine": 1}' ] &&
  [ ! -e /usr/share/games/fortunes/poslab.csv ] && passed=$((passed + 1)) ||
  { failed=$((failed + 1)); echo "FAIL a refused output into the corpus, or bench --export, changed a file"; }
# A run without a position table (a position sweep's control): inspect says so, the commands that read the table
# say there is none, and what to do.
if "$poslab" train configs/default.yaml --set model.position=none --set train.max_steps=1 --set train.eval_every=1 \
     --set train.eval_batches=1 --set run.report=false --set "run.out_dir=$tmp/nopos" >/dev/null 2>"$tmp/err" &&
   "$poslab" inspect "$tmp/nopos/default" >"$tmp/out" 2>>"$tmp/err" &&
   grep -q "^position table none (model.position = none)$" "$tmp/out" &&
   grep -Eq "^loss         train [0-9]+\.[0-9]{4} \| val [0-9]+\.[0-9]{4} \| best val [0-9]+\.[0-9]{4}$" "$tmp/out" &&
   grep -q "^model        n_layer 4 | n_head 4 | n_embd 128 | block_size 128 | position none$" "$tmp/out"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "FAIL a run without a position table"; cat "$tmp/out" "$tmp/err"
fi
expect_error "analyze a checkpoint without a table" \
  "^error: $tmp/nopos/default/checkpoints/latest.pt: the checkpoint has no position table \(model.position = none\)$" \
  analyze "$tmp/nopos/default/checkpoints/latest.pt"
expect_error "extend a model without a table" "^hint: a model without a position table needs no extension$" \
  extend "$tmp/nopos/default/checkpoints/latest.pt" --to 256

echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
