// What the support vector machine's solvers (local_smo.hpp on a working set, dual_solver.hpp on the whole dual)
// need to know of a formulation: its equality constraints, as a policy type (a template parameter of both).
//
// Every LIBSVM formulation is  min ½ αᵀQα + pᵀα  s.t.  0 <= α_t <= C_t  and equalities on α. The formulations differ
// there (and in p, C, y and the start, which the caller builds):
//
//   OneEquality        yᵀα = Δ                                     C-SVC, one-class, ε-SVR (LIBSVM's Solver)
//   PerSignEqualities  Σ_{y=+1} α = Δ₊  and  Σ_{y=-1} α = Δ₋         ν-SVC, ν-SVR (LIBSVM's Solver_NU)
//
// (the second implies the first). A feasible direction moves a pair of variables: any pair under one equality, a
// pair of the same sign of y under the two. So the extremes that select a pair and measure optimality are taken per
// group, a group being the variables a pair may join: one group, or one per sign of y. With G = Qα + p and
// s_t = -y_t G_t, a move along a pair lowers the objective exactly when, within a group, some t in
// I_up = {y_t = +1, α_t < C_t} ∪ {y_t = -1, α_t > 0} has s_t above some u in I_low = {y_t = +1, α_t > 0} ∪
// {y_t = -1, α_t < C_t}; the gap max_{I_up} s - min_{I_low} s, the largest over the groups, is LIBSVM's stopping
// measure.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "fastkpca/types.hpp"

namespace fastkpca::svm {

// t ∈ I_up: α_t can move so that y_t α_t grows (up to its bound for y = +1, down to 0 for y = -1).
// Both tests and a bitwise choice, no branch: the solver's sweeps ask it of every variable, and the sign of y is as
// good as random from one variable to the next.
inline bool in_up(std::int8_t y, double alpha, double upper) {
  const bool positive = y > 0;
  return (positive & (alpha < upper)) | (!positive & (alpha > 0));
}
// t ∈ I_low: α_t can move so that y_t α_t falls.
inline bool in_low(std::int8_t y, double alpha, double upper) {
  const bool positive = y > 0;
  return (positive & (alpha > 0)) | (!positive & (alpha < upper));
}

// The offsets of the decision function: ρ (LIBSVM's rho, the intercept's negative) and, for the per-sign
// equalities, r (ν-SVC divides its solution by it; ν-SVR's ε is -r).
struct Offsets {
  double rho = 0, r = 0;
};

namespace detail {

// The KKT offset of one group (the multiplier of its equality): the mean of g over the free variables, else the
// middle of the interval the variables at their bounds leave (LIBSVM's calculate_rho); g is y_t G_t under one
// equality, G_t per sign.
struct OffsetSums {
  double ub = std::numeric_limits<double>::infinity(), lb = -std::numeric_limits<double>::infinity(), sum = 0;
  Index free = 0;
  double value() const { return free ? sum / static_cast<double>(free) : (ub + lb) / 2; }
};

}  // namespace detail

// yᵀα = Δ alone: one group.
struct OneEquality {
  static constexpr int kGroups = 1;
  static constexpr int group(std::int8_t) { return 0; }

  static Offsets offsets(Index l, const std::int8_t* y, const double* G, const double* alpha, const double* upper) {
    detail::OffsetSums s;
    for (Index t = 0; t < l; ++t) {
      const double yg = y[t] * G[t];
      // At a bound, yG bounds ρ from one side: from above where y_t α_t may still grow (t ∈ I_up), from below
      // where it may still fall.
      if (alpha[t] >= upper[t]) {
        if (y[t] < 0) s.ub = std::min(s.ub, yg);
        else s.lb = std::max(s.lb, yg);
      } else if (alpha[t] <= 0) {
        if (y[t] > 0) s.ub = std::min(s.ub, yg);
        else s.lb = std::max(s.lb, yg);
      } else {
        s.sum += yg, ++s.free;
      }
    }
    return {s.value(), 0.0};
  }
};

// One equality per sign of y: two groups, group 0 for y = +1 and group 1 for y = -1.
struct PerSignEqualities {
  static constexpr int kGroups = 2;
  static constexpr int group(std::int8_t y) { return y > 0 ? 0 : 1; }

  // Each sign's offset r_± from its own G; then ρ = (r₊ - r₋)/2 and r = (r₊ + r₋)/2 (LIBSVM's Solver_NU).
  static Offsets offsets(Index l, const std::int8_t* y, const double* G, const double* alpha, const double* upper) {
    detail::OffsetSums s[2];
    for (Index t = 0; t < l; ++t) {
      detail::OffsetSums& mine = s[group(y[t])];
      if (alpha[t] >= upper[t]) mine.lb = std::max(mine.lb, G[t]);
      else if (alpha[t] <= 0) mine.ub = std::min(mine.ub, G[t]);
      else mine.sum += G[t], ++mine.free;
    }
    const double r0 = s[0].value(), r1 = s[1].value();
    return {(r0 - r1) / 2, (r0 + r1) / 2};
  }
};

}  // namespace fastkpca::svm
