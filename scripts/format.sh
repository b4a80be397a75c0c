#!/usr/bin/env bash
# Formats poslab's C++ and CUDA sources with clang-format and the repository's .clang-format (Debian 12's
# clang-format 14, which scripts/setup.sh installs). Usage:
#   bash scripts/format.sh           format every source file in place
#   bash scripts/format.sh --check   change nothing; list each file clang-format would change and exit 1 if any
#                                    (the CTest test `format` runs this)
#   bash scripts/format.sh FILE...   format these files
set -uo pipefail
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = "--check" ] && { check=1; shift; }
if ! command -v clang-format >/dev/null; then
  # CTest reports the check as skipped (exit 77) on a machine without it, a GPU machine say; setup.sh installs it.
  [ "$check" = 1 ] && { echo "SKIP format: clang-format is missing here; bash scripts/setup.sh installs it"; exit 77; }
  echo "error: clang-format is missing; hint: bash scripts/setup.sh installs it (Debian's clang-format)" >&2
  exit 2
fi
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files 'src/*.h' 'src/*.cpp' 'src/*.cu' 'src/*.cuh' 'tests/*.h' 'tests/*.cpp' 'scripts/*.cpp' 2>/dev/null ||
                       find src tests scripts \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \) -print)
fi
if [ "$check" = 0 ]; then
  clang-format -i --style=file "${files[@]}"
  echo "format: ${#files[@]} files formatted ($(clang-format --version | sed 's/.*version //'))"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! clang-format --style=file "$f" | cmp -s - "$f"; then
    n=$(clang-format --style=file "$f" | diff "$f" - | grep -c '^<')
    echo "FAIL $f: $n lines differ from clang-format's; run: bash scripts/format.sh $f"
    bad=$((bad + 1))
  fi
done
echo "format: ${#files[@]} files checked with $(clang-format --version | sed 's/.*version //'), $bad to format"
[ "$bad" -eq 0 ]
