// SPDX-License-Identifier: Apache-2.0
#include "cpu/thread_pool.hpp"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(_M_X64) || defined(__i386__)
#include <immintrin.h>
#define RECUR_PAUSE() _mm_pause()
#elif defined(__aarch64__)
#define RECUR_PAUSE() __asm__ __volatile__("yield")
#else
#define RECUR_PAUSE() ((void)0)
#endif

namespace recur {
namespace cpu {
namespace {

// About 50-100 µs of spinning before a worker sleeps: longer than the gap between the steps of a
// stream fed call after call, far shorter than anything a person would notice as idle load.
constexpr int kIdleSpins = 1 << 15;
// At a barrier, spin this long (tens of µs) before sleeping: long enough for the uneven ends of one
// step's work, short enough to hand the core over when the thread waited for is not running.
constexpr int kBarrierSpins = 1 << 14;
// How long calls run alone after one found the cores busy.
constexpr std::chrono::milliseconds kBackoff(20);

}  // namespace

ThreadPool& ThreadPool::instance() {
  static ThreadPool pool;
  return pool;
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    job_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void ThreadPool::grow(int workers) {
  std::lock_guard<std::mutex> lock(mutex_);
  while (static_cast<int>(threads_.size()) < workers) {
    const int index = static_cast<int>(threads_.size());
    // The generation before the job that needs it: the new thread must run that job.
    const std::uint64_t seen = job_.load(std::memory_order_acquire);
    threads_.emplace_back([this, index, seen] { worker(index, seen); });
  }
}

void ThreadPool::worker(int index, std::uint64_t seen) {
  for (;;) {
    std::uint64_t now = seen;
    for (int i = 0; i < kIdleSpins; ++i) {
      now = job_.load(std::memory_order_acquire);
      if (now != seen) break;
      RECUR_PAUSE();
    }
    if (now == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      sleepers_.fetch_add(1);
      wake_.wait(lock, [&] { return job_.load(std::memory_order_acquire) != seen; });
      sleepers_.fetch_sub(1);
      now = job_.load(std::memory_order_acquire);
    }
    seen = now;
    if (stop_.load()) return;
    const int t = index + 1;
    if (t < team_) task_(context_, t, team_);
    // Every worker acknowledges every job, so the next call rewrites the job only when no worker
    // can still be reading it.
    finished_.fetch_add(1, std::memory_order_acq_rel);
  }
}

bool ThreadPool::run(int n, Task task, void* context) {
  if (n <= 1) {
    task(context, 0, 1);
    return true;
  }
  std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
  if (!busy.owns_lock()) return false;
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  if (now < backoff_until_) return false;
  grow(n - 1);
  const int workers = static_cast<int>(threads_.size());
  task_ = task;
  context_ = context;
  team_ = n;
  finished_.store(0, std::memory_order_relaxed);
  arrived_.store(0, std::memory_order_relaxed);
  {
    // Under the mutex, so that a worker about to sleep sees the new job or gets the notification.
    std::lock_guard<std::mutex> lock(mutex_);
    job_.fetch_add(1, std::memory_order_release);
  }
  if (sleepers_.load() > 0) wake_.notify_all();
  task(context, 0, n);
  int spins = 0;
  while (finished_.load(std::memory_order_acquire) < workers) {
    if (++spins < kBarrierSpins)
      RECUR_PAUSE();
    else
      std::this_thread::yield();
  }
  const int sleeps = barrier_sleeps_.exchange(0), waits = barrier_waits_.exchange(0);
  if (sleeps >= 2 && sleeps * 8 >= waits) {
    // Threads often had to sleep at the barriers: the cores are busy with other work, and each
    // step would wait for the scheduler. Calls run alone for a while (same numbers), then try
    // again. A sleep now and then (another process's brief burst) does not count.
    backoff_until_ = std::chrono::steady_clock::now().time_since_epoch().count() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(kBackoff).count();
  }
  return true;
}

void ThreadPool::barrier() {
  const std::uint32_t sense = sense_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == team_) {
    arrived_.store(0, std::memory_order_relaxed);
    sense_.store(sense + 1);  // seq_cst, against the sleepers_ check of a thread going to sleep
    if (barrier_sleepers_.load() > 0) {
      { std::lock_guard<std::mutex> lock(barrier_mutex_); }
      barrier_wake_.notify_all();
    }
    return;
  }
  barrier_waits_.fetch_add(1, std::memory_order_relaxed);
  for (int spins = 0; sense_.load(std::memory_order_acquire) == sense; ++spins) {
    if (spins < kBarrierSpins) {
      RECUR_PAUSE();
      continue;
    }
    // The thread waited for is not running (more threads than free cores): sleep until it arrives.
    barrier_sleeps_.fetch_add(1, std::memory_order_relaxed);
    std::unique_lock<std::mutex> lock(barrier_mutex_);
    barrier_sleepers_.fetch_add(1);
    barrier_wake_.wait(lock, [&] { return sense_.load() != sense; });
    barrier_sleepers_.fetch_sub(1);
    break;
  }
}

}  // namespace cpu
}  // namespace recur
