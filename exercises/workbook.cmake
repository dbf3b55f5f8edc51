# The workbook's CMake side: reads every lessons/NN-name/manifest.json (string(JSON), CMake 3.25)
# and defines, per exercise 01.1:
#   ex_01_1_mine                 the learner's stub (exercises/)           static library
#   ex_01_1_ref                  the reference (solutions/)                static library
#   ex_01_1_wrong_<name>         each known-wrong variant (solutions/…/wrong/: a patch against the
#                                reference, applied at build time, or a whole file)
#   test_ex_01_1_ref             the exercise's tests on the reference: in `all` and in ctest
#   test_ex_01_1_mine            the same tests on the learner's code: not in `all` nor in ctest;
#                                `vramlab check` builds and runs it, `verify` (CI) checks every stub
#   test_ex_01_1_wrong_<name>    the tests on each wrong variant: not in `all`; `verify` builds them
# and per lesson 01 the interface libraries a lesson binary links:
#   vramlab::lesson01_exercises       per exercise the learner's code if VRAMLAB_USE_MINE names it
#                                     (or its lesson, or "all"), else the reference
#   vramlab::lesson01_exercises_ref   every reference;  vramlab::lesson01_exercises_mine  every stub
# A test binary for exercise X links the learner's X and the references of the lesson's other
# exercises, so an earlier mistake never cascades. exercises/README.md documents the manifest keys.
include_guard(GLOBAL)

set(VRAMLAB_USE_MINE "" CACHE STRING
    "Exercises (01.1), lessons (01) or 'all' whose learner code the lesson binaries use")

