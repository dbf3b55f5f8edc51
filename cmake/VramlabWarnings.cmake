# One interface target carries the project's warning and sanitizer flags; every vramlab target
# links it, third-party headers are included as SYSTEM so their warnings are not ours.
add_library(vramlab_warnings INTERFACE)
add_library(vramlab::warnings ALIAS vramlab_warnings)
target_compile_options(vramlab_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Woverloaded-virtual -Wimplicit-fallthrough -Wcast-align -Wnull-dereference>)
# GCC 12 at -O3 reports -Wrestrict inside libstdc++ for `"text" + std::string&&` (GCC bug 105651,
# fixed in GCC 13): a false positive that comes and goes with inlining decisions, and so with unity
# batches (Note [Unity builds]). Off for GCC before 13 only.
target_compile_options(vramlab_warnings INTERFACE
  $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>,$<VERSION_LESS:$<CXX_COMPILER_VERSION>,13>>:-Wno-restrict>)
if(VRAMLAB_WERROR)
  target_compile_options(vramlab_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
endif()

if(VRAMLAB_SANITIZE)
  set(_vramlab_san -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_compile_options(vramlab_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:${_vramlab_san}>)
  target_link_options(vramlab_warnings INTERFACE ${_vramlab_san})
  target_compile_definitions(vramlab_warnings INTERFACE VRAMLAB_SANITIZE=1)
  # GCC 12 reports -Wmaybe-uninitialized inside libstdc++ when ASan instruments optimised code
  # (<regex>'s _NFA::_M_insert_* moving a std::function out of a freshly built _State): a false
  # positive in a system header, and with warnings as errors it would stop the sanitizer build
  # (its libraries compile at -O1: Note [Sanitizer build: libraries at -O1]). The Release build
  # keeps the warning.
  target_compile_options(vramlab_warnings INTERFACE
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-maybe-uninitialized>)
  # Clang reports every `#pragma omp simd` loop it did not vectorize (-Wpass-failed), and
  # instrumented code at -O1 vectorizes few: a statement about speed in a build that is not
  # about speed. The Release build keeps the warning wherever clang compiles it.
  target_compile_options(vramlab_warnings INTERFACE
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:Clang>>:-Wno-pass-failed>)
endif()

# The fuzz build: every library gets libFuzzer's coverage instrumentation (the fuzz targets link the
# fuzzer runtime itself, tests/fuzz/CMakeLists.txt); clang only, with the sanitizers above.
if(VRAMLAB_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "VRAMLAB_FUZZ=ON needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: "
                        "use the 'fuzz' preset (CXX=clang++) and install Debian's clang and "
                        "libclang-rt-14-dev")
  endif()
  if(NOT VRAMLAB_SANITIZE)
    message(FATAL_ERROR "VRAMLAB_FUZZ=ON needs VRAMLAB_SANITIZE=ON: a fuzzer without ASan and UBSan "
                        "misses the memory errors and undefined behaviour it is there to find")
  endif()
  target_compile_options(vramlab_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
endif()
