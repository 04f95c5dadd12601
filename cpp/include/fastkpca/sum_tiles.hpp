// A sum of kernel blocks as one source of tiles: K = Σ_t c_t K_t (+ w I on the diagonal of k(X, X)), each
// K_t a registry kernel on its own working copy of the samples (a Gaussian process kernel's terms: c_t times an
// RBF or a Matern kernel of the samples scaled by their length scales), or a constant (K_t = 1). Every storage
// mode, the one-sided products of predictions and the Gram matrix read it through the KernelTiles interface,
// so a sum of kernels is evaluated tile by tile, never as one N×N array per term.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "fastkpca/kernel_tiles.hpp"

namespace fastkpca {

template <class S>
class SumKernelTiles final : public KernelTiles<S> {
 public:
  // One term: c · the tiles of `tiles`, or c alone when `tiles` is null (a constant kernel).
  struct Term {
    std::unique_ptr<KernelTiles<S>> tiles;
    double weight = 1;
  };

  // n × cols, symmetric for k(X, X); `white` adds to the diagonal of k(X, X); zero_diagonal (k(X, X) only)
  // leaves the diagonal out altogether.
  SumKernelTiles(std::vector<Term> terms, Index n, Index cols, bool symmetric, double white, bool zero_diagonal)
      : terms_(std::move(terms)), n_(n), cols_(cols), symmetric_(symmetric), white_(symmetric ? white : 0.0),
        zero_diagonal_(symmetric && zero_diagonal) {
    for (const Term& t : terms_) constant_ += t.tiles ? 0.0 : t.weight;
    if (symmetric_ && !zero_diagonal_) {
      trace_ = white_ * static_cast<double>(n_);
      for (const Term& t : terms_) trace_ += t.weight * (t.tiles ? t.tiles->trace() : static_cast<double>(n_));
    }
  }

  Index n() const override { return n_; }
  Index cols() const override { return cols_; }
  bool symmetric() const override { return symmetric_; }
  double trace() const override { return trace_; }
  std::size_t bytes() const override {
    std::size_t total = 0;
    for (const Term& t : terms_) total += t.tiles ? t.tiles->bytes() : 0;
    return total;
  }

  // Σ_t c_t slab_t, each term's slab computed into a per-thread buffer and added in the order of the terms.
  void slab(Index i0, Index j0, bool diagonal, S* out, TileWorkspace<S>& ws) const override {
    constexpr Index B = kSlab<S>;
    alignas(64) static thread_local S term[B * B];
    const Index ni = std::clamp<Index>(n_ - i0, 0, B), nj = std::clamp<Index>(cols_ - j0, 0, B);
    for (Index r = 0; r < B; ++r)
      for (Index c = 0; c < B; ++c) out[r * B + c] = r < ni && c < nj ? static_cast<S>(constant_) : S(0);
    for (const Term& t : terms_) {
      if (!t.tiles) continue;
      t.tiles->slab(i0, j0, diagonal, term, ws);
      const S weight = static_cast<S>(t.weight);
      for (Index r = 0; r < ni; ++r)
        for (Index c = 0; c < nj; ++c) out[r * B + c] += weight * term[r * B + c];
    }
    if (!diagonal) return;
    for (Index r = 0; r < ni; ++r) out[r * B + r] = zero_diagonal_ ? S(0) : out[r * B + r] + static_cast<S>(white_);
  }

 private:
  std::vector<Term> terms_;
  Index n_, cols_;
  bool symmetric_;
  double white_;
  bool zero_diagonal_;
  double constant_ = 0.0;
  double trace_ = 0.0;
};

}  // namespace fastkpca
