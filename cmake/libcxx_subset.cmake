# What the libc++ build (preset `libcxx`, `make test-libcxx`) compiles: the parts of ibdkit that
# need no C++ library from Debian, which builds LevelDB and GoogleTest against libstdc++ (their
# std::string and friends cannot cross into libc++ code). So no kv/ and nothing above it (coins,
# connect, utxo, blockfile, engine, gen, spent); GoogleTest is built from Debian's source copy
# (/usr/src/googletest). What is left holds every buffer policy and the seed's benchmarks:
# DataStream, blocks and P2P messages, CheckBlock, scripts. docs/core-allocators.md.
set(IBDKIT_LIBCXX_AREAS memory stream encoding crypto primitives consensus chain script wire common tabular settings)
set(IBDKIT_LIBCXX_BENCH bench_memory bench_wire bench_block bench_sha256 bench_crc32c)
set(IBDKIT_LIBCXX_CLI main commands interrupt json_output cmd_bench)
set(IBDKIT_LIBCXX_TESTS test_memory test_stream test_encoding test_policy_list test_primitives
    test_primitives_blocks test_sha256 test_crc32c test_wire test_protocol test_consensus
    test_header_check test_bench)

# engine/process.cpp: ProcessMessageBlock (the seed's benchmark) needs only wire/ and consensus/.
set(IBDKIT_SOURCES ${PROJECT_SOURCE_DIR}/src/error.cpp ${PROJECT_SOURCE_DIR}/src/engine/process.cpp)
foreach(area ${IBDKIT_LIBCXX_AREAS})
  file(GLOB area_sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${area}/*.cpp)
  list(APPEND IBDKIT_SOURCES ${area_sources})
endforeach()
list(TRANSFORM IBDKIT_LIBCXX_BENCH PREPEND ${PROJECT_SOURCE_DIR}/bench/ OUTPUT_VARIABLE IBDKIT_LIBCXX_BENCH_FILES)
list(TRANSFORM IBDKIT_LIBCXX_BENCH_FILES APPEND .cpp)
foreach(part callgrind counters environment json report runner sampler table util)
  list(APPEND IBDKIT_LIBCXX_BENCH_FILES ${PROJECT_SOURCE_DIR}/bench/${part}.cpp)
endforeach()
list(TRANSFORM IBDKIT_LIBCXX_CLI PREPEND ${PROJECT_SOURCE_DIR}/cli/ OUTPUT_VARIABLE IBDKIT_LIBCXX_CLI_FILES)
list(TRANSFORM IBDKIT_LIBCXX_CLI_FILES APPEND .cpp)
list(TRANSFORM IBDKIT_LIBCXX_TESTS PREPEND ${PROJECT_SOURCE_DIR}/tests/unit/ OUTPUT_VARIABLE IBDKIT_LIBCXX_TEST_FILES)
list(TRANSFORM IBDKIT_LIBCXX_TEST_FILES APPEND .cpp)

if(IBDKIT_BUILD_TESTS AND NOT TARGET GTest::gtest)
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
  add_subdirectory(/usr/src/googletest ${PROJECT_BINARY_DIR}/googletest EXCLUDE_FROM_ALL)
endif()
