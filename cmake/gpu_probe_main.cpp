// Configure-time GPU probe (cmake/VramlabCuda.cmake, VRAMLAB_CUDA=AUTO): the same probe as
// `vramlab doctor`, compiled alone, so the CUDA sources are compiled only where a GPU can run them.
// Prints the status name ("available", "no driver", ...) and the probe's sentence.
#include <cstdio>

#include "common/platform/gpu_probe.cpp"  // one file of the platform layer, no other dependency

int main() {
  const auto probe = vramlab::platform::probe_gpus();
  std::printf("%s;%s", vramlab::platform::gpu_status_name(probe.status), probe.detail.c_str());
  return 0;
}
