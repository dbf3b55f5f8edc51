# Helpers every folder uses to add its targets the same way.

# vramlab_add_library(NAME <name> SOURCES ... [DEPS ...]): a static library vramlab_<name>,
# aliased vramlab::<name>, with the project's warnings and the repository root as include root
# (so headers are included as "common/memory/allocator.h").
function(vramlab_add_library)
  cmake_parse_arguments(A "" "NAME" "SOURCES;DEPS" ${ARGN})
  add_library(vramlab_${A_NAME} STATIC ${A_SOURCES})
  add_library(vramlab::${A_NAME} ALIAS vramlab_${A_NAME})
  target_include_directories(vramlab_${A_NAME} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(vramlab_${A_NAME} PUBLIC ${A_DEPS} PRIVATE vramlab::warnings)
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

# vramlab_add_test(NAME <name> SOURCES ... [DEPS ...] [LABELS ...] [TIMEOUT s] [RUN_SERIAL]): a
# GoogleTest binary in build/tests/bin, its tests discovered one by one for ctest. TIMEOUT applies
# to each test case (default 60 s, the floor above; give more when a case's normal time exceeds
# 6 s). RUN_SERIAL: nothing else runs beside its cases (they measure the machine's load).
function(vramlab_add_test)
  cmake_parse_arguments(A "RUN_SERIAL" "NAME;TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT A_TIMEOUT)
    set(A_TIMEOUT 60)
  endif()
  math(EXPR A_TIMEOUT "${A_TIMEOUT} * ${VRAMLAB_TEST_TIMEOUT_SCALE}")
  add_executable(${A_NAME} ${A_SOURCES})
  target_link_libraries(${A_NAME} PRIVATE ${A_DEPS} GTest::gtest GTest::gtest_main
                        vramlab::passive_wait vramlab::warnings)
  target_include_directories(${A_NAME} PRIVATE ${PROJECT_SOURCE_DIR})
  set_target_properties(${A_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/bin)
  set(_props TIMEOUT ${A_TIMEOUT})
  if(A_LABELS)
    list(APPEND _props LABELS "${A_LABELS}")
  endif()
  if(A_RUN_SERIAL)
    list(APPEND _props RUN_SERIAL TRUE)
  endif()
  gtest_discover_tests(${A_NAME} DISCOVERY_TIMEOUT 60 PROPERTIES ${_props})
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
