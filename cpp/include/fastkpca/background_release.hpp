// Large buffers handed back to the system on a thread of their own.
//
// Freeing a block of tens of megabytes unmaps it: the system takes back every 4 KiB page, about 0.3 µs each
// (8 ms for the 105 MiB a stored kernel of 5,000 samples holds, 0.12 s for 1.6 GB). That happens on the thread
// that frees the block, after the fit's parallel work, so it is serial time at the end of every fit that stored a
// kernel. A buffer of kBackgroundReleaseBytes or more is freed on a detached thread instead, and the fit returns
// while its pages go back.
//
// The releases in flight are counted, and their bytes: wait_for_releases() returns once none is left. The Python
// layer waits for them before it reads the memory the system has available (fastkpca/_validation.py) where their
// bytes are a large share of it, so that no memory plan sees as taken what a finished fit is still giving back; a
// smaller share it reads as taken (a plan a few percent short) rather than hold the next fit back for the
// unmapping's milliseconds. A child forked while a release ran has no such thread, so it starts from none in
// flight (install_release_fork_guard); its copy of that buffer stays mapped.
#pragma once

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <memory>
#include <thread>

namespace fastkpca {

// From this size on a buffer is released in the background: glibc's malloc maps every block this large on its
// own (its largest mmap threshold), so freeing it is an unmapping, and a thread's start (tens of microseconds)
// is a few percent of what it saves.
constexpr std::size_t kBackgroundReleaseBytes = std::size_t{32} << 20;

namespace detail {
inline std::atomic<int>& releases_in_flight() {
  static std::atomic<int> count{0};
  return count;
}
inline std::atomic<std::size_t>& release_bytes_in_flight() {
  static std::atomic<std::size_t> bytes{0};
  return bytes;
}
}  // namespace detail

// Frees `buffer` (of `bytes`), on a thread of its own when it is large; here, when it is small or no thread can
// be started.
template <class T>
void release(std::unique_ptr<T[]> buffer, std::size_t bytes) {
  if (!buffer || bytes < kBackgroundReleaseBytes) return;  // freed here, as buffer goes out of scope
  auto& in_flight = detail::releases_in_flight();
  auto& bytes_in_flight = detail::release_bytes_in_flight();
  bytes_in_flight.fetch_add(bytes);
  in_flight.fetch_add(1);
  T* data = buffer.release();
  const auto done = [data, bytes, &in_flight, &bytes_in_flight] {
    delete[] data;
    bytes_in_flight.fetch_sub(bytes);
    in_flight.fetch_sub(1);
  };
  try {
    std::thread(done).detach();
  } catch (...) {  // no thread to be had (std::system_error, std::bad_alloc)
    done();
  }
}

// Returns once every release started before it has finished.
inline void wait_for_releases() {
  while (detail::releases_in_flight().load() > 0) std::this_thread::sleep_for(std::chrono::microseconds(100));
}

// To be called once per process (the module does it at import).
inline void install_release_fork_guard() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  pthread_atfork(nullptr, nullptr, []() {
    detail::releases_in_flight().store(0);
    detail::release_bytes_in_flight().store(0);
  });
}

}  // namespace fastkpca
