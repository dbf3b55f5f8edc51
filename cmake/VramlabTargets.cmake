# Helpers every folder uses to add its targets the same way.

# Note [Unity builds]
# Most of the compile time of the vramlab command, the lessons and the runtime's libraries is not
# their own code: each .cpp parses nlohmann/json, CLI11 and the standard library again and emits
# again every inline function it uses from them (g++ -ftime-report on a subcommand: 31% parsing,
# 53% optimising and emitting, most of both in those headers; a precompiled header removed only
# the parsing, 0.5 s of 10). A unity build compiles a target's sources as a few larger units
# (CMake's UNITY_BUILD, batches of UNITY_BUILD_BATCH_SIZE), so that work is done once per batch.
# The price is that file-local names share a unit: two files of one target may not define the
# same helper in their anonymous namespaces (one shared helper is the better code anyway).
# Targets whose files each #include a .cu with its own file-local constants, or whose time is
# their own code (the CPU kernels), opt out with NO_UNITY. VRAMLAB_UNITY=OFF compiles file by
# file, e.g. to check that every file includes what it uses.
option(VRAMLAB_UNITY "Compile the runtime's libraries, the lessons and the vramlab command as unity builds" ON)

# vramlab_unity(<target>): compile <target> as a unity build (Note [Unity builds]).
function(vramlab_unity target)
  if(VRAMLAB_UNITY)
    # Batches of 6: 2-core machines still get two units to compile in parallel for a
    # 12-file target, and an edit recompiles a sixth of it, not all.
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 6)
  endif()
endfunction()

# Note [Sanitizer build: libraries at -O1]
# The sanitizer suite spends its time in the runtime's loops (kernels, training steps), and
# instrumented -O0 code runs them several times slower than -O1; its build spends its time in the
# tests, the lessons and the command, whose code runs little. So the libraries compile at -O1 and
# the rest at the preset's -O0, both with line tables (file:line in every report). Measured
# on 2 cores with everything at -O1: the suite took 565 s instead of 997 s, but compiling the
# same objects took 2,413 s of compiler time instead of 1,749 s (the tests' alone 1,010 s
# instead of 639 s), which ate most of the gain.
#
# Note [Sanitizer build: clang]
# The sanitizer preset compiles with clang, not g++: instrumented code costs g++ much more time
# than clang (common/plan's unity unit with ASan + UBSan: 47.4 s against 30.1 s at -O1, 26.2 s
# against 17.6 s at -O0; the whole build on 2 cores about 730 s against 1,200 s). Clang 14 and
# libstdc++ 12 have two gaps the code keeps clear of: std::source_location does not compile
# (common/platform/source_location.h), and a lambda cannot capture a structured binding (copy
# it into a named variable or an init-capture first).

# vramlab_runs_much(<target>): <target>'s code is where the suite spends its time (the runtime's
# libraries, the exercises' implementations): -O1 in the sanitizer build.
function(vramlab_runs_much target)
  if(VRAMLAB_SANITIZE AND NOT VRAMLAB_FUZZ)
    target_compile_options(${target} PRIVATE $<$<CONFIG:Debug>:-O1>)
  endif()
endfunction()

