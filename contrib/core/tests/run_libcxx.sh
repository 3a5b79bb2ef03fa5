#!/usr/bin/env bash
# Builds contrib/core/tests as a project of its own with clang++-14 and libc++ (macOS's standard
# library, which Core's macOS builds use) and runs its tests: ./run_libcxx.sh BUILD_DIR.
# Without clang++-14 or libc++ (apt: clang-14 libc++-14-dev libc++abi-14-dev) it skips (exit 77),
# unless CI is set, where a missing prerequisite fails.
set -euo pipefail
src="$(cd "$(dirname "$0")" && pwd)"
out="${1:?usage: run_libcxx.sh BUILD_DIR}"
cxx="${CXX_LIBCXX:-clang++-14}"
if ! command -v "$cxx" >/dev/null ||
   ! printf '#include <vector>\nint main() { std::vector<int> v(1); return v[0]; }\n' |
     "$cxx" -std=c++20 -stdlib=libc++ -x c++ - -o /dev/null 2>/dev/null; then
  echo "run_libcxx.sh: $cxx with libc++ is not available (apt-get install clang-14 libc++-14-dev libc++abi-14-dev)" >&2
  [ -n "${CI:-}" ] && exit 1
  exit 77
fi
cmake -S "$src" -B "$out" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_FLAGS=-stdlib=libc++ -DCMAKE_EXE_LINKER_FLAGS=-stdlib=libc++ -DCLEANSING_WERROR=ON >/dev/null
cmake --build "$out"
ctest --test-dir "$out" --output-on-failure
