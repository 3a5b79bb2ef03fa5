#!/usr/bin/env bash
# Runs python/tests (or the test files and pytest options given after the binary) with the venv from
# pydeps.sh against the given ibdkit binary: scripts/pytest.sh build/release/ibdkit [ARGS...].
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=$("$root/scripts/pydeps.sh")
export IBDKIT_CLI=${1:-$root/build/release/ibdkit}
cd "$root"
if [ $# -gt 1 ]; then
  "$py" -m pytest -q -p no:cacheprovider "${@:2}"
else
  "$py" -m pytest -q -p no:cacheprovider python/tests
fi
