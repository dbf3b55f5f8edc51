# Runs a lesson binary with bad input and checks the contract: exit code 2 and one stderr line
# containing the expected text. Used by every tests/lessonNN/CMakeLists.txt:
#   cmake -DBINARY=<path> "-DARGS=--batch,0" "-DEXPECT=got 0" -DOUT_DIR=<dir> -P check_lesson_bad_input.cmake
# (ARGS separates the command-line arguments with commas.)
string(REPLACE "," ";" ARGS "${ARGS}")
execute_process(COMMAND ${BINARY} ${ARGS} --out-dir ${OUT_DIR}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
get_filename_component(binary_name "${BINARY}" NAME)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "${binary_name} ${ARGS} should exit 2, exited ${rc}\nstdout: ${out}\nstderr: ${err}")
endif()
string(FIND "${err}" "${EXPECT}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "stderr should contain '${EXPECT}', got: ${err}")
endif()
string(REGEX MATCHALL "\n" newlines "${err}")
list(LENGTH newlines lines)
if(NOT lines EQUAL 1)
  message(FATAL_ERROR "expected exactly one line on stderr, got ${lines}:\n${err}")
endif()
