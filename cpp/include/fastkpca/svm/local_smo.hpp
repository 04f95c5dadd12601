// The dual restricted to a working set of m variables, the others fixed: sequential minimal optimisation
// (Platt 1998) with second-order selection of the pair (Fan, Chen & Lin, JMLR 6, 2005), on the working set's
// m × m kernel block while it is in cache. With the whole problem as the working set this is LIBSVM's
// iteration, shrinking included; the batched solver (dual_solver.hpp) calls it once per outer step.
//
// The dual is  min ½ αᵀQα + pᵀα  s.t.  0 <= α_i <= C_i  and the formulation's equalities (formulation.hpp: yᵀα
// = Δ, or one per sign of y), with Q_ij = y_i y_j K_ij and y_i = ±1. Writing G = Qα + p and s_i = -y_i G_i, i is
// the maximal s in I_up (per group: per sign of y under the per-sign equalities); j, among the I_low of i's group
// with s_j < s_i, minimises the second-order estimate -b²/a of the objective's decrease, b = s_i - s_j, a = K_ii +
// K_jj - 2K_ij (τ = 1e-12 in place of a <= 0). The pair's step is the exact minimiser along the direction, clipped
// to the box.
//
// Arithmetic as LIBSVM's: the kernel entries are floats, everything else double, Q's signs applied in float
// (exact), ties in the selections broken towards the later index; so on the same block the iterates are
// LIBSVM's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "fastkpca/parallel.hpp"
#include "fastkpca/svm/formulation.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca::svm {

constexpr double kTau = 1e-12;

struct LocalProblem {
  Index m = 0;
  const std::int8_t* y = nullptr;
  const double* upper = nullptr;  // C_i
  const double* diag = nullptr;   // K_ii
  const float* k = nullptr;       // row i: column i, k(x_j, x_i) at k[i·m + j] (LIBSVM's Q_i read with signs)
  double* alpha = nullptr;        // in: feasible; out: the subproblem's solution
  double* grad = nullptr;         // G_i, kept up to date
};

struct LocalResult {
  long long iterations = 0;  // SMO steps taken
};

namespace detail {

// i: the largest s in I_up of each group (formulation.hpp).
struct Tops {
  double top[2];
  Index arg[2];
};

inline void reset(Tops& tops) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  tops.top[0] = tops.top[1] = -inf;
  tops.arg[0] = tops.arg[1] = -1;
}

template <class Equalities>
void consider(const LocalProblem& p, Index t, Tops& tops) {
  if (!in_up(p.y[t], p.alpha[t], p.upper[t])) return;
  const int c = Equalities::group(p.y[t]);
  const double s = -p.y[t] * p.grad[t];
  if (s >= tops.top[c]) tops.top[c] = s, tops.arg[c] = t;
}

// j: the best second-order decrease among I_low with s_j < s_i (i the top of j's group), over the variables
// `active` (count of them; nullptr: all m); i = -1 when the gap is below eps (or no pair can move).
template <class Equalities>
void select_pair(const LocalProblem& p, const Index* active, Index count, const Tops& tops, double eps, Index& out_i,
                 Index& out_j) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const Index m = p.m;
  double low[2] = {-inf, -inf}, best = inf;
  Index j = -1;
  for (Index a = 0; a < count; ++a) {
    const Index t = active ? active[a] : a;
    if (!in_low(p.y[t], p.alpha[t], p.upper[t])) continue;
    const int c = Equalities::group(p.y[t]);
    const double s = -p.y[t] * p.grad[t];
    if (-s >= low[c]) low[c] = -s;
    const double b = tops.top[c] - s;
    if (b <= 0) continue;
    const Index i = tops.arg[c];
    const float q_it = static_cast<float>(p.y[i] * p.y[t]) * p.k[i * m + t];
    double a2 = p.diag[i] + p.diag[t] - 2.0 * p.y[i] * p.y[t] * static_cast<double>(q_it);
    if (a2 <= 0) a2 = kTau;
    const double decrease = -(b * b) / a2;
    if (decrease <= best) best = decrease, j = t;
  }
  double gap = tops.top[0] + low[0];
  for (int c = 1; c < Equalities::kGroups; ++c) gap = std::max(gap, tops.top[c] + low[c]);
  out_j = j;
  out_i = (gap < eps || j < 0) ? -1 : tops.arg[Equalities::group(p.y[j])];
}

