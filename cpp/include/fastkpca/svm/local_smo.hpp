// The dual restricted to a working set of m variables, the others fixed: sequential minimal optimisation
// (Platt 1998) with second-order selection of the pair (Fan, Chen & Lin, JMLR 6, 2005), on the working set's
// m × m kernel block while it is in cache. With the whole problem as the working set this is LIBSVM's
// iteration without its shrinking (the vectorised sweeps over every variable below cost less than LIBSVM's over
// the unshrunk ones); the batched solver (dual_solver.hpp) calls it once per outer step.
//
// The dual is  min ½ αᵀQα + pᵀα  s.t.  0 <= α_i <= C_i  and the formulation's equalities (formulation.hpp: yᵀα
// = Δ, or one per sign of y), with Q_ij = y_i y_j K_ij and y_i = ±1. Writing G = Qα + p and s_i = -y_i G_i, i is
// the maximal s in I_up (per group: per sign of y under the per-sign equalities); j, among the I_low of i's group
// with s_j < s_i, minimises the second-order estimate -b²/a of the objective's decrease, b = s_i - s_j, a = K_ii +
// K_jj - 2K_ij (τ = 1e-12 in place of a <= 0). The pair's step is the exact minimiser along the direction, clipped
// to the box.
//
// Arithmetic as LIBSVM's: the kernel entries are floats, everything else double, Q's signs applied exactly, ties in
// the selections broken towards the later index; so on the same block the iterates are LIBSVM's (to the rounding
// of a fused multiply-add where the compiler contracts one).
//
// The sweeps run over the variables in SIMD vectors (simd.hpp: 2, 4 or 8 doubles), on s = -y·G rather than G
// (the same numbers: s_t is G_t negated or not, and the update -y_t y_i k_it δ_i adds the same magnitudes), with
// each variable's bounds kept as offsets (0, or ∓infinity where it is not in I_up or I_low) that the step changes
// for i and j only: every sweep branch-free.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "fastkpca/parallel.hpp"
#include "fastkpca/simd.hpp"
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

// kLanes<double> floats: the kernel entries one vector of doubles reads.
typedef float LaneFloats __attribute__((vector_size(simd::kLanes<double> * sizeof(float))));
typedef float LaneFloatsUnaligned __attribute__((vector_size(simd::kLanes<double> * sizeof(float)), aligned(4)));

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

// The sweeps of one local solve over its m variables (see the top of the file), on arrays padded to whole
// vectors: s = -y·G, and per group c the offsets up_[c] (0 where the variable is in I_up of group c, else -∞) and
// low_[c] (0 in I_low of group c, else +∞), so that s + up_[c] is s or -∞ and s + low_[c] is s or +∞.
template <class Equalities>
class Sweeps {
 public:
  static constexpr int G = Equalities::kGroups;
  static constexpr int L = simd::kLanes<double>;
  using DVec = simd::Vec<double>;

  explicit Sweeps(const LocalProblem& p) : p_(p), m_(p.m), padded_((p.m + L - 1) / L * L) {
    s_.assign(static_cast<std::size_t>(padded_), 0.0);
    diag_.assign(static_cast<std::size_t>(padded_), 0.0);
    for (int c = 0; c < G; ++c) {
      up_[c].assign(static_cast<std::size_t>(padded_), -kInf);
      low_[c].assign(static_cast<std::size_t>(padded_), kInf);
    }
    for (Index t = 0; t < m_; ++t) {
      s_[static_cast<std::size_t>(t)] = -p.y[t] * p.grad[t];
      diag_[static_cast<std::size_t>(t)] = p.diag[t];
      bounds(t);
    }
    for (int l = 0; l < L; ++l) lane_[l] = static_cast<double>(l);
  }

  // Variable t's offsets, from its α (after a step moved it).
  void bounds(Index t) {
    const int c = Equalities::group(p_.y[t]);
    const auto k = static_cast<std::size_t>(t);
    up_[c][k] = in_up(p_.y[t], p_.alpha[t], p_.upper[t]) ? 0.0 : -kInf;
    low_[c][k] = in_low(p_.y[t], p_.alpha[t], p_.upper[t]) ? 0.0 : kInf;
  }

