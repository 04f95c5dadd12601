// A kernel block as tiles in the panel form of packed.hpp, computed on demand: k(X, X) (symmetric, the
// source of the packed, cached and matrix-free operators of tiled_operator.hpp) or a cross block k(A, B)
// (rectangular, the off-diagonal blocks of a distributed pass, kernel_block.hpp).
//
// A tile is computed exactly as gram.hpp computes it (same functor, same operands, same symmetrisation and
// unit diagonal), then padded with zeros and rearranged into panels, so every storage mode multiplies by
// the same numbers, bit for bit.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <vector>

#include "fastkpca/gram.hpp"
#include "fastkpca/packed.hpp"

namespace fastkpca {

// Per-thread working memory for computing one tile: the row-major tile and the functors' scratch.
template <class S>
struct TileWorkspace {
  std::vector<S> staging = std::vector<S>(static_cast<size_t>(kPackedTile * kPackedTile));
  alignas(64) S scratch[detail::kTileScratch];
};

template <class S>
class KernelTiles {
 public:
  virtual ~KernelTiles() = default;
  virtual Index n() const = 0;
  // Columns: n() for k(X, X), B's rows for k(A, B).
  virtual Index cols() const = 0;
  // k(X, X): only tiles J <= I are asked for, and diagonal tiles are made exactly symmetric.
  virtual bool symmetric() const = 0;
  // Tile (I, J) (J <= I when symmetric) into `panel` (kPackedTile² elements, the panel form, zero padded).
  virtual void panel(Index I, Index J, S* panel, TileWorkspace<S>& ws) const = 0;
  // Σ k(x_i, x_i) (symmetric blocks only).
  virtual double trace() const = 0;
  // Bytes of the working copies of X.
  virtual std::size_t bytes() const = 0;
};

namespace detail {

template <class S, class Kernel>
class KernelTilesOf final : public KernelTiles<S> {
 public:
  // y == nullptr: k(X, X); otherwise the cross block k(X, Y), computed as gram(X, Y) computes it.
  KernelTilesOf(const ConstRowMatrixMap<S>& x, const ConstRowMatrixMap<S>* y, Kernel kernel, bool unit_diagonal)
      : kernel_(kernel), unit_diagonal_(unit_diagonal) {
    op_.x = x;
    op_.has_y = y != nullptr;
    if (y) op_.y = *y;
    kernel_.prepare(op_);
    if (!op_.has_y) trace_ = unit_diagonal ? static_cast<double>(x.rows()) : diagonal_sum();
  }

  Index n() const override { return op_.x.rows(); }
  Index cols() const override { return op_.rhs().rows(); }
  bool symmetric() const override { return !op_.has_y; }

  void panel(Index I, Index J, S* panel, TileWorkspace<S>& ws) const override {
    constexpr Index T = kPackedTile;
    const Index i0 = I * T, j0 = J * T;
    const Index ni = std::min(T, n() - i0), nj = std::min(T, cols() - j0);
    S* tile = ws.staging.data();
    const bool diagonal = !op_.has_y && I == J;
    kernel_tile(kernel_, op_, i0, ni, j0, nj, diagonal, unit_diagonal_, tile, T, ws.scratch);
    // Zero the padding of an edge tile (rows >= ni, columns >= nj).
    if (nj < T)
      for (Index r = 0; r < ni; ++r) std::fill(tile + r * T + nj, tile + (r + 1) * T, S(0));
    if (ni < T) std::fill(tile + ni * T, tile + T * T, S(0));
    pack_tile(tile, T, panel);
  }

  double trace() const override { return trace_; }

  std::size_t bytes() const override {
    return sizeof(S) * static_cast<std::size_t>(op_.x.size() + op_.y.size() + op_.x_sq.size() + op_.y_sq.size() +
                                                op_.y_t.size());
  }

 private:
  // Σ k(x_i, x_i) from 1×1 tiles, O(N·d), summed in index order (the same at any thread count).
  double diagonal_sum() const {
    const Index n = op_.x.rows();
    std::vector<double> diagonal(static_cast<size_t>(n));
#pragma omp parallel
    {
      alignas(64) S scratch[kTileScratch];
      alignas(64) S value[64 / sizeof(S)] = {};  // a whole vector, so vectorised 1×1 paths stay in bounds
#pragma omp for schedule(static)
      for (Index i = 0; i < n; ++i) {
        kernel_.tile(op_, i, 1, i, 1, value, 1, scratch);
        diagonal[static_cast<size_t>(i)] = static_cast<double>(value[0]);
      }
    }
    double total = 0;
    for (double d : diagonal) total += d;
    return total;
  }

  Operands<S> op_;
  Kernel kernel_;
  bool unit_diagonal_;
  double trace_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace detail

// k(X, X), or the cross block k(X, Y) when y is given.
template <class S>
std::unique_ptr<KernelTiles<S>> make_kernel_tiles(const ConstRowMatrixMap<S>& x, const KernelParams& params,
                                                  const ConstRowMatrixMap<S>* y = nullptr) {
  return with_kernel<S>(params, [&](auto kernel, bool unit_diagonal) -> std::unique_ptr<KernelTiles<S>> {
    return std::make_unique<detail::KernelTilesOf<S, decltype(kernel)>>(x, y, kernel, unit_diagonal);
  });
}

}  // namespace fastkpca
