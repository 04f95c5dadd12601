// What a support vector machine's dual solver reads of its kernel: columns k(X_rows, x_s) of samples s over
// the rows it works on, and products Σ_s k(x_t, x_s)·w_s it needs without storing anything (the starting
// gradient, the gradient of rows brought back after shrinking).
//
// A KernelColumns is the kernel over a fixed set of samples (immutable: the one-vs-one problems of a
// multi-class fit share it, each from its own thread). A solve opens a ColumnSession on it: the session holds
// the rows the solver works on, prepared once (set_rows, again whenever shrinking drops rows), and evaluates
// each working set's columns against them in one multithreaded pass of the fused micro-kernel. Columns come
// out as float, the precision LIBSVM keeps its kernel rows in; they are evaluated in the samples' dtype.
//
// The kinds: dense samples (the micro-kernel, the rows' operand packed once per set_rows), sparse CSR samples
// (sparse_tiles.hpp's slabs), and a kernel matrix given whole (a precomputed kernel, or one a Python kernel
// evaluated), read in place.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "fastkpca/kernel_block.hpp"
#include "fastkpca/kernel_registry.hpp"
#include "fastkpca/parallel.hpp"
#include "fastkpca/simd.hpp"
#include "fastkpca/sparse_tiles.hpp"

namespace fastkpca::svm {

// One solve's view of the kernel: its current rows, and columns and products evaluated against them.
class ColumnSession {
 public:
  virtual ~ColumnSession() = default;
  // The rows every later columns() call returns: sample indices, increasing.
  virtual void set_rows(const std::vector<Index>& rows, Interrupt& interrupt) = 0;
  virtual Index rows() const = 0;
  // out[c][r] = k(x_rows[r], x_cols[c]) for c < n_cols, r < rows().
  virtual void columns(const Index* cols, Index n_cols, float* const* out, Interrupt& interrupt) = 0;
  // out[t] = Σ_c k(x_targets[t], x_cols[c])·w[c]: the entries in the source's dtype, the sums in float64, nothing
  // stored (targets and columns taken in chunks of bounded bytes).
  virtual void product(const Index* targets, Index n_targets, const Index* cols, Index n_cols, const double* w,
                       double* out, Interrupt& interrupt) = 0;
  // The columns of every row at once, column c at out + c·rows() (the rows × rows kernel, row-major): one
  // symmetric pass over its lower tiles, half the entries of columns() of all the rows, exactly symmetric. False
  // where the source has no such pass (the caller then asks columns()).
  virtual bool all_columns(float* out, Interrupt& interrupt) {
    (void)out, (void)interrupt;
    return false;
  }
};

class KernelColumns {
 public:
  virtual ~KernelColumns() = default;
  virtual Index samples() const = 0;
  // out[s] = k(x_s, x_s) for every sample.
  virtual void diagonal(double* out, Interrupt& interrupt) const = 0;
  virtual std::unique_ptr<ColumnSession> session() const = 0;
  // Bytes a session over `rows` rows holds (its prepared copy of them): the solver's memory plan.
  virtual std::size_t session_bytes(Index rows) const = 0;
};

// A product's targets and columns are taken in chunks of at most this many bytes of rows (and at least 256 rows):
// its working copies (the gathered rows, their prepared operands) stay bounded whatever n and d.
constexpr std::size_t kProductChunkBytes = std::size_t(16) << 20;
// Rows of d values of `bytes` each in one chunk.
inline Index product_chunk(Index d, std::size_t bytes) {
  return std::max<Index>(256, static_cast<Index>(kProductChunkBytes / (std::max<Index>(d, 1) * bytes)));
}
// Rows of a diagonal computed at once.
constexpr Index kDiagonalChunk = 16384;
// A column pass of dense samples writes its columns by non-temporal stores (simd.hpp) from this many bytes of
// them. At 20,000 rows (5.6 MB a pass) they took the SVC fit's column stage from 0.137 to 0.115 s on one thread and
// from 0.079 to 0.066 s on two, and its gradient updates, which then read those columns from memory rather than the
// cache, 2 to 6 ms slower. Smaller passes (after shrinking) keep their columns in the cache for the step's gather
// and update. Measured on one machine (Zen 5, 32 MiB of L3); where the last-level cache is much larger, passes a
// little above the bound might have stayed in it.
constexpr std::size_t kStreamColumnBytes = std::size_t(2) << 20;

namespace detail {

template <class S>
RowMatrix<S> gather_rows(const ConstRowMatrixMap<S>& x, const Index* index, Index n) {
  RowMatrix<S> out(n, x.cols());
  for (Index i = 0; i < n; ++i) out.row(i) = x.row(index[i]);
  return out;
}

// The rows `index` of a CSR matrix as an owned CSR matrix.
template <class S>
SparseRows<S> gather_sparse(const SparseView<S>& x, const Index* index, Index n) {
  SparseRows<S> out;
  out.rows = n;
  out.cols = x.cols;
  out.indptr.assign(static_cast<std::size_t>(n) + 1, 0);
  for (Index i = 0; i < n; ++i) out.indptr[i + 1] = out.indptr[i] + (x.indptr[index[i] + 1] - x.indptr[index[i]]);
  out.indices.resize(static_cast<std::size_t>(out.indptr[n]));
  out.values.resize(static_cast<std::size_t>(out.indptr[n]));
  for (Index i = 0; i < n; ++i) {
    const std::int64_t from = x.indptr[index[i]], len = x.indptr[index[i] + 1] - from;
    std::copy(x.indices + from, x.indices + from + len, out.indices.begin() + out.indptr[i]);
    std::copy(x.values + from, x.values + from + len, out.values.begin() + out.indptr[i]);
  }
  return out;
}

template <class S>
SparseView<S> view_of(const SparseRows<S>& m) {
  return SparseView<S>{m.indptr.data(), m.indices.data(), m.values.data(), m.rows, m.cols};
}

// out[t] += Σ_c K(targets[t], cols[c])·w[c] for a cross block's tiles (targets × cols), one-sided.
template <class S>
void tiles_product(const KernelTiles<S>& tiles, const double* w, double* out, Interrupt& interrupt) {
  const ConstRowMatrixMap<double> vb(w, tiles.cols(), 1);
  RowMatrix<double> wa(tiles.n(), 1);
  RowMatrixMap<double> wa_map(wa.data(), wa.rows(), 1);
  kernel_block_product(tiles, static_cast<const S*>(nullptr), 0, nullptr, &vb, wa_map, nullptr, interrupt);
  for (Index t = 0; t < tiles.n(); ++t) out[t] += wa(t, 0);
}

// out[t] = Σ_c K(targets[t], cols[c])·w[c] over chunks of targets and of columns, from `tiles_of(targets, n_t,
// cols, n_c)` (a block's tiles made from the rows given).
template <class S, class TilesOf>
void chunked_product(const Index* targets, Index n_targets, const Index* cols, Index n_cols, const double* w,
                     double* out, Index chunk, TilesOf&& tiles_of, Interrupt& interrupt) {
  std::fill(out, out + n_targets, 0.0);
  for (Index c0 = 0; c0 < n_cols; c0 += chunk) {
    const Index nc = std::min(chunk, n_cols - c0);
    for (Index t0 = 0; t0 < n_targets; t0 += chunk) {
      const Index nt = std::min(chunk, n_targets - t0);
      tiles_product(*tiles_of(targets + t0, nt, cols + c0, nc), w + c0, out + t0, interrupt);
    }
  }
}

// Dense samples, one kernel functor: the rows' operand prepared once per set_rows (kernels.hpp's
// prepare_right), each working set's columns as the left operand against it.
template <class S, class Kernel>
class DenseSession final : public ColumnSession {
 public:
  DenseSession(const ConstRowMatrixMap<S>& x, const KernelParams& params, Kernel kernel, bool unit_diagonal,
               double bound)
      : x_(x), params_(params), kernel_(kernel), unit_diagonal_(unit_diagonal), bound_(bound) {
    op_.has_y = true;
  }

