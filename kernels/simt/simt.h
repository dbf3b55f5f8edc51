/// \file
/// \brief The one header a vramlab .cu file includes: under nvcc it is CUDA itself, under g++ it
/// is the SIMT emulator that runs every CUDA thread as a fiber on the CPU.
///
/// Write kernels in plain CUDA, with four vramlab spellings for what g++ cannot parse or the
/// emulator must see:
///
///     VRAMLAB_SHARED(float, tile, [32][33]);      // __shared__ float tile[32][33];
///     VRAMLAB_DYNAMIC_SHARED(float, buffer);      // extern __shared__ float buffer[];
///     VRAMLAB_LAUNCH(kernel, grid, block, shmem_bytes, stream)(arguments...);
///                                                 // kernel<<<grid, block, shmem_bytes,
///                                                 stream>>>(arguments...);
///     VRAMLAB_DEVICE_FAIL("NOT IMPLEMENTED: ...");  // stop with an error the host sees
///
/// Plain `__shared__` also works under emulation (it becomes thread_local), but only
/// VRAMLAB_SHARED arrays get redzones (out-of-bounds writes reported) and poisoning.
///
/// To run a .cu under emulation, compile a one-line .cpp that `#include`s it (CMake's
/// LANGUAGE CXX source property would break CUDA targets in the same directory).
///
/// Emulation types: dim3 and uint3 come from the CUDA toolkit's vector_types.h when its headers
/// are on the include path, otherwise from kernels/simt/vector_types.h (same layout);
/// cudaStream_t is CUDA's typedef. Nothing else of the CUDA runtime API is emulated here.
#pragma once

#if defined(__CUDACC__)

#include <cuda_runtime.h>

#include <cstdio>

/// 0 under nvcc, 1 when the SIMT emulator runs the kernels on the CPU.
#define VRAMLAB_SIMT_EMULATED 0
/// A static shared array: `VRAMLAB_SHARED(type, name, [dims])` is `__shared__ type name[dims]`.
#define VRAMLAB_SHARED(type, name, dims) __shared__ type name dims
/// The dynamic shared memory of the launch, as an array of type: `extern __shared__ type name[]`.
#define VRAMLAB_DYNAMIC_SHARED(type, name) extern __shared__ __align__(16) type name[]
/// `VRAMLAB_LAUNCH(kernel, grid, block, shmem, stream)(args...)` is `kernel<<<grid, block, shmem,
/// stream>>>(args...)`.
#define VRAMLAB_LAUNCH(kernel, grid, block, shmem, stream) kernel<<<grid, block, shmem, stream>>>
/// Stops the kernel with an error: on a GPU it prints the message and traps, so the host's next
/// synchronization returns cudaErrorLaunchFailure; under emulation the launch throws DeviceError.
#define VRAMLAB_DEVICE_FAIL(message)                                  \
  do {                                                                \
    printf("vramlab device error at %s:%d: %s\n", __FILE__, __LINE__, \
           static_cast<const char*>(message));                        \
    __trap();                                                         \
  } while (0)

#else

#if !defined(__global__)
/// Emulation: a kernel is an ordinary function.
#define __global__
#endif
#if !defined(__device__)
/// Emulation: device functions are ordinary functions.
#define __device__
#endif
#if !defined(__host__)
/// Emulation: host functions are ordinary functions.
#define __host__
#endif
#if !defined(__shared__)
/// Emulation: a block's fibers share one OS thread, so a shared variable is thread_local.
#define __shared__ thread_local
#endif
#if !defined(__constant__)
/// Emulation: constant memory is ordinary memory.
#define __constant__
#endif
#if !defined(__forceinline__)
/// Emulation: force inlining as nvcc would.
#define __forceinline__ inline __attribute__((always_inline))
#endif
#if !defined(__launch_bounds__)
/// Emulation: launch bounds are a register-allocation hint, meaningless on the CPU.
#define __launch_bounds__(...)
#endif

#include "common/platform/source_location.h"
#include "kernels/simt/vector_types.h"

/// CUDA's stream handle type (the same typedef as CUDA's driver_types.h, so both may be included).
typedef struct CUstream_st* cudaStream_t;

#include "kernels/simt/atomics.h"
#include "kernels/simt/device_functions.h"
#include "kernels/simt/device_memory.h"
#include "kernels/simt/intrinsics.h"
#include "kernels/simt/launch.h"
#include "kernels/simt/shared_memory.h"

/// 0 under nvcc, 1 when the SIMT emulator runs the kernels on the CPU.
#define VRAMLAB_SIMT_EMULATED 1
/// A static shared array with redzones: `VRAMLAB_SHARED(float, tile, [32][33]);` declares
/// `tile` as a reference to the running block's `float[32][33]`.
#define VRAMLAB_SHARED(type, name, dims)                                                         \
  static thread_local ::vramlab::simt::detail::SharedSlot<type dims> vramlab_shared_slot_##name; \
  auto& name = vramlab_shared_slot_##name.bind(#name, ::vramlab::source_location::current())
/// The launch's dynamic shared memory as `type* name` (16-byte aligned, with redzones).
#define VRAMLAB_DYNAMIC_SHARED(type, name) \
  type* const name = ::vramlab::simt::detail::dynamic_shared<type>()
/// `VRAMLAB_LAUNCH(kernel, grid, block, shmem, stream)(args...)` runs the grid synchronously under
/// emulation with the process-wide launch_options(); stream is ignored. Throws on any diagnostic.
#define VRAMLAB_LAUNCH(kernel, grid, block, shmem, stream)                                    \
  ::vramlab::simt::Launcher(::vramlab::simt::LaunchSite{#kernel, __FILE__, __LINE__}, kernel, \
                            grid, block, shmem, stream)
/// Stops the kernel: under emulation the launch throws vramlab::simt::DeviceError with the
/// message, kernel, block, thread and file:line; on a GPU it prints and traps.
#define VRAMLAB_DEVICE_FAIL(message) \
  ::vramlab::simt::detail::device_fail(message, ::vramlab::source_location::current())

#endif
