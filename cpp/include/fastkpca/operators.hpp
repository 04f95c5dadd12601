// Block operators W = A·V for the eigensolver. An operator is any type with
//   Index rows() const;
//   void apply(const ColMatrix<double>& V, ColMatrix<double>& W, Interrupt&) const;   // V, W: n × b
// The solver never sees how A is stored: a dense symmetric matrix is one operator, the implicitly centered
// H·A·H another (wrapping any operator), a matrix-free kernel operator can be a third.
#pragma once

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "fastkpca/packed.hpp"
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


// Rows [r_off, r_off + R) of one 8-row panel of a packed tile (panel[j·8 + r] = A[r, j], see packed.hpp),
// one slice of 8S columns of the block: w[r] += Σ_j A[r, j] vj[j] (accumulated in registers) and, for an
// off-diagonal tile A_IJ (Mirror), wt[j] += Σ_r A[r, j] vi[r] (its mirror A_JI = A_IJᵀ, read-modify-write
// of Wt's rows in L1). Pointers are at the panel's first row of each operand and at the slice's column.
constexpr Index kPrefetchAhead = 1024;

template <bool Mirror, int R, int S, class T>
void panel_rows(const T* panel, int r_off, const double* vi, const double* vj, double* w, double* wt, Index ldv) {
  using Slice = Eigen::Array<double, 8, 1>;
  Slice acc[R][S], x[R][S];
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < S; ++c) {
      acc[r][c] = Eigen::Map<const Slice>(w + (r_off + r) * ldv + 8 * c);
      if constexpr (Mirror) x[r][c] = Eigen::Map<const Slice>(vi + (r_off + r) * ldv + 8 * c);
    }
  for (Index j = 0; j < kPackedTile; ++j) {
    const T* aj = panel + j * kPanelRows + r_off;
    // A tile is one sequential run, and a single hardware stream keeps too few loads in flight to
    // saturate memory: fetch kPrefetchAhead elements ahead (per column of a double panel: one line).
    __builtin_prefetch(aj + kPrefetchAhead);
    Slice col[S];
    if constexpr (Mirror)
      for (int c = 0; c < S; ++c) col[c] = Eigen::Map<const Slice>(wt + j * ldv + 8 * c);
    for (int r = 0; r < R; ++r) {
      const double arj = static_cast<double>(aj[r]);
      for (int c = 0; c < S; ++c) {
        acc[r][c] += arj * Eigen::Map<const Slice>(vj + j * ldv + 8 * c);
        if constexpr (Mirror) col[c] += arj * x[r][c];
      }
    }
    if constexpr (Mirror)
      for (int c = 0; c < S; ++c) Eigen::Map<Slice>(wt + j * ldv + 8 * c) = col[c];
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < S; ++c) Eigen::Map<Slice>(w + (r_off + r) * ldv + 8 * c) = acc[r][c];
}

// Rows per register block for S slices: R·S accumulators and R·S cached rows of V fit the 32 vector
// registers (one slice: the whole panel).
template <int S>
constexpr int panel_rows_per_block() { return S == 1 ? 8 : S <= 3 ? 4 : 2; }

// A whole tile of a packed symmetric matrix: off-diagonal (both directions) or diagonal (stored in full,
// row direction only), panel after panel, so A streams from memory in one sequential run per tile. Each
// panel (16 KiB) is swept once per register block of rows and slice of up to 32 columns, from L1.
template <class T>
void packed_tile_product(const T* a, bool diagonal, const double* vi, const double* vj, double* w, double* wt,
                         Index ldv) {
  constexpr Index TT = kPackedTile, P = kPanelRows;
  auto panel = [&](auto slices_tag, const T* pa, Index r0, Index c0) {
    constexpr int S = decltype(slices_tag)::value;
    constexpr int R = panel_rows_per_block<S>();
    for (int r = 0; r < P; r += R) {
      if (diagonal)
        panel_rows<false, R, S>(pa, r, nullptr, vj + c0, w + r0 * ldv + c0, nullptr, ldv);
      else
        panel_rows<true, R, S>(pa, r, vi + r0 * ldv + c0, vj + c0, w + r0 * ldv + c0, wt + c0, ldv);
    }
  };
  for (Index r0 = 0; r0 < TT; r0 += P) {
    const T* pa = a + r0 * TT;
    for (Index c0 = 0; c0 < ldv; c0 += 32) {
      switch (std::min<Index>(4, (ldv - c0) / 8)) {
        case 1: panel(std::integral_constant<int, 1>{}, pa, r0, c0); break;
        case 2: panel(std::integral_constant<int, 2>{}, pa, r0, c0); break;
        case 3: panel(std::integral_constant<int, 3>{}, pa, r0, c0); break;
        default: panel(std::integral_constant<int, 4>{}, pa, r0, c0); break;
      }
    }
  }
}

