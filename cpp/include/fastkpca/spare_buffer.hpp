// Large buffers kept for the next fit: the last one a fit gave back, held for a second, is the next fit's buffer
// when that asks for about as many bytes.
//
// A buffer of kBackgroundReleaseBytes or more is a mapping of its own (glibc's malloc maps every block that large
// afresh, background_release.hpp), and its first write faults every page: about 0.3 µs a page of 4 KiB on the
// machines measured, a third of a KernelPCA fit at 5,000 samples on one thread, whose stored kernel is 105 MiB. A
// smaller block comes from malloc's heap, whose pages an earlier fit of the same size has touched already. Fits back
// to back of one size (a grid search, cross-validation, a refit) would pay the faults each time; so the buffer a fit
// gives back is parked as the spare (one, of at most kSpareMaxBytes) and the next LargeBuffer of between 8/9 of its
// bytes and its bytes takes it. A spare nobody takes within kSpareSeconds goes back to the system, as does one that a
// LargeBuffer of another size finds (freed in the background, background_release.hpp). Its contents are whatever the
// last fit left: the owners (a stored kernel's tiles, the SVM's column cache) write every element they read.
//
// A spare taken for fewer bytes than it holds gives the pages past them back (return_tail): a fit holds what it
// planned. The memory check (fastkpca/_validation.py) reads the spare as taken and gives it back (drop_spare) where
// an allocation would not fit without it. A child forked while a spare was held frees its copy
// (install_spare_fork_guard).
#pragma once

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>

#include "fastkpca/background_release.hpp"

namespace fastkpca {

constexpr std::size_t kSpareMaxBytes = std::size_t{256} << 20;
constexpr auto kSpareSeconds = std::chrono::seconds(1);

namespace detail {

struct Spare {
  std::mutex mutex;
  std::unique_ptr<std::byte[]> data;
  std::size_t bytes = 0;
  unsigned long generation = 0;  // changes whenever the spare is parked or taken: a timer frees only its own
};

// One for the process, never destroyed: a timer may wake while the interpreter exits.
inline Spare& spare() {
  static Spare* s = new Spare;
  return *s;
}

// The spare, if it is parked, taken out (the caller frees or uses it).
inline std::pair<std::unique_ptr<std::byte[]>, std::size_t> take_spare(Spare& s) {
  auto out = std::make_pair(std::move(s.data), s.bytes);
  s.bytes = 0;
  ++s.generation;
  return out;
}

}  // namespace detail

// Bytes of the spare parked now (0: none).
inline std::size_t spare_bytes() {
  auto& s = detail::spare();
  std::lock_guard<std::mutex> lock(s.mutex);
  return s.bytes;
}

// The spare, if one is parked (and, where `generation` is given, still the one parked then), back to the system now
// (in the background: wait_for_releases waits for it). Returns whether one went. The memory check calls it where an
// allocation would not fit while the spare is held (the binding's drop_spare); a park's timer, for its own spare.
inline bool give_back_spare(unsigned long generation = 0) {
  std::pair<std::unique_ptr<std::byte[]>, std::size_t> parked{nullptr, 0};
  {
    auto& s = detail::spare();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.data || (generation != 0 && s.generation != generation)) return false;
    parked = detail::take_spare(s);
  }
  release(std::move(parked.first), parked.second);
  return true;
}

// Storage of `bytes` bytes (aligned as operator new[] aligns) for elements of a trivial type, which the owner writes
// before it reads them: the spare where it fits, else a fresh block. Given back to the spare on destruction.
class LargeBuffer {
 public:
  LargeBuffer() = default;
  explicit LargeBuffer(std::size_t bytes) {
    if (bytes == 0) return;
    std::pair<std::unique_ptr<std::byte[]>, std::size_t> other{nullptr, 0};
    if (bytes >= kBackgroundReleaseBytes) {
      auto& s = detail::spare();
      std::lock_guard<std::mutex> lock(s.mutex);
      if (s.data && s.bytes >= bytes && s.bytes - s.bytes / 9 <= bytes) {
        std::tie(data_, bytes_) = detail::take_spare(s);
        return_tail(bytes);
        return;
      }
      if (s.data) other = detail::take_spare(s);
    }
    release(std::move(other.first), other.second);  // a spare of another size goes back first
    data_.reset(new std::byte[bytes]);
    bytes_ = bytes;
  }
  ~LargeBuffer() { park(std::move(data_), bytes_); }
  LargeBuffer(LargeBuffer&& other) noexcept : data_(std::move(other.data_)), bytes_(std::exchange(other.bytes_, 0)) {}
  LargeBuffer& operator=(LargeBuffer&& other) noexcept {
    if (this != &other) {
      park(std::move(data_), bytes_);
      data_ = std::move(other.data_);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  LargeBuffer(const LargeBuffer&) = delete;
  LargeBuffer& operator=(const LargeBuffer&) = delete;

  // The storage as an array of T, a trivial type (float, double): its elements begin to exist as the owner writes
  // them (implicit object creation, which GCC and Clang apply to storage from new[] in every language mode).
  template <class T>
  T* as() const {
    return reinterpret_cast<T*>(data_.get());
  }
  std::size_t bytes() const { return bytes_; }

 private:
  // A spare taken for fewer bytes than it holds gives the whole pages past `used` back to the system (they read as
  // zeros if touched again), so that the buffer holds no more memory than was asked for and planned.
  void return_tail(std::size_t used) {
#ifdef MADV_DONTNEED
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<std::uintptr_t>(data_.get());
    const std::uintptr_t from = (begin + used + page - 1) & ~(page - 1), to = (begin + bytes_) & ~(page - 1);
    if (to > from) madvise(reinterpret_cast<void*>(from), to - from, MADV_DONTNEED);  // advice: failure is harmless
#else
    (void)used;
#endif
  }

  // Parks `data` as the spare (the one parked before goes back), with a timer that gives it back unless taken; a
  // block too small or too large to park, or one no timer can be started for, is released at once.
  static void park(std::unique_ptr<std::byte[]> data, std::size_t bytes) {
    if (!data) return;
    if (bytes < kBackgroundReleaseBytes || bytes > kSpareMaxBytes) {
      release(std::move(data), bytes);
      return;
    }
    auto& s = detail::spare();
    std::pair<std::unique_ptr<std::byte[]>, std::size_t> before{nullptr, 0};
    unsigned long mine = 0;
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      before = detail::take_spare(s);
      s.data = std::move(data);
      s.bytes = bytes;
      mine = ++s.generation;
    }
    release(std::move(before.first), before.second);
    try {
      std::thread([mine] {
        std::this_thread::sleep_for(kSpareSeconds);
        give_back_spare(mine);  // unless taken or replaced since
      }).detach();
    } catch (...) {  // no thread to be had: nothing would give the spare back, so it goes now
      give_back_spare(mine);
    }
  }

  std::unique_ptr<std::byte[]> data_;
  std::size_t bytes_ = 0;
};

// To be called once per process (the module does it at import): the spare's lock is held across fork() (so the
// child's copy is not left locked by a thread it does not have), and a forked child frees the copy of the spare it
// inherited (its timer, a thread of the parent, is not in the child).
inline void install_spare_fork_guard() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  pthread_atfork([]() { detail::spare().mutex.lock(); }, []() { detail::spare().mutex.unlock(); },
                 []() {
                   auto& s = detail::spare();
                   s.mutex.unlock();
                   std::lock_guard<std::mutex> lock(s.mutex);
                   detail::take_spare(s);
                 });
}

}  // namespace fastkpca
