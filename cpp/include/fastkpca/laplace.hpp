// The two n × n passes of the exact Laplace approximation (python/fastkpca/solvers/gaussian_process/laplace.py
// and laplace_exact.py) that are not LAPACK's:
//
//   B = I + S K S                                  (every Newton step: S = diag(s), s = √W)
//   Ω = ½(a aᵀ − S X S) + ½(u vᵀ + v uᵀ)           (the gradient's weights, X = B⁻¹ from LAPACK's potri)
//
// Both run over row blocks on the threads. Ω is formed in place over X, which potri leaves in the upper
// triangle of the row-major array (symmetric_in_place.hpp).
#pragma once

#include "fastkpca/parallel.hpp"
#include "fastkpca/symmetric_in_place.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca {

// out = I + diag(s) K diag(s), K and out n × n row-major (out may not alias K).
inline void identity_plus_scaled(const double* k, const double* s, Index n, double* out, Interrupt& interrupt) {
#pragma omp parallel for schedule(static)
  for (Index i = 0; i < n; ++i) {
    if (interrupt.poll()) continue;
    const double si = s[i];
    const double* row = k + i * n;
    double* o = out + i * n;
    for (Index j = 0; j < n; ++j) o[j] = si * row[j] * s[j];
    o[i] += 1.0;
  }
  interrupt.throw_if_stopped();
}

// w (n × n row-major, B⁻¹ in its upper triangle) becomes Ω, whole and symmetric.
inline void laplace_weights(double* w, Index n, const double* s, const double* a, const double* u, const double* v,
                            Interrupt& interrupt) {
  symmetric_from_upper(
      w, n,
      [&](Index i, Index k, double x) {
        return 0.5 * (a[i] * a[k] - s[i] * x * s[k]) + 0.5 * (u[i] * v[k] + v[i] * u[k]);
      },
      interrupt);
}

}  // namespace fastkpca
