/// \file
/// \brief CUDA's atomic functions for emulated kernels, on top of std::atomic_ref.
///
/// Blocks run concurrently on several OS workers, so these are real atomic operations (relaxed,
/// like CUDA's). The overload set is CUDA's own: a kernel that compiles here compiles with nvcc.
/// Float sums built with atomicAdd depend on the order of the additions, which differs between
/// runs when more than one worker is used.
#pragma once

#include <atomic>

namespace vramlab::simt::detail {

/// Adds \p value with a relaxed read-modify-write (CUDA atomics order nothing either); returns
/// the old value.
template <class T>
T atomic_add(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value, std::memory_order_relaxed);
}

/// As atomic_add, subtracting.
template <class T>
T atomic_sub(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_sub(value, std::memory_order_relaxed);
}

/// Stores `pick(old, value)` with a relaxed CAS loop (min and max, which C++20's std::atomic_ref
/// lacks, and the bitwise ops); returns the old value.
template <class T, class Pick>
T atomic_update(T* address, T value, Pick pick) {
  std::atomic_ref<T> target(*address);
  T old = target.load(std::memory_order_relaxed);
  while (!target.compare_exchange_weak(old, pick(old, value), std::memory_order_relaxed)) {
  }
  return old;
}

/// Stores \p value, relaxed; returns the old value.
template <class T>
T atomic_exchange(T* address, T value) {
  return std::atomic_ref<T>(*address).exchange(value, std::memory_order_relaxed);
}

/// Stores \p value when *address == \p compare, relaxed; returns the old value either way
/// (CUDA's atomicCAS contract).
template <class T>
T atomic_cas(T* address, T compare, T value) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value, std::memory_order_relaxed);
  return compare;
}

}  // namespace vramlab::simt::detail