// The exact minimiser of the objective along the pair's direction, clipped to the box; α_i, α_j updated.
inline void pair_step(const LocalProblem& p, Index i, Index j) {
  const double ci = p.upper[i], cj = p.upper[j];
  const double gi = p.grad[i], gj = p.grad[j];
  const float q_ij = static_cast<float>(p.y[i] * p.y[j]) * p.k[i * p.m + j];
  double& ai = p.alpha[i];
  double& aj = p.alpha[j];
  if (p.y[i] != p.y[j]) {
    // α_i - α_j is fixed: both move by δ = -(G_i + G_j)/(Q_ii + Q_jj + 2Q_ij).
    double a = p.diag[i] + p.diag[j] + 2.0 * static_cast<double>(q_ij);
    if (a <= 0) a = kTau;
    const double delta = (-gi - gj) / a, diff = ai - aj;
    ai += delta;
    aj += delta;
    if (diff > 0) {
      if (aj < 0) aj = 0, ai = diff;
    } else if (ai < 0) {
      ai = 0, aj = -diff;
    }
    if (diff > ci - cj) {
      if (ai > ci) ai = ci, aj = ci - diff;
    } else if (aj > cj) {
      aj = cj, ai = cj + diff;
    }
  } else {
    // α_i + α_j is fixed: α_j gains δ = (G_i - G_j)/(Q_ii + Q_jj - 2Q_ij), α_i loses it.
    double a = p.diag[i] + p.diag[j] - 2.0 * static_cast<double>(q_ij);
    if (a <= 0) a = kTau;
    const double delta = (gi - gj) / a, sum = ai + aj;
    ai -= delta;
    aj += delta;
    if (sum > ci) {
      if (ai > ci) ai = ci, aj = sum - ci;
    } else if (aj < 0) {
      aj = 0, ai = sum;
    }
    if (sum > cj) {
      if (aj > cj) aj = cj, ai = sum - cj;
    } else if (ai < 0) {
      ai = 0, aj = sum;
    }
  }
}

}  // namespace detail

// LIBSVM's shrinking inside the local solve (Fan, Chen & Lin 2005, §4; the rule of dual_solver.hpp's
// `shrinkable`): every kShrinkSteps steps (at most m), a variable at a bound whose s lies beyond the other set's
// extreme in its group (below every I_low's s for one in I_up only, above every I_up's for one in I_low only)
// leaves the active set: the sweeps of the selection and of the gradient's update skip it. When the active
// variables' gap first falls below kUnshrinkFactor·eps, and when it falls below eps, the left ones' gradients
// are rebuilt from the block, G_t = G⁰_t + Σ_u Q_tu (α_u − α⁰_u) over the variables that moved, and all are active
// again; the solve stops only when the whole set's gap is below eps. Where nothing is left out, the iterates are
// the unshrunk ones.
constexpr Index kShrinkSteps = 1000;
constexpr double kUnshrinkFactor = 10.0;

namespace detail {

// The extremes of s over I_up and I_low of each group, over `active`.
template <class Equalities>
void extremes(const LocalProblem& p, const std::vector<Index>& active, double* up, double* low) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  for (int c = 0; c < 2; ++c) up[c] = -inf, low[c] = inf;
  for (Index t : active) {
    const int c = Equalities::group(p.y[t]);
    const double s = -p.y[t] * p.grad[t];
    if (in_up(p.y[t], p.alpha[t], p.upper[t])) up[c] = std::max(up[c], s);
    if (in_low(p.y[t], p.alpha[t], p.upper[t])) low[c] = std::min(low[c], s);
  }
}

}  // namespace detail

