#!/usr/bin/env bash
# Installs the Debian 12 packages ibdkit needs (docs/dependencies.md says why each one).
# As root: apt-get installs what is missing. Otherwise: prints the exact apt line and fails.
#   --arm64       the aarch64 cross build instead (docs/arm64.md): Debian's cross compiler, the
#                 arm64 libraries through multiarch (dpkg --add-architecture arm64) and qemu-user
#   --libcxx      the libc++ build (`make test-libcxx`, docs/core-allocators.md): clang 14, libc++ and
#                 GoogleTest's sources; LevelDB is left out of that build
set -euo pipefail
mode="${1:-}"
if [ "$mode" = "--arm64" ]; then
  pkgs=(cmake ninja-build pkg-config gcc-aarch64-linux-gnu g++-aarch64-linux-gnu qemu-user libcli11-dev
        nlohmann-json3-dev libgtest-dev:arm64 libleveldb-dev:arm64 libsnappy-dev:arm64 libsecp256k1-dev:arm64
        libsqlite3-dev:arm64)
elif [ "$mode" = "--libcxx" ]; then
  pkgs=(cmake ninja-build pkg-config clang-14 libc++-14-dev libc++abi-14-dev libgtest-dev libsecp256k1-dev
        libsqlite3-dev libcli11-dev nlohmann-json3-dev)
else
  pkgs=(cmake ninja-build g++ pkg-config libgtest-dev libleveldb-dev libsnappy-dev libsecp256k1-dev libsqlite3-dev libcli11-dev
        nlohmann-json3-dev clang-14 libclang-rt-14-dev libc++-14-dev libc++abi-14-dev python3 python3-venv python3-dev valgrind)
fi
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
add_arch=false
if [ "$mode" = "--arm64" ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then add_arch=true; fi
if [ "$(id -u)" != 0 ]; then
  echo "ibdkit: missing Debian packages. Run as root:" >&2
  $add_arch && echo "  dpkg --add-architecture arm64" >&2
  echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "ibdkit: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$add_arch && dpkg --add-architecture arm64
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