  void set_rows(const std::vector<Index>& rows, Interrupt&) override {
    op_ = fastkpca::Operands<S>();  // the old rows' operand gone before the new one is made
    op_.has_y = true;
    rows_ = rows;
    op_.y = gather_rows(x_, rows.data(), static_cast<Index>(rows.size()));
    op_.x.resize(0, x_.cols());
    kernel_.prepare_right(op_, bound_);
  }
  Index rows() const override { return op_.y.rows(); }

  void columns(const Index* cols, Index n_cols, float* const* out, Interrupt& interrupt) override {
    constexpr Index B = kSlab<S>, T = kPackedTile;
    op_.x = gather_rows(x_, cols, n_cols);
    kernel_.prepare_left(op_);
    const Index n_rows = rows(), slabs = (n_cols + B - 1) / B, chunks = (n_rows + T - 1) / T;
    const bool stream = static_cast<double>(n_cols) * static_cast<double>(n_rows) * sizeof(float) >=
                        static_cast<double>(kStreamColumnBytes);
#pragma omp parallel
    {
      std::vector<S> tile(static_cast<std::size_t>(B * T));
      alignas(64) S scratch[fastkpca::detail::kTileScratch];
      // No barrier after the loop but the region's own, after each thread's fence: nothing reads the columns before.
#pragma omp for schedule(dynamic, 1) nowait
      for (Index job = 0; job < slabs * chunks; ++job) {
        if (interrupt.poll()) continue;
        const Index i0 = job / chunks * B, j0 = job % chunks * T;
        const Index ni = std::min(B, n_cols - i0), nj = std::min(T, n_rows - j0);
        fastkpca::detail::kernel_tile(kernel_, op_, i0, ni, j0, nj, false, unit_diagonal_, tile.data(), T, scratch);
        for (Index r = 0; r < ni; ++r) {
          const S* from = tile.data() + r * T;
          float* to = out[i0 + r] + j0;
          if (stream) {
            simd::stream_as_float(to, from, nj);
          } else {
            for (Index c = 0; c < nj; ++c) to[c] = static_cast<float>(from[c]);
          }
        }
      }
      if (stream) simd::stream_fence();
    }
    interrupt.throw_if_stopped();
  }