// The transposed contributions of a one-triangle pass split into fixed row blocks: block p keeps, for
// rows [0, start_p) (the rows of earlier blocks), what its entries below the diagonal add there. add_to
// then folds them into W in block order, so the sum's rounding does not depend on the thread count.
class TransposedParts {
 public:
  // starts[p] = first row of block p, for p = 0 .. blocks - 1.
  TransposedParts(const Index* starts, Index blocks, Index ldv)
      : starts_(starts, starts + blocks), offset_(static_cast<size_t>(blocks) + 1, 0), ldv_(ldv) {
    for (Index p = 0; p < blocks; ++p) offset_[p + 1] = offset_[p] + starts_[p] * ldv;
    parts_.assign(static_cast<size_t>(offset_.back()), 0.0);
  }
  double* part(Index p) { return parts_.data() + offset_[p]; }

  // W[i] += Σ_q part_q[i] for the first n rows of W.
  void add_to(RowMatrix<double>& w, Index n) const {
#pragma omp parallel for schedule(static)
    for (Index i = 0; i < n; ++i) {
      auto row = w.row(i);
      for (size_t q = 0; q < starts_.size(); ++q)
        if (i < starts_[q])
          row += Eigen::Map<const Eigen::Matrix<double, 1, Eigen::Dynamic>>(parts_.data() + offset_[q] + i * ldv_, ldv_);
    }
  }

 private:
  std::vector<Index> starts_, offset_;
  Index ldv_;
  std::vector<double> parts_;
};

}  // namespace detail

// A dense symmetric matrix held by the caller (a NumPy buffer, row-major; symmetric, so row i is also
// column i). One pass reads every entry of A from memory once for all b vectors: rows are split over the
// threads, and each R × J piece of A is used for every 8-column slice of V while it sits in cache (J
// columns of V, padded to a multiple of 8, stay in cache too). For float matrices the products
// accumulate in double.
template <class S>
class DenseSymmetricOperator {
 public:
  DenseSymmetricOperator(const S* a, Index n) : a_(a), n_(n) {}
  Index rows() const { return n_; }

  void apply(const ColMatrix<double>& v, ColMatrix<double>& w, Interrupt& interrupt) const {
    constexpr Index C = 8;
    const Index b = v.cols(), ldv = (b + C - 1) / C * C;
    RowMatrix<double> vr = RowMatrix<double>::Zero(n_, ldv), wr = RowMatrix<double>::Zero(n_, ldv);
    vr.leftCols(b) = v;
    if (ldv == 8 && n_ >= 1024)
      apply_symmetric(vr, wr, interrupt);
    else
      apply_full(vr, wr, interrupt);
    interrupt.throw_if_stopped();
    w = wr.leftCols(b);
  }

 private:
  // Every row of A read once: rows split over the threads.
  void apply_full(const RowMatrix<double>& vr, RowMatrix<double>& wr, Interrupt& interrupt) const {
    constexpr Index C = 8, rows_per_task = 64;
    const Index ldv = vr.cols();
    // Columns of A per sweep: the matching rows of V (J × ldv doubles, 512 KiB) stay in L2, and each row
    // of A is read in long runs that the hardware prefetcher follows (J = 2048 gave 25 GB/s at b = 16,
    // J = 4096 36 GB/s, on this 2-core machine at N = 20000).
    const Index J = std::clamp<Index>((Index{1} << 16) / ldv, 256, 8192);
    const Index tasks = (n_ + rows_per_task - 1) / rows_per_task;
    // Dynamic scheduling: a thread whose core is taken by another process does not hold up the rest.
#pragma omp parallel for schedule(dynamic, 1)
    for (Index t = 0; t < tasks; ++t) {
      if (interrupt.poll()) continue;
      const Index begin = t * rows_per_task, end = std::min(n_, begin + rows_per_task);
      for (Index j0 = 0; j0 < n_; j0 += J) {
        const Index j1 = std::min(n_, j0 + J);
        // Up to 32 columns of V per sweep over this piece of A (it is in cache for the later sweeps).
        for (Index c0 = 0; c0 < ldv; c0 += 32) {
          const double* vr_data = vr.data();
          double* wr_data = wr.data();
          switch (std::min<Index>(4, (ldv - c0) / C)) {
            case 1: detail::stream_row_range<1>(a_, n_, begin, end, j0, j1, vr_data, ldv, c0, wr_data); break;
            case 2: detail::stream_row_range<2>(a_, n_, begin, end, j0, j1, vr_data, ldv, c0, wr_data); break;
            case 3: detail::stream_row_range<3>(a_, n_, begin, end, j0, j1, vr_data, ldv, c0, wr_data); break;
            default: detail::stream_row_range<4>(a_, n_, begin, end, j0, j1, vr_data, ldv, c0, wr_data); break;
          }
        }
      }
    }
  }

