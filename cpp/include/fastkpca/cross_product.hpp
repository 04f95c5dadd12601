// W = K(X, Y) · V for a thin block V (n_Y × b): the cross kernel tile by tile, each tile multiplied into the
// block while it is in cache and then dropped. Memory: the block and one tile per thread, never the
// n_X × n_Y kernel; one read of X and Y for the kernel instead of a write and a read of the whole cross
// kernel. Serves predictions (K(X_new, X)·β), Nyström scores (K(X, S)·P) and any streamed K·V.
//
// Rows of X are split into bands of one tile height; a band's rows of W belong to one thread, which adds
// its tiles' contributions in column order, so the result does not depend on the thread count. Tiles
// are the ones gram() builds for the same X and Y (bit for bit), products accumulate in double.
#pragma once

#include <algorithm>
#include <vector>

#include "fastkpca/block_product.hpp"
#include "fastkpca/gram.hpp"

namespace fastkpca {

template <class S>
void cross_kernel_product(const ConstRowMatrixMap<S>& x, const ConstRowMatrixMap<S>& y, const KernelParams& params,
                          const ConstRowMatrixMap<double>& v, RowMatrixMap<double>& w, Interrupt& interrupt) {
  constexpr Index C = 8;
  const Index n_x = x.rows(), n_y = y.rows(), b = v.cols(), ldv = (b + C - 1) / C * C;
  RowMatrix<double> vr = RowMatrix<double>::Zero(n_y, ldv), wr = RowMatrix<double>::Zero(n_x, ldv);
  vr.leftCols(b) = v;
  Operands<S> op;
  op.has_y = true;
  op.x = x;
  op.y = y;
  with_kernel<S>(params, [&](auto kernel, bool) {
    kernel.prepare(op);
    const Index T = detail::kGramTile;
    const Index bands = (n_x + T - 1) / T;
#pragma omp parallel
    {
    alignas(64) S scratch[detail::kTileScratch];
    std::vector<S> tile(static_cast<size_t>(T * T));
#pragma omp for schedule(dynamic, 1)
    for (Index band = 0; band < bands; ++band) {
      if (interrupt.poll()) continue;
      const Index i0 = band * T, ni = std::min(T, n_x - i0);
      double* w_band = wr.data() + i0 * ldv;
      for (Index j0 = 0; j0 < n_y; j0 += T) {
        const Index nj = std::min(T, n_y - j0);
        detail::kernel_tile(kernel, op, i0, ni, j0, nj, false, false, tile.data(), nj, scratch);
        const double* v_rows = vr.data() + j0 * ldv;
        for (Index c0 = 0; c0 < ldv; c0 += 4 * C) {
          switch (std::min<Index>(4, (ldv - c0) / C)) {
            case 1: detail::stream_row_range<1>(tile.data(), nj, 0, ni, 0, nj, v_rows, ldv, c0, w_band); break;
            case 2: detail::stream_row_range<2>(tile.data(), nj, 0, ni, 0, nj, v_rows, ldv, c0, w_band); break;
            case 3: detail::stream_row_range<3>(tile.data(), nj, 0, ni, 0, nj, v_rows, ldv, c0, w_band); break;
            default: detail::stream_row_range<4>(tile.data(), nj, 0, ni, 0, nj, v_rows, ldv, c0, w_band); break;
          }
        }
      }
    }
    }
    interrupt.throw_if_stopped();
    return 0;
  });
  w = wr.leftCols(b);
}

}  // namespace fastkpca
