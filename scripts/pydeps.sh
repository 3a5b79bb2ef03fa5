#!/usr/bin/env bash
# Creates build/venv with pytest and py-bitcoinkernel (Bitcoin Core's libbitcoinkernel, the
# differential-test oracle). Idempotent; prints the venv's python path. With --report, also
# matplotlib (for `ibdkit bench --report`'s chart, scripts/bench_report.py).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/build/venv"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import pbk, pytest" 2>/dev/null; then
  py=$(command -v python3)
  "$py" -m venv "$venv" >/dev/null 2>&1 || { echo "pydeps: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
  "$venv/bin/pip" install -q --disable-pip-version-check pytest "py-bitcoinkernel==0.1.0a5" >&2 \
    || "$venv/bin/pip" install -q --disable-pip-version-check --pre pytest py-bitcoinkernel >&2
fi
if [ "${1:-}" = "--report" ] && ! "$venv/bin/python" -c "import matplotlib" 2>/dev/null; then
  "$venv/bin/pip" install -q --disable-pip-version-check matplotlib >&2
fi
echo "$venv/bin/python"
