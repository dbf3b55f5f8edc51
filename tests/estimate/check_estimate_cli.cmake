# Runs `vramlab estimate` with bad input and checks the contract: exit code 2 and exactly one
# stderr line that contains the expected text. Used by tests/estimate/CMakeLists.txt:
#   cmake -DVRAMLAB=<path> "-DARGS=--zero,4" "-DEXPECT=got 4" -P check_estimate_cli.cmake
# (ARGS separates the command-line arguments with commas.)
string(REPLACE "," ";" ARGS "${ARGS}")
execute_process(COMMAND ${VRAMLAB} estimate ${ARGS}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 2)
  message(FATAL_ERROR "vramlab estimate ${ARGS} should exit 2, exited ${rc}\nstdout: ${out}\nstderr: ${err}")
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
