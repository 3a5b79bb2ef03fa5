#!/usr/bin/env bash
# Installs the wheel of `make wheel` as a researcher would and runs the README's Python example (the
# block marked `run by scripts/wheel_check.sh`, python/tests/doc_examples.py)
# with it: a fresh venv of the system python3, `pip install WHEEL pyarrow duckdb` (PyPI), then the
# example run from a directory outside the source tree with a cleared environment
# (LD_LIBRARY_PATH empty, no PYTHONPATH). Where it can (root, unshare), the system's LevelDB,
# Snappy, libsecp256k1 and SQLite are hidden from the example (an empty file bind-mounted over
# each, in a private mount namespace), so the wheel must bring its own; either way every one of
# them mapped into the process must come from the wheel. Prints the time taken.
#   wheel_check.sh WHEEL WORK_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
wheel=$(cd "$(dirname "${1:?usage: wheel_check.sh WHEEL WORK_DIR}")" && pwd)/$(basename "$1")
mkdir -p "${2:?usage: wheel_check.sh WHEEL WORK_DIR}"
work=$(cd "$2" && pwd)
data=${IBDKIT_TEST_DATA:-$root/tests/data}
start=$(date +%s)
sys_py=$(command -v /usr/bin/python3 || command -v python3)
rm -rf "$work/venv" "$work/run"
"$sys_py" -m venv "$work/venv" || { echo "wheel_check: $sys_py -m venv failed (apt-get install python3-venv)" >&2; exit 1; }
"$work/venv/bin/pip" install -q --disable-pip-version-check "$wheel" pyarrow duckdb \
  || { echo "wheel_check: pip install of the wheel, pyarrow and duckdb failed (PyPI unreachable?)" >&2; exit 1; }
mkdir -p "$work/run"
"$sys_py" - "$root/README.md" "$work/run" > "$work/run/example.py" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
code = re.search(r"<!-- example: run by scripts/wheel_check.sh -->\n```python\n(.*?)```", text, re.S).group(1)
print(code.replace("/tmp/", sys.argv[2] + "/tmp/"))
PY
mkdir -p "$work/run/tmp/dd/testnet3"
cp -r "$data/testnet3/core_v25_0-121" "$work/run/tmp/dd/testnet3/blocks"   # the README's console set-up
cat > "$work/run/check.py" <<'PY'
import os, re, runpy, sys
out = runpy.run_path("example.py")  # the README's example, as written
import ibdkit
site = os.path.dirname(os.path.dirname(ibdkit.__file__))
assert "/site-packages" in site and os.getcwd() not in site, site
libs = {l.split()[-1] for l in open("/proc/self/maps") if ".so" in l}
ours = [l for l in libs if any(n in os.path.basename(l) for n in ("leveldb", "secp256k1", "sqlite3", "snappy"))]
assert ours and all(l.startswith(site) for l in ours), f"libraries not from the wheel: {ours}"
shown = re.search(r"# (\d+) ([0-9a-f]+)…", open("example.py").read())  # what the README says it prints
assert (out["stats"]["height"], out["stats"]["hash_serialized_3"][:len(shown[2])]) == (int(shown[1]), shown[2]), out["stats"]
assert sum(b.num_rows for b in out["txs"]) == 122, "the 122 transactions of the testnet3 data"
print("wheel ok:", ibdkit.__version__, "from", site, "with", sorted(os.path.basename(l) for l in ours))
PY
run=(env -i "PATH=/usr/bin:/bin" "HOME=$work/run" "LD_LIBRARY_PATH=" "$work/venv/bin/python" check.py)
cd "$work/run"
if [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
  hide=$(for n in leveldb snappy secp256k1 sqlite3; do ls /usr/lib/*/lib"$n".so.*.* /lib/*/lib"$n".so.*.* 2>/dev/null; done | sort -u | tr '\n' ' ')
  unshare -m --propagation private bash -c 'for f in '"$hide"'; do mount --bind /dev/null "$f"; done; exec "$@"' _ "${run[@]}"
  echo "wheel_check: system copies hidden: $hide"
else
  "${run[@]}"
fi
echo "wheel_check: $(( $(date +%s) - start )) s"
