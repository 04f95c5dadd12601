// The traces a Gaussian process likelihood's gradient needs from one radial term κ(r) of its kernel, r the
// distance of the samples scaled by their length scales (X̃ = X/ℓ), against a symmetric weight matrix W
// (python/fastkpca/kernels/gaussian_process.py says how they combine):
//
//   sum_kernel = Σ_ik W_ik κ(r_ik)                   (the term's constant and, with it, every trace of c·κ)
//   sum_radial = Σ_ik W_ik G(r_ik) r_ik²             (one length scale: ∂κ/∂log ℓ = G(r) r²)
//   MV         = M·[𝟙, X̃], M = W ∘ G                 (per-feature length scales: ∂κ/∂log ℓ_j = G(r)(x̃_j − ỹ_j)²)
//
// with G the radial derivative: RBF κ = e^(−r²/2), G = κ; Matern ½ κ = e^(−r), G = e^(−r)/r (0 at r = 0, as
// scikit-learn takes it); 3/2 κ = (1 + √3 r) e^(−√3 r), G = 3 e^(−√3 r); 5/2 κ = (1 + √5 r + 5r²/3) e^(−√5 r),
// G = (5/3)(1 + √5 r) e^(−√5 r). No ∂K/∂θ is ever held: each tile of it is computed where W's tile is read.
//
// W comes whole (the exact likelihood's n × n weights) or as W = ½(A Bᵀ + B Aᵀ) from two n × m factors (the
// iterative likelihood's: A = [α, K̂⁻¹z_1, …], B = [α, −P⁻¹z_1/t, …]), each tile of which is formed by one small
// product where it is read: then a pass costs O(n²(d + m)) and memory O(n·m), never n².
//
// The lower tiles of W are the units of a triangle pass (FixedBlocks, block_product.hpp): fixed runs of tile
// rows, each summing its own partial sums and collecting its mirrored products for earlier rows in its own
// buffer, all added in run order; the distances are the exact Σ_j (x̃_ij − x̃_kj)², not an expansion. Within
// a tile, κ and G are evaluated a SIMD vector of columns at a time (simd.hpp's exponential, within an ulp of
// std::exp), the tile of M = W ∘ G is kept, and its shares of M·[𝟙, X̃] are two small matrix products
// (M_IJ·V_J for the tile's rows, M_IJᵀ·V_I for its columns). The results do not depend on the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "fastkpca/block_product.hpp"
#include "fastkpca/packed.hpp"
#include "fastkpca/parallel.hpp"
#include "fastkpca/simd.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca {

enum class Radial { rbf, matern12, matern32, matern52 };

inline Radial radial_named(const std::string& name) {
  if (name == "rbf") return Radial::rbf;
  if (name == "matern12") return Radial::matern12;
  if (name == "matern32") return Radial::matern32;
  if (name == "matern52") return Radial::matern52;
  throw std::invalid_argument("no radial kernel '" + name + "' (rbf, matern12, matern32, matern52)");
}

// κ(r) and G(r) from r² (r = √r²).
template <Radial R>
inline void radial_values(double r2, double& kernel, double& derivative) {
  if constexpr (R == Radial::rbf) {
    kernel = std::exp(-0.5 * r2);
    derivative = kernel;
  } else if constexpr (R == Radial::matern12) {
    const double r = std::sqrt(r2), e = std::exp(-r);
    kernel = e;
    derivative = r > 0 ? e / r : 0.0;
  } else if constexpr (R == Radial::matern32) {
    const double s = std::sqrt(3.0 * r2), e = std::exp(-s);
    kernel = (1.0 + s) * e;
    derivative = 3.0 * e;
  } else {
    const double s = std::sqrt(5.0 * r2), e = std::exp(-s);
    kernel = (1.0 + s + s * s / 3.0) * e;
    derivative = 5.0 / 3.0 * (1.0 + s) * e;
  }
}

