#!/usr/bin/env bash
# install-deps.sh: installs the Debian packages raf needs, if any is missing.
# Run as root (or with sudo available) on Debian 12.
set -euo pipefail

packages=(build-essential cmake bison flex python3
          llvm-19-dev llvm-19-tools clang-19 libclang-rt-19-dev
          libopenblas-dev libdnnl-dev libcjson-dev libglpk-dev python3-numpy python3-onnx libonnx-testdata
          python3-torch python3-matplotlib dataset-fashion-mnist
          libopenmpi-dev openmpi-bin iproute2 openssh-client
          libprotobuf-c-dev protobuf-c-compiler python3-torchvision)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