# vramlab_workbook_lesson_dirs(<out>): the lesson folders that have a manifest.json, sorted.
function(vramlab_workbook_lesson_dirs out)
  file(GLOB _manifests CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/lessons/*/manifest.json)
  list(SORT _manifests)
  set(_dirs "")
  foreach(m ${_manifests})
    get_filename_component(_dir ${m} DIRECTORY)
    list(APPEND _dirs ${_dir})
  endforeach()
  set(${out} ${_dirs} PARENT_SCOPE)
endfunction()

# _vramlab_json_list(<out> <json> <key path...>): a JSON array of strings as a CMake list
# (empty when the key is missing).
function(_vramlab_json_list out json)
  set(_items "")
  string(JSON _n ERROR_VARIABLE _err LENGTH "${json}" ${ARGN})
  if(NOT _err AND _n GREATER 0)
    math(EXPR _last "${_n} - 1")
    foreach(i RANGE ${_last})
      string(JSON _item GET "${json}" ${ARGN} ${i})
      list(APPEND _items "${_item}")
    endforeach()
  endif()
  set(${out} "${_items}" PARENT_SCOPE)
endfunction()

# vramlab_workbook_read(<lesson dir>): reads its manifest into variables of the caller:
#   WB_LESSON_ID, WB_BINARY, WB_EXERCISE_COUNT and per exercise index i (0-based):
#   WB_<i>_ID, WB_<i>_STEM (ex_01_1), WB_<i>_STUB, WB_<i>_REFERENCE, WB_<i>_TESTS, WB_<i>_DEPS,
#   WB_<i>_WRONG_NAMES, WB_<i>_WRONG_FILES (paths relative to the repository root).
macro(vramlab_workbook_read lesson_dir)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${lesson_dir}/manifest.json)
  file(READ ${lesson_dir}/manifest.json _wb_json)
  string(JSON WB_LESSON_ID GET "${_wb_json}" id)
  string(JSON WB_BINARY ERROR_VARIABLE _wb_err GET "${_wb_json}" binary)
  if(_wb_err)
    set(WB_BINARY "")
  endif()
  string(JSON WB_EXERCISE_COUNT ERROR_VARIABLE _wb_err LENGTH "${_wb_json}" exercises)
  if(_wb_err)
    set(WB_EXERCISE_COUNT 0)
  endif()
  if(WB_EXERCISE_COUNT GREATER 0)
    math(EXPR _wb_last "${WB_EXERCISE_COUNT} - 1")
    foreach(_wb_i RANGE ${_wb_last})
      string(JSON WB_${_wb_i}_ID GET "${_wb_json}" exercises ${_wb_i} id)
      string(REPLACE "." "_" WB_${_wb_i}_STEM "ex_${WB_${_wb_i}_ID}")
      string(JSON WB_${_wb_i}_STUB GET "${_wb_json}" exercises ${_wb_i} stub)
      string(JSON WB_${_wb_i}_REFERENCE GET "${_wb_json}" exercises ${_wb_i} reference)
      _vramlab_json_list(WB_${_wb_i}_TESTS "${_wb_json}" exercises ${_wb_i} tests)
      _vramlab_json_list(WB_${_wb_i}_DEPS "${_wb_json}" exercises ${_wb_i} deps)
      set(WB_${_wb_i}_WRONG_NAMES "")
      set(WB_${_wb_i}_WRONG_FILES "")
      string(JSON _wb_nw ERROR_VARIABLE _wb_err LENGTH "${_wb_json}" exercises ${_wb_i} wrong)
      if(NOT _wb_err AND _wb_nw GREATER 0)
        math(EXPR _wb_wlast "${_wb_nw} - 1")
        foreach(_wb_w RANGE ${_wb_wlast})
          string(JSON _wb_name GET "${_wb_json}" exercises ${_wb_i} wrong ${_wb_w} name)
          string(JSON _wb_file GET "${_wb_json}" exercises ${_wb_i} wrong ${_wb_w} file)
          list(APPEND WB_${_wb_i}_WRONG_NAMES ${_wb_name})
          list(APPEND WB_${_wb_i}_WRONG_FILES ${_wb_file})
        endforeach()
      endif()
    endforeach()
  endif()
endmacro()

# _vramlab_exercise_library(<target> <source> <deps...>): one exercise implementation.
# <source> is relative to the repository root, or absolute (a wrong variant made from a patch).
function(_vramlab_exercise_library target source)
  if(NOT IS_ABSOLUTE ${source})
    set(source ${PROJECT_SOURCE_DIR}/${source})
  endif()
  add_library(${target} STATIC ${source})
  target_include_directories(${target} PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(${target} PUBLIC vramlab::workbook vramlab::platform ${ARGN}
                        PRIVATE vramlab::warnings)
  # The exercise tests run the implementation's loops as the suite runs the runtime's.
  vramlab_runs_much(${target})  # Note [Sanitizer build: libraries at -O1]
endfunction()

# vramlab_workbook_add_learner_libraries(): ex_*_mine for every exercise (exercises/CMakeLists.txt),
# outside `all`: what links them (test_ex_*_mine, the _mine lesson binaries, a lesson binary under
# VRAMLAB_USE_MINE) builds them.
function(vramlab_workbook_add_learner_libraries)
  vramlab_workbook_lesson_dirs(_dirs)
  foreach(dir ${_dirs})
    vramlab_workbook_read(${dir})
    if(WB_EXERCISE_COUNT EQUAL 0)
      continue()
    endif()
    math(EXPR _last "${WB_EXERCISE_COUNT} - 1")
    foreach(i RANGE ${_last})
      _vramlab_exercise_library(${WB_${i}_STEM}_mine ${WB_${i}_STUB} ${WB_${i}_DEPS})
      set_target_properties(${WB_${i}_STEM}_mine PROPERTIES EXCLUDE_FROM_ALL TRUE)
    endforeach()
  endforeach()
endfunction()

# vramlab_workbook_add_references_and_tests(): ex_*_ref and the per-lesson interface libraries,
# and with VRAMLAB_BUILD_TESTS the wrong variants and the test binaries (solutions/CMakeLists.txt,
# after exercises/).
function(vramlab_workbook_add_references_and_tests)
  # Exercises whose tests' own loops are most of their time under the sanitizers (sweeps over a
  # binade, random histories checked event by event): their tests compile at -O1 there
  # (vramlab_test_code's RUNS_MUCH). With ASan + UBSan, tests at -O0 against -O1: 03.1 34 s against
  # 7 s; 04.2, 07.1, 07.2 66, 54, 35 s in CI against 13, 9, 6 s here. The other exercises' tests
  # take a few seconds either way.
  set(_vramlab_exercise_tests_that_run_much ex_03_1 ex_04_2 ex_07_1 ex_07_2)
  vramlab_workbook_lesson_dirs(_dirs)
  foreach(dir ${_dirs})
    vramlab_workbook_read(${dir})
    set(_lesson lesson${WB_LESSON_ID})
    foreach(kind "" _ref _mine)
      add_library(vramlab_${_lesson}_exercises${kind} INTERFACE)
      add_library(vramlab::${_lesson}_exercises${kind} ALIAS vramlab_${_lesson}_exercises${kind})
    endforeach()
    if(WB_EXERCISE_COUNT EQUAL 0)
      continue()
    endif()
    math(EXPR _last "${WB_EXERCISE_COUNT} - 1")
    foreach(i RANGE ${_last})
      _vramlab_exercise_library(${WB_${i}_STEM}_ref ${WB_${i}_REFERENCE} ${WB_${i}_DEPS})
      target_link_libraries(vramlab_${_lesson}_exercises_ref INTERFACE ${WB_${i}_STEM}_ref)
      target_link_libraries(vramlab_${_lesson}_exercises_mine INTERFACE ${WB_${i}_STEM}_mine)
      if("all" IN_LIST VRAMLAB_USE_MINE OR "${WB_LESSON_ID}" IN_LIST VRAMLAB_USE_MINE OR
         "${WB_${i}_ID}" IN_LIST VRAMLAB_USE_MINE)
        target_link_libraries(vramlab_${_lesson}_exercises INTERFACE ${WB_${i}_STEM}_mine)
      else()
        target_link_libraries(vramlab_${_lesson}_exercises INTERFACE ${WB_${i}_STEM}_ref)
      endif()
    endforeach()
    if(NOT VRAMLAB_BUILD_TESTS)
      continue()
    endif()
    foreach(i RANGE ${_last})
      set(_stem ${WB_${i}_STEM})
      # The references of the lesson's other exercises (isolation).
      set(_others "")
      foreach(j RANGE ${_last})
        if(NOT j EQUAL i)
          list(APPEND _others ${WB_${j}_STEM}_ref)
        endif()
      endforeach()
      set(_test_sources "")
      foreach(t ${WB_${i}_TESTS})
        list(APPEND _test_sources ${PROJECT_SOURCE_DIR}/${t})
      endforeach()
      # The tests are compiled once and linked against each implementation.
      add_library(${_stem}_tests OBJECT ${_test_sources})
      target_include_directories(${_stem}_tests PRIVATE ${PROJECT_SOURCE_DIR})
      target_link_libraries(${_stem}_tests PRIVATE GTest::gtest vramlab::workbook ${WB_${i}_DEPS}
                            vramlab::warnings)
      set(_runs_much)
      if(_stem IN_LIST _vramlab_exercise_tests_that_run_much)
        set(_runs_much RUNS_MUCH)
      endif()
      vramlab_test_code(${_stem}_tests ${_runs_much})
      vramlab_add_test(NAME test_${_stem}_ref SOURCES $<TARGET_OBJECTS:${_stem}_tests>
                       DEPS ${_stem}_ref ${_others} LABELS workbook exercise TIMEOUT 120)
      # Built on demand: `vramlab check` for the learner, `vramlab verify` for CI (which also
      # catches a stub that stops compiling); the test command does not spend its minutes here.
      _vramlab_exercise_test(test_${_stem}_mine ${_stem} ${_stem}_mine "${_others}")
      foreach(name file IN ZIP_LISTS WB_${i}_WRONG_NAMES WB_${i}_WRONG_FILES)
        set(_source ${PROJECT_SOURCE_DIR}/${file})
        if(file MATCHES "\\.patch$")
          # The variant is its reference with the patch applied; --fuzz=0 makes a reference that
          # moved under the patch's context fail here (the drift `vramlab verify` reports) rather
          # than apply somewhere else. No reject file, no backup; a failed patch leaves no output.
          set(_source ${CMAKE_CURRENT_BINARY_DIR}/wrong/${_stem}_wrong_${name}.cpp)
          add_custom_command(
            OUTPUT ${_source}
            COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/wrong
            COMMAND patch --silent --fuzz=0 --no-backup-if-mismatch --reject-file=- --output
                    ${_source}.partial ${PROJECT_SOURCE_DIR}/${WB_${i}_REFERENCE}
                    ${PROJECT_SOURCE_DIR}/${file}
            COMMAND ${CMAKE_COMMAND} -E rename ${_source}.partial ${_source}
            DEPENDS ${PROJECT_SOURCE_DIR}/${WB_${i}_REFERENCE} ${PROJECT_SOURCE_DIR}/${file}
            COMMENT "Applying the known-wrong variant ${file}" VERBATIM)
        endif()
        _vramlab_exercise_library(${_stem}_wrong_${name} ${_source} ${WB_${i}_DEPS})
        set_target_properties(${_stem}_wrong_${name} PROPERTIES EXCLUDE_FROM_ALL TRUE)
        # A wrong variant runs once, under `verify`: code that runs little (Note [Code that
        # runs little: -Og]); verify compiles all of them on every CI run.
        vramlab_runs_little(${_stem}_wrong_${name})
        _vramlab_exercise_test(test_${_stem}_wrong_${name} ${_stem} ${_stem}_wrong_${name}
                               "${_others}")
      endforeach()
    endforeach()
  endforeach()
endfunction()

# _vramlab_exercise_test(<target> <stem> <implementation> <others>): a test binary outside ctest
# and outside `all`, built by `vramlab check` and `vramlab verify`.
function(_vramlab_exercise_test target stem implementation others)
  add_executable(${target} $<TARGET_OBJECTS:${stem}_tests>)
  target_link_libraries(${target} PRIVATE ${implementation} ${others} GTest::gtest
                        GTest::gtest_main vramlab::passive_wait vramlab::warnings)
  set_target_properties(${target} PROPERTIES
    RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/bin EXCLUDE_FROM_ALL TRUE)
endfunction()

# vramlab_add_lesson_binary(NAME <target> LESSON <NN> SOURCES ... [DEPS ...]): a lesson binary in
# build/bin/<target> that links vramlab::lessonNN_exercises (the references, or the learner's code
# for what VRAMLAB_USE_MINE names), and <target>_mine (not in `all`) that links every learner
# exercise of the lesson: what `vramlab run NN --mine` builds and runs.
function(vramlab_add_lesson_binary)
  cmake_parse_arguments(A "" "NAME;LESSON" "SOURCES;DEPS" ${ARGN})
  if(NOT A_NAME OR NOT A_LESSON)
    message(FATAL_ERROR "vramlab_add_lesson_binary needs NAME and LESSON")
  endif()
  # The lesson's own sources are the same in both binaries (only the exercises linked differ), so
  # they compile once: `vramlab run NN --mine` then compiles only the learner's files and links.
  add_library(${A_NAME}_objects OBJECT ${A_SOURCES})
  target_include_directories(${A_NAME}_objects PRIVATE ${PROJECT_SOURCE_DIR})
  target_link_libraries(${A_NAME}_objects PRIVATE ${A_DEPS} vramlab::lesson${A_LESSON}_exercises
                        vramlab::warnings)
  vramlab_unity(${A_NAME}_objects)
  vramlab_runs_little(${A_NAME}_objects)  # Note [Code that runs little: -Og]
  foreach(variant "" _mine)
    set(_choice vramlab::lesson${A_LESSON}_exercises vramlab::lesson_runs_reference)
    if(variant STREQUAL "_mine")
      set(_choice vramlab::lesson${A_LESSON}_exercises_mine vramlab::lesson_runs_mine)
    endif()
    add_executable(${A_NAME}${variant} $<TARGET_OBJECTS:${A_NAME}_objects>)
    target_link_libraries(${A_NAME}${variant} PRIVATE ${A_DEPS} ${_choice} vramlab::passive_wait
                          vramlab::warnings)
  endforeach()
  set_target_properties(${A_NAME}_mine PROPERTIES EXCLUDE_FROM_ALL TRUE)
  # tests/cli's bad-input walk runs every lesson binary listed here.
  set_property(GLOBAL APPEND PROPERTY VRAMLAB_LESSON_BINARIES ${A_NAME})
endfunction()
