// A symmetric matrix formed entry by entry over another one held in half of the same array: the passes that turn
// LAPACK's inverse from potri (the upper triangle of a row-major array: the lower one of its Fortran-ordered view)
// into a whole, symmetric weight matrix, in place (laplace.hpp's Ω, gp_weights.hpp's W).
//
// Square tiles on and above the diagonal are read in the upper triangle and written to both triangles, so that every
// tile's mirror is written by the thread that reads it and no entry is read after it is overwritten.
#pragma once

#include <algorithm>

#include "fastkpca/parallel.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca {

// w (n × n row-major, X in its upper triangle, its strict lower triangle anything) becomes F, whole and symmetric,
// F_ik = F_ki = entry(i, k, X_ik) for i <= k. Row bands of tiles on the threads.
template <class Entry>
void symmetric_from_upper(double* w, Index n, Entry&& entry, Interrupt& interrupt) {
  constexpr Index T = 64;
  const Index tiles = (n + T - 1) / T;
#pragma omp parallel for schedule(dynamic, 1)
  for (Index ti = 0; ti < tiles; ++ti) {
    if (interrupt.poll()) continue;
    const Index i0 = ti * T, i1 = std::min(n, i0 + T);
    for (Index tk = ti; tk < tiles; ++tk) {
      const Index k0 = tk * T, k1 = std::min(n, k0 + T);
      for (Index i = i0; i < i1; ++i) {
        for (Index k = std::max(k0, i); k < k1; ++k) {
          const double value = entry(i, k, w[i * n + k]);
          w[i * n + k] = value;
          w[k * n + i] = value;
        }
      }
    }
  }
  interrupt.throw_if_stopped();
}

}  // namespace fastkpca
