#!/usr/bin/env bash
# Installs the Debian packages gradex needs to build, test and plot.
# Idempotent; run as root on a fresh Debian 12 machine.
set -euo pipefail

packages=(
  g++ cmake ninja-build make pkg-config
  clang-14 libclang-rt-14-dev
  nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  python3 python3-matplotlib
  python3-torch python3-torchvision  # scripts/model_from_torch.py, DDP's buckets
  libboost-context-dev
  libboost-dev libboost-system-dev libzmq3-dev cppzmq-dev libsodium-dev
  libeigen3-dev libopenblas-dev zlib1g-dev dataset-fashion-mnist
  libopenmpi-dev openmpi-bin
  iproute2
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing packages: ${missing[*]}; run this script as root" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