  // The largest s in I_up of each group and its variable (ties: the later), after an update by the pair's
  // columns weighted by -y_i δ_i and -y_j δ_j (no update where `ki` is null).
  void update_and_find_tops(const float* ki, double wi, const float* kj, double wj) {
    DVec top[G], arg[G];
    for (int c = 0; c < G; ++c) top[c] = simd::broadcast(-kInf), arg[c] = simd::broadcast(-1.0);
    const DVec vwi = simd::broadcast(wi), vwj = simd::broadcast(wj);
    Index t = 0;
    for (; t + L <= m_; t += L) {
      DVec s = simd::load(s_.data() + t);
      if (ki) {
        s = s - (floats(ki + t) * vwi + floats(kj + t) * vwj);
        simd::store(s_.data() + t, s);
      }
      const DVec index = simd::broadcast(static_cast<double>(t)) + lanes();
      for (int c = 0; c < G; ++c) {
        const DVec u = s + simd::load(up_[c].data() + t);
        const auto better = u >= top[c];
        top[c] = better ? u : top[c];
        arg[c] = better ? index : arg[c];
      }
    }
    for (int c = 0; c < G; ++c) reduce_max(top[c], arg[c], top_[c], arg_[c]);
    for (; t < m_; ++t) {  // the last, partial vector
      if (ki) s_[static_cast<std::size_t>(t)] -= static_cast<double>(ki[t]) * wi + static_cast<double>(kj[t]) * wj;
      for (int c = 0; c < G; ++c) {
        const double u = s_[static_cast<std::size_t>(t)] + up_[c][static_cast<std::size_t>(t)];
        if (u >= top_[c]) top_[c] = u, arg_[c] = t;
      }
    }
  }

  // j: the best second-order decrease -b²/a among I_low with s_j < s_i (i the top of j's group; ties: the later),
  // and i; i = -1 when the gap (the largest over the groups of top - min s in I_low) is below eps or no pair moves.
  void select(double eps, Index& out_i, Index& out_j) const {
    DVec best = simd::broadcast(kInf), arg = simd::broadcast(-1.0), low[G];
    for (int c = 0; c < G; ++c) low[c] = simd::broadcast(kInf);
    DVec top[G], diag_i[G];
    const float* row[G];
    for (int c = 0; c < G; ++c) {
      top[c] = simd::broadcast(top_[c]);
      diag_i[c] = simd::broadcast(arg_[c] >= 0 ? p_.diag[arg_[c]] : 0.0);
      row[c] = arg_[c] >= 0 ? p_.k + arg_[c] * m_ : nullptr;
    }
    const DVec two = simd::broadcast(2.0), tau = simd::broadcast(kTau), zero = simd::broadcast(0.0),
               inf = simd::broadcast(kInf);
    Index t = 0;
    for (; t + L <= m_; t += L) {
      const DVec s = simd::load(s_.data() + t), dt = simd::load(diag_.data() + t);
      const DVec index = simd::broadcast(static_cast<double>(t)) + lanes();
      for (int c = 0; c < G; ++c) {
        if (!row[c]) {  // no I_up in this group: its I_low gives the gap only
          low[c] = simd::min<double>(low[c], s + simd::load(low_[c].data() + t));
          continue;
        }
        const DVec sl = s + simd::load(low_[c].data() + t);  // s in I_low of group c, else +∞
        low[c] = simd::min<double>(low[c], sl);
        const DVec b = top[c] - sl;
        DVec a = diag_i[c] + dt - two * floats(row[c] + t);
        a = a > zero ? a : tau;
        const auto valid = b > zero;
        const DVec decrease = valid ? -(b * b) / a : inf;
        const auto better = valid & (decrease <= best);
        best = better ? decrease : best;
        arg = better ? index : arg;
      }
    }
    double best_value, low_min[G];
    Index j;
    reduce_min(best, arg, best_value, j);
    for (int c = 0; c < G; ++c) low_min[c] = horizontal_min(low[c]);
    for (; t < m_; ++t) {  // the last, partial vector
      const auto k = static_cast<std::size_t>(t);
      for (int c = 0; c < G; ++c) {
        const double sl = s_[k] + low_[c][k];
        low_min[c] = std::min(low_min[c], sl);
        if (!row[c]) continue;
        const double b = top_[c] - sl;
        if (!(b > 0)) continue;
        double a = p_.diag[arg_[c]] + diag_[k] - 2.0 * static_cast<double>(row[c][t]);
        if (a <= 0) a = kTau;
        const double decrease = -(b * b) / a;
        if (decrease <= best_value) best_value = decrease, j = t;
      }
    }
    double gap = top_[0] - low_min[0];
    for (int c = 1; c < G; ++c) gap = std::max(gap, top_[c] - low_min[c]);
    out_j = j;
    out_i = (gap < eps || j < 0) ? -1 : arg_[Equalities::group(p_.y[j])];
  }