// κ and G of a SIMD vector of r² (the same formulas, simd.hpp's exponential).
template <Radial R>
inline void radial_values(simd::Vec<double> r2, simd::Vec<double>& kernel, simd::Vec<double>& derivative) {
  using V = simd::Vec<double>;
  if constexpr (R == Radial::rbf) {
    kernel = simd::exp_nonpositive<double>(r2 * -0.5);
    derivative = kernel;
  } else if constexpr (R == Radial::matern12) {
    const V r = simd::sqrt<double>(r2), e = simd::exp_nonpositive<double>(-r);
    const V zero = simd::broadcast<double>(0.0), one = simd::broadcast<double>(1.0);
    kernel = e;
    derivative = r > zero ? e / (r > zero ? r : one) : zero;
  } else if constexpr (R == Radial::matern32) {
    const V s = simd::sqrt<double>(r2 * 3.0), e = simd::exp_nonpositive<double>(-s);
    kernel = (s + 1.0) * e;
    derivative = e * 3.0;
  } else {
    const V s = simd::sqrt<double>(r2 * 5.0), e = simd::exp_nonpositive<double>(-s);
    kernel = (s + s * s / 3.0 + 1.0) * e;
    derivative = (s + 1.0) * e * (5.0 / 3.0);
  }
}

struct RadialTraces {
  double sum_kernel = 0, sum_radial = 0;
  RowMatrix<double> product;  // M·[𝟙, X̃], n × (d + 1), when asked for
};

// W held whole, row-major with `stride` entries per row: n × n (a symmetric pass) or a rectangular block
// W_XY (a cross pass).
struct DenseWeights {
  const double* w;
  Index stride;
  // W's tile over rows i0 … i0 + rows and columns k0 … k0 + cols: W_ik = p[(i − i0)·ld + (k − k0)].
  const double* tile(Index i0, Index, Index k0, Index, std::vector<double>&, Index& ld) const {
    ld = stride;
    return w + i0 * stride + k0;
  }
};

// W = ½(A Bᵀ + B Aᵀ), A and B row-major n × m: each tile formed into the thread's buffer. For a block
// W_IJ of the whole W (a distributed pass's pair of row blocks), the rows' factors are A_I, B_I and the
// columns' A_J, B_J; a symmetric pass takes the same factors for both.
struct LowRankWeights {
  ConstRowMatrixMap<double> a, b, a_cols, b_cols;
  LowRankWeights(const ConstRowMatrixMap<double>& a_, const ConstRowMatrixMap<double>& b_)
      : a(a_), b(b_), a_cols(a_), b_cols(b_) {}
  LowRankWeights(const ConstRowMatrixMap<double>& a_, const ConstRowMatrixMap<double>& b_,
                 const ConstRowMatrixMap<double>& a_cols_, const ConstRowMatrixMap<double>& b_cols_)
      : a(a_), b(b_), a_cols(a_cols_), b_cols(b_cols_) {}
  const double* tile(Index i0, Index rows, Index k0, Index cols, std::vector<double>& buffer, Index& ld) const {
    ld = cols;
    buffer.resize(static_cast<std::size_t>(rows * cols));
    RowMatrixMap<double> t(buffer.data(), rows, cols);
    t.noalias() = a.middleRows(i0, rows) * b_cols.middleRows(k0, cols).transpose();
    t.noalias() += b.middleRows(i0, rows) * a_cols.middleRows(k0, cols).transpose();
    t *= 0.5;
    return buffer.data();
  }
};