  // One triangle of A read, for single-slice blocks (b <= 8), where a pass is bound by memory traffic (at
  // N = 20000: 0.054 s against 0.079 s for NumPy's matrix-vector product; from b = 16 on a pass is bound
  // by arithmetic, which the triangle does not reduce, so the full-matrix sweep is used). Rows are
  // cut into kBlocks fixed blocks of equal triangle area (boundaries n·sqrt(p/P)); block p reads its rows
  // left of the diagonal block (both directions, the transposed contributions going to its own buffer Wt_p
  // over rows [0, start_p)) and its diagonal block in full (row direction only). Then
  // W[i] = W_rows[i] + sum over later blocks q of Wt_q[i], in block order: fixed work units, so the
  // rounding does not depend on the thread count.
  void apply_symmetric(const RowMatrix<double>& vr, RowMatrix<double>& wr, Interrupt& interrupt) const {
    constexpr Index kBlocks = 16;
    const Index ldv = vr.cols();
    const Index J = std::clamp<Index>((Index{1} << 15) / ldv, 256, 4096);
    Index bounds[kBlocks + 1];
    detail::triangle_bounds(n_, kBlocks, bounds);
    detail::TransposedParts wt(bounds, kBlocks, ldv);
    const double* v = vr.data();
    double* w = wr.data();
#pragma omp parallel for schedule(dynamic, 1)
    for (Index p = kBlocks - 1; p >= 0; --p) {  // largest blocks first
      if (interrupt.poll()) continue;
      const Index begin = bounds[p], end = bounds[p + 1];
      if (begin == end) continue;
      double* wt_p = wt.part(p);
      for (Index j0 = 0; j0 < begin; j0 += J) {
        const Index j1 = std::min(begin, j0 + J);
        detail::stream_row_range_symmetric(a_, n_, begin, end, j0, j1, v, ldv, w, wt_p);
      }
      for (Index c0 = 0; c0 < ldv; c0 += 8)
        detail::stream_row_range<1>(a_, n_, begin, end, begin, end, v, ldv, c0, w);
    }
    if (interrupt.stopped()) return;
    wt.add_to(wr, n_);
  }

  const S* a_;
  Index n_;
};

// A symmetric matrix in the packed lower-tile form of packed.hpp (N²/2 entries). A pass reads each
// stored tile once: an off-diagonal tile A_IJ gives W_I += A_IJ V_J and W_J += A_IJᵀ V_I, a diagonal
// tile W_I += A_II V_I. The tile rows are cut into kBlocks fixed blocks of equal area (boundaries at
// nt·sqrt(p/P) tiles); block p owns the rows of its tile rows, adds the mirrored contributions that fall
// into its own rows directly and collects those for earlier rows in its buffer Wt_p. Then
// W[i] += Σ_q Wt_q[i] in block order: fixed work units, so the rounding does not depend on the threads.
template <class S>
class PackedSymmetricOperator {
 public:
  PackedSymmetricOperator(const S* packed, Index n) : a_(packed), n_(n) {}
  Index rows() const { return n_; }

  void apply(const ColMatrix<double>& v, ColMatrix<double>& w, Interrupt& interrupt) const {
    constexpr Index T = kPackedTile, kBlocks = 16;
    const Index nt = packed_tiles(n_), b = v.cols(), ldv = (b + 7) / 8 * 8;
    // Zero-padded to whole tiles: the padding of the edge tiles is zero too, so it adds nothing.
    RowMatrix<double> vr = RowMatrix<double>::Zero(nt * T, ldv), wr = RowMatrix<double>::Zero(nt * T, ldv);
    vr.topLeftCorner(n_, b) = v;
    Index bounds[kBlocks + 1];
    detail::triangle_bounds(nt, kBlocks, bounds);
    Index starts[kBlocks];  // in rows
    for (Index p = 0; p < kBlocks; ++p) starts[p] = bounds[p] * T;
    detail::TransposedParts wt(starts, kBlocks, ldv);
    const double* vd = vr.data();
    double* wd = wr.data();
    auto tile = [&](Index I, Index J, double* wtj) {
      detail::packed_tile_product(a_ + packed_tile_offset(I, J), I == J, vd + I * T * ldv, vd + J * T * ldv,
                                  wd + I * T * ldv, wtj, ldv);
    };
#pragma omp parallel for schedule(dynamic, 1)
    for (Index p = kBlocks - 1; p >= 0; --p) {  // largest blocks first
      double* wt_p = wt.part(p);
      for (Index I = bounds[p]; I < bounds[p + 1]; ++I) {
        if (interrupt.poll()) break;
        for (Index J = 0; J < I; ++J) tile(I, J, (J < bounds[p] ? wt_p : wd) + J * T * ldv);
        tile(I, I, nullptr);
      }
    }
    interrupt.throw_if_stopped();
    wt.add_to(wr, n_);
    w = wr.topLeftCorner(n_, b);
  }

 private:
  const S* a_;
  Index n_;
};

// H·A·H applied without forming it (H = I - 11ᵀ/n): U = V - 1(1ᵀV)/n; W = A·U; W -= 1(1ᵀW)/n.
// O(n·b) extra work per pass and no rewrite of A.
template <class Op>
class CenteredOperator {
 public:
  explicit CenteredOperator(const Op& inner) : inner_(inner) {}
  Index rows() const { return inner_.rows(); }

  void apply(const ColMatrix<double>& v, ColMatrix<double>& w, Interrupt& interrupt) const {
    const double n = static_cast<double>(rows());
    ColMatrix<double> u = v.rowwise() - v.colwise().sum() / n;
    inner_.apply(u, w, interrupt);
    w.rowwise() -= w.colwise().sum() / n;
  }

 private:
  const Op& inner_;
};

}  // namespace fastkpca