/// Atomic *address += val. \return the previous *address.
inline int atomicAdd(int* address, int val) {
  return vramlab::simt::detail::atomic_add(address, val);
}
/// Atomic *address += val. \return the previous *address.
inline unsigned int atomicAdd(unsigned int* address, unsigned int val) {
  return vramlab::simt::detail::atomic_add(address, val);
}
/// Atomic *address += val. \return the previous *address.
inline unsigned long long atomicAdd(unsigned long long* address, unsigned long long val) {
  return vramlab::simt::detail::atomic_add(address, val);
}
/// Atomic *address += val (the result depends on the order of additions). \return the previous
/// *address.
inline float atomicAdd(float* address, float val) {
  return vramlab::simt::detail::atomic_add(address, val);
}
/// Atomic *address += val (the result depends on the order of additions). \return the previous
/// *address.
inline double atomicAdd(double* address, double val) {
  return vramlab::simt::detail::atomic_add(address, val);
}
/// Atomic *address -= val. \return the previous *address.
inline int atomicSub(int* address, int val) {
  return vramlab::simt::detail::atomic_sub(address, val);
}
/// Atomic *address -= val. \return the previous *address.
inline unsigned int atomicSub(unsigned int* address, unsigned int val) {
  return vramlab::simt::detail::atomic_sub(address, val);
}
/// Atomic *address = min(*address, val). \return the previous *address.
inline int atomicMin(int* address, int val) {
  return vramlab::simt::detail::atomic_update(address, val,
                                              [](int a, int b) { return b < a ? b : a; });
}
/// Atomic *address = min(*address, val). \return the previous *address.
inline unsigned int atomicMin(unsigned int* address, unsigned int val) {
  return vramlab::simt::detail::atomic_update(address, val,
                                              [](unsigned a, unsigned b) { return b < a ? b : a; });
}
/// Atomic *address = min(*address, val). \return the previous *address.
inline unsigned long long atomicMin(unsigned long long* address, unsigned long long val) {
  return vramlab::simt::detail::atomic_update(
      address, val, [](unsigned long long a, unsigned long long b) { return b < a ? b : a; });
}
/// Atomic *address = min(*address, val). \return the previous *address.
inline long long atomicMin(long long* address, long long val) {
  return vramlab::simt::detail::atomic_update(
      address, val, [](long long a, long long b) { return b < a ? b : a; });
}
/// Atomic *address = max(*address, val). \return the previous *address.
inline int atomicMax(int* address, int val) {
  return vramlab::simt::detail::atomic_update(address, val,
                                              [](int a, int b) { return b > a ? b : a; });
}
/// Atomic *address = max(*address, val). \return the previous *address.
inline unsigned int atomicMax(unsigned int* address, unsigned int val) {
  return vramlab::simt::detail::atomic_update(address, val,
                                              [](unsigned a, unsigned b) { return b > a ? b : a; });
}
/// Atomic *address = max(*address, val). \return the previous *address.
inline unsigned long long atomicMax(unsigned long long* address, unsigned long long val) {
  return vramlab::simt::detail::atomic_update(
      address, val, [](unsigned long long a, unsigned long long b) { return b > a ? b : a; });
}
/// Atomic *address = max(*address, val). \return the previous *address.
inline long long atomicMax(long long* address, long long val) {
  return vramlab::simt::detail::atomic_update(
      address, val, [](long long a, long long b) { return b > a ? b : a; });
}
/// Atomic *address = val. \return the previous *address.
inline int atomicExch(int* address, int val) {
  return vramlab::simt::detail::atomic_exchange(address, val);
}
/// Atomic *address = val. \return the previous *address.
inline unsigned int atomicExch(unsigned int* address, unsigned int val) {
  return vramlab::simt::detail::atomic_exchange(address, val);
}
/// Atomic *address = val. \return the previous *address.
inline unsigned long long atomicExch(unsigned long long* address, unsigned long long val) {
  return vramlab::simt::detail::atomic_exchange(address, val);
}
/// Atomic *address = val. \return the previous *address.
inline float atomicExch(float* address, float val) {
  return vramlab::simt::detail::atomic_exchange(address, val);
}
/// Atomic: if *address == compare then *address = val. \return the previous *address.
inline int atomicCAS(int* address, int compare, int val) {
  return vramlab::simt::detail::atomic_cas(address, compare, val);
}
/// Atomic: if *address == compare then *address = val. \return the previous *address.
inline unsigned int atomicCAS(unsigned int* address, unsigned int compare, unsigned int val) {
  return vramlab::simt::detail::atomic_cas(address, compare, val);
}
/// Atomic: if *address == compare then *address = val. \return the previous *address.
inline unsigned long long atomicCAS(unsigned long long* address, unsigned long long compare,
                                    unsigned long long val) {
  return vramlab::simt::detail::atomic_cas(address, compare, val);
}
/// Atomic *address &= val. \return the previous *address.
inline int atomicAnd(int* address, int val) {
  return vramlab::simt::detail::atomic_update(address, val, [](int a, int b) { return a & b; });
}
/// Atomic *address &= val. \return the previous *address.
inline unsigned int atomicAnd(unsigned int* address, unsigned int val) {
  return vramlab::simt::detail::atomic_update(address, val,
                                              [](unsigned a, unsigned b) { return a & b; });
}
/// Atomic *address |= val. \return the previous *address.
inline int atomicOr(int* address, int val) {
  return vramlab::simt::detail::atomic_update(address, val, [](int a, int b) { return a | b; });
}
/// Atomic *address |= val. \return the previous *address.
inline unsigned int atomicOr(unsigned int* address, unsigned int val) {
  return vramlab::simt::detail::atomic_update(address, val,
                                              [](unsigned a, unsigned b) { return a | b; });
}
/// Atomic *address ^= val. \return the previous *address.
inline int atomicXor(int* address, int val) {
  return vramlab::simt::detail::atomic_update(address, val, [](int a, int b) { return a ^ b; });
}
/// Atomic *address ^= val. \return the previous *address.
inline unsigned int atomicXor(unsigned int* address, unsigned int val) {
  return vramlab::simt::detail::atomic_update(address, val,
                                              [](unsigned a, unsigned b) { return a ^ b; });
}
/// Orders this thread's memory accesses before and after it, device-wide.
inline void __threadfence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
/// Orders this thread's memory accesses within the block (a compiler barrier under emulation:
/// a block's threads share one OS thread).
inline void __threadfence_block() {
  std::atomic_signal_fence(std::memory_order_seq_cst);
}