// Iterates until the subproblem's gap is below eps or `max_iterations` steps (< 0: no limit) were taken. Each step
// is two sweeps: j's selection, then the gradient's update fused with the next i's. `shrinking`: LIBSVM's
// shrinking (above), for a large working set (the whole problem).
template <class Equalities>
LocalResult solve_local(const LocalProblem& p, double eps, long long max_iterations, Interrupt& interrupt,
                        bool shrinking = false) {
  LocalResult result;
  const Index m = p.m;
  std::vector<Index> active(static_cast<std::size_t>(m));
  for (Index t = 0; t < m; ++t) active[static_cast<std::size_t>(t)] = t;
  std::vector<double> start_grad, start_alpha;  // G⁰ and α⁰, to rebuild the left-out gradients
  if (shrinking) start_grad.assign(p.grad, p.grad + m), start_alpha.assign(p.alpha, p.alpha + m);
  bool unshrunk = false;
  Index countdown = std::min(m, kShrinkSteps);
  detail::Tops tops;
  const auto find_tops = [&] {
    detail::reset(tops);
    for (Index t : active) detail::consider<Equalities>(p, t, tops);
  };
  // Every variable back in the active set, the left-out ones' gradients rebuilt from the moves since the start.
  const auto unshrink = [&] {
    if (static_cast<Index>(active.size()) == m) return;
    std::vector<char> is_active(static_cast<std::size_t>(m), 0);
    for (Index t : active) is_active[static_cast<std::size_t>(t)] = 1;
    std::vector<Index> moved;
    for (Index u = 0; u < m; ++u)
      if (p.alpha[u] != start_alpha[static_cast<std::size_t>(u)]) moved.push_back(u);
    for (Index t = 0; t < m; ++t) {
      if (is_active[static_cast<std::size_t>(t)]) continue;
      double g = start_grad[static_cast<std::size_t>(t)];
      const float yt = p.y[t];
      for (Index u : moved)  // Q_tu from column u (row u of the block): its entry at t
        g += static_cast<double>(yt * static_cast<float>(p.y[u]) * p.k[u * m + t]) *
             (p.alpha[u] - start_alpha[static_cast<std::size_t>(u)]);
      p.grad[t] = g;
    }
    active.resize(static_cast<std::size_t>(m));
    for (Index t = 0; t < m; ++t) active[static_cast<std::size_t>(t)] = t;
  };
  const auto shrink = [&] {
    double up[2], low[2];
    detail::extremes<Equalities>(p, active, up, low);
    double gap = up[0] - low[0];
    for (int c = 1; c < Equalities::kGroups; ++c) gap = std::max(gap, up[c] - low[c]);
    if (!unshrunk && gap <= kUnshrinkFactor * eps) {  // near the end: every variable back once
      unshrunk = true;
      unshrink();
      detail::extremes<Equalities>(p, active, up, low);
    }
    std::size_t kept = 0;
    for (Index t : active) {
      const bool u = in_up(p.y[t], p.alpha[t], p.upper[t]), l = in_low(p.y[t], p.alpha[t], p.upper[t]);
      const int c = Equalities::group(p.y[t]);
      const double s = -p.y[t] * p.grad[t];
      const bool out = !(u && l) && (u ? s < low[c] : s > up[c]);
      if (!out) active[kept++] = t;
    }
    active.resize(kept);
  };
  find_tops();
  while (true) {
    if (shrinking && --countdown == 0) {
      countdown = std::min(m, kShrinkSteps);
      shrink();
      find_tops();
    }
    Index i, j;
    detail::select_pair<Equalities>(p, active.data(), static_cast<Index>(active.size()), tops, eps, i, j);
    if (i < 0) {
      if (static_cast<Index>(active.size()) == m) break;
      unshrink();  // converged on the active set: the whole set decides, now
      find_tops();
      detail::select_pair<Equalities>(p, active.data(), m, tops, eps, i, j);
      if (i < 0) break;
      countdown = 1;  // a pair of the whole set: on from it, shrinking again after this step, as LIBSVM does
    }
    if (max_iterations >= 0 && result.iterations >= max_iterations) break;
    if ((result.iterations & 1023) == 1023 && interrupt.poll()) break;
    const double old_i = p.alpha[i], old_j = p.alpha[j];
    detail::pair_step(p, i, j);
    const double di = p.alpha[i] - old_i, dj = p.alpha[j] - old_j;
    ++result.iterations;
    const float yi = p.y[i], yj = p.y[j];
    const float* ki = p.k + i * m;
    const float* kj = p.k + j * m;
    detail::reset(tops);
    for (Index t : active) {
      const float yt = p.y[t];
      p.grad[t] += static_cast<double>(yi * yt * ki[t]) * di + static_cast<double>(yj * yt * kj[t]) * dj;
      detail::consider<Equalities>(p, t, tops);
    }
  }
  if (shrinking) unshrink();  // every gradient current (max_iterations may have stopped it shrunk)
  interrupt.throw_if_stopped();
  return result;
}

}  // namespace fastkpca::svm
