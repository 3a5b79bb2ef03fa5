#!/usr/bin/env bash
# Creates build/venv with pytest and py-bitcoinkernel (Bitcoin Core's libbitcoinkernel, the
# differential-test oracle), and what the Python package needs to build and be tested (nanobind,
# scikit-build-core, pyarrow, tqdm; distributed for ibdkit.swiftsync.run_dask; duckdb for the
# documentation's examples, which python/package_tests/test_docs_examples.py runs; mypy, whose stubtest
# python/package_tests/test_stubs.py runs on the module's stubs). Idempotent; prints
# the venv's python path. With --report, also matplotlib (for `ibdkit bench --report`'s chart,
# scripts/bench_report.py); with --bench, the peers of the Python benchmark (blockchain-parser).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/build/venv"
pip() { "$venv/bin/pip" install -q --disable-pip-version-check "$@" >&2; }
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import pbk, pytest" 2>/dev/null; then
  py=$(command -v python3)
  "$py" -m venv "$venv" >/dev/null 2>&1 || { echo "pydeps: python3 -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
  pip pytest "py-bitcoinkernel==0.1.0a5" || pip --pre pytest py-bitcoinkernel
fi
if ! "$venv/bin/python" -c "import nanobind, scikit_build_core, pyarrow, tqdm" 2>/dev/null; then
  pip "nanobind>=2.0" "scikit-build-core>=0.9" "pyarrow>=14" tqdm \
    || { echo "pydeps: pip install nanobind scikit-build-core pyarrow tqdm failed" >&2; exit 1; }
fi
if ! "$venv/bin/python" -c "import distributed" 2>/dev/null; then
  pip "distributed>=2024.1" || { echo "pydeps: pip install distributed failed" >&2; exit 1; }
fi
if ! "$venv/bin/python" -c "import duckdb" 2>/dev/null; then
  pip duckdb || { echo "pydeps: pip install duckdb failed" >&2; exit 1; }
fi
if ! "$venv/bin/python" -c "import mypy.stubtest" 2>/dev/null; then
  pip mypy || { echo "pydeps: pip install mypy failed" >&2; exit 1; }
fi
if [ "${1:-}" = "--report" ] && ! "$venv/bin/python" -c "import matplotlib" 2>/dev/null; then
  pip matplotlib
fi
if [ "${1:-}" = "--bench" ] && ! "$venv/bin/python" -c "import blockchain_parser" 2>/dev/null; then
  pip blockchain-parser
fi
echo "$venv/bin/python"
