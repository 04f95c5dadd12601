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
#include <utility>
#include <vector>

#include "fastkpca/block_product.hpp"
#include "fastkpca/kernel_tiles.hpp"
#include "fastkpca/micro_kernel.hpp"
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
  return tiles.symmetric() ? packed_tile_offset(I, J)
                           : tiled_block_size(I, packed_tiles(tiles.cols())) + J * kPackedTile * kPackedTile;
}

// Which slabs of tile (I, J) a pass uses, in its fixed order: every slab inside the block's rows and
// columns; of a diagonal tile of a symmetric block, those on and below the diagonal.
template <class S, class F>
void for_each_slab(const KernelTiles<S>& tiles, Index I, Index J, F&& f) {
  constexpr Index T = kPackedTile, B = kSlab<S>;
  const bool diagonal_tile = tiles.symmetric() && I == J;
  for (Index a = 0; a < T / B && I * T + a * B < tiles.n(); ++a)
    for (Index b = 0; b <= (diagonal_tile ? a : T / B - 1) && J * T + b * B < tiles.cols(); ++b)
      f(a, b, diagonal_tile && a == b);
}

// The tiles of the first `tile_rows` tile rows into `out` (kernel_block_elements of them), in parallel
// over the tiles; each tile is written by the thread that computes it, its unused slabs zero.
template <class S>
void kernel_block_tiles(const KernelTiles<S>& tiles, Index tile_rows, S* out, Interrupt& interrupt) {
  constexpr Index T = kPackedTile, B = kSlab<S>;
  const Index col_tiles = packed_tiles(tiles.cols());
  const bool sym = tiles.symmetric();
  const Index count = sym ? tile_rows * (tile_rows + 1) / 2 : tile_rows * col_tiles;
#pragma omp parallel
  {
    auto ws = std::make_unique<TileWorkspace<S>>();
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
      S* tile = out + kernel_block_tile_offset(tiles, I, J);
      std::fill(tile, tile + T * T, S(0));
      for_each_slab(tiles, I, J, [&](Index a, Index b, bool diagonal) {
        tiles.slab(I * T + a * B, J * T + b * B, diagonal, tile + slab_offset<S>(a, b), *ws);
      });
    }
  }
  interrupt.throw_if_stopped();
}

// Columns of the zero-padded blocks of vectors a pass multiplies: b rounded up to whole vectors of the
// products' type P, and to a multiple of 8; a single vector is not padded (micro::one_vector_product).
template <class P>
constexpr Index pass_width(Index b) {
  if (b == 1) return 1;
  constexpr Index step = std::max<Index>(8, micro::kLanes<P>);
  return (b + step - 1) / step * step;
}

