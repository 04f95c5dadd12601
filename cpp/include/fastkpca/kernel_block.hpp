// The one traversal of a kernel block: a pass over a thin block of vectors, each tile of the kernel read
// (stored) or computed once and multiplied into both of its products while it is in cache:
//
//   symmetric block k(X, X):  W = K·V over the lower tiles; an off-diagonal tile K_IJ gives W_I += K_IJ V_J
//                             and W_J += K_IJᵀ V_I, a diagonal tile W_I += K_II V_I;
//   cross block k(A, B):      W_A = K·V_B and W_B = Kᵀ·V_A over all tiles, each giving both;
//   one-sided cross block:    W_A = K·V_B alone (predictions, transforms, Nyström scores: K(X, Y)·V
//                             without ever storing K(X, Y)).
//
// The symmetric pass is the product of the packed, cached and matrix-free operators (tiled_operator.hpp);
// the two-sided cross pass is the off-diagonal block (I, J) of a distributed pass, where the row blocks
// X_I live on different workers and each pair I >= J is one task (python/fastkpca/engines/dask.py).
//
// A tile is read from `stored` tiles when it is there (kernel_block_tiles) and computed from the data
// otherwise; a computed tile holds the same numbers as a stored one (kernel_tiles.hpp) and both go
// through the same traversal, so keeping tiles never changes a product's rounding.
//
// Determinism: the tile rows are the units of FixedBlocks (block_product.hpp): `blocks` fixed runs (16
// by default; of equal area for a triangle), each collecting the mirrored contributions to other rows in
// its own buffer, added in run order at the end; a one-sided product's runs are single tile rows. The
// work units and the order of every sum are fixed, so the rounding does not depend on the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "fastkpca/block_product.hpp"
#include "fastkpca/kernel_tiles.hpp"
#include "fastkpca/packed.hpp"
#include "fastkpca/parallel.hpp"

