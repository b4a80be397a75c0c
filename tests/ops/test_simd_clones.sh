#!/usr/bin/env bash
# The kernels' AVX2 and default clones (POSLAB_SIMD_TARGETS in src/util/simd_math.h: one clone per instruction set,
# chosen at load time by the CPU's features), which a CPU with AVX-512 never runs: the kernels' suites under QEMU's
# user-mode emulation of a CPU with AVX2 and no AVX-512 (Haswell) and of one with neither (qemu64), where the clones'
# resolver reads the emulated CPU's features. Usage: test_simd_clones.sh PATH/TO/poslab_tests
set -u
tests=$1
if ! command -v qemu-x86_64 >/dev/null; then
  echo "SKIP: no qemu-x86_64 here (Debian's qemu-user: scripts/setup.sh installs it), so only this CPU's clones ran"
  exit 77
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Every suite whose code has a clone (the ops' kernels, AdamW's, the direct pass that calls them), and the ops
# around them.
suites='Gelu.*:CausalSoftmax.*:CrossEntropy.*:LayerNorm.*:Residual*:HeadLoss.*:Attention*:Bf16*:Optim.*:DirectPass.*'
failed=0
# CPU model:OpenBLAS core type it runs (poslab picks the core type from /proc/cpuinfo, which QEMU leaves the host's).
for cpu in Haswell:Haswell qemu64:Prescott; do
  model=${cpu%%:*}
  start=$(date +%s)
  if OPENBLAS_CORETYPE=${cpu#*:} qemu-x86_64 -cpu "$model" "$tests" --gtest_filter="$suites" >"$log" 2>&1; then
    echo "$model: $(grep -c '^\[       OK \]' "$log") passed, $(grep -cE '^\[  SKIPPED \] .* \(' "$log") skipped," \
      "in $(($(date +%s) - start)) s"
  else
    failed=1
    echo "FAIL under qemu-x86_64 -cpu $model:"
    grep -E '^\[  FAILED  \]|Failure|signal' "$log" | head -40
    tail -20 "$log"
  fi
done
exit $failed
