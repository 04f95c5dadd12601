// The streaming block products of a dense matrix (dense_operator.hpp): W += A·V for a thin block V (b up to
// a few dozen columns), reading each entry of A once for all b columns while it is in registers, by rows;
// and the fixed work units of a one-triangle pass, which the kernel blocks' passes share
// (kernel_block.hpp, whose slabs go through the micro-kernels of micro_kernel.hpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "fastkpca/parallel.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca {

namespace detail {

// W[r0 .. r0+R, c0 .. c0+8S] += A[r0 .. r0+R, j0 .. j1] · V[j0 .. j1, c0 .. c0+8S] for a row-major A and a
// row-major, 8-column-padded copy of V. The R × S accumulators of 8 doubles stay in registers: per column
// j, S loads of V and R broadcasts of A feed R·S vector FMAs, so more slices per sweep mean more
// arithmetic per load. Fixed-size Eigen arrays keep the vectorisation along the block.
template <int R, int S, class T>
void stream_rows(const T* a, Index n, Index r0, Index j0, Index j1, const double* v, Index ldv, Index c0,
                 double* w) {
  using Slice = Eigen::Array<double, 8, 1>;
  Slice acc[R][S];
  const T* rows[R];
  for (int r = 0; r < R; ++r) {
    rows[r] = a + (r0 + r) * n;
    for (int c = 0; c < S; ++c) acc[r][c] = Eigen::Map<const Slice>(w + (r0 + r) * ldv + c0 + 8 * c);
  }
  for (Index j = j0; j < j1; ++j) {
    const double* vj = v + j * ldv + c0;
    for (int r = 0; r < R; ++r) {
      const double arj = static_cast<double>(rows[r][j]);
      for (int c = 0; c < S; ++c) acc[r][c] += arj * Eigen::Map<const Slice>(vj + 8 * c);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < S; ++c) Eigen::Map<Slice>(w + (r0 + r) * ldv + c0 + 8 * c) = acc[r][c];
}

// Boundaries of `blocks` runs of rows of a lower triangle with `count` rows, of equal area: row
// count·sqrt(p/blocks) starts block p. bounds has blocks + 1 entries.
inline void triangle_bounds(Index count, Index blocks, Index* bounds) {
  for (Index p = 0; p <= blocks; ++p)
    bounds[p] = static_cast<Index>(
        std::llround(static_cast<double>(count) * std::sqrt(static_cast<double>(p) / static_cast<double>(blocks))));
}

// Rows [begin, end) of W += A[:, j0 .. j1] · V[j0 .. j1, :], in register blocks of R rows × S slices
// with up to 16 accumulators (8 for a single slice: fewer concurrent row streams keep the prefetchers
// ahead when the pass is memory-bound; at N = 20000, b = 8: 47 GB/s with 8 rows, 38 GB/s with 16).
template <int S, class T>
void stream_row_range(const T* a, Index n, Index begin, Index end, Index j0, Index j1, const double* v,
                      Index ldv, Index c0, double* w) {
  constexpr int R = S == 1 ? 8 : 16 / S;  // measured: 8 rows stream best when memory-bound (b = 8)
  Index i = begin;
  for (; i + R <= end; i += R) stream_rows<R, S>(a, n, i, j0, j1, v, ldv, c0, w);
  for (; i < end; ++i) stream_rows<1, S>(a, n, i, j0, j1, v, ldv, c0, w);
}

// The symmetric (one-triangle) variant of stream_rows, for rows [r0, r0+R) and columns [j0, j1) below the
// diagonal: each A_ij read serves both W[i] += A_ij V[j] (accumulated in registers) and
// Wt[j] += A_ij V[i] (read-modify-write of Wt's row j, in cache). Half the memory traffic of a full pass
// for the same arithmetic.
template <int R, int S, class T>
void stream_rows_symmetric(const T* a, Index n, Index r0, Index j0, Index j1, const double* v, Index ldv,
                           double* w, double* wt) {
  using Slice = Eigen::Array<double, 8, 1>;
  Slice acc[R][S], vi[R][S];
  const T* rows[R];
  for (int r = 0; r < R; ++r) {
    rows[r] = a + (r0 + r) * n;
    for (int c = 0; c < S; ++c) {
      acc[r][c] = Eigen::Map<const Slice>(w + (r0 + r) * ldv + 8 * c);
      vi[r][c] = Eigen::Map<const Slice>(v + (r0 + r) * ldv + 8 * c);
    }
  }
  for (Index j = j0; j < j1; ++j) {
    const double* vj = v + j * ldv;
    double* wtj = wt + j * ldv;
    Slice col[S];
    for (int c = 0; c < S; ++c) col[c] = Eigen::Map<const Slice>(wtj + 8 * c);
    for (int r = 0; r < R; ++r) {
      const double arj = static_cast<double>(rows[r][j]);
      for (int c = 0; c < S; ++c) {
        acc[r][c] += arj * Eigen::Map<const Slice>(vj + 8 * c);
        col[c] += arj * vi[r][c];
      }
    }
    for (int c = 0; c < S; ++c) Eigen::Map<Slice>(wtj + 8 * c) = col[c];
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < S; ++c) Eigen::Map<Slice>(w + (r0 + r) * ldv + 8 * c) = acc[r][c];
}

template <class T>
void stream_row_range_symmetric(const T* a, Index n, Index begin, Index end, Index j0, Index j1,
                                const double* v, Index ldv, double* w, double* wt) {
  constexpr int R = 8;
  Index i = begin;
  for (; i + R <= end; i += R) stream_rows_symmetric<R, 1>(a, n, i, j0, j1, v, ldv, w, wt);
  for (; i < end; ++i) stream_rows_symmetric<1, 1>(a, n, i, j0, j1, v, ldv, w, wt);
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

  // body(state, begin, end, buffer) for every run, in parallel (largest first), skipped once interrupted;
  // `state` is made by make_state() once per thread (working memory reused from run to run).
  template <class MakeState, class Body>
  void run(Interrupt& interrupt, MakeState&& make_state, Body&& body) {
#pragma omp parallel
    {
      auto state = make_state();
#pragma omp for schedule(dynamic, 1)
      for (Index p = blocks_ - 1; p >= 0; --p) {
        if (interrupt.poll() || bounds_[p] == bounds_[p + 1]) continue;
        body(state, bounds_[p], bounds_[p + 1], rows_[p] > 0 ? parts_.data() + offset_[p] : nullptr);
      }
    }
  }

  // W[i] += Σ_p buffer_p[i] in run order, for the first n rows of the row-major W (leading dimension ldv).
  void add_transposed(double* w, Index n) const {
    if (parts_.empty()) return;
    using Row = Eigen::Map<Eigen::Matrix<double, 1, Eigen::Dynamic>>;
    using ConstRow = Eigen::Map<const Eigen::Matrix<double, 1, Eigen::Dynamic>>;
#pragma omp parallel for schedule(static)
    for (Index i = 0; i < n; ++i) {
      Row row(w + i * ldv_, ldv_);
      for (Index p = 0; p < blocks_; ++p)
        if (i < rows_[p]) row += ConstRow(parts_.data() + offset_[p] + i * ldv_, ldv_);
    }
  }

 private:
  FixedBlocks(Index blocks, Index ldv)
      : blocks_(blocks), ldv_(ldv), bounds_(static_cast<size_t>(blocks) + 1), rows_(static_cast<size_t>(blocks)),
        offset_(static_cast<size_t>(blocks) + 1, 0) {}

  void allocate() {
    for (Index p = 0; p < blocks_; ++p) offset_[p + 1] = offset_[p] + rows_[p] * ldv_;
    parts_.assign(static_cast<size_t>(offset_.back()), 0.0);
  }

  Index blocks_, ldv_;
  std::vector<Index> bounds_, rows_, offset_;
  std::vector<double> parts_;
};

}  // namespace detail

}  // namespace fastkpca
