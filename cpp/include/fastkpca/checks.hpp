// One-pass scans of a square matrix that the Python validation layer asks for: whether every entry is
// finite, its largest |entry| and its largest asymmetry |A_ij - A_ji|. Reading tile pairs (I, J), (J, I)
// together keeps both sides in cache; no temporary of the matrix's size is made.
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
#pragma omp parallel for schedule(dynamic, 1) reduction(&& : finite) reduction(max : max_abs, max_asym)
  for (Index I = 0; I < nt; ++I) {
    if (interrupt.poll()) continue;
    const Index i0 = I * T, i1 = std::min(n, i0 + T);
    for (Index i = i0; i < i1; ++i) {
      for (Index j = 0; j < n; ++j) {
        const double v = static_cast<double>(a[i * n + j]);
        finite = finite && std::isfinite(v);
        max_abs = std::max(max_abs, std::abs(v));
      }
    }
    if (!check_symmetry) continue;
    for (Index J = 0; J < I; ++J) {
      const Index j0 = J * T, j1 = std::min(n, j0 + T);
      for (Index i = i0; i < i1; ++i)
        for (Index j = j0; j < j1; ++j)
          max_asym = std::max(max_asym, std::abs(static_cast<double>(a[i * n + j]) - a[j * n + i]));
    }
    for (Index i = i0; i < i1; ++i)
      for (Index j = i0; j < i; ++j)
        max_asym = std::max(max_asym, std::abs(static_cast<double>(a[i * n + j]) - a[j * n + i]));
  }
  interrupt.throw_if_stopped();
  return MatrixScan{finite, max_abs, max_asym};
}

}  // namespace fastkpca
