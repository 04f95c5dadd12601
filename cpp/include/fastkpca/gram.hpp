// The Gram matrix K[i, j] = k(x_i, y_j), built tile by tile in parallel.
//
// Tiles are square blocks of T×T outputs; each is produced by one thread from the prepared operands, so
// a tile's values do not depend on the thread count (1 and n threads agree bit for bit). When Y is X only
// the lower triangle of tiles is computed and each tile is mirrored into the upper triangle, so K == K.T
// exactly; diagonal tiles are symmetrised and, for unit-diagonal kernels, get an exact unit diagonal.
// kernel_tiles.hpp computes the same tiles (bit for bit) for the packed, cached and matrix-free operators.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "fastkpca/kernel_registry.hpp"
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

// One tile k(X[i0 .. i0+ni], Y[j0 .. j0+nj]) into the row-major block at `out` (leading dimension ld),
// i0 a multiple of kSlab<S> and j0 of micro::NR: the micro-kernel's blocks, then the kernel's
// finish_rows. A tile on the diagonal of a symmetric kernel (`diagonal`) is made exactly symmetric from
// its lower triangle and, for a unit-diagonal kernel, gets exact ones on its diagonal.
template <class S, class Kernel>
void kernel_tile(const Kernel& kernel, const Operands<S>& op, Index i0, Index ni, Index j0, Index nj, bool diagonal,
                 bool unit_diagonal, S* out, Index ld, S* scratch) {
  micro::distance_rect<S, Kernel::accumulate>(kernel, op, i0, ni, j0, nj, out, ld);
  kernel.finish_rows(out, ld, ni, nj, scratch);
  if (!diagonal) return;
  for (Index r = 0; r < ni; ++r) {
    for (Index c = 0; c < r; ++c) out[c * ld + r] = out[r * ld + c];
    if (unit_diagonal) out[r * ld + r] = S(1);
  }
}

// Fills the row-major `out` (leading dimension ld) with k(X, Y), or with k(X, X) when `symmetric`.
template <class S, class Kernel>
void gram_tiles(const Kernel& kernel, const Operands<S>& op, bool symmetric, bool unit_diagonal, S* out, Index ld,
                Interrupt& interrupt) {
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
#pragma omp for schedule(dynamic, 1)
    for (Index t = 0; t < count; ++t) {
      if (interrupt.poll()) continue;
      const Index I = tiles[t].first, J = tiles[t].second;
      const Index i0 = I * T, j0 = J * T, ni = std::min(T, n - i0), nj = std::min(T, m - j0);
      S* tile = out + i0 * ld + j0;
      kernel_tile(kernel, op, i0, ni, j0, nj, symmetric && I == J, unit_diagonal, tile, ld, scratch);
      if (symmetric && I != J) transpose_block(tile, ld, out + j0 * ld + i0, ld, ni, nj);
    }
  }
  interrupt.throw_if_stopped();
}

}  // namespace detail

// out (n_X × n_Y, row-major, preallocated by the caller) = k(X, Y); y == nullptr means Y = X.
template <class S>
void gram(const ConstRowMatrixMap<S>& x, const ConstRowMatrixMap<S>* y, const KernelParams& params,
          RowMatrixMap<S>& out, Interrupt& interrupt) {
  Operands<S> op;
  op.has_y = y != nullptr;
  copy_rows(x, op.x);
  if (op.has_y) copy_rows(*y, op.y);
  with_kernel<S>(params, [&](auto kernel, bool unit_diagonal) {
    kernel.prepare(op);
    detail::gram_tiles<S>(kernel, op, !op.has_y, unit_diagonal, out.data(), out.cols(), interrupt);
    return 0;
  });
}

// out[i] = k(x_i, x_i): gram(X)'s diagonal up to the rounding of the inner product, and exactly 1 for a
// unit-diagonal kernel. Randomly pivoted Cholesky samples its first pivots from this diagonal.
template <class S>
void kernel_diagonal(const ConstRowMatrixMap<S>& x, const KernelParams& params, S* out, Interrupt& interrupt) {
  Operands<S> op;
  copy_rows(x, op.x);
  with_kernel<S>(params, [&](auto kernel, bool) {
    kernel.prepare(op);
    const Index n = op.x.rows(), chunk = 4096;
#pragma omp parallel for schedule(static)
    for (Index c0 = 0; c0 < n; c0 += chunk) {
      if (interrupt.poll()) continue;
      for (Index i = c0; i < std::min(n, c0 + chunk); ++i) out[i] = kernel.diagonal(op, i);
    }
    interrupt.throw_if_stopped();
    return 0;
  });
}

}  // namespace fastkpca
