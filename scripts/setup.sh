#!/usr/bin/env bash
# Installs the Debian packages Kiln needs (with --test, also those only the tests
# use). Idempotent: quick when all are present.
set -euo pipefail

packages=(
  llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools clang-19 lld-19
  libclang-rt-19-dev cmake ninja-build g++ python3 zlib1g-dev libzstd-dev
  libflatbuffers-dev flatbuffers-compiler ccache
  libonnx-dev libprotobuf-dev
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross gcc-riscv64-linux-gnu libc6-dev-riscv64-cross
  qemu-user
  gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm
)
# Headless Chromium opens the compile report's page; ONNX's Python package
# writes the test graphs, PyTorch exports the test encoders, and ONNX's
# operator tests check the importer.
if [ "${1:-}" = "--test" ]; then
  packages+=(chromium fonts-liberation python3-onnx python3-torch libonnx-testdata)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -ne 0 ] && sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
    --no-install-recommends "${missing[@]}"
fi
