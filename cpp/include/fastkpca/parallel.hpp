// Thread count and cooperative interruption for the OpenMP loops of the core.
//
// The core knows nothing of Python: the binding layer installs a polling callback that says whether the
// caller asked to stop (Ctrl-C). Long loops call `Interrupt::poll()` between blocks; only the thread that
// started the call (OpenMP thread 0) runs the callback, at most every few milliseconds, and a raised
// flag makes every thread skip its remaining blocks. After the parallel region the caller checks the flag
// and throws `Interrupted`, so no exception ever crosses an OpenMP region boundary.
#pragma once

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>

#include <omp.h>

#include "fastkpca/busy_threads.hpp"

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

// The work from which a parallel region inside a call pays for waking the team: the thread rule of the Python layer
// (fastkpca/_threads.py, TEAM_MIN_SECONDS: four times a sleeping team's start), which decides a call's team, applied
// to the call's own loops (an `if` clause on a region whose work varies from call to call). The module exports it
// (TEAM_MIN_SECONDS) and the tests check the two are one.
constexpr double kTeamMinSeconds = 160e-6;

// Whether a region of about `seconds` of one thread's work should start the team.
inline bool team_pays(double seconds) { return seconds >= kTeamMinSeconds; }

// A region that starts right after another of the same call finds the team's threads still spinning (the wait
// policy's spin, fastkpca/_native.py) rather than asleep: an awake team starts at about a tenth of a sleeping one's
// cost (bench/thread_costs.py prints both, "awake team (back to back)"; docs/user_guide/threads.md quotes the
// machines), so such a region starts it from four times kAwakeTeamStartSeconds of work. Its caller knows the team
// is awake (a region of the same step has just run on it); where it may be asleep, team_pays decides.
constexpr double kAwakeTeamStartSeconds = 25e-6;
inline bool awake_team_pays(double seconds) { return seconds >= 4 * kAwakeTeamStartSeconds; }

namespace detail {

struct ThreadState {
  std::atomic<int> active_calls{0};  // core calls running now, from any thread
  std::atomic<bool> used{false};     // a call has run in this process (so GNU OpenMP may have a pool)
  std::atomic<bool> forked{false};   // this process was forked after that
};

inline ThreadState& thread_state() {
  static ThreadState state;
  return state;
}

// The calling thread's innermost core call, where it is a short call whose team was cut: the share of the default
// team it could have had (0: not such a call, or nothing left to take back). ThreadScope sets and restores it.
inline int& cut_short_call_share() {
  thread_local int share = 0;
  return share;
}

}  // namespace detail

// To be called once per process (the module does it at import): after a fork, GNU OpenMP's thread pool
// from the parent is unusable in the child and any parallel region there would hang, so a child forked
// after fastkpca ran in the parent computes on one thread.
inline void install_fork_guard() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) return;
  pthread_atfork(nullptr, nullptr, []() {
    auto& st = detail::thread_state();
    if (st.used.load()) st.forked.store(true);
    st.active_calls.store(0);
  });
}

// The thread count that asks for the default team of a short call (the thread rule's, fastkpca/_threads.py): the
// default, cut to the cores that no other thread of this process holds right now (busy_threads.hpp). A team
// started beside a busy core waits for it at every region's end, up to a scheduler's slice each time, which a
// short call cannot repay; a long one can, and asks for the plain default (0).
constexpr int kShortCallTeam = -1;

// The OpenMP thread count of the calling thread for one core call, restored afterwards. The setting is
// part of the calling thread's OpenMP data environment, so concurrent calls from other threads are
// unaffected; Eigen's own parallel products read the same setting.
//   n >= 1: exactly n threads (the caller asked).
//   n <= 0: the default (OMP_NUM_THREADS, threadpoolctl's limit), shared out among the core calls running
//           at the same time from other Python threads, so that thread pools calling fastkpca do not
//           oversubscribe the cores; for kShortCallTeam, also cut to the cores no other thread holds.
// In a child forked after the parent used OpenMP, always 1 (see install_fork_guard).
class ThreadScope {
 public:
  explicit ThreadScope(int n) : saved_(omp_get_max_threads()), saved_share_(detail::cut_short_call_share()) {
    auto& st = detail::thread_state();
    const int active = ++st.active_calls;
    st.used.store(true);
    int cut_share = 0;
    if (st.forked.load()) {
      n = 1;
    } else if (n <= 0) {
      const bool short_call = n == kShortCallTeam;
      n = std::max(1, saved_ / std::max(1, active));
      if (short_call && n > 1) {
        const int share = n;
        const int procs = omp_get_num_procs();
        n = std::max(1, std::min(n, procs - busy_threads(n, procs - 1)));
        if (n < share) cut_share = share;
      }
    }
    detail::cut_short_call_share() = cut_share;
    detail::note_team(n);
    omp_set_num_threads(n);
  }
  ~ThreadScope() {
    --detail::thread_state().active_calls;
    detail::cut_short_call_share() = saved_share_;
    omp_set_num_threads(saved_);
  }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;
  int threads() const { return omp_get_max_threads(); }

 private:
  int saved_, saved_share_;
};

// In a short call whose team ThreadScope cut because other threads held cores as it started: the cut made again
// from the threads running now, for the call's next regions (up to the share it was cut from). A call of many
// regions (a Krylov solver's passes) looks again between them, so that a core held only by a thread spinning down
// (BLAS's idle workers, another OpenMP runtime's, such as scikit-learn's after its k-means) comes back to the call
// once that thread sleeps; a core a thread keeps computing on stays left to it. Outside any parallel region, on the
// thread that made the call; a read of the threads' states (busy_threads.hpp) each time until the share is whole.
inline void recheck_short_call_team() {
  int& share = detail::cut_short_call_share();
  if (share <= 1 || omp_in_parallel()) return;
  const int procs = omp_get_num_procs();
  const int n = std::max(1, std::min(share, procs - busy_threads(share, procs - 1)));
  detail::note_team(n);
  omp_set_num_threads(n);
  if (n >= share) share = 0;
}

}  // namespace fastkpca
