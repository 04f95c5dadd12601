// Double centering, in place: K <- alpha · H f(K) H with H = I - 11ᵀ/N, where f is the identity (kernel
// matrices) or the square (distances, for classical scaling with alpha = -1/2).
//
// Entrywise, (H F H)_ij = F_ij - r_i - c_j + m with r, c the row and column means of F and m its grand
// mean. Two passes over K: the first reads it once for r and c, the second rewrites it. O(N) extra memory.
//
// Exact symmetry: for a symmetric input the row sums and column sums must come out bit-identical, so they
// are accumulated in the same order. Rows are cut into a fixed list of blocks (independent of the thread
// count); column block sums run down the rows of a block in order, row block sums along the columns of the
// same block boundaries in order, and block sums combine in block order. Then r_i == c_i bitwise, and
// writing F_ij - ((r_i + c_j) - m) is symmetric because + commutes exactly.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

#include "fastkpca/parallel.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca {

enum class CenterInput { kernel, distances, squared_distances };

namespace detail {

constexpr Index kCenterBlocks = 64;

template <class S>
inline double center_map(S v, CenterInput what) {
  const double x = static_cast<double>(v);
  return what == CenterInput::distances ? x * x : x;
}

// Row sums and column-block partial sums for rows [r0, r0 + R) (R rows interleaved for instruction-level
// parallelism; each row's sum is still a chain in column order).
template <int R, class S>
void accumulate_rows(const S* k, Index n, Index r0, const std::vector<Index>& bounds, CenterInput what,
                     double* col_partial, double* row_sum) {
  double total[R] = {};
  for (size_t b = 0; b + 1 < bounds.size(); ++b) {
    double acc[R] = {};
    for (Index j = bounds[b]; j < bounds[b + 1]; ++j) {
      double c = col_partial[j];
      for (int r = 0; r < R; ++r) {
        const double v = center_map(k[(r0 + r) * n + j], what);
        acc[r] += v;
        c += v;
      }
      col_partial[j] = c;
    }
    for (int r = 0; r < R; ++r) total[r] += acc[r];
  }
  for (int r = 0; r < R; ++r) row_sum[r0 + r] = total[r];
}

}  // namespace detail

// Row means and column means of f(K) (square, row-major, n × n) and the grand mean.
template <class S>
void center_means(const S* k, Index n, CenterInput what, Eigen::VectorXd& row_mean, Eigen::VectorXd& col_mean,
                  double& grand_mean, Interrupt& interrupt) {
  const Index nb = std::min(n, detail::kCenterBlocks);
  std::vector<Index> bounds(static_cast<size_t>(nb + 1));
  for (Index b = 0; b <= nb; ++b) bounds[static_cast<size_t>(b)] = b * n / nb;
  Eigen::MatrixXd col_partial = Eigen::MatrixXd::Zero(n, nb);  // column b: sums over row block b
  Eigen::VectorXd row_sum(n);

#pragma omp parallel for schedule(dynamic, 1)
  for (Index b = 0; b < nb; ++b) {
    if (interrupt.poll()) continue;
    double* cp = col_partial.col(b).data();
    Index i = bounds[static_cast<size_t>(b)];
    const Index end = bounds[static_cast<size_t>(b + 1)];
    for (; i + 4 <= end; i += 4) detail::accumulate_rows<4>(k, n, i, bounds, what, cp, row_sum.data());
    for (; i < end; ++i) detail::accumulate_rows<1>(k, n, i, bounds, what, cp, row_sum.data());
  }
  interrupt.throw_if_stopped();

  col_mean.resize(n);
  for (Index j = 0; j < n; ++j) {
    double c = 0;
    for (Index b = 0; b < nb; ++b) c += col_partial(j, b);
    col_mean[j] = c / static_cast<double>(n);
  }
  row_mean = row_sum / static_cast<double>(n);
  double total = 0;
  for (Index i = 0; i < n; ++i) total += row_sum[i];
  grand_mean = total / (static_cast<double>(n) * static_cast<double>(n));
}

// K <- alpha · (f(K) - r 1ᵀ - 1 cᵀ + m), in place; c and m are returned for out-of-sample centering.
// Returns false, leaving K untouched, when the means are not finite (NaN or inf in K, or overflow).
template <class S>
bool double_center(S* k, Index n, CenterInput what, double alpha, Eigen::VectorXd& c, double& m, Interrupt& interrupt) {
  Eigen::VectorXd r;
  center_means(k, n, what, r, c, m, interrupt);
  if (!std::isfinite(m) || !r.allFinite() || !c.allFinite()) return false;
  const Eigen::Array<double, 1, Eigen::Dynamic> ct = c.transpose().array();

#pragma omp parallel for schedule(dynamic, 16)
  for (Index i = 0; i < n; ++i) {
    if (interrupt.poll()) continue;
    auto row = Eigen::Map<Eigen::Array<S, 1, Eigen::Dynamic>>(k + i * n, n);
    const auto shift = (r[i] + ct) - m;
    if (what == CenterInput::distances)
      row = (alpha * (row.template cast<double>().square() - shift)).template cast<S>();
    else row = (alpha * (row.template cast<double>() - shift)).template cast<S>();
  }
  interrupt.throw_if_stopped();
  return true;
}

// Sum of x[0 .. n] in double, in an order fixed by n alone: eight interleaved partial sums combined in
// order. (Eigen's vectorised sum starts at the first aligned element, so its rounding would depend on
// where the caller's buffer happens to sit, and a transform repeated on a fresh array could differ.)
template <class S>
double fixed_order_sum(const S* x, Index n) {
  double acc[8] = {};
  Index j = 0;
  for (; j + 8 <= n; j += 8)
    for (int l = 0; l < 8; ++l) acc[l] += static_cast<double>(x[j + l]);
  for (int l = 0; j < n; ++j, ++l) acc[l] += static_cast<double>(x[j]);
  double total = 0;
  for (double a : acc) total += a;
  return total;
}

// Out-of-sample centering of a cross kernel K' (n_new × n_fit) against the training kernel's column
// means and grand mean, in place, in scikit-learn's order of operations:
// K' <- ((K' - fit_col_mean) - rowmean(K')) + fit_grand_mean.
template <class S>
void center_cross(S* k, Index rows, Index cols, const Eigen::VectorXd& fit_col_mean, double fit_grand_mean,
                  Interrupt& interrupt) {
  const Eigen::Array<double, 1, Eigen::Dynamic> fc = fit_col_mean.transpose().array();
#pragma omp parallel for schedule(dynamic, 16)
  for (Index i = 0; i < rows; ++i) {
    if (interrupt.poll()) continue;
    auto row = Eigen::Map<Eigen::Array<S, 1, Eigen::Dynamic>>(k + i * cols, cols);
    const double row_mean = fixed_order_sum(k + i * cols, cols) / static_cast<double>(cols);
    row = (((row.template cast<double>() - fc) - row_mean) + fit_grand_mean).template cast<S>();
  }
  interrupt.throw_if_stopped();
}

}  // namespace fastkpca
