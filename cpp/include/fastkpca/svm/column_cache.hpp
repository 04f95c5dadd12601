// The solver's kernel columns, kept between working sets in a buffer of fixed bytes (LIBSVM's cache, sized by
// the memory limit instead of cache_size alone): a column of sample s holds k(x_r, x_s) for the solver's
// current rows r, as float. As many columns fit as the buffer holds at the rows' current length, so when
// shrinking drops rows the kept columns are compacted in place and more of them fit. The least recently
// used column goes first; the columns of the working set being solved are pinned.
//
// The buffer is allocated once and never cleared: pages the solver never writes are never touched (on the
// machines this was measured on, touching fresh memory costs several times what evaluating the kernel
// entries in it does).
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "fastkpca/parallel.hpp"
#include "fastkpca/spare_buffer.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca::svm {

// One thread's seconds per entry a compaction keeps (a filtered copy within a column: 7.4 million entries kept of
// 20,000 rows in 7.9 ms, measured): the work by which it starts the team.
constexpr double kCompactSeconds = 1e-9;

class ColumnCache {
 public:
  // `keys` columns can be asked for (the problem's samples); `floats` is the buffer's size.
  ColumnCache(Index keys, std::size_t floats)
      : capacity_(floats), data_(std::max<std::size_t>(floats, 1) * sizeof(float)), slot_of_(keys, -1) {}
  ColumnCache(const ColumnCache&) = delete;
  ColumnCache& operator=(const ColumnCache&) = delete;

  // Empty, for columns of `rows` entries.
  void reset(Index rows) {
    rows_ = std::max<Index>(rows, 1);
    std::fill(slot_of_.begin(), slot_of_.end(), -1);
    key_of_.assign(static_cast<std::size_t>(slots()), -1);
    pinned_.assign(key_of_.size(), false);
    prev_.assign(key_of_.size(), -1);
    next_.assign(key_of_.size(), -1);
    head_ = tail_ = -1;
    free_.clear();
    for (Index s = slots() - 1; s >= 0; --s) free_.push_back(s);
  }

  // Columns that fit, and never more than there are keys (shrinking to a few rows would otherwise make the
  // bookkeeping of slots larger than the columns).
  Index slots() const {
    return std::min(static_cast<Index>(capacity_ / static_cast<std::size_t>(rows_)),
                    static_cast<Index>(slot_of_.size()));
  }

  // The column of `key`, or nullptr; a hit makes it the most recently used.
  float* find(Index key) {
    const Index s = slot_of_[static_cast<std::size_t>(key)];
    if (s < 0) return nullptr;
    unlink(s);
    push_back(s);
    return column(s);
  }

  // A slot for `key` (absent now), evicting the least recently used unpinned column when none is free;
  // nullptr when every slot is pinned.
  float* insert(Index key) {
    Index s = -1;
    if (!free_.empty()) {
      s = free_.back();
      free_.pop_back();
    } else {
      for (Index t = head_; t >= 0; t = next_[static_cast<std::size_t>(t)])
        if (!pinned_[static_cast<std::size_t>(t)]) {
          s = t;
          break;
        }
      if (s < 0) return nullptr;
      unlink(s);
      slot_of_[static_cast<std::size_t>(key_of_[static_cast<std::size_t>(s)])] = -1;
    }
    key_of_[static_cast<std::size_t>(s)] = key;
    slot_of_[static_cast<std::size_t>(key)] = s;
    push_back(s);
    return column(s);
  }

  void pin(Index key, bool on) {
    const Index s = slot_of_[static_cast<std::size_t>(key)];
    if (s >= 0) pinned_[static_cast<std::size_t>(s)] = on;
  }

  // The rows now keep[0 .. n_new) (old positions, increasing): every cached column keeps those entries, in
  // place. Slot s moves from s·rows_old to s·rows_new; with rows_new <= rows_old and keep[i] >= i, every value
  // moves to a lower address, so copying a slot in increasing order of row never overwrites one not yet read.
  // Slots move side by side in waves [a, b): a wave's writes end at b·rows_new <= a·rows_old, below the first
  // entry any slot from a on still has to read, and the slots below a have been read already. With at least half
  // the rows dropped (the solver's rule) the waves double: about log₂(slots) of them.
  void compact(const std::vector<Index>& keep) {
    const Index old_rows = rows_, new_rows = std::max<Index>(static_cast<Index>(keep.size()), 1);
    const Index old_slots = slots(), n_keep = static_cast<Index>(keep.size());
    const Index* kept = keep.data();
    float* data = data_.as<float>();
    const Index* key_of = key_of_.data();
    const double seconds = static_cast<double>(old_slots) * static_cast<double>(n_keep) * kCompactSeconds;
#pragma omp parallel if (team_pays(seconds))
    for (Index a = 0; a < old_slots;) {
      const Index b = std::min(old_slots, std::max(a + 1, a * old_rows / new_rows));
#pragma omp for schedule(static)
      for (Index s = a; s < b; ++s) {
        if (key_of[s] < 0) continue;
        const float* from = data + s * old_rows;
        float* to = data + s * new_rows;
        for (Index i = 0; i < n_keep; ++i) to[i] = from[kept[i]];
      }
      a = b;
    }
    rows_ = new_rows;
    const Index new_slots = slots();
    key_of_.resize(static_cast<std::size_t>(new_slots), -1);
    pinned_.resize(key_of_.size(), false);
    prev_.resize(key_of_.size(), -1);
    next_.resize(key_of_.size(), -1);
    for (Index s = new_slots - 1; s >= old_slots; --s) free_.push_back(s);
  }

 private:
  float* column(Index s) { return data_.as<float>() + s * rows_; }
  void unlink(Index s) {
    const Index p = prev_[static_cast<std::size_t>(s)], n = next_[static_cast<std::size_t>(s)];
    (p >= 0 ? next_[static_cast<std::size_t>(p)] : head_) = n;
    (n >= 0 ? prev_[static_cast<std::size_t>(n)] : tail_) = p;
    prev_[static_cast<std::size_t>(s)] = next_[static_cast<std::size_t>(s)] = -1;
  }
  void push_back(Index s) {
    prev_[static_cast<std::size_t>(s)] = tail_;
    next_[static_cast<std::size_t>(s)] = -1;
    (tail_ >= 0 ? next_[static_cast<std::size_t>(tail_)] : head_) = s;
    tail_ = s;
  }

  std::size_t capacity_;
  LargeBuffer data_;  // the columns, in float
  Index rows_ = 1;
  std::vector<Index> slot_of_, key_of_, prev_, next_, free_;
  std::vector<bool> pinned_;
  Index head_ = -1, tail_ = -1;
};

}  // namespace fastkpca::svm
