#!/usr/bin/env bash
# Installs pipelab's build and test dependencies from Debian packages. Idempotent: packages already
# present are skipped by apt-get, so re-running costs one `apt-get update`.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  nlohmann-json3-dev libcli11-dev libyaml-cpp-dev libtomlplusplus-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libopenblas-dev
  libopenmpi-dev openmpi-bin
  chromium
  clang libclang-rt-dev  # sanitizer builds and the libFuzzer targets (scripts/test.sh --sanitize, scripts/fuzz.sh)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