  bool all_columns(float* out, Interrupt& interrupt) override {
    const RowMatrix<S> rows = gather_rows(x_, rows_.data(), static_cast<Index>(rows_.size()));
    const ConstRowMatrixMap<S> map(rows.data(), rows.rows(), rows.cols());
    const auto tiles = make_kernel_tiles<S>(map, params_);
    gram_from_tiles<S, float>(*tiles, out, rows.rows(), interrupt);
    return true;
  }

  void product(const Index* targets, Index n_targets, const Index* cols, Index n_cols, const double* w, double* out,
               Interrupt& interrupt) override {
    RowMatrix<S> xt, xc;  // the chunks' gathered rows, kept alive while their tiles read them
    const auto tiles_of = [&](const Index* t, Index nt, const Index* c, Index nc) {
      xt = gather_rows(x_, t, nt);
      xc = gather_rows(x_, c, nc);
      const ConstRowMatrixMap<S> xm(xt.data(), xt.rows(), xt.cols()), ym(xc.data(), xc.rows(), xc.cols());
      return make_kernel_tiles<S>(xm, params_, &ym);
    };
    chunked_product<S>(targets, n_targets, cols, n_cols, w, out, product_chunk(x_.cols(), sizeof(S)), tiles_of,
                       interrupt);
  }

 private:
  ConstRowMatrixMap<S> x_;
  KernelParams params_;
  Kernel kernel_;
  bool unit_diagonal_;
  double bound_;
  fastkpca::Operands<S> op_;
  std::vector<Index> rows_;  // the samples of the rows (set_rows)
};

template <class S>
class SparseSession final : public ColumnSession {
 public:
  SparseSession(const SparseView<S>& x, const KernelParams& params) : x_(x), params_(params) {}

  void set_rows(const std::vector<Index>& rows, Interrupt&) override {
    rows_ = gather_sparse(x_, rows.data(), static_cast<Index>(rows.size()));
  }
  Index rows() const override { return rows_.rows; }