namespace detail {

// The pass itself on zero-padded, row-major operands with ldv columns (pass_width): va/wa have
// row_tiles·T rows, vb/wb col_tiles·T (for a symmetric block vb == va and wb == wa; for a one-sided cross
// block wb is null and va unused). va and vb are in P, the type of the slabs' products: double, or float
// for a float32 block whose caller asked for float32 products (each slab's sums in float32, added to the
// double results); wa and wb are double. Tiles of the first `stored_rows` tile rows come from `stored`.
// `blocks` fixed work units (at most FixedBlocks::kMaxBlocks) when there is a mirrored side: a cross
// block's units each collect it in a buffer of all of B's rows, so a caller on one thread asks for one.
//
// Every slab, stored or computed, goes through the same two products in the same order: W_I += K·V_J
// and, off the diagonal, W_J += Kᵀ·V_I, each a register-blocked micro-kernel over the slab in L1.
template <class S, class P>
void kernel_block_pass(const KernelTiles<S>& tiles, const S* stored, Index stored_rows, const P* va, const P* vb,
                       double* wa, double* wb, Index ldv, Interrupt& interrupt,
                       Index blocks = FixedBlocks::kMaxBlocks) {
  constexpr Index T = kPackedTile, B = kSlab<S>;
  const bool sym = tiles.symmetric(), mirrored = wb != nullptr;
  const Index row_tiles = packed_tiles(tiles.n()), col_tiles = packed_tiles(tiles.cols());
  FixedBlocks runs =
      sym ? FixedBlocks::triangle(row_tiles, T, blocks, ldv)
          : FixedBlocks::rectangle(row_tiles, mirrored ? blocks : row_tiles, mirrored ? col_tiles * T : 0, ldv);
  const auto no_workspace = [] { return std::unique_ptr<TileWorkspace<S>>(); };  // one is made on first use
  runs.run(interrupt, no_workspace, [&](std::unique_ptr<TileWorkspace<S>>& ws, Index begin, Index end, double* wt) {
    for (Index I = begin; I < end; ++I) {
      if (interrupt.poll()) break;
      for (Index J = 0; J < (sym ? I + 1 : col_tiles); ++J) {
        const S* tile = I < stored_rows ? stored + kernel_block_tile_offset(tiles, I, J) : nullptr;
        // The mirrored products W_J += K_IJᵀ V_I: into W itself for rows of this run, else into its buffer.
        double* wj = mirrored ? (sym && J >= begin ? wa : wt) + J * T * ldv : nullptr;
        for_each_slab(tiles, I, J, [&](Index a, Index b, bool diagonal) {
          const Index i0 = I * T + a * B, j0 = J * T + b * B;
          const S* slab;
          const char* next = nullptr;  // a stored slab four ahead, fetched while this one is multiplied
          if (tile) {
            slab = tile + slab_offset<S>(a, b);
            next = reinterpret_cast<const char*>(slab + 4 * B * B);
          } else {
            if (!ws) ws = std::make_unique<TileWorkspace<S>>();
            tiles.slab(i0, j0, diagonal, ws->slab, *ws);
            slab = ws->slab;
          }
          const Index ahead = next ? B * B * Index(sizeof(S)) : 0;
          if (ldv == 1) {  // one vector, not padded: both products along the slab's rows
            const bool both = wj && !diagonal;
            micro::one_vector_product(slab, B, B, B, both ? va + i0 : nullptr, vb + j0, wa + i0,
                                      both ? wj + b * B : nullptr, next, ahead);
            return;
          }
          if (wj && !diagonal && micro::symmetric_fits<P>(ldv)) {  // both products in one sweep
            micro::symmetric_product(slab, B, B, B, va + i0 * ldv, vb + j0 * ldv, wa + i0 * ldv, wj + b * B * ldv, ldv,
                                     next, ahead);
            return;
          }
          micro::product(slab, B, 1, B, B, vb + j0 * ldv, ldv, wa + i0 * ldv, ldv, ldv, next, ahead);
          if (wj && !diagonal) micro::product(slab, 1, B, B, B, va + i0 * ldv, ldv, wj + b * B * ldv, ldv, ldv);
        });
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
  const Index n_a = tiles.n(), n_b = tiles.cols(), b = wa.cols(), ldv = pass_width<double>(b);
  const Index rows_a = packed_tiles(n_a) * T, rows_b = packed_tiles(n_b) * T;
  // Zero-padded to whole tiles: the padding of the edge tiles is zero too, so it adds nothing. The products
  // run in float64 (a cross block's products are results, not solver passes).
  RowMatrix<double> va_p, vb_p;
  RowMatrix<double> wa_p = RowMatrix<double>::Zero(rows_a, ldv), wb_p;
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

// out (n × m, row-major, leading dimension ld) = the whole block of `tiles`, slab by slab in parallel over its
// tiles; for k(X, X) only the lower tiles are computed and mirrored, so the result is exactly symmetric. The
// entries are stored as O (S by default; float for an SVM's kernel columns of float64 samples).
template <class S, class O = S>
void gram_from_tiles(const KernelTiles<S>& tiles, O* out, Index ld, Interrupt& interrupt) {
  constexpr Index T = kPackedTile, B = kSlab<S>;
  const Index n = tiles.n(), m = tiles.cols(), nti = packed_tiles(n), ntj = packed_tiles(m);
  const bool sym = tiles.symmetric();
  std::vector<std::pair<Index, Index>> list;
  for (Index I = 0; I < nti; ++I)
    for (Index J = 0; J < (sym ? I + 1 : ntj); ++J) list.emplace_back(I, J);
  const Index count = static_cast<Index>(list.size());
#pragma omp parallel
  {
    auto ws = std::make_unique<TileWorkspace<S>>();
#pragma omp for schedule(dynamic, 1)
    for (Index t = 0; t < count; ++t) {
      if (interrupt.poll()) continue;
      const auto [I, J] = list[static_cast<std::size_t>(t)];
      for (Index a = 0; a < T / B && I * T + a * B < n; ++a)
        for (Index b = 0; b < T / B && J * T + b * B < m; ++b) {
          const Index i0 = I * T + a * B, j0 = J * T + b * B;
          if (sym && j0 > i0) continue;  // the mirror of a slab below the diagonal
          const Index ni = std::min(B, n - i0), nj = std::min(B, m - j0);
          tiles.slab(i0, j0, sym && i0 == j0, ws->slab, *ws);
          for (Index r = 0; r < ni; ++r)
            for (Index c = 0; c < nj; ++c) {
              const O value = static_cast<O>(ws->slab[r * B + c]);
              out[(i0 + r) * ld + j0 + c] = value;
              if (sym && i0 != j0) out[(j0 + c) * ld + i0 + r] = value;
            }
        }
    }
  }
  interrupt.throw_if_stopped();
}

}  // namespace fastkpca
