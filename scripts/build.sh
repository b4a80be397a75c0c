#!/usr/bin/env bash
# Configures and builds poslab (Release).
#   bash scripts/build.sh                         Debian's LibTorch 1.13 (CPU), into ./build
#   bash scripts/build.sh --libtorch pip          PyTorch's LibTorch 2.x from PyPI (with CUDA), into ./build-pip
#   bash scripts/build.sh --libtorch python|DIR   another LibTorch (see scripts/libtorch.sh), into ./build-python
#                                                 or ./build-custom
#   --target NAME                                 build that target alone (poslab: the program, not the tests)
# Prints the build folder last, on stdout. POSLAB_BUILD_DIR overrides the folder. A LibTorch with CUDA needs the CUDA toolkit (nvcc), not a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."

libtorch=debian
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --libtorch) libtorch="${2:?--libtorch needs debian, pip, python or a folder}"; shift 2 ;;
    --libtorch=*) libtorch="${1#--libtorch=}"; shift ;;
    --target) targets+=(--target "${2:?--target needs a target: poslab, poslab_tests}"); shift 2 ;;
    *) echo "error: unknown argument $1" >&2; echo "hint: bash scripts/build.sh [--libtorch debian|pip|python|DIR] [--target poslab]" >&2; exit 2 ;;
  esac
done

case "$libtorch" in
  debian) build=build ;;
  pip|python) build="build-$libtorch" ;;
  *) build=build-custom ;;
esac
build="${POSLAB_BUILD_DIR:-$build}"
prefix=$(bash scripts/libtorch.sh "$libtorch")
# A build folder configured against another LibTorch (another POSLAB_TORCH_VERSION, say) keeps that one's paths in
# its CMake cache: start its configuration afresh rather than mix two LibTorches.
want=/usr/lib/x86_64-linux-gnu/cmake/Torch  # Debian's
[ -n "$prefix" ] && want="$prefix/share/cmake/Torch"
if [ -f "$build/CMakeCache.txt" ]; then
  have=$(sed -n 's/^Torch_DIR:PATH=//p' "$build/CMakeCache.txt")
  if [ -n "$have" ] && [ "$(readlink -f "$have")" != "$(readlink -f "$want")" ]; then
    echo "build: $build was configured against $have; configuring it afresh for $want" >&2
    rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
  fi
fi
args=(-DCMAKE_BUILD_TYPE=Release)
[ -n "$prefix" ] && args+=("-DCMAKE_PREFIX_PATH=$prefix")
cmake -S . -B "$build" "${args[@]}" >/dev/null
cmake --build "$build" -j"$(nproc)" ${targets[@]+"${targets[@]}"} >&2  # the build's output on stderr: stdout is the folder alone
echo "$build"
