#!/usr/bin/env bash
# Checks that `pip install .` works from this source tree: builds (unoptimised, in WORK/build,
# without build isolation: nanobind and scikit-build-core come from build/venv) and installs into
# WORK/site, then imports the package from there and decodes a block. Prints the time taken.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "${1:?usage: pip_check.sh WORK_DIR}"
work=$(cd "$1" && pwd)
py=$("$root/scripts/pydeps.sh")
start=$(date +%s)
rm -rf "$work/site"
"$py" -m pip install -q --disable-pip-version-check --no-build-isolation --no-deps --target "$work/site" \
  -Cbuild-dir="$work/build" -Ccmake.build-type=Debug -Ccmake.define.CMAKE_CXX_FLAGS_DEBUG=-O0 "$root"
cd "$work"
PYTHONPATH="$work/site" "$py" - <<'PY'
import ibdkit, os
assert os.path.dirname(ibdkit.__file__).endswith("site/ibdkit"), ibdkit.__file__
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
print("pip install . ok:", ibdkit.__version__, b)
PY
echo "pip_check: $(( $(date +%s) - start )) s"
