# Cross-compiling ibdkit for 64-bit ARM Linux (Raspberry Pi 4/5, AWS Graviton, …) on a Debian 12
# x86-64 host: Debian's cross toolchain (g++-aarch64-linux-gnu) and multiarch libraries
# (`dpkg --add-architecture arm64`, then libleveldb-dev:arm64 etc.; `scripts/deps.sh --arm64`).
# The arm64 preset uses this file; the binaries run here under qemu-aarch64 (docs/arm64.md).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Multiarch: the arm64 libraries live in /usr/lib/aarch64-linux-gnu beside the host's, their
# headers and CMake packages under /usr, the header-only ones (CLI11, nlohmann-json) in
# /usr/share/cmake. The compiler searches those itself; CMake and pkg-config are told here.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu /usr)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

# Tests and `ibdkit` run through qemu-user (package qemu-user). No -L: the multiarch libc6:arm64
# puts the loader at /lib/ld-linux-aarch64.so.1, and with -L /usr/aarch64-linux-gnu (the cross
# libc) a process that starts a thread hangs under qemu 7.2.
find_program(IBDKIT_QEMU_AARCH64 qemu-aarch64)
if(IBDKIT_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${IBDKIT_QEMU_AARCH64})
endif()
