# Front doors: `make run` (the main job) and `make test` (the whole suite). Both install what is
# missing first (scripts/deps.sh), then build with CMake presets (CMakePresets.json).
PRESET ?= release
BUILD  := build/$(PRESET)
JOBS   ?= $(shell nproc)
FUZZ_SECONDS ?= 60

.PHONY: all deps build run test test-clang test-arm64 test-libcxx sanitize fuzz bench wheel test-wheel clean

all: build

deps:
	@scripts/deps.sh

# The release build's Python module is importable from build/venv afterwards (a .pth file naming
# build/release/python): `build/venv/bin/python -c 'import ibdkit'` (docs/python.md).
build: deps
	@scripts/pydeps.sh >/dev/null
	@cmake --preset $(PRESET) >/dev/null
	@cmake --build --preset $(PRESET) -j $(JOBS)
	@if [ "$(PRESET)" = release ] && [ -d "$(BUILD)/python/ibdkit" ]; then \
	  echo "$(CURDIR)/$(BUILD)/python" > "$$(build/venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/ibdkit-build.pth"; fi

run: build
	./$(BUILD)/ibdkit run

test: build
	ctest --preset $(PRESET)

test-clang:
	$(MAKE) test PRESET=clang

# The aarch64 cross build (preset arm64, Debian's g++-aarch64-linux-gnu) and its tests under
# qemu-aarch64, with UTXO hashes compared against the host build's CLI (docs/arm64.md).
test-arm64: build
	@scripts/deps.sh --arm64
	@cmake --preset arm64 >/dev/null
	@cmake --build --preset arm64 -j $(JOBS) --target ibdkit_tests ibdkit_cli
	scripts/test_arm64.sh build/arm64 $(BUILD)/ibdkit

# clang 14 with libc++ (macOS's standard library, which Core's macOS builds use): the parts of ibdkit
# that need no C++ library from Debian (no LevelDB: cmake/libcxx_subset.cmake), their unit tests,
# the seed's benchmarks (build/libcxx/ibdkit bench) and contrib/core's tests (docs/core-allocators.md).
test-libcxx:
	@scripts/deps.sh --libcxx
	@cmake --preset libcxx >/dev/null
	@cmake --build --preset libcxx -j $(JOBS)
	ctest --preset libcxx

sanitize: deps
	@scripts/pydeps.sh >/dev/null
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan -j $(JOBS)
	ctest --preset asan

fuzz: deps
	@cmake --preset fuzz >/dev/null
	@cmake --build --preset fuzz -j $(JOBS)
	scripts/fuzz.sh build/fuzz/fuzz $(FUZZ_SECONDS)

# A self-contained manylinux wheel in build/wheel/ (auditwheel repair from PyPI; docs/python.md,
# *The wheel*); test-wheel installs it into a fresh venv with the system's libraries hidden and runs
# the README's Python example.
wheel: deps
	@JOBS=$(JOBS) scripts/wheel.sh >/dev/null

test-wheel: wheel
	scripts/wheel_check.sh "$$(ls build/wheel/ibdkit-*manylinux*.whl)" build/wheel/check

bench: build
	./$(BUILD)/ibdkit bench --policy all

clean:
	rm -rf build
