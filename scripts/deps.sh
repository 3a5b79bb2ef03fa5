#!/usr/bin/env bash
# Installs the Debian 12 packages ibdkit needs (docs/dependencies.md says why each one).
# As root: apt-get installs what is missing. Otherwise: prints the exact apt line and fails.
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config libgtest-dev libleveldb-dev libsnappy-dev libsecp256k1-dev libsqlite3-dev libcli11-dev
      nlohmann-json3-dev clang-14 libclang-rt-14-dev python3 python3-venv python3-dev valgrind)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "ibdkit: missing Debian packages. Run as root:" >&2
  echo "  apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "ibdkit: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
