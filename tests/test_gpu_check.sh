#!/usr/bin/env bash
# scripts/gpu_check.sh counts the CUDA cases from GoogleTest's output: each case once, with its status, in
# GoogleTest's own formats (a failed parameterized case ends "…/cuda, where GetParam() = …" and is listed again at the
# bottom; the summary lines and other devices' cases are not cases). Usage: tests/test_gpu_check.sh SOURCE_DIR
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
