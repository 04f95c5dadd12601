// The kernel matrix k(X, X) as tiles in the panel form of packed.hpp, computed on demand from X: the
// source of the packed, cached and matrix-free operators (tiled_operator.hpp).
//
// A tile is computed exactly as gram.hpp computes it (same functor, same operands, same symmetrisation and
// unit diagonal), then padded with zeros and rearranged into panels, so every storage mode multiplies by
// the same numbers, bit for bit.
#pragma once

#include <cstddef>
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
  // Tile (I, J), J <= I, into `panel` (kPackedTile² elements, the panel form, zero padded).
  virtual void panel(Index I, Index J, S* panel, TileWorkspace<S>& ws) const = 0;
  // Σ k(x_i, x_i).
  virtual double trace() const = 0;
  // Bytes of the working copies of X.
  virtual std::size_t bytes() const = 0;
};

namespace detail {

template <class S, class Kernel>
class KernelTilesOf final : public KernelTiles<S> {
 public:
  KernelTilesOf(const ConstRowMatrixMap<S>& x, Kernel kernel, bool unit_diagonal)
      : kernel_(kernel), unit_diagonal_(unit_diagonal) {
    op_.x = x;
    kernel_.prepare(op_);
    trace_ = unit_diagonal ? static_cast<double>(x.rows()) : diagonal_sum();
  }

  Index n() const override { return op_.x.rows(); }

  void panel(Index I, Index J, S* panel, TileWorkspace<S>& ws) const override {
    constexpr Index T = kPackedTile;
    const Index n = op_.x.rows(), i0 = I * T, j0 = J * T;
    const Index ni = std::min(T, n - i0), nj = std::min(T, n - j0);
    S* tile = ws.staging.data();
    kernel_tile(kernel_, op_, i0, ni, j0, nj, I == J, unit_diagonal_, tile, T, ws.scratch);
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
  double trace_ = 0;
};

}  // namespace detail

template <class S>
std::unique_ptr<KernelTiles<S>> make_kernel_tiles(const ConstRowMatrixMap<S>& x, const KernelParams& params) {
  return with_kernel<S>(params, [&](auto kernel, bool unit_diagonal) -> std::unique_ptr<KernelTiles<S>> {
    return std::make_unique<detail::KernelTilesOf<S, decltype(kernel)>>(x, kernel, unit_diagonal);
  });
}

}  // namespace fastkpca