  void columns(const Index* cols, Index n_cols, float* const* out, Interrupt& interrupt) override {
    constexpr Index B = kSlab<S>;
    const SparseRows<S> xc = gather_sparse(x_, cols, n_cols);
    const SparseView<S> left = view_of(xc), right = view_of(rows_);
    const auto tiles = make_sparse_kernel_tiles<S>(left, params_, &right);
    const Index n_rows = rows(), slabs = (n_cols + B - 1) / B, chunks = (n_rows + B - 1) / B;
#pragma omp parallel
    {
      auto ws = std::make_unique<TileWorkspace<S>>();
#pragma omp for schedule(dynamic, 4)
      for (Index job = 0; job < slabs * chunks; ++job) {
        if (interrupt.poll()) continue;
        const Index i0 = job / chunks * B, j0 = job % chunks * B;
        const Index ni = std::min(B, n_cols - i0), nj = std::min(B, n_rows - j0);
        tiles->slab(i0, j0, false, ws->slab, *ws);
        for (Index r = 0; r < ni; ++r)
          for (Index c = 0; c < nj; ++c) out[i0 + r][j0 + c] = static_cast<float>(ws->slab[r * B + c]);
      }
    }
    interrupt.throw_if_stopped();
  }

  void product(const Index* targets, Index n_targets, const Index* cols, Index n_cols, const double* w, double* out,
               Interrupt& interrupt) override {
    SparseRows<S> xt, xc;
    const auto tiles_of = [&](const Index* t, Index nt, const Index* c, Index nc) {
      xt = gather_sparse(x_, t, nt);
      xc = gather_sparse(x_, c, nc);
      const SparseView<S> left = view_of(xt), right = view_of(xc);
      return make_sparse_kernel_tiles<S>(left, params_, &right);
    };
    const Index nnz = x_.indptr[x_.rows] - x_.indptr[0];
    const Index per_row = std::max<Index>(1, nnz / std::max<Index>(x_.rows, 1));
    chunked_product<S>(targets, n_targets, cols, n_cols, w, out, product_chunk(per_row, sizeof(S) + 4), tiles_of,
                       interrupt);
  }

 private:
  SparseView<S> x_;
  KernelParams params_;
  SparseRows<S> rows_;
};

// A whole kernel matrix (n × n, row-major, the caller's): sample s's column over the rows is row s of K read at
// the rows, as LIBSVM reads a precomputed kernel.
template <class M>
class MatrixSession final : public ColumnSession {
 public:
  MatrixSession(const M* k, Index n) : k_(k), n_(n) {}
  void set_rows(const std::vector<Index>& rows, Interrupt&) override { rows_ = rows; }
  Index rows() const override { return static_cast<Index>(rows_.size()); }
  void columns(const Index* cols, Index n_cols, float* const* out, Interrupt& interrupt) override {
    const Index n_rows = rows();
#pragma omp parallel for schedule(static)
    for (Index c = 0; c < n_cols; ++c) {
      if (interrupt.poll()) continue;
      const M* row = k_ + cols[c] * n_;
      for (Index r = 0; r < n_rows; ++r) out[c][r] = static_cast<float>(row[rows_[static_cast<std::size_t>(r)]]);
    }
    interrupt.throw_if_stopped();
  }
  void product(const Index* targets, Index n_targets, const Index* cols, Index n_cols, const double* w, double* out,
               Interrupt& interrupt) override {
#pragma omp parallel for schedule(static)
    for (Index t = 0; t < n_targets; ++t) {
      if (interrupt.poll()) continue;
      double sum = 0;  // the entries in the matrix's dtype, the sum in float64
      for (Index c = 0; c < n_cols; ++c) sum += static_cast<double>(k_[cols[c] * n_ + targets[t]]) * w[c];
      out[t] = sum;
    }
    interrupt.throw_if_stopped();
  }

