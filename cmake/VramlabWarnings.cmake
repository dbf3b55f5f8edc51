# One interface target carries the project's warning and sanitizer flags; every vramlab target
# links it, third-party headers are included as SYSTEM so their warnings are not ours.
add_library(vramlab_warnings INTERFACE)
add_library(vramlab::warnings ALIAS vramlab_warnings)
target_compile_options(vramlab_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Woverloaded-virtual -Wimplicit-fallthrough -Wcast-align -Wnull-dereference>)
if(VRAMLAB_WERROR)
  target_compile_options(vramlab_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
endif()

if(VRAMLAB_SANITIZE)
  set(_vramlab_san -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_compile_options(vramlab_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:${_vramlab_san}>)
  target_link_options(vramlab_warnings INTERFACE ${_vramlab_san})
  target_compile_definitions(vramlab_warnings INTERFACE VRAMLAB_SANITIZE=1)
endif()
