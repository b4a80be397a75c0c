#!/usr/bin/env bash
# Lists the .cpp files of src/ and tests/ that include no LibTorch header, directly or through the project's own
# headers: the files CMakeLists.txt compiles without the precompiled torch header (SKIP_PRECOMPILE_HEADERS).
# Usage: bash scripts/torch_free.sh   (prints "free FILE" or "torch FILE" for each file)
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A memo
uses_torch() {  # FILE -> 0 when it reaches a torch/ATen/c10 header
  local f=$1
  [ -n "${memo[$f]+set}" ] && return "${memo[$f]}"
  memo[$f]=1
  local h
  while IFS= read -r h; do
    case "$h" in torch/* | ATen/* | c10/* | caffe2/*) memo[$f]=0; return 0 ;; esac
    for base in src tests; do
      if [ -f "$base/$h" ] && uses_torch "$base/$h"; then memo[$f]=0; return 0; fi
    done
  done < <(sed -nE 's/^#include [<"]([^">]+)[">].*/\1/p' "$f")
  return 1
}
for f in $(find src tests -name '*.cpp' | sort); do
  if uses_torch "$f"; then echo "torch $f"; else echo "free  $f"; fi
done
