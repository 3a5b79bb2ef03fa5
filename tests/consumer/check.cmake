# ctest driver (cmake -P): builds and runs tests/consumer against ibdkit.
#   MODE=install : installs the already-built tree BUILD_DIR into a temporary prefix, then
#                  find_package(ibdkit) from the consumer (no library rebuild).
#   MODE=subdir  : add_subdirectory(SOURCE_DIR) — checks that only the library is defined, that
#                  no compile command of a consumer's default build carries -Werror (so no warning
#                  can fail it: `ninja -t commands` lists every one), and compiles the consumer's
#                  own file against the headers add_subdirectory gives it. The library is not
#                  compiled again (the install mode runs it; other generators than Ninja still build
#                  and run everything).
# Inputs: MODE, SOURCE_DIR, BUILD_DIR, WORK_DIR, CXX, GENERATOR, and optionally LAUNCHER (ccache).
foreach(v MODE SOURCE_DIR BUILD_DIR WORK_DIR CXX GENERATOR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check.cmake: ${v} not set")
  endif()
endforeach()
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
string(TIMESTAMP t0 "%s")

function(run)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "consumer (${MODE}): `${cmd}` failed (${rc}):\n${out}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

set(args -S ${SOURCE_DIR}/tests/consumer -B ${WORK_DIR}/build -G ${GENERATOR} -DCMAKE_CXX_COMPILER=${CXX})
if(LAUNCHER)
  list(APPEND args -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER} -DCMAKE_C_COMPILER_LAUNCHER=${LAUNCHER})
endif()
if(MODE STREQUAL "install")
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
  # The chain generator and the benchmarks are targets of their own, no part of the package.
  file(GLOB_RECURSE archive ${WORK_DIR}/prefix/libibdkit.a)
  find_program(IBDKIT_AR NAMES ar llvm-ar REQUIRED)
  run(${IBDKIT_AR} t ${archive})
  if(EXISTS ${WORK_DIR}/prefix/include/ibdkit/gen OR last_output MATCHES "chain_gen|bench_")
    message(FATAL_ERROR "consumer (install): the package holds the chain generator or the benchmarks:\n${last_output}")
  endif()
  run(${CMAKE_COMMAND} ${args} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
elseif(MODE STREQUAL "subdir")
  # No build type: CMake's default flags, as a consumer's plain build has them.
  run(${CMAKE_COMMAND} ${args} -DIBDKIT_SUBDIR=${SOURCE_DIR})
  if(GENERATOR MATCHES "Ninja")
    run(${CMAKE_COMMAND} --build ${WORK_DIR}/build --target CMakeFiles/consumer.dir/main.cpp.o)
    find_program(IBDKIT_NINJA NAMES ninja ninja-build REQUIRED)
    run(${IBDKIT_NINJA} -C ${WORK_DIR}/build -t commands consumer) # every command, none run
    string(REGEX MATCHALL "[^\n]*ibdkit[^\n]*\\.cpp[^\n]*" commands "${last_output}")
    list(LENGTH commands n)
    if(n LESS 50)
      message(FATAL_ERROR "consumer (subdir): the dry run lists ${n} library compile commands:\n${last_output}")
    endif()
    if(last_output MATCHES "-Werror")
      message(FATAL_ERROR "consumer (subdir): a compile command carries -Werror: a warning would fail a consumer's build:\n${last_output}")
    endif()
    string(TIMESTAMP t1 "%s")
    math(EXPR secs "${t1} - ${t0}")
    message(STATUS "consumer (subdir): ok in ${secs} s: ${n} library commands without -Werror; main.cpp compiled")
    file(REMOVE_RECURSE ${WORK_DIR})
    return()
  endif()
else()
  message(FATAL_ERROR "check.cmake: MODE must be install or subdir")
endif()
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build --target consumer)
# The block file is the regtest chain of tests/data that test_replay_differential.py replays beside
# Core's engine; the hash is its UTXO set at 206.
run(${WORK_DIR}/build/consumer ${WORK_DIR}/chainstate ${SOURCE_DIR}/tests/data/regtest/core_kernel_blocks_1-206.blk)
string(FIND "${last_output}" "empty set 56944c5d3f98413ef45cf54545538103cc9f298e0575820ad3591376e2e0f65d" found)
string(FIND "${last_output}" "replayed to 206, 230 coins, 6f596a9fb79023e72ac6c2423e9dff4991f49994c0a55d1a2124ce03a98e9d74" replayed)
if(found EQUAL -1 OR replayed EQUAL -1)
  message(FATAL_ERROR "consumer (${MODE}): unexpected output:\n${last_output}")
endif()
string(TIMESTAMP t1 "%s")
math(EXPR secs "${t1} - ${t0}")
message(STATUS "consumer (${MODE}): ok in ${secs} s\n${last_output}")
file(REMOVE_RECURSE ${WORK_DIR})