namespace detail {

struct TraceScratch {
  std::vector<double> r2, tile, m;  // a row's r², W's tile (when formed), M's tile
};

struct RowSums {
  double kernel = 0, radial = 0;
};

// Σ_k w_k κ(r_k) and Σ_k w_k G(r_k) r_k² over one row's stretch of `count` columns (r² and W's entries
// given), a vector of columns at a time and the rest one by one; with m, M's entries w_k G(r_k) stored there.
template <Radial R>
inline RowSums radial_row(const double* r2, const double* w, Index count, double* m) {
  using V = simd::Vec<double>;
  constexpr Index L = simd::kLanes<double>;
  V sum_kernel = simd::broadcast<double>(0.0), sum_radial = sum_kernel;
  Index k = 0;
  for (; k + L <= count; k += L) {
    const V dist2 = simd::load(r2 + k), weight = simd::load(w + k);
    V kernel, derivative;
    radial_values<R>(dist2, kernel, derivative);
    sum_kernel += weight * kernel;
    sum_radial += weight * derivative * dist2;
    if (m) simd::store(m + k, weight * derivative);
  }
  RowSums out;
  for (Index l = 0; l < L; ++l) {
    out.kernel += sum_kernel[l];
    out.radial += sum_radial[l];
  }
  for (; k < count; ++k) {
    double kernel, derivative;
    radial_values<R>(r2[k], kernel, derivative);
    out.kernel += w[k] * kernel;
    out.radial += w[k] * derivative * r2[k];
    if (m) m[k] = w[k] * derivative;
  }
  return out;
}

// [𝟙, X̃] row-major, the right-hand factor of M·[𝟙, X̃].
inline RowMatrix<double> ones_and(const ConstRowMatrixMap<double>& x) {
  RowMatrix<double> v(x.rows(), x.cols() + 1);
  v.col(0).setOnes();
  v.rightCols(x.cols()) = x;
  return v;
}

// r2[k − k0] = ‖x_i − y_k‖² for k0 <= k < k1, summed feature by feature (x and y column-major, d features).
inline void squared_distances(const ColMatrix<double>& x, Index i, const ColMatrix<double>& y, Index k0, Index k1,
                              double* r2) {
  for (Index k = k0; k < k1; ++k) r2[k - k0] = 0.0;
  for (Index j = 0; j < x.cols(); ++j) {
    const double xi = x(i, j);
    const double* col = y.data() + j * y.rows();
    for (Index k = k0; k < k1; ++k) {
      const double diff = xi - col[k];
      r2[k - k0] += diff * diff;
    }
  }
}

template <Radial R, class Weights>
RadialTraces radial_traces(const ConstRowMatrixMap<double>& x, const Weights& weights, bool want_product,
                           Interrupt& interrupt) {
  constexpr Index T = kPackedTile;
  const Index n = x.rows(), nt = packed_tiles(n), ldv = want_product ? x.cols() + 1 : 0;
  // X̃ column-major: the coordinates of consecutive samples side by side, as the inner loop reads them.
  const ColMatrix<double> xc = x;
  const RowMatrix<double> v = want_product ? ones_and(x) : RowMatrix<double>();
  double kernel_at_0, derivative_at_0;  // the diagonal's r² = 0
  radial_values<R>(0.0, kernel_at_0, derivative_at_0);
  RadialTraces out;
  out.product = RowMatrix<double>::Zero(n, std::max<Index>(ldv, 1));
  FixedBlocks runs = FixedBlocks::triangle(nt, T, FixedBlocks::kMaxBlocks, want_product ? ldv : 0);
  std::vector<double> sums_k(static_cast<std::size_t>(nt), 0.0), sums_r(static_cast<std::size_t>(nt), 0.0);
  runs.run(
      interrupt, [] { return TraceScratch(); },
      [&](TraceScratch& scratch, Index begin, Index end, double* wt) {
        double sk = 0, sr = 0;
        scratch.r2.resize(static_cast<std::size_t>(T));
        if (want_product) scratch.m.resize(static_cast<std::size_t>(T * T));
        double* r2 = scratch.r2.data();
        for (Index I = begin; I < end; ++I) {
          if (interrupt.poll()) break;
          const Index i0 = I * T, rows = std::min(n, i0 + T) - i0;
          for (Index J = 0; J <= I; ++J) {
            const Index k0 = J * T, cols = std::min(n, k0 + T) - k0;
            Index ldw = 0;
            const double* w_tile = weights.tile(i0, rows, k0, cols, scratch.tile, ldw);
            double* m_tile = want_product ? scratch.m.data() : nullptr;  // rows × cols
            for (Index r = 0; r < rows; ++r) {
              const double* wi = w_tile + r * ldw;  // wi[c] = W(i0 + r, k0 + c)
              double* mi = m_tile ? m_tile + r * cols : nullptr;
              // Off the diagonal every entry stands for itself and its mirror; a diagonal tile's row is its
              // stretch below the diagonal (twice) and the diagonal entry (once).
              const Index count = I == J ? r : cols;
              squared_distances(xc, i0 + r, xc, k0, k0 + count, r2);
              const RowSums row = radial_row<R>(r2, wi, count, mi);
              sk += 2.0 * row.kernel;
              sr += 2.0 * row.radial;
              if (I != J) continue;
              sk += wi[r] * kernel_at_0;
              if (mi) mi[r] = wi[r] * derivative_at_0;
            }
            if (!want_product) continue;
            RowMatrixMap<double> m(m_tile, rows, cols);
            auto product_rows = out.product.middleRows(i0, rows);
            if (I == J) {  // M_II whole from its lower triangle: its share is M_II·V_I
              for (Index r = 0; r < rows; ++r)
                for (Index c = 0; c < r; ++c) m(c, r) = m(r, c);
              product_rows.noalias() += m * v.middleRows(i0, rows);
              continue;
            }
            product_rows.noalias() += m * v.middleRows(k0, cols);
            // the mirror's share, M_IJᵀ·V_I, for rows of J: this run's own rows directly, earlier ones in wt
            RowMatrixMap<double> mirrored = J >= begin ? RowMatrixMap<double>(out.product.data(), n, ldv)
                                                       : RowMatrixMap<double>(wt, begin * T, ldv);
            mirrored.middleRows(k0, cols).noalias() += m.transpose() * v.middleRows(i0, rows);
          }
        }
        sums_k[static_cast<std::size_t>(begin)] = sk;
        sums_r[static_cast<std::size_t>(begin)] = sr;
      });
  interrupt.throw_if_stopped();
  if (want_product) runs.add_transposed(out.product.data(), n);
  for (Index p = 0; p < runs.size(); ++p) {  // in run order: the same sums on any number of threads
    if (runs.begin(p) == runs.end(p)) continue;  // an empty run (fewer tile rows than runs) was never run
    out.sum_kernel += sums_k[static_cast<std::size_t>(runs.begin(p))];
    out.sum_radial += sums_r[static_cast<std::size_t>(runs.begin(p))];
  }
  if (!want_product) out.product.resize(0, 0);
  return out;
}

// The traces over one rectangular block W_XY (rows: samples x; columns: samples y): a pair of row blocks
// of a symmetric W in a distributed pass (LowRankWeights), or a block of its own (DenseWeights: the
// Gaussian process preconditioner's ∂K(X, X_S) terms, solvers/gaussian_process/control_variate.py). On one thread, tile
// by tile in a fixed order: sum_kernel and sum_radial over the block once (the caller counts any mirror
// W_YX), and with want_product the block's shares of M·[𝟙, X̃]: the first nx rows of `product` are
// M_XY·[𝟙, Ỹ] (for the samples x), the next ny rows M_XYᵀ·[𝟙, X̃] (for the samples y).
template <Radial R, class Weights>
RadialTraces radial_cross_traces(const ConstRowMatrixMap<double>& x, const ConstRowMatrixMap<double>& y,
                                 const Weights& weights, bool want_product, Interrupt& interrupt) {
  constexpr Index T = kPackedTile;
  const Index nx = x.rows(), ny = y.rows(), ldv = x.cols() + 1;
  const ColMatrix<double> xc = x, yc = y;
  const RowMatrix<double> vx = want_product ? ones_and(x) : RowMatrix<double>();
  const RowMatrix<double> vy = want_product ? ones_and(y) : RowMatrix<double>();
  RadialTraces out;
  out.product = RowMatrix<double>::Zero(want_product ? nx + ny : 0, ldv);
  TraceScratch scratch;
  scratch.r2.resize(static_cast<std::size_t>(T));
  if (want_product) scratch.m.resize(static_cast<std::size_t>(T * T));
  double* r2 = scratch.r2.data();
  for (Index i0 = 0; i0 < nx; i0 += T) {
    if (interrupt.poll()) break;
    const Index rows = std::min(nx, i0 + T) - i0;
    for (Index k0 = 0; k0 < ny; k0 += T) {
      const Index cols = std::min(ny, k0 + T) - k0;
      Index ldw = 0;
      const double* w_tile = weights.tile(i0, rows, k0, cols, scratch.tile, ldw);
      double* m_tile = want_product ? scratch.m.data() : nullptr;
      for (Index r = 0; r < rows; ++r) {
        squared_distances(xc, i0 + r, yc, k0, k0 + cols, r2);
        const RowSums row = radial_row<R>(r2, w_tile + r * ldw, cols, m_tile ? m_tile + r * cols : nullptr);
        out.sum_kernel += row.kernel;
        out.sum_radial += row.radial;
      }
      if (!want_product) continue;
      RowMatrixMap<double> m(m_tile, rows, cols);
      out.product.middleRows(i0, rows).noalias() += m * vy.middleRows(k0, cols);
      out.product.middleRows(nx + k0, cols).noalias() += m.transpose() * vx.middleRows(i0, rows);
    }
  }
  interrupt.throw_if_stopped();
  if (!want_product) out.product.resize(0, 0);
  return out;
}

}  // namespace detail

