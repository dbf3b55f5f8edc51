# CUDA is optional. With nvcc, the .cu sources compile for the named architectures and cuBLAS
# links; NCCL has no CMake target, so it is found by hand under the toolkit.
# Without nvcc everything else builds, and every CUDA kernel still runs through the SIMT emulator.
set(VRAMLAB_HAVE_CUDA OFF)
set(VRAMLAB_HAVE_NCCL OFF)
# AUTO compiles the CUDA sources only where a GPU can run them: nvcc for three architectures is
# a third of a cold build, and without a GPU the SIMT emulator runs every kernel from the same
# source through g++. The probe is `vramlab doctor`'s (dlopen of the driver), run once per build
# directory; ON (the ci preset) compiles them anyway, to check that they compile.
if(VRAMLAB_CUDA STREQUAL "AUTO" AND NOT DEFINED CACHE{VRAMLAB_GPU_PROBE})
  try_run(_vramlab_probe_ran _vramlab_probe_built ${CMAKE_BINARY_DIR}/gpu_probe
          ${PROJECT_SOURCE_DIR}/cmake/gpu_probe_main.cpp
          CMAKE_FLAGS "-DINCLUDE_DIRECTORIES=${PROJECT_SOURCE_DIR}"
          CXX_STANDARD 20
          LINK_LIBRARIES ${CMAKE_DL_LIBS}
          RUN_OUTPUT_VARIABLE _vramlab_probe_output)
  if(NOT _vramlab_probe_built OR NOT _vramlab_probe_ran EQUAL 0)
    set(_vramlab_probe_output "probe failed;the configure-time GPU probe did not build or run")
  endif()
  set(VRAMLAB_GPU_PROBE "${_vramlab_probe_output}" CACHE INTERNAL "vramlab doctor's GPU probe at configure time")
endif()
set(_vramlab_compile_cuda ON)
if(VRAMLAB_CUDA STREQUAL "OFF")
  set(_vramlab_compile_cuda OFF)
elseif(VRAMLAB_CUDA STREQUAL "AUTO")
  list(GET VRAMLAB_GPU_PROBE 0 _vramlab_gpu_status)
  if(NOT _vramlab_gpu_status STREQUAL "available")
    list(GET VRAMLAB_GPU_PROBE 1 _vramlab_gpu_detail)
    message(STATUS "vramlab: ${_vramlab_gpu_detail}; the CUDA sources run through the SIMT "
                   "emulator only; -DVRAMLAB_CUDA=ON compiles them with nvcc too")
    set(_vramlab_compile_cuda OFF)
  endif()
endif()
if(_vramlab_compile_cuda)
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(_vramlab_nvcc nvcc HINTS ENV CUDA_HOME PATH_SUFFIXES bin PATHS /usr/local/cuda/bin)
    if(_vramlab_nvcc)
      set(CMAKE_CUDA_COMPILER ${_vramlab_nvcc})
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(VRAMLAB_CUDA_ARCHITECTURES MATCHES "native|all")
      message(FATAL_ERROR "VRAMLAB_CUDA_ARCHITECTURES=${VRAMLAB_CUDA_ARCHITECTURES}: name the architectures (e.g. 75;80;90); 'native' fails on machines without a GPU")
    endif()
    set(CMAKE_CUDA_ARCHITECTURES ${VRAMLAB_CUDA_ARCHITECTURES})
    enable_language(CUDA)
    # CMake 3.25 does not know nvcc's C++20 dialect flag; with CMAKE_CXX_STANDARD_REQUIRED it then
    # refuses every CUDA target. Teach it the flag and ask for C++20 on the device side too.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(VRAMLAB_HAVE_CUDA ON)
    find_library(VRAMLAB_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_LIBRARY_ROOT}/lib64)
    find_path(VRAMLAB_NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
    if(VRAMLAB_NCCL_LIBRARY AND VRAMLAB_NCCL_INCLUDE_DIR)
      add_library(vramlab_nccl INTERFACE)
      add_library(vramlab::nccl ALIAS vramlab_nccl)
      target_link_libraries(vramlab_nccl INTERFACE ${VRAMLAB_NCCL_LIBRARY})
      target_include_directories(vramlab_nccl SYSTEM INTERFACE ${VRAMLAB_NCCL_INCLUDE_DIR})
      set(VRAMLAB_HAVE_NCCL ON)
    endif()
  elseif(VRAMLAB_CUDA STREQUAL "ON")
    message(FATAL_ERROR "VRAMLAB_CUDA=ON but no CUDA compiler (nvcc) was found; install the CUDA toolkit or use -DVRAMLAB_CUDA=AUTO")
  endif()
endif()

# The CUDA toolkit's headers (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h) compile host-side under g++;
# tests use them to check our number formats bit for bit. They are found even without nvcc.
find_path(VRAMLAB_CUDA_HEADERS_DIR cuda_fp8.h HINTS ENV CUDA_HOME PATH_SUFFIXES include
          PATHS /usr/local/cuda/include)