  // G from s, into the problem's gradient.
  void finish() const {
    for (Index t = 0; t < m_; ++t) p_.grad[t] = -p_.y[t] * s_[static_cast<std::size_t>(t)];
  }

  double s(Index t) const { return s_[static_cast<std::size_t>(t)]; }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();

  static DVec floats(const float* p) {
    const LaneFloats f = *reinterpret_cast<const LaneFloatsUnaligned*>(p);
    return __builtin_convertvector(f, DVec);
  }
  DVec lanes() const { return simd::load(lane_); }

  // The largest lane and its index (ties: the larger index).
  static void reduce_max(DVec value, DVec index, double& best, Index& at) {
    best = -kInf, at = -1;
    for (int l = 0; l < L; ++l)
      if (value[l] > best || (value[l] == best && index[l] > static_cast<double>(at)))
        best = value[l], at = static_cast<Index>(index[l]);
  }
  // The smallest lane and its index (ties: the larger index), of lanes with an index.
  static void reduce_min(DVec value, DVec index, double& best, Index& at) {
    best = kInf, at = -1;
    for (int l = 0; l < L; ++l)
      if (index[l] >= 0 && (value[l] < best || (value[l] == best && index[l] > static_cast<double>(at))))
        best = value[l], at = static_cast<Index>(index[l]);
  }
  static double horizontal_min(DVec v) {
    double out = kInf;
    for (int l = 0; l < L; ++l) out = std::min(out, v[l]);
    return out;
  }

  const LocalProblem& p_;
  Index m_, padded_;
  std::vector<double> s_, diag_, up_[G], low_[G];
  alignas(64) double lane_[L];
  double top_[G];
  Index arg_[G];
};

}  // namespace detail

// Iterates until the subproblem's gap is below eps or `max_iterations` steps (< 0: no limit) were taken. Each step
// is two sweeps: j's selection, then the gradient's update fused with the next i's.
template <class Equalities>
LocalResult solve_local(const LocalProblem& p, double eps, long long max_iterations, Interrupt& interrupt) {
  LocalResult result;
  detail::Sweeps<Equalities> sweeps(p);
  sweeps.update_and_find_tops(nullptr, 0.0, nullptr, 0.0);
  while (true) {
    Index i, j;
    sweeps.select(eps, i, j);
    if (i < 0) break;
    if (max_iterations >= 0 && result.iterations >= max_iterations) break;
    if ((result.iterations & 1023) == 1023 && interrupt.poll()) break;
    // the pair's gradients from s (pair_step reads G)
    p.grad[i] = -p.y[i] * sweeps.s(i);
    p.grad[j] = -p.y[j] * sweeps.s(j);
    const double old_i = p.alpha[i], old_j = p.alpha[j];
    detail::pair_step(p, i, j);
    const double di = p.alpha[i] - old_i, dj = p.alpha[j] - old_j;
    ++result.iterations;
    sweeps.bounds(i);
    sweeps.bounds(j);
    // s_t -= y_i k_it δ_i + y_j k_jt δ_j (= -y_t times the G update)
    sweeps.update_and_find_tops(p.k + i * p.m, p.y[i] * di, p.k + j * p.m, p.y[j] * dj);
  }
  sweeps.finish();
  interrupt.throw_if_stopped();
  return result;
}

}  // namespace fastkpca::svm
