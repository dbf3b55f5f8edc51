// cuBLAS resolved with dlopen on first use (Note [Loading cuBLAS on first use] in the header).
#include "common/cuda/cublas_library.h"

#include <dlfcn.h>

#include <string>

#include "common/cuda/cuda_check.h"

namespace vramlab::cuda_runtime {
namespace {

// Selecting the overload in an unevaluated operand fails to compile if the header's
// cublasGemmEx stops matching CublasGemmExFn, and references no symbol of libcublas.
static_assert(sizeof(static_cast<CublasGemmExFn>(&cublasGemmEx)) == sizeof(void (*)()));

// The library file CMake found (VRAMLAB_CUBLAS_PATH), then its soname, so a build tree moved to
// another machine with the same toolkit major version still finds it.
void* open_cublas() {
  std::string errors;
  for (const char* name : {VRAMLAB_CUBLAS_PATH, VRAMLAB_CUBLAS_SONAME}) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL)) {
      return handle;
    }
    const char* error = dlerror();
    errors += std::string(errors.empty() ? "" : "; ") + (error != nullptr ? error : name);
  }
  throw CudaError("cannot load cuBLAS: " + errors);
}

template <typename Fn>
void resolve(void* library, Fn& entry, const char* symbol) {
  dlerror();  // clears an earlier error, so the one read below is dlsym's
  entry = reinterpret_cast<Fn>(dlsym(library, symbol));
  if (entry == nullptr) {
    const char* error = dlerror();
    throw CudaError(std::string("cannot load cuBLAS: ") +
                    (error != nullptr ? error : std::string(symbol) + " resolves to null"));
  }
}

CublasLibrary load() {
  void* library = open_cublas();  // never closed: the handles it makes live until exit
  CublasLibrary entries;
  resolve(library, entries.create, "cublasCreate_v2");
  resolve(library, entries.destroy, "cublasDestroy_v2");
  resolve(library, entries.sgemm, "cublasSgemm_v2");
  resolve(library, entries.gemm_ex, "cublasGemmEx");
  resolve(library, entries.status_string, "cublasGetStatusString");
  return entries;
}

}  // namespace

const CublasLibrary& cublas() {
  static const CublasLibrary entries = load();
  return entries;
}

bool cublas_is_loaded() {
  // RTLD_NOLOAD finds the library only when it is already mapped; the extra reference is dropped.
  void* handle = dlopen(VRAMLAB_CUBLAS_SONAME, RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) {
    handle = dlopen(VRAMLAB_CUBLAS_PATH, RTLD_NOW | RTLD_NOLOAD);
  }
  if (handle == nullptr) {
    return false;
  }
  dlclose(handle);
  return true;
}

}  // namespace vramlab::cuda_runtime
