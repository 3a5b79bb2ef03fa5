#!/usr/bin/env bash
# Checks that `pip install .` works from this source tree as a user runs it: in a fresh venv of
# the system python3 (Debian 12: its pip 23.0), with pip's default build isolation — scikit-build-core
# and nanobind come from PyPI (or the index/find-links pip is configured with) into pip's temporary
# build environment; CMake, the compiler, LevelDB, libsecp256k1 and SQLite are the Debian packages
# of scripts/deps.sh. Then imports the installed package from outside the source tree and decodes
# a block. Unoptimised build in WORK/build, kept between runs (ccache-friendly; the nanobind runtime
# is recompiled each run since pip's build environment moves). Prints the time taken.
#   IBDKIT_PIP_NO_ISOLATION=1: build with build/venv's nanobind and scikit-build-core instead
#   (--no-build-isolation; for a machine without access to a package index).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "${1:?usage: pip_check.sh WORK_DIR}"
work=$(cd "$1" && pwd)
start=$(date +%s)
opts=(--disable-pip-version-check --config-settings=build-dir="$work/build"
      --config-settings=cmake.build-type=Debug --config-settings=cmake.define.CMAKE_CXX_FLAGS_DEBUG=-O0)
if [ -n "${IBDKIT_PIP_NO_ISOLATION:-}" ]; then
  # build/venv has the build requirements (scripts/pydeps.sh); install into WORK/site.
  py=$("$root/scripts/pydeps.sh")
  rm -rf "$work/site"
  opts+=(--no-build-isolation --no-deps --target "$work/site")
  export PYTHONPATH="$work/site"
else
  sys_py=$(command -v /usr/bin/python3 || command -v python3)
  if [ ! -x "$work/venv/bin/python" ]; then
    "$sys_py" -m venv "$work/venv" || { echo "pip_check: $sys_py -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
  fi
  py="$work/venv/bin/python"
  "$py" -m pip uninstall -q -y ibdkit >/dev/null 2>&1 || true
fi
if ! "$py" -m pip install -q "${opts[@]}" "$root"; then
  echo "pip_check: 'pip install .' failed. With build isolation pip fetches the build requirements" >&2
  echo "  (scikit-build-core, nanobind) from PyPI: it needs the index reachable, or PIP_INDEX_URL /" >&2
  echo "  PIP_FIND_LINKS pointing at a mirror or wheelhouse; IBDKIT_PIP_NO_ISOLATION=1 uses build/venv's." >&2
  exit 1
fi
cd "$work"
"$py" - <<'PY'
import ibdkit, os
where = os.path.dirname(ibdkit.__file__)
assert where.startswith(os.getcwd()) and "/python/ibdkit" not in where, where  # installed, not the source tree
genesis = bytes.fromhex(
    "0100000000000000000000000000000000000000000000000000000000000000000000003ba3edfd7a7b12b27ac72c3e"
    "67768f617fc81bc3888a51323a9fb8aa4b1e5e4adae5494dffff7f20020000000101000000010000000000000000000000"
    "000000000000000000000000000000000000000000ffffffff4d04ffff001d0104455468652054696d65732030332f4a61"
    "6e2f32303039204368616e63656c6c6f72206f6e206272696e6b206f66207365636f6e64206261696c6f757420666f722062"
    "616e6b73ffffffff0100f2052a01000000434104678afdb0fe5548271967f1a67130b7105cd6a828e03909a67962e0ea1f"
    "61deb649f6bc3f4cef38c4f35504e51ec112de5c384df7ba0b8d578a4c702b6bf11d5fac00000000")
b = ibdkit.decode_block(genesis, network="regtest")
assert b.hash == "0f9188f13cb7b2c71f2a335e3a4fc328bf5beb436012afca590b1a11466e2206", b.hash
assert b.check() is None
print("pip install . ok:", ibdkit.__version__, b, "from", where)
PY
echo "pip_check: $(( $(date +%s) - start )) s"
