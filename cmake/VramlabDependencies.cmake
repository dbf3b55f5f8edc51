# Every dependency comes from the system through CMake's own find modules or the package's
# config file: nothing is vendored and nothing is downloaded at configure time.
# tools/setup.sh installs the Debian packages named in tools/debian-packages.txt, tools/test.sh
# those of tools/debian-packages-test.txt too.
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
find_path(OPENBLAS_INCLUDE_DIR cblas.h PATH_SUFFIXES openblas x86_64-linux-gnu/openblas-pthread
          x86_64-linux-gnu/openblas-openmp REQUIRED)
add_library(vramlab_openblas INTERFACE)
add_library(vramlab::openblas ALIAS vramlab_openblas)
target_link_libraries(vramlab_openblas INTERFACE BLAS::BLAS)
target_include_directories(vramlab_openblas SYSTEM INTERFACE ${OPENBLAS_INCLUDE_DIR})

# oneDNN (Debian's libdnnl-dev): the bf16 GEMMs of the CPU backend (common/nn/low_precision_linear.h).
find_path(DNNL_INCLUDE_DIR oneapi/dnnl/dnnl.hpp)
find_library(DNNL_LIBRARY dnnl)
if(NOT DNNL_INCLUDE_DIR OR NOT DNNL_LIBRARY)
  message(FATAL_ERROR "oneDNN not found (oneapi/dnnl/dnnl.hpp and libdnnl): the CPU backend's bf16 "
                      "GEMMs need it. Install Debian's libdnnl-dev (tools/setup.sh does).")
endif()
add_library(vramlab_dnnl INTERFACE)
add_library(vramlab::dnnl ALIAS vramlab_dnnl)
target_link_libraries(vramlab_dnnl INTERFACE ${DNNL_LIBRARY})
target_include_directories(vramlab_dnnl SYSTEM INTERFACE ${DNNL_INCLUDE_DIR})

# liburing (Debian's liburing-dev): the NVMe tier's io_uring requests (common/storage).
find_path(LIBURING_INCLUDE_DIR liburing.h)
find_library(LIBURING_LIBRARY uring)
if(NOT LIBURING_INCLUDE_DIR OR NOT LIBURING_LIBRARY)
  message(FATAL_ERROR "liburing not found (liburing.h and liburing): the NVMe tier needs it. "
                      "Install Debian's liburing-dev (tools/setup.sh does).")
endif()
add_library(vramlab_uring INTERFACE)
add_library(vramlab::uring ALIAS vramlab_uring)
target_link_libraries(vramlab_uring INTERFACE ${LIBURING_LIBRARY})
target_include_directories(vramlab_uring SYSTEM INTERFACE ${LIBURING_INCLUDE_DIR})

find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(MPI COMPONENTS CXX)
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED COMPONENTS context stacktrace_backtrace)
find_package(CLI11 2.1 CONFIG REQUIRED)
find_package(nlohmann_json 3.10 CONFIG REQUIRED)
find_package(fmt 9 CONFIG REQUIRED)
if(VRAMLAB_BUILD_TESTS)
  find_package(GTest 1.12 CONFIG REQUIRED)
  include(GoogleTest)
endif()
if(VRAMLAB_BUILD_BENCH)
  find_package(benchmark 1.7 CONFIG REQUIRED)
endif()
if(VRAMLAB_BUILD_DOCS)
  find_package(Doxygen 1.9)
  find_file(DOXYGEN_AWESOME_CSS doxygen-awesome.css PATHS /usr/share/doxygen-awesome-css NO_DEFAULT_PATH)
endif()
find_package(Python3 COMPONENTS Interpreter)

# PyTorch, for side-by-side checks only (its memory_viz reading our snapshots, the CPU training-step
# comparison). Debian's python3-torch installs for /usr/bin/python3, which may not be the python3 on
# PATH, so try both. VRAMLAB_TORCH_PYTHON is empty when no interpreter can import torch.
set(VRAMLAB_TORCH_PYTHON "" CACHE STRING "A Python interpreter that can import torch (found when empty)")
if(NOT VRAMLAB_TORCH_PYTHON)
  foreach(_py ${Python3_EXECUTABLE} /usr/bin/python3)
    if(EXISTS "${_py}")
      execute_process(COMMAND ${_py} -c "import torch; print(torch.__version__)"
                      RESULT_VARIABLE _rc OUTPUT_VARIABLE _torch_version ERROR_QUIET
                      OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(_rc EQUAL 0)
        set(VRAMLAB_TORCH_PYTHON ${_py} CACHE STRING "A Python interpreter that can import torch" FORCE)
        set(VRAMLAB_TORCH_VERSION ${_torch_version} CACHE INTERNAL "")
        break()
      endif()
    endif()
  endforeach()
endif()

# PyTorch 2.x, whose _memory_viz reads today's snapshot format with C++ frames (Debian's 1.13
# predates it): PyPI's torch in venv-torch/ (tools/setup.sh --with-peers), or the interpreter above
# when its torch is new enough. VRAMLAB_TORCH2_PYTHON is empty when neither is.
set(VRAMLAB_TORCH2_PYTHON "" CACHE STRING "A Python interpreter that can import torch >= 2 (found when empty)")
if(NOT VRAMLAB_TORCH2_PYTHON)
  foreach(_py ${PROJECT_SOURCE_DIR}/venv-torch/bin/python ${VRAMLAB_TORCH_PYTHON})
    if(EXISTS "${_py}")
      execute_process(COMMAND ${_py} -c
                        "import sys, torch; sys.exit(0 if int(torch.__version__.split('.')[0]) >= 2 else 1)"
                      RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        set(VRAMLAB_TORCH2_PYTHON ${_py} CACHE STRING "A Python interpreter that can import torch >= 2" FORCE)
        break()
      endif()
    endif()
  endforeach()
endif()
