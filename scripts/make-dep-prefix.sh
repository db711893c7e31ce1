#!/usr/bin/env bash
# Prepares a dependency prefix for building pipelab on a machine without package access (a GPU
# cluster node): run it where Debian's packages can be downloaded, carry the prefix (or its tarball)
# over, and build there with scripts/build.sh -DCMAKE_PREFIX_PATH=<prefix>/usr.
#   scripts/make-dep-prefix.sh [PREFIX]     default: .deps/prefix; also writes PREFIX.tar.xz
# The prefix holds the build and test dependencies (nlohmann-json, CLI11, yaml-cpp, toml++, GoogleTest, Google
# Benchmark, OpenBLAS and its Fortran runtime) unpacked from their .deb files; OpenBLAS's static
# archive is dropped to keep it small. CUDA, cuBLAS, NCCL and CUPTI come from the CUDA toolkit of
# the target machine. MPI is not included: build with -DPIPELAB_MPI=OFF there, or use the
# cluster's own MPI module. At run time, put PREFIX/usr/lib/x86_64-linux-gnu and its
# openblas-pthread/ folder on LD_LIBRARY_PATH (scripts/gpu-check.sh does).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix="${1:-.deps/prefix}"
packages=(
  nlohmann-json3-dev libcli11-dev libyaml-cpp-dev libyaml-cpp0.7 libtomlplusplus-dev libtomlplusplus3
  libgtest-dev libgmock-dev libbenchmark-dev libbenchmark1debian
  libopenblas-dev libopenblas0 libopenblas0-pthread libopenblas-pthread-dev libgfortran5
)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && apt-get download "${packages[@]}" >/dev/null 2>&1) || {
  apt-get update -q >/dev/null
  (cd "$work" && apt-get download "${packages[@]}")
}
rm -rf "$prefix"
mkdir -p "$prefix"
for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$prefix"; done
arch_lib="$prefix/usr/lib/x86_64-linux-gnu"
# Debian selects OpenBLAS through update-alternatives links, which a plain unpack does not make:
# expose the pthread variant where find_package(BLAS) and #include <cblas.h> look.
rm -f "$arch_lib"/openblas-pthread/*.a
ln -sf openblas-pthread/libopenblas.so.0 "$arch_lib/libopenblas.so"
ln -sf openblas-pthread/libopenblas.so.0 "$arch_lib/libopenblas.so.0"
mkdir -p "$prefix/usr/include"
for h in "$prefix"/usr/include/x86_64-linux-gnu/openblas-pthread/*.h; do
  ln -sf "x86_64-linux-gnu/openblas-pthread/$(basename "$h")" "$prefix/usr/include/$(basename "$h")"
done
tar -C "$(dirname "$prefix")" -cJf "$prefix.tar.xz" "$(basename "$prefix")"
echo "dependency prefix: $prefix ($(du -sh "$prefix" | cut -f1)); tarball: $prefix.tar.xz ($(du -sh "$prefix.tar.xz" | cut -f1))"
echo "build there with: scripts/build.sh -DCMAKE_PREFIX_PATH=\$PWD/$prefix/usr -DPIPELAB_MPI=OFF"
