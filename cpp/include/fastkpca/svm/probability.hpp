// A support vector classifier's probabilities (LIBSVM's procedure, so scikit-learn's): each pair's Platt sigmoid
// fitted to its cross-validated decision values, and the pairs' probabilities coupled into the classes'.
//
// Platt's sigmoid P(+1 | f) = 1 / (1 + exp(A f + B)), (A, B) minimising the cross-entropy Σ_i t_i log(1 + e^{-z_i})
// + (1 - t_i) log(1 + e^{z_i}), z_i = A f_i + B, against Platt's smoothed targets t_i = (N₊ + 1)/(N₊ + 2) for a
// positive sample and 1/(N₋ + 2) for a negative one, from A = 0, B = log((N₋ + 1)/(N₊ + 1)): Newton's method with a
// backtracking line search (Lin, Lin & Weng, Machine Learning 68, 2007), its Hessian regularised by σ = 1e-12, the
// step halved from 1 until the objective decreases by 1e-4 of the step times the slope, stopping when both
// gradient components are below 1e-5, the step falls below 1e-10, or after 100 iterations. Every exponential is
// of -|z|, so none overflows.
//
// Coupling (Wu, Lin & Weng, JMLR 5, 2004, their second method): for r_ij = P(i | i or j) (r_ji = 1 - r_ij), p minimises
// Σ_i Σ_{j≠i} (r_ji p_i - r_ij p_j)² on the simplex, i.e. Q p = (pᵀQp) 1 with Q_tt = Σ_{j≠t} r_jt² and Q_tj =
// -r_jt r_tj. From p = 1/k, each sweep over t moves p_t to satisfy its row, p_t += (pᵀQp - (Qp)_t) / Q_tt, and
// rescales p to the simplex (Qp and pᵀQp updated in O(k) rather than recomputed), until max_t |(Qp)_t - pᵀQp| <
// 0.005/k, recomputed exactly at the start of each sweep, or max(100, k) sweeps: LIBSVM's iteration and stopping
// rule, so the probabilities are scikit-learn's.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "fastkpca/types.hpp"

namespace fastkpca::svm {

namespace detail {

// The cross-entropy of targets t against the sigmoid at z = A f + B.
inline double platt_objective(Index n, const double* f, const double* t, double a, double b) {
  double sum = 0;
  for (Index i = 0; i < n; ++i) {
    const double z = f[i] * a + b;
    sum += (z >= 0 ? t[i] * z : (t[i] - 1) * z) + std::log1p(std::exp(-std::abs(z)));
  }
  return sum;
}

}  // namespace detail

struct Sigmoid {
  double a = 0, b = 0;
};

// (A, B) for decision values f and their classes (positive[i] != 0: the positive class), see above.
inline Sigmoid platt_sigmoid(Index n, const double* f, const std::uint8_t* positive) {
  double n_pos = 0;
  for (Index i = 0; i < n; ++i) n_pos += positive[i] != 0;
  const double n_neg = static_cast<double>(n) - n_pos;
  std::vector<double> t(static_cast<std::size_t>(n));
  for (Index i = 0; i < n; ++i)
    t[static_cast<std::size_t>(i)] = positive[i] ? (n_pos + 1) / (n_pos + 2) : 1 / (n_neg + 2);
  Sigmoid s{0.0, std::log((n_neg + 1) / (n_pos + 1))};
  double value = detail::platt_objective(n, f, t.data(), s.a, s.b);
  constexpr double sigma = 1e-12, min_step = 1e-10, gradient_tol = 1e-5;
  for (int iteration = 0; iteration < 100; ++iteration) {
    double h11 = sigma, h22 = sigma, h21 = 0, g1 = 0, g2 = 0;
    for (Index i = 0; i < n; ++i) {
      const double z = f[i] * s.a + s.b, e = std::exp(-std::abs(z));
      const double p = z >= 0 ? e / (1 + e) : 1 / (1 + e);  // the sigmoid 1/(1 + e^z)
      const double d2 = p * (1 - p), d1 = t[static_cast<std::size_t>(i)] - p;
      h11 += f[i] * f[i] * d2;
      h22 += d2;
      h21 += f[i] * d2;
      g1 += f[i] * d1;
      g2 += d1;
    }
    if (std::abs(g1) < gradient_tol && std::abs(g2) < gradient_tol) break;
    const double det = h11 * h22 - h21 * h21;
    const double da = -(h22 * g1 - h21 * g2) / det, db = -(-h21 * g1 + h11 * g2) / det;
    const double slope = g1 * da + g2 * db;
    double step = 1.0;
    while (step >= min_step) {
      const double a = s.a + step * da, b = s.b + step * db;
      const double next = detail::platt_objective(n, f, t.data(), a, b);
      if (next < value + 1e-4 * step * slope) {
        s = {a, b};
        value = next;
        break;
      }
      step /= 2;
    }
    if (step < min_step) break;
  }
  return s;
}

// p (k values) from r (k × k, row-major; its diagonal unused) for one sample.
inline void couple_pairwise(Index k, const double* r, double* p, std::vector<double>& q, std::vector<double>& qp) {
  q.assign(static_cast<std::size_t>(k * k), 0.0);
  qp.assign(static_cast<std::size_t>(k), 0.0);
  for (Index t = 0; t < k; ++t) {
    p[t] = 1.0 / static_cast<double>(k);
    double diagonal = 0;
    for (Index j = 0; j < k; ++j) {
      if (j == t) continue;
      diagonal += r[j * k + t] * r[j * k + t];
      q[static_cast<std::size_t>(t * k + j)] = -r[j * k + t] * r[t * k + j];
    }
    q[static_cast<std::size_t>(t * k + t)] = diagonal;
  }
  const double eps = 0.005 / static_cast<double>(k);
  const Index sweeps = std::max<Index>(100, k);
  for (Index sweep = 0; sweep < sweeps; ++sweep) {
    double pqp = 0;
    for (Index t = 0; t < k; ++t) {
      double sum = 0;
      for (Index j = 0; j < k; ++j) sum += q[static_cast<std::size_t>(t * k + j)] * p[j];
      qp[static_cast<std::size_t>(t)] = sum;
      pqp += p[t] * sum;
    }
    double error = 0;
    for (Index t = 0; t < k; ++t) error = std::max(error, std::abs(qp[static_cast<std::size_t>(t)] - pqp));
    if (error < eps) break;
    for (Index t = 0; t < k; ++t) {
      const double qtt = q[static_cast<std::size_t>(t * k + t)], qpt = qp[static_cast<std::size_t>(t)];
      const double diff = (-qpt + pqp) / qtt;
      p[t] += diff;
      pqp = (pqp + diff * (diff * qtt + 2 * qpt)) / (1 + diff) / (1 + diff);
      for (Index j = 0; j < k; ++j) {
        qp[static_cast<std::size_t>(j)] =
            (qp[static_cast<std::size_t>(j)] + diff * q[static_cast<std::size_t>(t * k + j)]) / (1 + diff);
        p[j] /= (1 + diff);
      }
    }
  }
}

}  // namespace fastkpca::svm