// The traces over a block W_XY (see detail::radial_cross_traces), on one thread.
template <class Weights>
RadialTraces radial_cross_traces(Radial kind, const ConstRowMatrixMap<double>& x, const ConstRowMatrixMap<double>& y,
                                 const Weights& w, bool want_product, Interrupt& interrupt) {
  switch (kind) {
    case Radial::rbf: return detail::radial_cross_traces<Radial::rbf>(x, y, w, want_product, interrupt);
    case Radial::matern12: return detail::radial_cross_traces<Radial::matern12>(x, y, w, want_product, interrupt);
    case Radial::matern32: return detail::radial_cross_traces<Radial::matern32>(x, y, w, want_product, interrupt);
    case Radial::matern52: return detail::radial_cross_traces<Radial::matern52>(x, y, w, want_product, interrupt);
  }
  throw std::logic_error("invalid Radial value");
}

// The traces of one radial term (see the top of this file) for scaled samples x (n × d, row-major) and the
// symmetric weights W (DenseWeights or LowRankWeights).
template <class Weights>
RadialTraces radial_traces(Radial kind, const ConstRowMatrixMap<double>& x, const Weights& w, bool want_product,
                           Interrupt& interrupt) {
  switch (kind) {
    case Radial::rbf: return detail::radial_traces<Radial::rbf>(x, w, want_product, interrupt);
    case Radial::matern12: return detail::radial_traces<Radial::matern12>(x, w, want_product, interrupt);
    case Radial::matern32: return detail::radial_traces<Radial::matern32>(x, w, want_product, interrupt);
    case Radial::matern52: return detail::radial_traces<Radial::matern52>(x, w, want_product, interrupt);
  }
  throw std::logic_error("invalid Radial value");
}

// Σ_ik W_ik of an n × n row-major matrix, by rows in a fixed order.
inline double matrix_sum(const double* w, Index n) {
  std::vector<double> rows(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static)
  for (Index i = 0; i < n; ++i) {
    double s = 0;
    for (Index k = 0; k < n; ++k) s += w[i * n + k];
    rows[static_cast<std::size_t>(i)] = s;
  }
  double total = 0;
  for (double s : rows) total += s;
  return total;
}

}  // namespace fastkpca