 private:
  const M* k_;
  Index n_;
  std::vector<Index> rows_;
};

}  // namespace detail

// Dense samples (row-major, the caller's, read in place while the columns live).
template <class S>
class DenseColumns final : public KernelColumns {
 public:
  DenseColumns(const ConstRowMatrixMap<S>& x, const KernelParams& params) : x_(x), params_(params) {
    bound_ = x_.size() ? static_cast<double>(x_.cwiseAbs().maxCoeff()) : 0.0;
  }
  Index samples() const override { return x_.rows(); }
  // k(x_s, x_s): 1 for a unit-diagonal kernel, else chunk by chunk (kernel_diagonal copies the rows it reads).
  void diagonal(double* out, Interrupt& interrupt) const override {
    if (kernel_info(params_.kind).unit_diagonal) {
      std::fill(out, out + x_.rows(), 1.0);
      return;
    }
    std::vector<S> d(static_cast<std::size_t>(kDiagonalChunk));
    for (Index i0 = 0; i0 < x_.rows(); i0 += kDiagonalChunk) {
      const Index n = std::min(kDiagonalChunk, x_.rows() - i0);
      const ConstRowMatrixMap<S> part(x_.data() + i0 * x_.cols(), n, x_.cols());
      kernel_diagonal<S>(part, params_, d.data(), interrupt);
      for (Index i = 0; i < n; ++i) out[i0 + i] = static_cast<double>(d[static_cast<std::size_t>(i)]);
    }
  }
  std::unique_ptr<ColumnSession> session() const override {
    return with_kernel<S>(params_, [&](auto kernel, bool unit_diagonal) -> std::unique_ptr<ColumnSession> {
      return std::make_unique<detail::DenseSession<S, decltype(kernel)>>(x_, params_, kernel, unit_diagonal, bound_);
    });
  }
  // The rows' working copy and their packed operand (depth d + 2 at most).
  std::size_t session_bytes(Index rows) const override {
    return static_cast<std::size_t>(rows) * static_cast<std::size_t>(2 * x_.cols() + 4) * sizeof(S);
  }

 private:
  ConstRowMatrixMap<S> x_;
  KernelParams params_;
  double bound_ = 0;
};

template <class S>
class SparseColumns final : public KernelColumns {
 public:
  SparseColumns(const SparseView<S>& x, const KernelParams& params) : x_(x), params_(params) {}
  Index samples() const override { return x_.rows; }
  void diagonal(double* out, Interrupt&) const override {
    std::vector<S> d(static_cast<std::size_t>(kDiagonalChunk));
    for (Index i0 = 0; i0 < x_.rows; i0 += kDiagonalChunk) {
      const Index n = std::min(kDiagonalChunk, x_.rows - i0);
      const SparseView<S> part{x_.indptr + i0, x_.indices, x_.values, n, x_.cols};
      sparse_kernel_diagonal<S>(part, params_, d.data());
      for (Index i = 0; i < n; ++i) out[i0 + i] = static_cast<double>(d[static_cast<std::size_t>(i)]);
    }
  }
  std::unique_ptr<ColumnSession> session() const override {
    return std::make_unique<detail::SparseSession<S>>(x_, params_);
  }
  // The rows' copy, about the samples' share of the entries (twice: a column pass copies them once more).
  std::size_t session_bytes(Index rows) const override {
    const double per_row = x_.rows ? static_cast<double>(x_.indptr[x_.rows] - x_.indptr[0]) / x_.rows : 0.0;
    return static_cast<std::size_t>(2.0 * rows * (per_row * (sizeof(S) + 4) + 8));
  }

 private:
  SparseView<S> x_;
  KernelParams params_;
};

template <class M>
class MatrixColumns final : public KernelColumns {
 public:
  MatrixColumns(const M* k, Index n) : k_(k), n_(n) {}
  Index samples() const override { return n_; }
  void diagonal(double* out, Interrupt&) const override {
    for (Index i = 0; i < n_; ++i) out[i] = static_cast<double>(k_[i * n_ + i]);
  }
  std::unique_ptr<ColumnSession> session() const override { return std::make_unique<detail::MatrixSession<M>>(k_, n_); }
  std::size_t session_bytes(Index rows) const override { return static_cast<std::size_t>(rows) * sizeof(Index); }

 private:
  const M* k_;
  Index n_;
};

}  // namespace fastkpca::svm
