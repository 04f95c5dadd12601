// One-pass scan of a square matrix that the Python validation layer asks for: whether every entry is
// finite, its largest |entry| and its largest asymmetry |A_ij - A_ji|. No temporary of the matrix's size.
#pragma once

#include <algorithm>
#include <cmath>

#include "fastkpca/parallel.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca {

struct MatrixScan {
  bool finite = true;
  double max_abs = 0;
  double max_asymmetry = 0;
};

template <class S>
MatrixScan scan_square(const S* a, Index n, bool check_symmetry, Interrupt& interrupt) {
  constexpr Index T = 64;
  const Index nt = (n + T - 1) / T;
  bool finite = true;
  double max_abs = 0, max_asym = 0;
  // Tile pairs (I, J) and (J, I) for J <= I: every entry is read once, both sides of a pair from cache.
#pragma omp parallel for schedule(dynamic, 1) reduction(&& : finite) reduction(max : max_abs, max_asym)
  for (Index I = 0; I < nt; ++I) {
    if (interrupt.poll()) continue;
    const Index i0 = I * T, i1 = std::min(n, i0 + T);
    for (Index J = 0; J <= I; ++J) {
      const Index j0 = J * T, j1 = std::min(n, j0 + T);
      for (Index i = i0; i < i1; ++i) {
        for (Index j = j0; j < std::min(j1, i + 1); ++j) {
          const double lower = static_cast<double>(a[i * n + j]), upper = static_cast<double>(a[j * n + i]);
          finite = finite && std::isfinite(lower) && std::isfinite(upper);
          max_abs = std::max(max_abs, std::max(std::abs(lower), std::abs(upper)));
          if (check_symmetry) max_asym = std::max(max_asym, std::abs(lower - upper));
        }
      }
    }
  }
  interrupt.throw_if_stopped();
  return MatrixScan{finite, max_abs, max_asym};
}

}  // namespace fastkpca