namespace fastkpca {

// Elements of the stored tiles of a block's first `tile_rows` tile rows: the packed prefix of a symmetric
// block, whole tile rows of a cross block (packed.hpp).
template <class S>
Index kernel_block_elements(const KernelTiles<S>& tiles, Index tile_rows) {
  return tiles.symmetric() ? packed_prefix_size(tile_rows) : tiled_block_size(tile_rows, packed_tiles(tiles.cols()));
}

template <class S>
Index kernel_block_tile_offset(const KernelTiles<S>& tiles, Index I, Index J) {
  return tiles.symmetric() ? packed_tile_offset(I, J) : tiled_block_size(I, packed_tiles(tiles.cols())) +
                                                            J * kPackedTile * kPackedTile;
}

// The tiles of the first `tile_rows` tile rows into `out` (kernel_block_elements of them), in parallel
// over the tiles; each tile is written by the thread that computes it.
template <class S>
void kernel_block_tiles(const KernelTiles<S>& tiles, Index tile_rows, S* out, Interrupt& interrupt) {
  const Index col_tiles = packed_tiles(tiles.cols());
  const bool sym = tiles.symmetric();
  const Index count = sym ? tile_rows * (tile_rows + 1) / 2 : tile_rows * col_tiles;
#pragma omp parallel
  {
    TileWorkspace<S> ws;
#pragma omp for schedule(dynamic, 1)
    for (Index t = 0; t < count; ++t) {
      if (interrupt.poll()) continue;
      Index I, J;
      if (sym) {  // tile t of the packed order: row I with I(I+1)/2 <= t
        I = static_cast<Index>((std::sqrt(8.0 * static_cast<double>(t) + 1.0) - 1.0) / 2.0);
        while (I * (I + 1) / 2 > t) --I;
        while ((I + 1) * (I + 2) / 2 <= t) ++I;
        J = t - I * (I + 1) / 2;
      } else {
        I = t / col_tiles;
        J = t % col_tiles;
      }
      tiles.panel(I, J, out + kernel_block_tile_offset(tiles, I, J), ws);
    }
  }
  interrupt.throw_if_stopped();
}

namespace detail {

// The pass itself on zero-padded, row-major operands with ldv columns: va/wa have row_tiles·T rows,
// vb/wb col_tiles·T (for a symmetric block vb == va and wb == wa; for a one-sided cross block wb is null
// and va unused). Tiles of the first `stored_rows` tile rows come from `stored`. `blocks` fixed work
// units (at most FixedBlocks::kMaxBlocks) when there is a mirrored side: a cross block's units each collect
// it in a buffer of all of B's rows, so a caller on one thread asks for one.
template <class S>
void kernel_block_pass(const KernelTiles<S>& tiles, const S* stored, Index stored_rows, const double* va,
                       const double* vb, double* wa, double* wb, Index ldv, Interrupt& interrupt,
                       Index blocks = FixedBlocks::kMaxBlocks) {
  constexpr Index T = kPackedTile;
  const bool sym = tiles.symmetric(), mirrored = wb != nullptr;
  const Index row_tiles = packed_tiles(tiles.n()), col_tiles = packed_tiles(tiles.cols());
  FixedBlocks runs = sym ? FixedBlocks::triangle(row_tiles, T, blocks, ldv)
                         : FixedBlocks::rectangle(row_tiles, mirrored ? blocks : row_tiles, mirrored ? col_tiles * T : 0,
                                                  ldv);
  struct Work {
    std::unique_ptr<TileWorkspace<S>> ws;
    std::vector<S> computed;
  };
  runs.run(interrupt, [] { return Work{}; }, [&](Work& work, Index begin, Index end, double* wt) {
    for (Index I = begin; I < end; ++I) {
      if (interrupt.poll()) break;
      for (Index J = 0; J < (sym ? I + 1 : col_tiles); ++J) {
        const S* tile;
        if (I < stored_rows) {
          tile = stored + kernel_block_tile_offset(tiles, I, J);
        } else {
          if (!work.ws) work.ws = std::make_unique<TileWorkspace<S>>(), work.computed.resize(static_cast<size_t>(T * T));
          tiles.panel(I, J, work.computed.data(), *work.ws);
          tile = work.computed.data();
        }
        // The mirrored product W_J += K_IJᵀ V_I: into W itself for rows of this run, else into its buffer.
        double* wtj = nullptr;
        if (mirrored && !(sym && I == J)) wtj = (sym && J >= begin ? wa : wt) + J * T * ldv;
        packed_tile_product(tile, wtj != nullptr, wtj ? va + I * T * ldv : nullptr, vb + J * T * ldv, wa + I * T * ldv,
                            wtj, ldv);
      }
    }
  });
  interrupt.throw_if_stopped();
  if (mirrored) runs.add_transposed(wb, sym ? tiles.n() : tiles.cols());
}

}  // namespace detail

// W_A = K·V_B and, when wb is given, W_B = Kᵀ·V_A, with `stored` holding the first `stored_rows` tile rows'
// tiles (or none). For a symmetric block vb and wb are ignored (V_B = V_A, W_B = W_A); for a one-sided cross
// block (wb null) va is unused. Results in double; the rounding depends on `blocks` (fixed work units, see
// kernel_block_pass), never on the thread count.
template <class S>
void kernel_block_product(const KernelTiles<S>& tiles, const S* stored, Index stored_rows,
                          const ConstRowMatrixMap<double>* va, const ConstRowMatrixMap<double>* vb,
                          RowMatrixMap<double>& wa, RowMatrixMap<double>* wb, Interrupt& interrupt,
                          Index blocks = detail::FixedBlocks::kMaxBlocks) {
  constexpr Index T = kPackedTile;
  const bool sym = tiles.symmetric(), mirrored = sym || wb != nullptr;
  const Index n_a = tiles.n(), n_b = tiles.cols(), b = wa.cols(), ldv = (b + 7) / 8 * 8;
  const Index rows_a = packed_tiles(n_a) * T, rows_b = packed_tiles(n_b) * T;
  // Zero-padded to whole tiles: the padding of the edge tiles is zero too, so it adds nothing.
  RowMatrix<double> va_p, wa_p = RowMatrix<double>::Zero(rows_a, ldv), vb_p, wb_p;
  if (mirrored) {
    va_p = RowMatrix<double>::Zero(rows_a, ldv);
    va_p.topLeftCorner(n_a, b) = *va;
  }
  if (!sym) {
    vb_p = RowMatrix<double>::Zero(rows_b, ldv);
    vb_p.topLeftCorner(n_b, b) = *vb;
    if (mirrored) wb_p = RowMatrix<double>::Zero(rows_b, ldv);
  }
  detail::kernel_block_pass(tiles, stored, stored_rows, mirrored ? va_p.data() : nullptr,
                            sym ? va_p.data() : vb_p.data(), wa_p.data(),
                            sym ? wa_p.data() : (mirrored ? wb_p.data() : nullptr), ldv, interrupt, blocks);
  wa = wa_p.topLeftCorner(n_a, b);
  if (!sym && mirrored) *wb = wb_p.topLeftCorner(n_b, b);
}

}  // namespace fastkpca
