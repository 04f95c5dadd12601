// The Gram matrix K[i, j] = k(x_i, y_j), built tile by tile in parallel.
//
// Tiles are square blocks of T×T outputs; each is produced by one thread from the prepared operands, so
// a tile's values do not depend on the thread count (1 and n threads agree bit for bit). When Y is X only
// the lower triangle of tiles is computed and each tile is mirrored into the upper triangle, so K == K.T
// exactly; diagonal tiles are symmetrised and, for distance kernels, get an exact unit diagonal.
// gram_packed builds the same tiles (bit for bit) into the packed lower-tile form of packed.hpp instead.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "fastkpca/kernels.hpp"
#include "fastkpca/packed.hpp"
#include "fastkpca/parallel.hpp"

namespace fastkpca {

namespace detail {

constexpr Index kGramTile = kPackedTile;
static_assert(kTileScratch >= 2 * kGramTile, "tile kernels need two tile rows of scratch");

// dst[c, r] = src[r, c] for an n_rows × n_cols block, in 32×32 sub-blocks to keep both sides in cache.
template <class S>
void transpose_block(const S* src, Index lds, S* dst, Index ldd, Index n_rows, Index n_cols) {
  constexpr Index B = 32;
  for (Index r0 = 0; r0 < n_rows; r0 += B)
    for (Index c0 = 0; c0 < n_cols; c0 += B)
      for (Index r = r0; r < std::min(r0 + B, n_rows); ++r)
        for (Index c = c0; c < std::min(c0 + B, n_cols); ++c) dst[c * ldd + r] = src[r * lds + c];
}

// Zero the padding of an edge tile (rows >= ni, columns >= nj of a row-major T×T block).
template <class S>
void zero_tile_padding(S* tile, Index ni, Index nj) {
  const Index T = kGramTile;
  if (nj < T)
    for (Index r = 0; r < ni; ++r) std::fill(tile + r * T + nj, tile + (r + 1) * T, S(0));
  if (ni < T) std::fill(tile + ni * T, tile + T * T, S(0));
}

// Fills the tiles of `out`: a row-major matrix with leading dimension ld, or (packed) the packed
// lower-tile form of packed.hpp, which implies symmetric; packed tiles are made row-major in a per-thread
// T×T buffer (the same values as in the full matrix) and then written in panel order.
template <class S, class Kernel>
void gram_tiles(Kernel& kernel, Operands<S>& op, bool symmetric, bool unit_diagonal, bool packed, S* out,
                Index ld, Interrupt& interrupt) {
  const Index n = op.x.rows(), m = op.rhs().rows();
  const Index T = kGramTile;
  const Index nti = (n + T - 1) / T, ntj = (m + T - 1) / T;
  // Lower-triangle tiles (I >= J) when symmetric, all tiles otherwise, in one flat list.
  std::vector<std::pair<Index, Index>> tiles;
  tiles.reserve(static_cast<size_t>(symmetric ? nti * (nti + 1) / 2 : nti * ntj));
  for (Index I = 0; I < nti; ++I)
    for (Index J = 0; J < (symmetric ? I + 1 : ntj); ++J) tiles.emplace_back(I, J);
  const Index count = static_cast<Index>(tiles.size());

#pragma omp parallel
  {
  alignas(64) S scratch[kTileScratch];  // per thread
  std::vector<S> staging(packed ? static_cast<size_t>(T * T) : 0);
#pragma omp for schedule(dynamic, 1)
  for (Index t = 0; t < count; ++t) {
    if (interrupt.poll()) continue;
    const Index I = tiles[t].first, J = tiles[t].second;
    const Index i0 = I * T, j0 = J * T, ni = std::min(T, n - i0), nj = std::min(T, m - j0);
    const Index ldt = packed ? T : ld;
    S* tile = packed ? staging.data() : out + i0 * ld + j0;
    kernel.tile(op, i0, ni, j0, nj, tile, ldt, scratch);
    if (packed) zero_tile_padding(tile, ni, nj);
    if (symmetric && I != J && !packed) transpose_block(tile, ld, out + j0 * ld + i0, ld, ni, nj);
    if (symmetric && I == J) {
      for (Index r = 0; r < ni; ++r) {
        for (Index c = 0; c < r; ++c) tile[c * ldt + r] = tile[r * ldt + c];
        if (unit_diagonal) tile[r * ldt + r] = S(1);
      }
    }
    if (packed) pack_tile(tile, T, out + packed_tile_offset(I, J));
  }
  }
  interrupt.throw_if_stopped();
}

}  // namespace detail

namespace detail {

template <class S>
void gram_dispatch(const ConstRowMatrixMap<S>& x, const ConstRowMatrixMap<S>* y, const KernelParams& params,
                   bool packed, S* out, Index ld, Interrupt& interrupt) {
  Operands<S> op;
  op.has_y = y != nullptr;
  op.x = x;
  if (op.has_y) op.y = *y;
  auto run = [&](auto kernel, bool unit_diagonal) {
    kernel.prepare(op);
    gram_tiles<S>(kernel, op, !op.has_y, unit_diagonal, packed, out, ld, interrupt);
  };
  switch (params.kind) {
    case KernelKind::rbf: run(RbfKernel<S>{params}, true); break;
    case KernelKind::laplacian: run(LaplacianKernel<S>{params}, true); break;
    default: run(DotKernel<S>{params}, false); break;
  }
}

}  // namespace detail

// out (n_X × n_Y, row-major, preallocated by the caller) = k(X, Y); y == nullptr means Y = X.
template <class S>
void gram(const ConstRowMatrixMap<S>& x, const ConstRowMatrixMap<S>* y, const KernelParams& params,
          RowMatrixMap<S>& out, Interrupt& interrupt) {
  detail::gram_dispatch<S>(x, y, params, false, out.data(), out.cols(), interrupt);
}

// k(X, X) in the packed lower-tile form; `packed` holds packed_size(n_X) elements (preallocated).
template <class S>
void gram_packed(const ConstRowMatrixMap<S>& x, const KernelParams& params, S* packed, Interrupt& interrupt) {
  detail::gram_dispatch<S>(x, nullptr, params, true, packed, kPackedTile, interrupt);
}

}  // namespace fastkpca
