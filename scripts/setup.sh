#!/usr/bin/env bash
# Installs everything poslab's build, tests and default run need (Debian 12 packages). Idempotent:
# when every package is present it changes nothing and needs no network.
set -euo pipefail

packages=(
  cmake g++ make pkg-config
  ccache                  # compiler cache shared by every clone and both builds (CMakeLists.txt)
  libtorch-dev            # LibTorch 1.13 (CPU)
  libgloo-dev             # headers of Gloo, the CPU backend of LibTorch's c10d (multi-process training)
  python3-torch           # torchrun, the launcher tests/distributed/test_torchrun.sh starts poslab with
  libsentencepiece-dev    # tokenizer (behind a dlopen shim: see src/data/spm_shim.h)
  libspdlog-dev libgtest-dev libyaml-cpp-dev libcli11-dev nlohmann-json3-dev
  zlib1g-dev              # CRC-32 of a checkpoint's records (src/formats/zip_check.h)
  libopenblas0-pthread    # fast BLAS for LibTorch (the reference BLAS runs ~50x slower here)
  fortunes                # the default corpus: /usr/share/games/fortunes
  gnuplot-nox             # draws the report's figures
  chromium                # headless browser: tests/report/test_watch_page.sh opens the watch page in it
  iproute2                # ip netns: tests/distributed/test_netns.sh makes two nodes of network namespaces
  strace                  # tests/train/test_write_order.sh reads the order of a run's writes from its system calls
  bsdutils                # script(1): tests/cli/test_cli.sh gives poslab sample a terminal
  clang-format            # the source format (.clang-format): CTest's format test fails on a file it would change
  qemu-user               # qemu-x86_64: tests/ops/test_simd_clones.sh runs the kernels' AVX2 and default clones
)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi

# LibTorch calls whatever libblas.so.3 the alternatives system points at: make it OpenBLAS.
openblas=/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3
if [ -e "$openblas" ]; then
  current=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 || true)
  if [ "$current" != "$(readlink -f "$openblas")" ]; then
    $SUDO update-alternatives --set libblas.so.3-x86_64-linux-gnu "$openblas"
  fi
fi
