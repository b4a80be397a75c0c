#!/usr/bin/env bash
# Prints the LibTorch folder to build poslab against (for CMAKE_PREFIX_PATH), installing it first when needed.
#
#   bash scripts/libtorch.sh debian   prints nothing: Debian's libtorch-dev (1.13, CPU), which CMake finds itself
#   bash scripts/libtorch.sh pip      PyTorch's own LibTorch from the torch wheel on PyPI (version POSLAB_TORCH_VERSION,
#                                     default below; on Linux it comes with CUDA), installed once into a virtual
#                                     environment under ${POSLAB_CACHE:-~/.cache/poslab} and reused after
#                                     (with transformers, transformer-lens, sentencepiece, protobuf and tensorboard:
#                                     the readers of scripts/make_hf_fixtures.py, scripts/check_*_export.py and the
#                                     export test)
#   bash scripts/libtorch.sh python   the LibTorch inside the torch that `python3` imports (a GPU machine's PyTorch)
#   bash scripts/libtorch.sh DIR      DIR itself: an unpacked LibTorch archive, or a torch package folder
#
# Messages go to stderr; stdout is the folder alone.
set -euo pipefail

TORCH_VERSION="${POSLAB_TORCH_VERSION:-2.11.0}"  # the version CI tests; the GPU machine's PyTorch is 2.11 too
TRANSFORMERS_VERSION="${POSLAB_TRANSFORMERS_VERSION:-5.24.0}"  # the fixtures' (tests/fixtures/hf) and the export test's reader
TRANSFORMER_LENS_VERSION="${POSLAB_TRANSFORMER_LENS_VERSION:-4.3.0}"  # the export test's TransformerBridge
CACHE="${POSLAB_CACHE:-$HOME/.cache/poslab}"

die() { echo "error: $1" >&2; [ -n "${2:-}" ] && echo "hint: $2" >&2; exit 2; }
has_cmake_config() { [ -f "$1/share/cmake/Torch/TorchConfig.cmake" ]; }

which="${1:-debian}"
case "$which" in
  debian)
    ;;
  pip)
    venv="$CACHE/torch-$TORCH_VERSION"
    if [ ! -e "$venv/.complete" ]; then
      echo "libtorch: installing torch==$TORCH_VERSION from PyPI into $venv (about 5 GB with its CUDA libraries; once)" >&2
      rm -rf "$venv"
      mkdir -p "$CACHE"
      if ! python3 -m venv "$venv" >&2 2>/dev/null; then
        # Debian's own python3 needs python3-venv for this.
        SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get install -y -qq --no-install-recommends python3-venv >&2
        rm -rf "$venv"
        python3 -m venv "$venv" >&2
      fi
      "$venv/bin/python" -m pip install -q --disable-pip-version-check "torch==$TORCH_VERSION" \
        "transformers==$TRANSFORMERS_VERSION" "transformer-lens==$TRANSFORMER_LENS_VERSION" sentencepiece protobuf \
        tensorboard >&2 ||
        die "pip could not install torch==$TORCH_VERSION, transformers==$TRANSFORMERS_VERSION, transformer-lens==$TRANSFORMER_LENS_VERSION" \
          "check that PyPI is reachable, or set POSLAB_TORCH_VERSION / POSLAB_TRANSFORMERS_VERSION"
      touch "$venv/.complete" "$venv/.transformer-lens-$TRANSFORMER_LENS_VERSION"
    fi
    # An environment made before transformer-lens joined the readers gets it once.
    if [ ! -e "$venv/.transformer-lens-$TRANSFORMER_LENS_VERSION" ]; then
      echo "libtorch: installing transformer-lens==$TRANSFORMER_LENS_VERSION into $venv (once)" >&2
      "$venv/bin/python" -m pip install -q --disable-pip-version-check "transformer-lens==$TRANSFORMER_LENS_VERSION" \
        "transformers==$TRANSFORMERS_VERSION" >&2 ||
        die "pip could not install transformer-lens==$TRANSFORMER_LENS_VERSION" \
          "check that PyPI is reachable, or set POSLAB_TRANSFORMER_LENS_VERSION"
      touch "$venv/.transformer-lens-$TRANSFORMER_LENS_VERSION"
    fi
    torch_dir=$("$venv/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null) ||
      die "$venv: its torch does not import" "remove $venv and run this again"
    echo "$torch_dir"
    exit 0
    ;;
  python)
    torch_dir=$(python3 -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null) ||
      die "python3 cannot import torch" "install PyTorch for python3, or pass a LibTorch folder"
    has_cmake_config "$torch_dir" || die "$torch_dir has no share/cmake/Torch" "this torch carries no LibTorch for C++"
    echo "$torch_dir"
    ;;
  *)
    [ -d "$which" ] || die "$which: no such folder" "pass debian, pip, python or a LibTorch folder"
    has_cmake_config "$which" || die "$which has no share/cmake/Torch/TorchConfig.cmake" \
      "pass the folder of an unpacked LibTorch archive (libtorch/) or of a torch package"
    (cd "$which" && pwd)
    ;;
esac
