# Runs `vramlab alloc` and checks its exit code, and optionally that stdout is valid JSON with a
# memory_stats object, or that stderr matches a regular expression.
#   cmake -DVRAMLAB=... -DARGS="alloc;trace;--json" -DEXPECT_EXIT=0 [-DCHECK_JSON=ON]
#         [-DSTDERR_REGEX=...] [-DSTDOUT_REGEX=...] [-DSTDOUT_NOT_REGEX=...] [-DPYTHON=python3]
#         -P run_alloc_cli.cmake
execute_process(COMMAND ${VRAMLAB} ${ARGS} RESULT_VARIABLE exit_code OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT exit_code EQUAL EXPECT_EXIT)
  message(FATAL_ERROR "exit code ${exit_code}, expected ${EXPECT_EXIT}\nstdout:\n${out}\nstderr:\n${err}")
endif()
if(CHECK_JSON)
  string(JSON stats_type ERROR_VARIABLE json_error TYPE "${out}" memory_stats)
  if(json_error OR NOT stats_type STREQUAL "OBJECT")
    message(FATAL_ERROR "stdout is not JSON with a memory_stats object: ${json_error}\n${out}")
  endif()
  string(JSON retries GET "${out}" memory_stats num_alloc_retries)
  string(JSON reserved GET "${out}" memory_stats reserved_bytes.all.current)
  message(STATUS "num_alloc_retries=${retries} reserved_bytes.all.current=${reserved}")
  if(PYTHON)
    file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/alloc_cli_output.json "${out}")
    execute_process(COMMAND ${PYTHON} -c "import json,sys; d=json.load(sys.stdin); assert list(d['memory_stats'])==sorted(d['memory_stats'])"
                    INPUT_FILE ${CMAKE_CURRENT_BINARY_DIR}/alloc_cli_output.json
                    RESULT_VARIABLE python_exit ERROR_VARIABLE python_err)
    if(NOT python_exit EQUAL 0)
      message(FATAL_ERROR "python3 could not load the JSON: ${python_err}")
    endif()
  endif()
endif()
if(DEFINED STDERR_REGEX AND NOT err MATCHES "${STDERR_REGEX}")
  message(FATAL_ERROR "stderr does not match '${STDERR_REGEX}':\n${err}")
endif()
if(DEFINED STDOUT_REGEX AND NOT out MATCHES "${STDOUT_REGEX}")
  message(FATAL_ERROR "stdout does not match '${STDOUT_REGEX}':\n${out}")
endif()
if(DEFINED STDOUT_NOT_REGEX AND out MATCHES "${STDOUT_NOT_REGEX}")
  message(FATAL_ERROR "stdout should not match '${STDOUT_NOT_REGEX}':\n${out}")
endif()
