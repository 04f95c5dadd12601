// A kernel block as slabs of its tiles (packed.hpp), computed on demand: k(X, X) (symmetric, the source of
// the packed, cached and matrix-free operators of tiled_operator.hpp) or a cross block k(A, B)
// (rectangular: the off-diagonal blocks of a distributed pass, and the one-sided products K(X, Y)·V of
// transform and predict, kernel_block.hpp).
//
// A slab is computed by the same micro-kernel blocks and finish as gram.hpp computes a tile (every entry
// is its own accumulation, so grouping the blocks differently changes no bit), with the same
// symmetrisation and unit diagonal, and its padding set to zero; so every storage mode multiplies by the
// same numbers, bit for bit.
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <vector>

#include "fastkpca/gram.hpp"
#include "fastkpca/packed.hpp"
#include "fastkpca/sparse_rows.hpp"

namespace fastkpca {

// Per-thread working memory for computing one slab: the slab, the functors' scratch, and the scatter lists
// of sparse rows (empty for dense ones).
template <class S>
struct TileWorkspace {
  alignas(64) S slab[kSlab<S> * kSlab<S>];
  alignas(64) S scratch[detail::kTileScratch];
  SparseScratch sparse;
};

template <class S>
class KernelTiles {
 public:
  virtual ~KernelTiles() = default;
  virtual Index n() const = 0;
  // Columns: n() for k(X, X), B's rows for k(A, B).
  virtual Index cols() const = 0;
  // k(X, X): only slabs on or below the diagonal are asked for, and diagonal slabs are made exactly
  // symmetric.
  virtual bool symmetric() const = 0;
  // The slab of rows [i0, i0 + B) and columns [j0, j0 + B) (multiples of B = kSlab<S>) into `out` (B × B,
  // row-major), entries beyond the block's rows or columns zero; `diagonal` (i0 == j0 of a symmetric
  // block): exactly symmetric, with an exact unit diagonal for unit-diagonal kernels, or a zero diagonal
  // for a block made without its diagonal (an affinity: a graph's weights ignore self-loops, and a
  // Laplacian's degrees must not be the difference of two large row sums).
  virtual void slab(Index i0, Index j0, bool diagonal, S* out, TileWorkspace<S>& ws) const = 0;
  // Σ k(x_i, x_i) (symmetric blocks only).
  virtual double trace() const = 0;
  // Bytes of the working copies of X (and the packed operands).
  virtual std::size_t bytes() const = 0;
};

namespace detail {

template <class S, class Kernel>
class KernelTilesOf final : public KernelTiles<S> {
 public:
  // y == nullptr: k(X, X); otherwise the cross block k(X, Y), computed as gram(X, Y) computes it.
  // zero_diagonal (k(X, X) only): the block without its diagonal.
  KernelTilesOf(const ConstRowMatrixMap<S>& x, const ConstRowMatrixMap<S>* y, Kernel kernel, bool unit_diagonal,
                bool zero_diagonal)
      : kernel_(kernel), unit_diagonal_(unit_diagonal), zero_diagonal_(zero_diagonal && y == nullptr) {
    copy_rows(x, op_.x);
    op_.has_y = y != nullptr;
    if (y) copy_rows(*y, op_.y);
    kernel_.prepare(op_);
    if (!op_.has_y) trace_ = zero_diagonal_ ? 0.0 : unit_diagonal ? static_cast<double>(x.rows()) : diagonal_sum();
  }

  Index n() const override { return op_.rows(); }
  Index cols() const override { return op_.cols(); }
  bool symmetric() const override { return !op_.has_y; }

  void slab(Index i0, Index j0, bool diagonal, S* out, TileWorkspace<S>& ws) const override {
    constexpr Index B = kSlab<S>;
    const Index ni = std::clamp<Index>(n() - i0, 0, B), nj = std::clamp<Index>(cols() - j0, 0, B);
    kernel_tile(kernel_, op_, i0, ni, j0, nj, diagonal, unit_diagonal_, out, B, ws.scratch);
    if (nj < B)
      for (Index r = 0; r < ni; ++r) std::fill(out + r * B + nj, out + (r + 1) * B, S(0));
    if (ni < B) std::fill(out + ni * B, out + B * B, S(0));
    if (diagonal && zero_diagonal_)
      for (Index r = 0; r < ni; ++r) out[r * B + r] = S(0);
  }

  double trace() const override { return trace_; }
  std::size_t bytes() const override { return op_.bytes(); }

 private:
  // Σ k(x_i, x_i), summed in index order (the same at any thread count).
  double diagonal_sum() const {
    double total = 0;
    for (Index i = 0; i < n(); ++i) total += static_cast<double>(kernel_.diagonal(op_, i));
    return total;
  }

  Operands<S> op_;
  Kernel kernel_;
  bool unit_diagonal_, zero_diagonal_;
  double trace_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace detail

// k(X, X), or the cross block k(X, Y) when y is given; zero_diagonal: k(X, X) without its diagonal.
template <class S>
std::unique_ptr<KernelTiles<S>> make_kernel_tiles(const ConstRowMatrixMap<S>& x, const KernelParams& params,
                                                  const ConstRowMatrixMap<S>* y = nullptr, bool zero_diagonal = false) {
  return with_kernel<S>(params, [&](auto kernel, bool unit_diagonal) -> std::unique_ptr<KernelTiles<S>> {
    return std::make_unique<detail::KernelTilesOf<S, decltype(kernel)>>(x, y, kernel, unit_diagonal, zero_diagonal);
  });
}

}  // namespace fastkpca
