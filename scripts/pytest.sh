#!/usr/bin/env bash
# Runs python/tests with the venv from pydeps.sh against the given ibdkit binary.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=$("$root/scripts/pydeps.sh")
export IBDKIT_CLI=${1:-$root/build/release/ibdkit}
cd "$root"
"$py" -m pytest -q -p no:cacheprovider python/tests "${@:2}"
