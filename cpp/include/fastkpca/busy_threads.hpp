// The cores that other threads of this process hold right now, for the thread rule (fastkpca/_threads.py).
//
// After a threaded call, OpenBLAS's idle workers keep spinning on their cores for about a tenth of a second (2^28
// TSC cycles), and a user's own threads may be computing. An OpenMP team started then has a thread that waits for
// one of those cores: every region of the call ends at the scheduler's next slice, not when its work is done. The
// kernel reports each thread's scheduling state in /proc/self/task/<tid>/stat (the field after the parenthesised
// name: R for running or runnable); a spinning thread stays R, a sleeping one (a blocked futex, a GIL wait) is S.
// The calling thread and the threads of its own OpenMP pool are not counted: the pool's threads spin for a few
// tens of microseconds after each region (GOMP_SPINCOUNT, fastkpca/_native.py) and are the team itself.
//
// A read costs a few system calls, each microseconds on a VM, and the thread rule reads before every short call
// that may start a team: the files stay open (a /proc file read again from offset 0 is generated afresh), and the
// directory is listed again only when the process's thread count (/proc/self/stat) has changed or a thread has
// gone.
#pragma once

#include <omp.h>

#include <vector>

#if defined(__linux__)
#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#endif

namespace fastkpca {

#if defined(__linux__)

namespace detail {

inline long thread_id() { return static_cast<long>(::syscall(SYS_gettid)); }

// The kernel thread ids of the calling thread's OpenMP pool. GNU OpenMP keeps one pool per thread that starts
// regions and reuses its threads from region to region; a team smaller than the pool lets the surplus threads go,
// and a larger one later starts new ones. So the ids are read (one region) when a team larger than the one last
// recorded may start, and ThreadScope lowers the record whenever it sets a smaller team (note_team). Not from
// inside a region: a nested region runs on one thread and would record nothing of the pool.
struct PoolIds {
  std::vector<long> ids;
  int recorded = 1;  // the team size the ids are of (1: none recorded)
};

inline PoolIds& pool_ids() {
  thread_local PoolIds pool;
  return pool;
}

inline void note_team(int team) {
  PoolIds& pool = pool_ids();
  if (team >= 2 && team < pool.recorded) pool.recorded = team;
}

inline const std::vector<long>& pool_thread_ids(int team) {
  PoolIds& pool = pool_ids();
  if (team > pool.recorded && !omp_in_parallel()) {
    pool.ids.assign(static_cast<std::size_t>(team), 0);
#pragma omp parallel num_threads(team)
    pool.ids[static_cast<std::size_t>(omp_get_thread_num())] = thread_id();
    pool.recorded = team;
  }
  return pool.ids;
}

// The text after the parenthesised name of a /proc stat file open at `fd` (the name may hold spaces and
// parentheses: the last ')' ends it), read afresh; nullptr where the file is gone (its thread ended).
inline const char* stat_fields(int fd, char (&buf)[512]) {
  const ssize_t got = ::pread(fd, buf, sizeof buf - 1, 0);
  if (got <= 0) return nullptr;
  buf[got] = '\0';
  const char* close = std::strrchr(buf, ')');
  return close != nullptr && close[1] == ' ' ? close + 2 : nullptr;
}

// Above this many threads in the process the states are not read (0 busy: the plain default team): the reads grow
// with the threads, and a process of that many (a Dask worker's) has its own scheduling of them.
constexpr long kMostThreadsRead = 64;

// The process's threads' stat files, open, shared by the threads that ask (under a lock).
class TaskStates {
 public:
  // Threads running now, besides `self` and `pool`, counted up to `enough`.
  int running(long self, const std::vector<long>& pool, int enough) {
    std::lock_guard<std::mutex> lock(mutex_);
    const long count = thread_count();
    if (count < 0 || count > kMostThreadsRead) return 0;
    if (count != listed_) relist(count);
    int busy = 0;
    char buf[512];
    for (const auto& task : tasks_) {
      if (busy >= enough) break;
      bool ours = task.first == self;
      for (long id : pool) ours = ours || task.first == id;
      if (ours) continue;
      const char* fields = stat_fields(task.second, buf);
      if (fields == nullptr) listed_ = kRelist;  // gone: list the directory again next time
      else if (fields[0] == 'R') ++busy;
    }
    return busy;
  }

 private:
  static constexpr long kRelist = -2;

  // num_threads, the 18th field after the name in /proc/self/stat; -1 where it cannot be read.
  long thread_count() {
    if (process_ < 0) process_ = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    char buf[512];
    const char* p = process_ < 0 ? nullptr : stat_fields(process_, buf);
    for (int field = 0; p != nullptr && field < 17; ++field) {
      p = std::strchr(p, ' ');
      if (p != nullptr) ++p;
    }
    return p == nullptr ? -1 : std::strtol(p, nullptr, 10);
  }

  void relist(long count) {
    for (const auto& task : tasks_) ::close(task.second);
    tasks_.clear();
    listed_ = count;
    DIR* dir = ::opendir("/proc/self/task");
    if (dir == nullptr) return;
    while (const dirent* entry = ::readdir(dir)) {
      if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
      char path[288];  // the prefix, a name of up to 255 bytes, "/stat"
      std::snprintf(path, sizeof path, "/proc/self/task/%s/stat", entry->d_name);
      const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
      if (fd >= 0) tasks_.emplace_back(std::strtol(entry->d_name, nullptr, 10), fd);
    }
    ::closedir(dir);
  }

  std::mutex mutex_;
  std::vector<std::pair<long, int>> tasks_;  // (thread id, its stat file)
  long listed_ = kRelist;                    // the thread count when the directory was listed
  int process_ = -1;                         // /proc/self/stat
};

// One for the process, never destroyed: a thread may still start a call while the interpreter exits.
inline TaskStates& task_states() {
  static TaskStates* states = new TaskStates;
  return *states;
}

}  // namespace detail

// Threads of this process running or runnable now, besides the calling thread and its OpenMP pool (as a team of
// `team` threads would use it), counted up to `enough`; 0 where /proc cannot be read or the process has more than
// kMostThreadsRead threads. It may start a region (ThreadScope calls it only where a region may start: not in a
// child forked after OpenMP ran, parallel.hpp).
inline int busy_threads(int team, int enough) {
  const std::vector<long>& pool = detail::pool_thread_ids(team);
  return detail::task_states().running(detail::thread_id(), pool, enough);
}

#else

namespace detail {
inline void note_team(int) {}
}  // namespace detail

inline int busy_threads(int, int) { return 0; }

#endif

}  // namespace fastkpca
