// platform::fit_threads_to_free_cores (Note [Sharing the cores]): busy processes take OpenMP
// threads away and give them back when they stop; the count chosen for the program is a ceiling
// it never goes above. Run serially: the machine's load is what it reads, and where another
// process keeps the machine busy the checks that need idle cores skip, saying so.
#include <omp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "common/platform/free_cores.h"

namespace vramlab::platform {
namespace {

// Two looks more than the 100 ms apart that the function waits between looks: it acts on the
// smaller of its last two counts.
void look_twice() {
  for (int i = 0; i < 2; i++) {
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    fit_threads_to_free_cores();
  }
}

class BusyLoops {
 public:
  explicit BusyLoops(int count) {
    for (int i = 0; i < count; i++) {
      const pid_t pid = fork();
      if (pid == 0) {
        for (;;) __asm__ volatile("" ::: "memory");  // a loop the compiler keeps
      }
      pids_.push_back(pid);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ~BusyLoops() { stop(); }
  void stop() {
    for (pid_t pid : pids_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    pids_.clear();
  }

 private:
  std::vector<pid_t> pids_;
};

TEST(FreeCores, CountsTheReadingThreadAsRunnable) {
  EXPECT_GE(runnable_threads(), 1);
  EXPECT_GE(runnable_threads_of_this_process(), 1);
}

// Runnable threads of other processes now: a busy machine makes the cores coming back untestable.
long others_runnable() {
  return runnable_threads() - runnable_threads_of_this_process();
}

TEST(FreeCores, BusyProcessesTakeThreadsAwayUntilTheyStop) {
  const int cores = omp_get_num_procs();
  if (cores < 2) GTEST_SKIP() << "needs 2 cores to see threads taken away, this machine has 1";
  const int saved = omp_get_max_threads();
  choose_openmp_threads(cores);
  BusyLoops loops(cores);
  look_twice();
  EXPECT_EQ(omp_get_max_threads(), 1) << "a busy loop on every core leaves one thread";
  loops.stop();
  look_twice();
  const long others = others_runnable();
  if (others > 0) {
    choose_openmp_threads(saved);
    GTEST_SKIP() << "other processes keep " << others
                 << " threads runnable, so the cores cannot all come back";
  }
  EXPECT_EQ(omp_get_max_threads(), cores) << "the cores come back when the loops stop";
  choose_openmp_threads(saved);
}

TEST(FreeCores, OneBusyLoopTakesAtLeastOneCore) {
  const int cores = omp_get_num_procs();
  if (cores < 2) GTEST_SKIP() << "needs 2 cores to see one taken away, this machine has 1";
  const int saved = omp_get_max_threads();
  choose_openmp_threads(cores);
  BusyLoops loops(1);
  look_twice();
  EXPECT_LE(omp_get_max_threads(), cores - 1);  // less when other processes are busy too
  EXPECT_GE(omp_get_max_threads(), 1);
  choose_openmp_threads(saved);
}

TEST(FreeCores, NeverAboveTheCountTheProgramChose) {
  const int saved = omp_get_max_threads();
  choose_openmp_threads(1);
  look_twice();
  EXPECT_EQ(omp_get_max_threads(), 1);
  choose_openmp_threads(saved);
}

TEST(FreeCores, NothingChangesInsideAParallelRegion) {
  const int saved = omp_get_max_threads();
  choose_openmp_threads(2);
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  int inside = 0;
#pragma omp parallel num_threads(1)
  {
    fit_threads_to_free_cores();
    inside = omp_get_max_threads();
  }
  EXPECT_EQ(inside, 2);
  choose_openmp_threads(saved);
}

}  // namespace
}  // namespace vramlab::platform
