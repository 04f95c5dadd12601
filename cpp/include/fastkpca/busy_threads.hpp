// The cores that other threads of this process hold right now, for the thread rule (fastkpca/_threads.py).
//
// After a threaded call, OpenBLAS's idle workers keep spinning on their cores for about a tenth of a second (2^28
// TSC cycles), and a user's own threads may be computing. An OpenMP team started then has a thread that waits for
// one of those cores: every region of the call ends at the scheduler's next slice, not when its work is done. The
// kernel reports each thread's scheduling state in /proc/self/task/<tid>/stat (the field after the parenthesised
// name: R for running or runnable); a spinning thread stays R, a sleeping one (a blocked futex, a GIL wait) is S.
// The calling thread and the threads of its own OpenMP pool are not counted: the pool's threads spin for a few
// tens of microseconds after each region (GOMP_SPINCOUNT, fastkpca/_native.py) and are the team itself.
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
#endif

namespace fastkpca {

#if defined(__linux__)

namespace detail {

inline long thread_id() { return static_cast<long>(::syscall(SYS_gettid)); }

// The kernel thread ids of the calling thread's OpenMP pool for teams of up to `team` threads. GNU OpenMP keeps
// one pool per thread that starts regions and reuses its threads from region to region; the ids are read once
// per calling thread (one region) and again only when a larger team is asked for; not from inside a region (a
// nested region would run on one thread and record nothing of the pool).
inline const std::vector<long>& pool_thread_ids(int team) {
  thread_local std::vector<long> ids;
  thread_local int recorded = 1;
  if (team > recorded && !omp_in_parallel()) {
    std::vector<long> found(static_cast<std::size_t>(team), 0);
#pragma omp parallel num_threads(team)
    found[static_cast<std::size_t>(omp_get_thread_num())] = thread_id();
    ids = found;
    recorded = team;
  }
  return ids;
}

// Whether /proc/self/task/<tid>/stat says that thread is running or runnable. The name field may hold spaces and
// parentheses, so the state is read after the last ')'.
inline bool thread_running(const char* tid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/self/task/%s/stat", tid);
  const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // the thread ended while the directory was read
  char buf[512];
  const ssize_t got = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (got <= 0) return false;
  buf[got] = '\0';
  const char* close = std::strrchr(buf, ')');
  return close != nullptr && close[1] == ' ' && close[2] == 'R';
}

}  // namespace detail

// Threads of this process running or runnable now, besides the calling thread and its OpenMP pool (as a team of
// `team` threads would use it); 0 where /proc cannot be read. It starts a region the first time (ThreadScope calls it
// only where a region may start: not in a child forked after OpenMP ran, parallel.hpp).
inline int busy_threads(int team) {
  const std::vector<long>& pool = detail::pool_thread_ids(team);
  const long self = detail::thread_id();
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return 0;
  int busy = 0;
  while (const dirent* entry = ::readdir(dir)) {
    if (entry->d_name[0] < '0' || entry->d_name[0] > '9') continue;
    const long tid = std::strtol(entry->d_name, nullptr, 10);
    bool ours = tid == self;
    for (long id : pool) ours = ours || tid == id;
    if (!ours && detail::thread_running(entry->d_name)) ++busy;
  }
  ::closedir(dir);
  return busy;
}

#else

inline int busy_threads(int) { return 0; }

#endif

}  // namespace fastkpca