# vramlab_add_library(NAME <name> SOURCES ... [DEPS ...] [NO_UNITY] [RUNS_LITTLE]): a static
# library vramlab_<name>, aliased vramlab::<name>, with the project's warnings and the repository
# root as include root (so headers are included as "common/memory/allocator.h"), compiled as a
# unity build unless NO_UNITY (Note [Unity builds]). RUNS_LITTLE: code that drives the runtime and
# prints (a lesson's measurements and report, the workbook's files and processes), compiled like
# the binaries that use it (Note [Code that runs little: -Og]).
function(vramlab_add_library)
  cmake_parse_arguments(A "NO_UNITY;RUNS_LITTLE" "NAME" "SOURCES;DEPS" ${ARGN})
  add_library(vramlab_${A_NAME} STATIC ${A_SOURCES})
  add_library(vramlab::${A_NAME} ALIAS vramlab_${A_NAME})
  target_include_directories(vramlab_${A_NAME} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(vramlab_${A_NAME} PUBLIC ${A_DEPS} PRIVATE vramlab::warnings)
  if(NOT A_NO_UNITY)
    vramlab_unity(vramlab_${A_NAME})
  endif()
  if(A_RUNS_LITTLE)
    vramlab_runs_little(vramlab_${A_NAME})
  else()
    vramlab_runs_much(vramlab_${A_NAME})  # Note [Sanitizer build: libraries at -O1]
  endif()
endfunction()

# Every ctest test has a finite TIMEOUT, so a hang is a failure, not a stalled run. Sizing: at
# least 10x the test's normal time in the Release build (ctest -j2 on the 2-core CI machine; see
# build/Testing/Temporary/CTestCostData.txt) and at least 60 s. Debug and sanitizer builds run
# several times slower, so their timeouts are VRAMLAB_TEST_TIMEOUT_SCALE times longer.
# tests/check_test_timeouts.py (ctest: ctest.every_test_has_a_timeout) checks every test.
if(VRAMLAB_SANITIZE OR CMAKE_BUILD_TYPE STREQUAL "Debug")
  set(VRAMLAB_TEST_TIMEOUT_SCALE 5)
else()
  set(VRAMLAB_TEST_TIMEOUT_SCALE 1)
endif()

# Note [Code that runs little: -Og]
# Most of a build's compile time is code that runs little: the tests (Release, CUDA on, no cache:
# 735 s of 1,490 s of compiler time are the test units and the exercises' tests), and the lesson
# binaries' and the vramlab command's own sources (192 s), which parse flags, call the runtime and
# print. The loops they drive are the runtime's, compiled at -O3 in its libraries (and the
# exercises', which stay at -O3 too). So that code compiles at -Og in Release: g++ 12 does it in
# 40 % of the time of -O3 (tests/report's first unity unit: 22.4 s at -O3, 12.6 s at -O1, 8.8 s at
# -Og; -O1 also makes g++ 12 warn -Wnull-dereference inside nlohmann/json).
function(vramlab_runs_little target)
  target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:-Og>)
endfunction()

# Note [One precompiled header for the tests]
# GoogleTest's and nlohmann/json's headers take 2.3 s of parsing in every test unit (g++ 12
# -fsyntax-only of the two includes), so every test unit reuses one precompiled header of them.
# g++ uses a precompiled header only in units compiled with the options that define the same
# macros (it refuses one when `_OPENMP` differs, for one), so the header's unit and every test
# unit compile with OpenMP, and -Winvalid-pch makes a unit that cannot use the header say so
# instead of silently parsing it again. ccache caches such units only with the sloppiness below,
# and with the header passed by -include, as CMake does (ccache's manual, "Precompiled headers").
set(VRAMLAB_TEST_PCH_SOURCE ${CMAKE_CURRENT_LIST_DIR}/test_pch.cpp)
function(_vramlab_test_flags target)
  vramlab_runs_little(${target})
  target_link_libraries(${target} PRIVATE OpenMP::OpenMP_CXX)
  if(CMAKE_CXX_COMPILER_LAUNCHER MATCHES "ccache")
    set_target_properties(${target} PROPERTIES CXX_COMPILER_LAUNCHER
      "${CMAKE_COMMAND};-E;env;CCACHE_SLOPPINESS=pch_defines,time_macros;${CMAKE_CXX_COMPILER_LAUNCHER}")
  endif()
endfunction()

# vramlab_test_code(<target> [RUNS_MUCH]): compile <target>'s sources as test code: at -Og in
# Release (Note [Code that runs little: -Og]), with the tests' precompiled header (the Note above).
# RUNS_MUCH: checks whose own loops are most of their time under the sanitizers (exhaustive sweeps,
# references computed element by element) compile at -O1 there (Note [Sanitizer build: libraries
# at -O1]), with a header precompiled at -O1 too: clang refuses a header whose __OPTIMIZE__
# differs from the unit's. It pays only where the loops are long: clang with ASan compiles a test
# unit at -O1 in 4-7x its -O0 time (tests/kernels_cpu: 77 s against 18 s), which is more than
# the -O1 run saved there (49 s to 24 s); an exercise's narrow-float sweep, 3.8 s to compile,
# runs in 7 s instead of 34 s.
function(vramlab_test_code target)
  cmake_parse_arguments(A "RUNS_MUCH" "" "" ${ARGN})
  set(_pch vramlab_test_pch)
  if(A_RUNS_MUCH AND VRAMLAB_SANITIZE AND NOT VRAMLAB_FUZZ)
    set(_pch vramlab_test_pch_runs_much)
    vramlab_runs_much(${target})
  endif()
  if(NOT TARGET ${_pch})
    add_library(${_pch} OBJECT ${VRAMLAB_TEST_PCH_SOURCE})
    target_link_libraries(${_pch} PRIVATE GTest::gtest vramlab::warnings)
    target_precompile_headers(${_pch} PRIVATE <gtest/gtest.h> <nlohmann/json.hpp>)
    _vramlab_test_flags(${_pch})
    if(_pch STREQUAL "vramlab_test_pch_runs_much")
      vramlab_runs_much(${_pch})
    endif()
  endif()
  _vramlab_test_flags(${target})
  target_precompile_headers(${target} REUSE_FROM ${_pch})
  target_compile_options(${target} PRIVATE -Winvalid-pch)
