/// \file
/// \brief How many OpenMP threads the runtime's kernels use: the cores other processes leave
/// free, up to the count chosen for the program. Note [Sharing the cores] in free_cores.cpp.
#pragma once

namespace vramlab::platform {

/// Looks, at most every 100 ms, at how many threads of other processes are runnable
/// (`/proc/loadavg` less this process's own), and sets the calling thread's OpenMP thread count to
/// the cores they leave free: at least 1, at most the count chosen for the program
/// (OMP_NUM_THREADS, or choose_openmp_threads(), as `--threads` does). Between looks it reads a
/// clock, so every kernel call can make it. Does nothing inside a parallel region, nor when the
/// user asked idle OpenMP threads to spin (OMP_WAIT_POLICY=ACTIVE): they would be counted as
/// another process's.
void fit_threads_to_free_cores() noexcept;

/// Sets the calling thread's OpenMP thread count to \p threads (at least 1) as the count chosen
/// for the program, which fit_threads_to_free_cores() never goes above. Use it rather than
/// omp_set_num_threads(): fit_threads_to_free_cores() sees a count set that way only when it
/// differs from the one it set itself.
void choose_openmp_threads(int threads) noexcept;

/// The number of runnable threads on the machine right now, as `/proc/loadavg` counts them (its
/// fourth field's numerator, which includes the thread that reads it), or -1 where it cannot be
/// read.
long runnable_threads() noexcept;

/// The number of this process's threads that are runnable right now (`/proc/self/task/*/stat`),
/// or -1 where it cannot be read.
long runnable_threads_of_this_process() noexcept;

}  // namespace vramlab::platform
