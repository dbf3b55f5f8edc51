// Note [Sharing the cores]
// Why: a parallel op waits at its end for its slowest thread. When other processes keep every
// core busy, the scheduler runs our threads at different times and each op waits out another
// process's time slice; measured with a busy loop on each of 2 cores, lesson 02 took 6.9x its idle
// time on 2 threads (idle threads sleeping, Note [Passive OpenMP waiting]) and 2.5x on 1 thread.
// How: before a kernel, at most every 100 ms, count the runnable threads of other processes (the
// machine's, from /proc/loadavg, less this process's own: an OpenMP thread of ours still on its
// way to sleep is not another process) and use the cores they leave free, never fewer than one. A
// look costs some tens of microseconds; between looks the check is a clock read. The smaller of the
// last two counts decides, so a process that runs for an instant does not take a thread away. The
// kernels' results do not depend on their thread count (tests/kernels_cpu/test_determinism.cpp and
// tests/nn/test_parallel_linear.cpp), so a run on a busy machine gives the bits it gives on an
// idle one.
#include "common/platform/free_cores.h"

#include <dirent.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace vramlab::platform {

namespace {

constexpr std::chrono::milliseconds kLookEvery{100};

// The user asked idle OpenMP threads to spin: ours would look busy, so the count stays theirs.
bool spinning_chosen() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return policy != nullptr && (strcasecmp(policy, "active") == 0);
}

}  // namespace

long runnable_threads_of_this_process() noexcept {
  DIR* tasks = opendir("/proc/self/task");
  if (tasks == nullptr) return -1;
  long running = 0;
  while (const dirent* task = readdir(tasks)) {
    if (task->d_name[0] == '.') continue;
    char path[300];  // "/proc/self/task/" and a name of at most 255 bytes
    std::snprintf(path, sizeof path, "/proc/self/task/%s/stat", task->d_name);
    std::FILE* file = std::fopen(path, "r");
    if (file == nullptr) continue;  // the thread ended
    char line[512];
    const size_t length = std::fread(line, 1, sizeof line - 1, file);
    std::fclose(file);
    line[length] = '\0';
    // "tid (name) S ...": the state follows the last ')', as the name may hold one.
    const char* name_end = std::strrchr(line, ')');
    if (name_end != nullptr && name_end[1] == ' ' && name_end[2] == 'R') running++;
  }
  closedir(tasks);
  return running;
}

long runnable_threads() noexcept {
  std::FILE* file = std::fopen("/proc/loadavg", "r");
  if (file == nullptr) return -1;
  double one, five, fifteen;
  long running = -1, total = 0;
  const int fields =
      std::fscanf(file, "%lf %lf %lf %ld/%ld", &one, &five, &fifteen, &running, &total);
  std::fclose(file);
  return fields == 5 ? running : -1;
}

namespace {

using Clock = std::chrono::steady_clock;

struct Look {  // one per thread: omp_set_num_threads sets the calling thread's count
  Clock::time_point next{};
  int set_by_us = 0;  // the count fit_threads_to_free_cores set last (0: none yet)
  int ceiling = 0;    // the count chosen for the program
  long others_before = 0;
};
thread_local Look look;

}  // namespace

void choose_openmp_threads(int threads) noexcept {
  const int count = std::max(threads, 1);
  omp_set_num_threads(count);
  look.ceiling = count;
  look.set_by_us = count;
}

void fit_threads_to_free_cores() noexcept {
  const Clock::time_point now = Clock::now();
  if (now < look.next) [[likely]]
    return;
  look.next = now + kLookEvery;
  static const bool spinning = spinning_chosen();  // read once, off the per-kernel path
  if (spinning || omp_get_level() > 0) return;  // inside a parallel region, even of one thread
  const int current = omp_get_max_threads();
  if (current != look.set_by_us) look.ceiling = current;  // chosen since: it becomes the most
  const long runnable = runnable_threads(), ours = runnable_threads_of_this_process();
  if (runnable < 1 || ours < 1) return;
  const long others_now = std::max(runnable - ours, 0L);
  const long others = std::min(others_now, look.others_before);
  look.others_before = others_now;
  const long free_cores = static_cast<long>(omp_get_num_procs()) - others;
  const int wanted = static_cast<int>(std::clamp<long>(free_cores, 1, look.ceiling));
  if (wanted != current) omp_set_num_threads(wanted);
  look.set_by_us = wanted;
}

}  // namespace vramlab::platform
