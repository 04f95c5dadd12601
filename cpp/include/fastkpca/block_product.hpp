// The fixed work units of a block product's pass, one triangle or a rectangle, which the dense operator's
// one-triangle pass (dense_operator.hpp) and the kernel blocks' passes (kernel_block.hpp) share; both
// multiply through the register-blocked loops of micro_kernel.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "fastkpca/parallel.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca {

namespace detail {

// Boundaries of `blocks` runs of rows of a lower triangle with `count` rows, of equal area: row
// count·sqrt(p/blocks) starts block p. bounds has blocks + 1 entries.
inline void triangle_bounds(Index count, Index blocks, Index* bounds) {
  for (Index p = 0; p <= blocks; ++p)
    bounds[p] = static_cast<Index>(
        std::llround(static_cast<double>(count) * std::sqrt(static_cast<double>(p) / static_cast<double>(blocks))));
}

// The fixed work units of one pass over a symmetric matrix's lower triangle, or over a rectangular block,
// with each entry used for both of its products (W_i += A_ij V_j and, mirrored, W_j += A_ij V_i).
//
// `count` units (rows of a dense matrix, or tile rows of `unit_rows` rows) are cut into `blocks` runs:
//   triangle:  runs of equal area (run p starts at count·sqrt(p/blocks)); a run adds the mirrored
//              contributions that fall into its own rows directly and collects those for the rows before it
//              (rows [0, start_p)) in its own buffer;
//   rectangle: equal runs, each collecting the mirrored side for all `transposed_rows` rows of the other
//              operand in its own buffer (none when transposed_rows is 0: a one-sided product).
// run() calls body(p, begin, end, buffer_p) for every run in parallel, largest first; add_transposed()
// folds the buffers into W in run order. The work units and the order of every sum are fixed, so the
// rounding never depends on the thread count. The dense operator's pass (dense_operator.hpp) and the
// kernel blocks' (kernel_block.hpp) both run on it.
class FixedBlocks {
 public:
  static constexpr Index kMaxBlocks = 16;

  static FixedBlocks triangle(Index count, Index unit_rows, Index blocks, Index ldv) {
    FixedBlocks f(std::clamp<Index>(blocks, 1, kMaxBlocks), ldv);
    triangle_bounds(count, f.blocks_, f.bounds_.data());
    for (Index p = 0; p < f.blocks_; ++p) f.rows_[p] = f.bounds_[p] * unit_rows;
    // Largest first. Run p's area, Σ (i + 1) over its units i in [b, e), is (e - b)(e + b + 1)/2: equal for every
    // run up to the rounding of the bounds, which leaves it uneven where the units are few (20 tile rows in 16 runs:
    // areas of 0 to 20 tiles) and then no longer growing with p.
    std::stable_sort(f.order_.begin(), f.order_.end(), [&f](Index a, Index b) {
      const auto area = [&f](Index p) {
        const Index begin = f.bounds_[p], end = f.bounds_[p + 1];
        return (end - begin) * (end + begin + 1);
      };
      return area(a) > area(b);
    });
    f.allocate();
    return f;
  }

  // `blocks` up to kMaxBlocks when there is a mirrored side; a one-sided product may use one per unit.
  static FixedBlocks rectangle(Index count, Index blocks, Index transposed_rows, Index ldv) {
    FixedBlocks f(std::clamp<Index>(blocks, 1, transposed_rows > 0 ? kMaxBlocks : std::max<Index>(count, 1)), ldv);
    for (Index p = 0; p <= f.blocks_; ++p) f.bounds_[p] = count * p / f.blocks_;
    for (Index p = 0; p < f.blocks_; ++p) f.rows_[p] = transposed_rows;
    f.allocate();
    return f;
  }

  Index size() const { return blocks_; }
  Index begin(Index p) const { return bounds_[p]; }
  Index end(Index p) const { return bounds_[p + 1]; }

  // body(state, begin, end, buffer) for every run, in parallel (largest first), skipped once interrupted;
  // `state` is made by make_state() once per thread (working memory reused from run to run).
  template <class MakeState, class Body>
  void run(Interrupt& interrupt, MakeState&& make_state, Body&& body) {
#pragma omp parallel
    {
      auto state = make_state();
#pragma omp for schedule(dynamic, 1)
      for (Index k = 0; k < blocks_; ++k) {
        const Index p = order_[static_cast<std::size_t>(k)];
        double* buffer = rows_[p] > 0 ? parts_.get() + offset_[p] : nullptr;
        // Zeroed by the thread that fills it (its pages first touched there), whether the run then runs or not:
        // add_transposed reads every buffer.
        if (buffer) std::fill(buffer, buffer + rows_[p] * ldv_, 0.0);
        if (interrupt.poll() || bounds_[p] == bounds_[p + 1]) continue;
        body(state, bounds_[p], bounds_[p + 1], buffer);
      }
    }
  }

  // W[i] += Σ_p buffer_p[i] in run order, for the first n rows of the row-major W (leading dimension ldv). A
  // triangle's early rows collect from more buffers than its late ones (run p's covers rows [0, start_p)), so the
  // rows go to the threads in chunks as they free up; each row's sum is in run order on any thread.
  void add_transposed(double* w, Index n) const {
    if (offset_.back() == 0) return;
    using Row = Eigen::Map<Eigen::Matrix<double, 1, Eigen::Dynamic>>;
    using ConstRow = Eigen::Map<const Eigen::Matrix<double, 1, Eigen::Dynamic>>;
#pragma omp parallel for schedule(dynamic, 64)
    for (Index i = 0; i < n; ++i) {
      Row row(w + i * ldv_, ldv_);
      for (Index p = 0; p < blocks_; ++p)
        if (i < rows_[p]) row += ConstRow(parts_.get() + offset_[p] + i * ldv_, ldv_);
    }
  }

 private:
  FixedBlocks(Index blocks, Index ldv)
      : blocks_(blocks), ldv_(ldv), bounds_(static_cast<size_t>(blocks) + 1), rows_(static_cast<size_t>(blocks)),
        offset_(static_cast<size_t>(blocks) + 1, 0), order_(static_cast<size_t>(blocks)) {
    // From the last run down (a rectangle's runs are equal; a triangle sorts them by area).
    for (Index p = 0; p < blocks; ++p) order_[static_cast<size_t>(p)] = blocks - 1 - p;
  }

  // The buffers, uninitialised: run() zeroes each on the team.
  void allocate() {
    for (Index p = 0; p < blocks_; ++p) offset_[p + 1] = offset_[p] + rows_[p] * ldv_;
    if (offset_.back() > 0) parts_.reset(new double[static_cast<size_t>(offset_.back())]);
  }

  Index blocks_, ldv_;
  std::vector<Index> bounds_, rows_, offset_;
  std::vector<Index> order_;  // the runs in the order the team takes them
  std::unique_ptr<double[]> parts_;
};

}  // namespace detail

}  // namespace fastkpca
