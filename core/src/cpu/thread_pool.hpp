// SPDX-License-Identifier: Apache-2.0
// The threads that share one call (recur_layer_set_num_threads). A call meets its threads once or
// twice per timestep, so they spin briefly at those barriers and between back-to-back calls
// instead of sleeping; they sleep when idle. When a barrier finds its partner descheduled (the
// cores busy with other work), calls run on their own thread for a while. One call uses the pool at a time: a call that finds
// it busy runs on its own thread, which gives the same numbers (work is split the same way for
// any thread count) without oversubscribing the cores.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace recur {
namespace cpu {

class ThreadPool {
 public:
  using Task = void (*)(void* context, int thread, int threads);

  static ThreadPool& instance();
  ~ThreadPool();

  // Runs task(context, t, n) for t = 0..n-1, t = 0 on the calling thread, and returns when all
  // are done. Returns false without running anything when another call holds the pool.
  bool run(int n, Task task, void* context);
  // Waits until every thread of the running task has arrived (inside a task only).
  void barrier();
  static void barrier_of(void* pool) { static_cast<ThreadPool*>(pool)->barrier(); }

 private:
  ThreadPool() = default;
  void worker(int index, std::uint64_t seen);
  void grow(int workers);

  std::mutex busy_;  // held by the call that runs
  std::mutex mutex_;  // guards sleeping workers and the thread list
  std::condition_variable wake_;
  std::vector<std::thread> threads_;
  std::atomic<std::uint64_t> job_{0};  // generation of the current task
  std::atomic<bool> stop_{false};
  std::atomic<int> sleepers_{0};
  Task task_ = nullptr;
  void* context_ = nullptr;
  int team_ = 0;
  std::atomic<int> finished_{0};  // workers done with the current job
  // Sense-reversing barrier.
  std::atomic<int> arrived_{0};
  std::atomic<std::uint32_t> sense_{0};
  std::atomic<int> barrier_sleepers_{0};
  std::atomic<int> barrier_waits_{0}, barrier_sleeps_{0};  // during the current job
  std::chrono::steady_clock::duration::rep backoff_until_ = 0;  // guarded by busy_
  std::mutex barrier_mutex_;
  std::condition_variable barrier_wake_;
};

}  // namespace cpu
}  // namespace recur
