// A long sequential computation that cannot poll from inside (Eigen's dense symmetric eigensolver: its
// tridiagonal reduction and QR sweeps run seconds on a matrix of a few thousand rows) made interruptible:
// it runs on a helper thread while the calling thread polls the Interrupt. On an interrupt the call
// throws Interrupted at once and the helper finishes in the background, on state it owns (the function
// object and its result live in a shared block the helper holds), so nothing it touches is freed under it.
// The result is the same as calling f() directly: the same code on another thread. A computation of fewer than
// kInlineFlops runs on the calling thread: it ends within milliseconds, sooner than a thread starts and joins
// (tens of microseconds, many times its work when the computation is a small problem's).
#pragma once

#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "fastkpca/parallel.hpp"

namespace fastkpca {

// Flops below which polled_call calls f() directly (about 10 ms of a dense eigensolver's work on one core).
constexpr double kInlineFlops = 2e7;

// f() on a helper thread; f must own (or copy) everything it reads. Returns its result, rethrows its
// exception, or throws Interrupted as soon as `interrupt` says to stop. `flops`: about the work of f (below
// kInlineFlops f runs here).
template <class F>
auto polled_call(F f, Interrupt& interrupt, double flops) -> decltype(f()) {
  using Result = decltype(f());
  if (flops < kInlineFlops) return f();
  struct Shared {
    explicit Shared(F fn) : f(std::move(fn)) {}
    F f;
    std::mutex mutex;
    std::condition_variable done_cv;
    bool done = false;
    std::optional<Result> result;
    std::exception_ptr error;
  };
  auto shared = std::make_shared<Shared>(std::move(f));
  std::thread helper([shared]() {
    std::optional<Result> result;
    std::exception_ptr error;
    try {
      result.emplace(shared->f());
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard<std::mutex> lock(shared->mutex);
    shared->result = std::move(result);
    shared->error = error;
    shared->done = true;
    shared->done_cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(shared->mutex);
  while (!shared->done_cv.wait_for(lock, std::chrono::milliseconds(10), [&] { return shared->done; })) {
    lock.unlock();
    const bool stop = interrupt.poll();
    lock.lock();
    if (stop && !shared->done) {
      lock.unlock();
      helper.detach();
      throw Interrupted();
    }
  }
  lock.unlock();
  helper.join();
  if (shared->error) std::rethrow_exception(shared->error);
  return std::move(*shared->result);
}

}  // namespace fastkpca
