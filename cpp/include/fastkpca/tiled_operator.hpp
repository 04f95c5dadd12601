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
// thread count. The traversal is kernel_block.hpp's, which serves the blocks of a distributed pass too.
//
// The row sums A·1 (the centering means) come with the first pass: while they are unknown, a pass
// multiplies one more column, of ones, which costs no extra kernel evaluation or read of A.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <type_traits>
#include <vector>

#include "fastkpca/kernel_block.hpp"
#include "fastkpca/kernel_tiles.hpp"
#include "fastkpca/operator.hpp"
#include "fastkpca/spare_buffer.hpp"

namespace fastkpca {

template <class S>
class TiledKernelOperator final : public Operator {
 public:
  TiledKernelOperator(std::unique_ptr<KernelTiles<S>> tiles, Index cached_rows, Interrupt& interrupt)
      : tiles_(std::move(tiles)), n_(tiles_->n()), nt_(packed_tiles(n_)),
        cached_rows_(std::clamp<Index>(cached_rows, 0, nt_)) {
    build_cache(interrupt);
  }
  TiledKernelOperator(const TiledKernelOperator&) = delete;
  TiledKernelOperator& operator=(const TiledKernelOperator&) = delete;

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
    const double ldv = static_cast<double>(pass_width<double>(b));
    return PassCost{kept * sizeof(S), all - kept, 4.0 * all * ldv};
  }

  void apply(const ColMatrix<double>& v, ColMatrix<double>& w, Interrupt& interrupt, Products products) const override {
    // The row sums (the centering's means) are always found in float64: a pass that finds them is one.
    if (std::is_same_v<S, float> && products == Products::float32 && row_sums_known()) pass<float>(v, w, interrupt);
    else pass<double>(v, w, interrupt);
  }

 private:
  // One pass with the block in P, the type of the slabs' products.
  template <class P>
  void pass(const ColMatrix<double>& v, ColMatrix<double>& w, Interrupt& interrupt) const {
    constexpr Index T = kPackedTile;
    const bool with_ones = !row_sums_known();
    const Index b = v.cols(), cols = b + (with_ones ? 1 : 0), ldv = pass_width<P>(cols);
    // Zero-padded to whole tiles: the padding of the edge tiles is zero too, so it adds nothing.
    RowMatrix<P> vr = RowMatrix<P>::Zero(nt_ * T, ldv);
    RowMatrix<double> wr = RowMatrix<double>::Zero(nt_ * T, ldv);
    vr.topLeftCorner(n_, b) = v.template cast<P>();
    if (with_ones) vr.col(b).head(n_).setOnes();
    detail::kernel_block_pass(*tiles_, cache_.template as<S>(), cached_rows_, vr.data(), vr.data(), wr.data(),
                              wr.data(), ldv, interrupt);
    w = wr.topLeftCorner(n_, b);
    if (with_ones) remember_row_sums(wr.col(b).head(n_));
  }

  // Computes and keeps the tiles of the first cached_rows_ tile rows.
  void build_cache(Interrupt& interrupt) {
    // Not initialised (no serial zero-fill): every element is written by the thread computing its tile, whether the
    // buffer is fresh or the spare an earlier operator gave back (spare_buffer.hpp).
    cache_size_ = static_cast<std::size_t>(packed_prefix_size(cached_rows_));
    cache_ = LargeBuffer(cache_size_ * sizeof(S));
    kernel_block_tiles(*tiles_, cached_rows_, cache_.template as<S>(), interrupt);
  }

  std::unique_ptr<KernelTiles<S>> tiles_;
  Index n_, nt_, cached_rows_;
  LargeBuffer cache_;  // the kept tiles, in S
  std::size_t cache_size_ = 0;
};

}  // namespace fastkpca