endfunction()

# vramlab_add_test(NAME <name> SOURCES ... [DEPS ...] [LABELS ...] [TIMEOUT s] [RUN_SERIAL]
#                  [NO_UNITY]): a GoogleTest binary in build/tests/bin, its tests discovered one by
# one for ctest. TIMEOUT applies to each test case (default 60 s, the floor above; give more when a
# case's normal time exceeds 6 s). RUN_SERIAL: nothing else runs beside its cases (they measure the
# machine's load). A binary's sources compile as a unity build (Note [Unity builds]): the
# GoogleTest headers, parsed and emitted once per batch, are most of a small test file's compile
# time, so a folder's test files of the same TIMEOUT and LABELS share one binary.
function(vramlab_add_test)
  cmake_parse_arguments(A "RUN_SERIAL;NO_UNITY" "NAME;TIMEOUT;ENVIRONMENT" "SOURCES;DEPS;LABELS"
                        ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 60)
  endif()
  math(EXPR A_TIMEOUT "${A_TIMEOUT} * ${VRAMLAB_TEST_TIMEOUT_SCALE}")
  add_executable(${A_NAME} ${A_SOURCES})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} GTest::gtest GTest::gtest_main
                        vramlab::passive_wait vramlab::warnings)
  target_include_directories(${A_NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  set_target_properties(${A_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/bin)
  if(NOT A_NO_UNITY)
    vramlab_unity(${A_NAME})
  endif()
  vramlab_test_code(${A_NAME})
  set(_serial)
  if(A_RUN_SERIAL)
    set(_serial RUN_SERIAL)
  endif()
  set(_environment)
  if(A_ENVIRONMENT)
    set(_environment ENVIRONMENT ${A_ENVIRONMENT})
  endif()
  vramlab_discover_tests(${A_NAME} TIMEOUT ${A_TIMEOUT} LABELS ${A_LABELS} ${_serial}
                         ${_environment})
endfunction()

# vramlab_add_bad_input_cases(PREFIX <name> BINARY <target> CASES "name|arg,arg|expected" ...):
# one ctest case per bad command line of a lesson binary, PREFIX_cli.bad_input.NAME (labels PREFIX
# and cli), each run by tests/cli/check_lesson_bad_input.cmake: exit 2 and one line naming
# EXPECTED.
function(vramlab_add_bad_input_cases)
  cmake_parse_arguments(A "" "PREFIX;BINARY" "CASES" ${ARGN})
  foreach(case ${A_CASES})
    string(REPLACE "|" ";" _parts "${case}")
    list(GET _parts 0 _name)
    list(GET _parts 1 _args)
    list(GET _parts 2 _expect)
    add_test(NAME ${A_PREFIX}_cli.bad_input.${_name}
      COMMAND ${CMAKE_COMMAND} -DBINARY=$<TARGET_FILE:${A_BINARY}> "-DARGS=${_args}"
              "-DEXPECT=${_expect}" -DOUT_DIR=${CMAKE_CURRENT_BINARY_DIR}/bad_input
              -P ${PROJECT_SOURCE_DIR}/tests/cli/check_lesson_bad_input.cmake)
    set_tests_properties(${A_PREFIX}_cli.bad_input.${_name}
                         PROPERTIES LABELS "${A_PREFIX};cli" TIMEOUT 60)
  endforeach()
endfunction()

# vramlab_discover_tests(<target> TIMEOUT s [LABELS ...] [RESOURCE_LOCK ...] [RUN_SERIAL]
# [ENVIRONMENT VAR=value]): the GoogleTest binary's cases as ctest tests, with these properties.
#
# Note [Test properties after discovery]
# gtest_discover_tests (CMake 3.25) writes its PROPERTIES into the generated script one word at a
# time, so a list value is split: LABELS "lesson04;cli" became LABELS lesson04 and a property named
# cli whose value was the next word, which swallowed RESOURCE_LOCK and let two mpirun jobs race.
# The list-valued properties are therefore set by a second script that ctest includes after the
# discovered tests (TEST_INCLUDE_FILES runs in order), on the list of names the first one defines.
function(vramlab_discover_tests target)
  cmake_parse_arguments(A "RUN_SERIAL" "TIMEOUT;ENVIRONMENT" "LABELS;RESOURCE_LOCK" ${ARGN})
  set(_props TIMEOUT ${A_TIMEOUT})
  if(A_ENVIRONMENT)  # one VAR=value: a single word survives the script (the Note below)
    list(APPEND _props ENVIRONMENT ${A_ENVIRONMENT})
  endif()
  if(A_RUN_SERIAL)
    list(APPEND _props RUN_SERIAL TRUE)
  endif()
  gtest_discover_tests(${target} DISCOVERY_TIMEOUT 60 TEST_LIST ${target}_TESTS PROPERTIES ${_props})
  set(_lists)
  foreach(_property LABELS RESOURCE_LOCK)
    if(A_${_property})
      string(APPEND _lists " ${_property} \"${A_${_property}}\"")
    endif()
  endforeach()
  if(_lists)
    set(_script "${CMAKE_CURRENT_BINARY_DIR}/${target}_properties.cmake")
    file(WRITE "${_script}"
         "if(DEFINED ${target}_TESTS)\n"
         "  set_tests_properties(\${${target}_TESTS} PROPERTIES${_lists})\n"
         "endif()\n")
    set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${_script}")
  endif()
endfunction()

# vramlab_add_benchmark(NAME <name> SOURCES ... [DEPS ...]): a Google Benchmark binary in
# build/bench/bin. .ci/run runs every one of them once with a tiny time budget.
function(vramlab_add_benchmark)
  cmake_parse_arguments(A "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_executable(${A_NAME} ${A_SOURCES})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} benchmark::benchmark benchmark::benchmark_main vramlab::warnings)
  target_include_directories(${A_NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  set_target_properties(${A_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bench/bin)
  set_property(GLOBAL APPEND PROPERTY VRAMLAB_BENCHMARKS ${A_NAME})
endfunction()

# Adds every immediate subfolder of the current folder that has a CMakeLists.txt.
function(vramlab_add_subfolders)
  file(GLOB _children LIST_DIRECTORIES true RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT _children)
  foreach(child ${_children})
    if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${child} AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${child}/CMakeLists.txt)
      add_subdirectory(${child})
    endif()
  endforeach()
endfunction()

# vramlab_emulated_sources(<out var> <path>...): for each kernel file <path>.cu (relative to the
# current folder, without .cu), a generated <name>_emulated.cpp in the build folder that
# #includes it, so g++ compiles the kernel against the SIMT emulator (kernels/simt). The .cu
# itself stays CUDA for nvcc: marking it LANGUAGE CXX would take it from the CUDA target built
# from the same file. A new kernel file therefore needs only its name in the folder's list.
function(vramlab_emulated_sources out)
  file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  set(sources "")
  foreach(path ${ARGN})
    get_filename_component(name ${path} NAME)
    set(generated ${CMAKE_CURRENT_BINARY_DIR}/emulated/${name}_emulated.cpp)
    # CONFIGURE rewrites the file only when its text changes, so a re-run of CMake rebuilds nothing.
    file(CONFIGURE OUTPUT ${generated} CONTENT
"// Generated by vramlab_emulated_sources (cmake/VramlabTargets.cmake): ${name}.cu compiled for
// the CPU, where the SIMT emulator runs every CUDA thread as a fiber.
#include \"${folder}/${path}.cu\"
")
    list(APPEND sources ${generated})
  endforeach()
  set(${out} ${sources} PARENT_SCOPE)
endfunction()
