// The exact Gaussian process regressor's gradient weights (python/fastkpca/solvers/gaussian_process/exact.py):
//
//   W = c_outer · A Aᵀ + c_inverse · K̂⁻¹        (A = K̂⁻¹Y, n × m; K̂⁻¹ from LAPACK's potri)
//
// so that ∂/∂θ_j of the weighted terms is tr(W ∂K/∂θ_j), which the gradient's pass (gp_gradient.hpp) reads. W is
// formed in place over K̂⁻¹, which potri leaves in the upper triangle of the row-major array (symmetric_in_place.hpp).
#pragma once

#include "fastkpca/parallel.hpp"
#include "fastkpca/symmetric_in_place.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca {

// w (n × n row-major, K̂⁻¹ in its upper triangle) becomes W, whole and symmetric; a is n × m row-major.
inline void gp_regression_weights(double* w, Index n, const double* a, Index m, double outer_weight,
                                  double inverse_weight, Interrupt& interrupt) {
  symmetric_from_upper(
      w, n,
      [&](Index i, Index k, double x) {
        const double* ai = a + i * m;
        const double* ak = a + k * m;
        double outer = 0;
        for (Index t = 0; t < m; ++t) outer += ai[t] * ak[t];
        return inverse_weight * x + outer_weight * outer;
      },
      interrupt);
}

}  // namespace fastkpca
