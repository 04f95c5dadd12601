// Thread count and cooperative interruption for the OpenMP loops of the core.
//
// The core knows nothing of Python: the binding layer installs a polling callback that says whether the
// caller asked to stop (Ctrl-C). Long loops call `Interrupt::poll()` between blocks; only the thread that
// started the call (OpenMP thread 0) runs the callback, at most every few milliseconds, and a raised
// flag makes every thread skip its remaining blocks. After the parallel region the caller checks the flag
// and throws `Interrupted`, so no exception ever crosses an OpenMP region boundary.
#pragma once

#include <atomic>
#include <chrono>
#include <stdexcept>

#include <omp.h>

namespace fastkpca {

struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted") {}
};

class Interrupt {
 public:
  using Callback = bool (*)();

  // Installed by the caller for the duration of one call (see InterruptScope); nullptr disables polling.
  explicit Interrupt(Callback check) : check_(check), last_(std::chrono::steady_clock::now()) {}

  // Cheap enough to call once per tile: everything but a relaxed load is rate-limited to thread 0.
  bool poll() {
    if (stop_.load(std::memory_order_relaxed)) return true;
    if (check_ == nullptr || omp_get_thread_num() != 0) return false;
    auto now = std::chrono::steady_clock::now();
    if (now - last_ < std::chrono::milliseconds(20)) return false;
    last_ = now;
    if (check_()) stop_.store(true, std::memory_order_relaxed);
    return stop_.load(std::memory_order_relaxed);
  }

  bool stopped() const { return stop_.load(std::memory_order_relaxed); }

  // Call after a parallel region: turns a raised flag into an exception on the calling thread.
  void throw_if_stopped() const {
    if (stopped()) throw Interrupted();
  }

 private:
  Callback check_;
  std::chrono::steady_clock::time_point last_;
  std::atomic<bool> stop_{false};
};

// Sets the OpenMP thread count of the calling thread for one call and restores it afterwards.
// n <= 0 keeps the current default (OMP_NUM_THREADS, threadpoolctl's limit). The setting is part of the
// calling thread's OpenMP data environment, so concurrent calls from other threads are unaffected; Eigen's
// own parallel products read the same setting.
class ThreadScope {
 public:
  explicit ThreadScope(int n) : saved_(omp_get_max_threads()) {
    if (n > 0) omp_set_num_threads(n);
  }
  ~ThreadScope() { omp_set_num_threads(saved_); }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;
  int threads() const { return omp_get_max_threads(); }

 private:
  int saved_;
};

}  // namespace fastkpca
