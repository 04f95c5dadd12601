// One pass of a kernel block over a thin block of vectors, each tile used once for both of its products:
//
//   symmetric block k(X, X):  W = K·V over the lower tiles; an off-diagonal tile K_IJ gives W_I += K_IJ V_J
//                             and W_J += K_IJᵀ V_I, a diagonal tile W_I += K_II V_I;
//   cross block k(A, B):      W_A = K·V_B and W_B = Kᵀ·V_A over all tiles, each giving both.
//
// The symmetric pass is the product of the packed, cached and matrix-free operators (tiled_operator.hpp);
// the cross pass is the off-diagonal block (I, J) of a distributed pass, where row panels X_I live on
// different workers and each pair I >= J of panels is one task (python/fastkpca/_dask.py).
//
// A tile is read from `stored` panels when it is there (kernel_block_panels) and computed from the data
// otherwise; a computed tile holds the same numbers as a stored one (kernel_tiles.hpp) and both go
// through the same traversal, so caching never changes a product's rounding.
//
// Determinism: the tile rows are cut into `blocks` fixed blocks (16 by default; of equal area: a triangle's at
// nt·sqrt(p/P), a rectangle's at nt·p/P). Block p owns its rows of W_A and collects the transposed
// contributions to other rows in its own buffer; those are added in block order at the end. The work
// units and the summation order are fixed, so the rounding does not depend on the thread count.
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

// Elements of the stored panels of a block's first `tile_rows` tile rows: the packed prefix of a
// symmetric block, whole tile rows of a cross block (tile (I, J) at (I·col_tiles + J)·T²).
template <class S>
Index kernel_block_elements(const KernelTiles<S>& tiles, Index tile_rows) {
  const Index T = kPackedTile;
  return tiles.symmetric() ? tile_rows * (tile_rows + 1) / 2 * T * T : tile_rows * packed_tiles(tiles.cols()) * T * T;
}

template <class S>
Index kernel_block_tile_offset(const KernelTiles<S>& tiles, Index I, Index J) {
  return tiles.symmetric() ? packed_tile_offset(I, J) : (I * packed_tiles(tiles.cols()) + J) * kPackedTile * kPackedTile;
}

// The tiles of the first `tile_rows` tile rows into `out` (kernel_block_elements of them), in parallel
// over the tiles; each tile is written by the thread that computes it.
template <class S>
void kernel_block_panels(const KernelTiles<S>& tiles, Index tile_rows, S* out, Interrupt& interrupt) {
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
// vb/wb col_tiles·T (for a symmetric block vb == va and wb == wa). Tiles of the first `stored_rows` tile
// rows come from `stored`.
// `blocks` fixed work units (at most kMaxBlocks): a cross block's units each collect the transposed side
// in a buffer of all of B's rows, so a caller on one thread asks for one.
constexpr Index kMaxBlocks = 16;

template <class S>
void kernel_block_pass(const KernelTiles<S>& tiles, const S* stored, Index stored_rows, const double* va,
                       const double* vb, double* wa, double* wb, Index ldv, Interrupt& interrupt,
                       Index blocks = kMaxBlocks) {
  constexpr Index T = kPackedTile;
  const bool sym = tiles.symmetric();
  const Index row_tiles = packed_tiles(tiles.n()), col_tiles = packed_tiles(tiles.cols());
  const Index n_blocks = std::clamp<Index>(blocks, 1, kMaxBlocks);
  Index bounds[kMaxBlocks + 1];
  if (sym) {
    triangle_bounds(row_tiles, n_blocks, bounds);
  } else {
    for (Index p = 0; p <= n_blocks; ++p) bounds[p] = row_tiles * p / n_blocks;
  }
  // Rows of the transposed side each block collects: the rows of earlier blocks (symmetric), or all of B.
  Index starts[kMaxBlocks];
  for (Index p = 0; p < n_blocks; ++p) starts[p] = sym ? bounds[p] * T : col_tiles * T;
  TransposedParts wt(starts, n_blocks, ldv);

#pragma omp parallel
  {
    std::unique_ptr<TileWorkspace<S>> ws;
    std::vector<S> computed;
#pragma omp for schedule(dynamic, 1)
    for (Index p = n_blocks - 1; p >= 0; --p) {  // largest blocks first
      double* wt_p = wt.part(p);
      for (Index I = bounds[p]; I < bounds[p + 1]; ++I) {
        if (interrupt.poll()) break;
        for (Index J = 0; J < (sym ? I + 1 : col_tiles); ++J) {
          const S* tile;
          if (I < stored_rows) {
            tile = stored + kernel_block_tile_offset(tiles, I, J);
          } else {
            if (!ws) ws = std::make_unique<TileWorkspace<S>>(), computed.resize(static_cast<size_t>(T * T));
            tiles.panel(I, J, computed.data(), *ws);
            tile = computed.data();
          }
          const bool diagonal = sym && I == J;
          double* wtj = diagonal ? nullptr : (sym && J >= bounds[p] ? wa : wt_p) + J * T * ldv;
          packed_tile_product(tile, diagonal, va + I * T * ldv, vb + J * T * ldv, wa + I * T * ldv, wtj, ldv);
        }
      }
    }
  }
  interrupt.throw_if_stopped();
  wt.add_to(wb, sym ? tiles.n() : tiles.cols());
}

}  // namespace detail

// W_A = K·V_B and (cross blocks) W_B = Kᵀ·V_A, with `stored` holding the first `stored_rows` tile rows'
// panels (or none). For a symmetric block v_b and w_b are ignored (V_B = V_A). Results in double; the
// rounding depends on `blocks` (fixed work units, see kernel_block_pass), never on the thread count.
template <class S>
void kernel_block_product(const KernelTiles<S>& tiles, const S* stored, Index stored_rows,
                          const ConstRowMatrixMap<double>& va, const ConstRowMatrixMap<double>* vb,
                          RowMatrixMap<double>& wa, RowMatrixMap<double>* wb, Interrupt& interrupt,
                          Index blocks = detail::kMaxBlocks) {
  constexpr Index T = kPackedTile;
  const bool sym = tiles.symmetric();
  const Index n_a = tiles.n(), n_b = tiles.cols(), b = va.cols(), ldv = (b + 7) / 8 * 8;
  const Index rows_a = packed_tiles(n_a) * T, rows_b = packed_tiles(n_b) * T;
  RowMatrix<double> va_p = RowMatrix<double>::Zero(rows_a, ldv), wa_p = RowMatrix<double>::Zero(rows_a, ldv);
  va_p.topLeftCorner(n_a, b) = va;
  RowMatrix<double> vb_p, wb_p;
  if (!sym) {
    vb_p = RowMatrix<double>::Zero(rows_b, ldv);
    wb_p = RowMatrix<double>::Zero(rows_b, ldv);
    vb_p.topLeftCorner(n_b, b) = *vb;
  }
  detail::kernel_block_pass(tiles, stored, stored_rows, va_p.data(), sym ? va_p.data() : vb_p.data(), wa_p.data(),
                            sym ? wa_p.data() : wb_p.data(), ldv, interrupt, blocks);
  wa = wa_p.topLeftCorner(n_a, b);
  if (!sym) *wb = wb_p.topLeftCorner(n_b, b);
}

}  // namespace fastkpca
