// Linked (the object library vramlab::passive_wait) into the vramlab command, the lesson binaries
// and the test binaries: OpenMP threads that have nothing to do sleep at once instead of spinning,
// unless the user chose otherwise (OMP_WAIT_POLICY or GOMP_SPINCOUNT set). The benchmarks keep
// libgomp's default: they measure an idle machine.
//
// Note [Passive OpenMP waiting]
// Why: libgomp's idle threads spin before they sleep (with OMP_WAIT_POLICY unset, up to 300,000
// iterations at every barrier and at the end of every parallel region). On an idle machine the
// spin saves a wake-up; beside another busy job on 2 cores each spinning thread takes a core that
// the other job, or our own thread still working, needs, and the lessons ran 7-24x slower than
// their pages say (`vramlab run 09`: 266 s against 23 s; issue #36). OMP_WAIT_POLICY=PASSIVE makes
// a waiting thread sleep on a futex at once; measured on an idle machine it costs the training
// step nothing beyond noise (README, "A busy machine").
// How: libgomp reads its environment in a constructor, before main() runs, so setting the variable
// in main() is too late. The functions in an executable's .preinit_array run before the
// constructors of every shared library (System V ABI, DT_PREINIT_ARRAY), so this one sets it for
// libgomp to read. glibc then starts main() with the environment the process was given: getenv()
// in main() does not see the variable and child processes do not inherit it, which is why each
// executable links this object rather than one parent setting it for its children.
#include <cstdlib>
#include <cstring>

namespace {

bool chosen(char** environment, const char* name) {
  const size_t length = std::strlen(name);
  for (char** entry = environment; entry != nullptr && *entry != nullptr; ++entry)
    if (std::strncmp(*entry, name, length) == 0 && (*entry)[length] == '=') return true;
  return false;
}

void passive_openmp_waiting(int, char**, char** environment) {
  if (chosen(environment, "OMP_WAIT_POLICY") || chosen(environment, "GOMP_SPINCOUNT")) return;
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
}

using PreinitFunction = void (*)(int, char**, char**);

}  // namespace

// `used`: nothing names it; the dynamic loader calls it.
[[gnu::section(".preinit_array"), gnu::used]] const PreinitFunction vramlab_passive_wait =
    &passive_openmp_waiting;
