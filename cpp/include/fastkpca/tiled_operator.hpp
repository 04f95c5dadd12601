// The kernel matrix k(X, X) as an operator over its lower tiles (the packed form of packed.hpp), with
// the tiles of the first `cached_rows` tile rows kept in memory and the others recomputed from X on
// every pass, while they are in cache:
//   cached_rows = number of tile rows: "packed", N²/2 entries held, a pass reads them;
//   0 < cached_rows < that:            "cached", the tiles that fit a memory budget held;
//   cached_rows = 0:                   "matrix_free", O(N·(d + b)) memory, a pass evaluates N²/2 entries.
// The kept tiles are a prefix of the packed form, so one layout serves all three, and since a computed
// tile holds the same numbers as a stored one (kernel_tiles.hpp) and the traversal is the same, every
// mode gives the same products bit for bit.
//
// A pass reads or computes each lower tile once: an off-diagonal tile A_IJ gives W_I += A_IJ V_J and
// W_J += A_IJᵀ V_I, a diagonal tile W_I += A_II V_I. The tile rows are cut into kBlocks fixed blocks of
// equal area (boundaries at nt·sqrt(p/P) tiles); block p owns the rows of its tile rows, adds the mirrored
// contributions that fall into its own rows directly and collects those for earlier rows in its buffer
// Wt_p. Then W[i] += Σ_q Wt_q[i] in block order: fixed work units, so the rounding does not depend on the
// thread count.
//
// The row sums A·1 (the centering means) come with the first pass: while they are unknown, a pass
// multiplies one more column, of ones, which costs no extra kernel evaluation or read of A.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <vector>

#include "fastkpca/block_product.hpp"
#include "fastkpca/kernel_tiles.hpp"
#include "fastkpca/operator.hpp"

namespace fastkpca {

// Elements of the packed form's first `tile_rows` tile rows.
inline Index packed_prefix_size(Index tile_rows) {
  return tile_rows * (tile_rows + 1) / 2 * kPackedTile * kPackedTile;
}

template <class S>
class TiledKernelOperator final : public Operator {
 public:
  TiledKernelOperator(std::unique_ptr<KernelTiles<S>> tiles, Index cached_rows, Interrupt& interrupt)
      : tiles_(std::move(tiles)), n_(tiles_->n()), nt_(packed_tiles(n_)),
        cached_rows_(std::clamp<Index>(cached_rows, 0, nt_)) {
    build_cache(interrupt);
  }

  Index rows() const override { return n_; }
  double trace(Interrupt&) const override { return tiles_->trace(); }
  const char* storage() const override {
    return cached_rows_ == nt_ ? "packed" : cached_rows_ == 0 ? "matrix_free" : "cached";
  }
  std::size_t bytes() const override { return cache_size_ * sizeof(S) + tiles_->bytes(); }
  int scalar_bytes() const override { return static_cast<int>(sizeof(S)); }
  Index cached_tile_rows() const { return cached_rows_; }

  PassCost pass_cost(Index b) const override {
    const double all = static_cast<double>(packed_size(n_)), kept = static_cast<double>(cache_size_);
    const double ldv = static_cast<double>((b + 7) / 8 * 8);
    return PassCost{kept * sizeof(S), all - kept, 4.0 * all * ldv};
  }

  void apply(const ColMatrix<double>& v, ColMatrix<double>& w, Interrupt& interrupt) const override {
    constexpr Index T = kPackedTile, kBlocks = 16;
    const bool with_ones = !row_sums_known();
    const Index b = v.cols(), cols = b + (with_ones ? 1 : 0), ldv = (cols + 7) / 8 * 8;
    // Zero-padded to whole tiles: the padding of the edge tiles is zero too, so it adds nothing.
    RowMatrix<double> vr = RowMatrix<double>::Zero(nt_ * T, ldv), wr = RowMatrix<double>::Zero(nt_ * T, ldv);
    vr.topLeftCorner(n_, b) = v;
    if (with_ones) vr.col(b).head(n_).setOnes();
    Index bounds[kBlocks + 1];
    detail::triangle_bounds(nt_, kBlocks, bounds);
    Index starts[kBlocks];  // in rows
    for (Index p = 0; p < kBlocks; ++p) starts[p] = bounds[p] * T;
    detail::TransposedParts wt(starts, kBlocks, ldv);
    const double* vd = vr.data();
    double* wd = wr.data();

#pragma omp parallel
    {
      std::unique_ptr<TileWorkspace<S>> ws;
      std::vector<S> computed;
#pragma omp for schedule(dynamic, 1)
      for (Index p = kBlocks - 1; p >= 0; --p) {  // largest blocks first
        double* wt_p = wt.part(p);
        for (Index I = bounds[p]; I < bounds[p + 1]; ++I) {
          if (interrupt.poll()) break;
          for (Index J = 0; J <= I; ++J) {
            const S* tile;
            if (I < cached_rows_) {
              tile = cache_.get() + packed_tile_offset(I, J);
            } else {
              if (!ws) ws = std::make_unique<TileWorkspace<S>>(), computed.resize(static_cast<size_t>(T * T));
              tiles_->panel(I, J, computed.data(), *ws);
              tile = computed.data();
            }
            double* wtj = I == J ? nullptr : (J < bounds[p] ? wt_p : wd) + J * T * ldv;
            detail::packed_tile_product(tile, I == J, vd + I * T * ldv, vd + J * T * ldv, wd + I * T * ldv, wtj,
                                        ldv);
          }
        }
      }
    }
    interrupt.throw_if_stopped();
    wt.add_to(wr, n_);
    w = wr.topLeftCorner(n_, b);
    if (with_ones) remember_row_sums(wr.col(b).head(n_));
  }

 private:
  // Computes and keeps the tiles of the first cached_rows_ tile rows, in parallel over the tiles (each
  // written by the thread that computes it, so the pages land near it).
  void build_cache(Interrupt& interrupt) {
    // Left uninitialised (no serial zero-fill): every element is written below, by the thread that
    // computes its tile.
    cache_size_ = static_cast<std::size_t>(packed_prefix_size(cached_rows_));
    cache_.reset(cache_size_ > 0 ? new S[cache_size_] : nullptr);
    const Index count = cached_rows_ * (cached_rows_ + 1) / 2;
#pragma omp parallel
    {
      TileWorkspace<S> ws;
#pragma omp for schedule(dynamic, 1)
      for (Index t = 0; t < count; ++t) {
        if (interrupt.poll()) continue;
        // Tile t of the packed order: row I with I(I+1)/2 <= t.
        Index I = static_cast<Index>((std::sqrt(8.0 * static_cast<double>(t) + 1.0) - 1.0) / 2.0);
        while (I * (I + 1) / 2 > t) --I;
        while ((I + 1) * (I + 2) / 2 <= t) ++I;
        const Index J = t - I * (I + 1) / 2;
        tiles_->panel(I, J, cache_.get() + packed_tile_offset(I, J), ws);
      }
    }
    interrupt.throw_if_stopped();
  }

  std::unique_ptr<KernelTiles<S>> tiles_;
  Index n_, nt_, cached_rows_;
  std::unique_ptr<S[]> cache_;
  std::size_t cache_size_ = 0;
};

}  // namespace fastkpca
