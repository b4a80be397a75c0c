#!/usr/bin/env bash
# scripts/gpu_check.sh counts the CUDA cases from GoogleTest's output: each case once, with its status, in
# GoogleTest's own formats (a failed parameterized case ends "…/cuda, where GetParam() = …" and is listed again at the
# bottom; the summary lines and other devices' cases are not cases), and refuses parts and budgets it does not know.
# Usage: tests/test_gpu_check.sh SOURCE_DIR
set -u
cd "$1" || exit 2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cat >"$log" <<'LOG'
[ RUN      ] Devices/BatchesOnDevice.ToDeviceKeepsTheBatch/cuda
[       OK ] Devices/BatchesOnDevice.ToDeviceKeepsTheBatch/cuda (812 ms)
[ RUN      ] Devices/CheckpointOnDevice.WrittenOnTheDeviceOpensOnTheCpu/cuda
tests/train/test_checkpoint.cpp:40: Failure
[  FAILED  ] Devices/CheckpointOnDevice.WrittenOnTheDeviceOpensOnTheCpu/cuda, where GetParam() = "cuda" (3 ms)
[ RUN      ] Devices/CudaGenerator.StateRestoresTheRandomStream/cuda
[  SKIPPED ] Devices/CudaGenerator.StateRestoresTheRandomStream/cuda (0 ms)
[       OK ] Devices/BatchesOnDevice.ToDeviceKeepsTheBatch/cpu (1 ms)
[==========] 4 tests from 3 test suites ran. (816 ms total)
[  PASSED  ] 1 test.
[  SKIPPED ] 1 test, listed below:
[  SKIPPED ] Devices/CudaGenerator.StateRestoresTheRandomStream/cuda
[  FAILED  ] 1 test, listed below:
[  FAILED  ] Devices/CheckpointOnDevice.WrittenOnTheDeviceOpensOnTheCpu/cuda, where GetParam() = "cuda"
LOG
want='Devices/BatchesOnDevice.ToDeviceKeepsTheBatch/cuda OK
Devices/CheckpointOnDevice.WrittenOnTheDeviceOpensOnTheCpu/cuda FAILED
Devices/CudaGenerator.StateRestoresTheRandomStream/cuda SKIPPED'
got=$(bash scripts/gpu_check.sh cases "$log")
if [ "$got" != "$want" ]; then
  printf 'FAIL gpu_check.sh cases: got\n%s\nwant\n%s\n' "$got" "$want"
  exit 1
fi
echo "gpu_check.sh cases: 3 CUDA cases read, each once"

# The CUDA cases' exit status: 77 (every case skipped) passes without a GPU (--cpu) and fails on one.
for v in "0 0:ok" "77 1:ok" "77 0:failed: every CUDA case skipped: the test program found no GPU" "1 1:failed: exit 1"; do
  # shellcheck disable=SC2086
  got=$(bash scripts/gpu_check.sh case-verdict ${v%%:*})
  if [ "$got" != "${v#*:}" ]; then
    printf 'FAIL gpu_check.sh case-verdict %s: got "%s", want "%s"\n' "${v%%:*}" "$got" "${v#*:}"
    exit 1
  fi
done
echo "gpu_check.sh case-verdict: 77 passes with --cpu only"

# A part or budget the check does not know is refused before anything runs, naming it and listing what it takes.
expect_refusal() {  # expect_refusal WORD ARGS...: exit 2 with WORD in the error
  local word=$1 out rc=0
  shift
  out=$(bash scripts/gpu_check.sh "$@" 2>&1) || rc=$?
  if [ "$rc" != 2 ] || ! grep -qF -- "$word" <<<"$out"; then
    printf 'FAIL gpu_check.sh %s: exit %s, said\n%s\n(want exit 2 naming %s)\n' "$*" "$rc" "$out" "$word"
    exit 1
  fi
}
expect_refusal "no part 'bogus'" --parts cases,bogus
expect_refusal "cases,graph,compare,profile,resume,gpt2,tests" --parts gpt
expect_refusal "--budget 9m: not a whole number of seconds" --budget 9m
echo "gpu_check.sh: an unknown part and a budget that is not seconds refused"
