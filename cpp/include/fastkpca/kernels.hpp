// Kernel functions k(x, y), each as a small functor that turns a tile of inner products (or L1 distances)
// into kernel values in place. Formulas and defaults follow sklearn.metrics.pairwise.
//
// A functor is a template over the scalar type S and the kernel kind K it evaluates (kernel_registry.hpp
// instantiates functor<S, kind> for every entry of kernel_list.hpp). Every functor has:
//   prepare(X, Y)  -> a working copy of the rows the tile products read (shifted, normalised or
//                     transposed as the kernel needs), O((n_X + n_Y)·d) memory;
//   tile(...)      -> fills out[i, j] = k(x_i, y_j) for one rectangular tile (with a 64-byte aligned
//                     scratch of detail::kTileScratch elements, two tile rows).
// gram.hpp and kernel_tiles.hpp drive them over tiles; adding a kernel means adding one functor here and
// one line to kernel_list.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <type_traits>

#include "fastkpca/kernel_list.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca {

// Rows of the left (X) and right (Y) operands as a tile kernel reads them.
// When Y is X (symmetric), y and y_sq stay empty and the right-hand accessors return X's.
template <class S>
struct Operands {
  bool has_y = false;
  RowMatrix<S> x, y;          // row-major working copies (n × d)
  Vector<S> x_sq, y_sq;       // squared row norms, for the distance expansion
  RowMatrix<S> y_t;           // Y transposed and padded (d × n_padded), for the L1 tile kernel

  const RowMatrix<S>& rhs() const { return has_y ? y : x; }
  const Vector<S>& rhs_sq() const { return has_y ? y_sq : x_sq; }
};

namespace detail {

// Elements of the per-thread scratch that gram.hpp hands to tile kernels: two tile rows.
constexpr Index kTileScratch = 512;

// out[i, j] = <x_i, y_j> for one tile, written straight into the output block by Eigen's GEMM
// (sequential inside: the tiles themselves are the parallel unit).
template <class S>
void tile_dot(const Operands<S>& op, Index i0, Index ni, Index j0, Index nj, S* out, Index ld) {
  using Stride = Eigen::OuterStride<>;
  Eigen::Map<RowMatrix<S>, 0, Stride> block(out, ni, nj, Stride(ld));
  block.noalias() = op.x.middleRows(i0, ni) * op.rhs().middleRows(j0, nj).transpose();
}

// row[0 .. n] = f(row[0 .. n]) through an aligned scratch strip. Eigen's vectorised exp/pow/tanh may
// round differently from their scalar fallbacks, and it uses the fallback on a row's unaligned head: going
// through an aligned strip makes every output independent of where the output buffer happens to sit.
template <class S, class F>
void transform_row(S* row, Index n, S* scratch, F f) {
  Eigen::Map<Eigen::Array<S, Eigen::Dynamic, 1>, Eigen::AlignedMax> strip(scratch, n);
  strip = Eigen::Map<const Eigen::Array<S, Eigen::Dynamic, 1>>(row, n);
  strip = f(strip);
  Eigen::Map<Eigen::Array<S, Eigen::Dynamic, 1>>(row, n) = strip;
}

// row = (g · row + c0)^degree for a whole degree, by repeated multiplication in aligned strips
// (scratch holds two tile rows).
// Eigen's vectorised exp clamps its argument and returns a subnormal (about 5.6e-309 in double) for
// anything below about -709, where the exact result is that small or 0: results below the smallest
// normal number are flushed to 0, so that huge distances or gammas give exact zeros (an absolute change
// below 2.3e-308 in double, 1.2e-38 in float). A plain loop that the compiler vectorises.
template <class S>
void flush_subnormal(S* x, Index n) {
  const S smallest = std::numeric_limits<S>::min();
  for (Index j = 0; j < n; ++j) x[j] = x[j] < smallest ? S(0) : x[j];
}

template <class S>
void int_power_row(S* row, Index n, S* scratch, S g, S c0, int degree) {
  using Strip = Eigen::Map<Eigen::Array<S, Eigen::Dynamic, 1>, Eigen::AlignedMax>;
  Strip base(scratch, n), power(scratch + kTileScratch / 2, n);
  base = g * Eigen::Map<const Eigen::Array<S, Eigen::Dynamic, 1>>(row, n) + c0;
  power.setOnes();
  for (int i = 0; i < degree; ++i) power *= base;
  Eigen::Map<Eigen::Array<S, Eigen::Dynamic, 1>>(row, n) = power;
}

// Shift the rows of X and Y by the column means of the right operand (Y, or X when Y is X), computed in
// double. Squared Euclidean distances do not notice the shift, but the expansion |x|^2 + |y|^2 - 2 x.y
// loses far less to cancellation when the data sit far from the origin (features near 100 ± 1 leave
// float32 with nothing but rounding otherwise). Shifting by the right operand's means makes a cross
// kernel's rows independent of which other rows of X are in the same call (a transform computed in
// chunks equals the one-shot one).
template <class S>
void center_rows(Operands<S>& op) {
  RowMatrix<S>& x = op.x;
  RowMatrix<S>& y = op.y;
  const RowMatrix<S>& ref = op.has_y ? y : x;
  const Index d = x.cols();
  Eigen::VectorXd mean = Eigen::VectorXd::Zero(d);
  for (Index i = 0; i < ref.rows(); ++i) mean += ref.row(i).transpose().template cast<double>();
  mean /= static_cast<double>(ref.rows());
  const Eigen::Matrix<double, 1, Eigen::Dynamic> m = mean.transpose();
  for (Index i = 0; i < x.rows(); ++i) x.row(i) = (x.row(i).template cast<double>() - m).template cast<S>();
  if (op.has_y)
    for (Index i = 0; i < y.rows(); ++i) y.row(i) = (y.row(i).template cast<double>() - m).template cast<S>();
}

}  // namespace detail

// Inner-product kernels: linear, poly, sigmoid, cosine (cosine = linear on L2-normalised rows). A kind
// declared with this functor but not handled below fails to compile.
template <class S, KernelKind K>
struct DotKernel {
  static_assert(K == KernelKind::linear || K == KernelKind::poly || K == KernelKind::sigmoid ||
                    K == KernelKind::cosine,
                "DotKernel does not evaluate this kernel kind: handle it in tile() and prepare()");
  KernelParams p;

  void prepare(Operands<S>& op) const {
    if constexpr (K == KernelKind::cosine) {
      // Zero rows stay zero, so their similarities come out 0, as in scikit-learn.
      auto normalise = [](RowMatrix<S>& m) {
        for (Index i = 0; i < m.rows(); ++i) {
          const double n = m.row(i).template cast<double>().stableNorm();  // no overflow near 1e155
          if (n > 0) m.row(i) = (m.row(i).template cast<double>() / n).template cast<S>();
        }
      };
      normalise(op.x);
      if (op.has_y) normalise(op.y);
    } else {
      (void)op;  // linear, poly, sigmoid read the data as it is
    }
  }

  void tile(const Operands<S>& op, Index i0, Index ni, Index j0, Index nj, S* out, Index ld, S* scratch) const {
    detail::tile_dot(op, i0, ni, j0, nj, out, ld);
    const S g = static_cast<S>(p.gamma), c0 = static_cast<S>(p.coef0);
    if constexpr (K == KernelKind::poly) {
      // Small whole degrees by repeated multiplication (vectorised, <= degree - 1 roundings) instead of
      // the generic pow = exp(degree · log(base)).
      const S deg = static_cast<S>(p.degree);
      const bool whole = p.degree == std::floor(p.degree) && p.degree <= 16;
      for (Index r = 0; r < ni; ++r) {
        if (whole)
          detail::int_power_row(out + r * ld, nj, scratch, g, c0, static_cast<int>(p.degree));
        else
          detail::transform_row(out + r * ld, nj, scratch, [&](const auto& x) { return (g * x + c0).pow(deg); });
      }
    } else if constexpr (K == KernelKind::sigmoid) {
      for (Index r = 0; r < ni; ++r)
        detail::transform_row(out + r * ld, nj, scratch, [&](const auto& x) { return (g * x + c0).tanh(); });
    } else {
      static_assert(K == KernelKind::linear || K == KernelKind::cosine);  // the inner product itself
      (void)g, (void)c0, (void)scratch;
    }
  }
};

// exp(-gamma |x - y|^2) through the GEMM expansion, clipped at 0 (rounding can make it negative).
template <class S, KernelKind K>
struct RbfKernel {
  static_assert(K == KernelKind::rbf, "RbfKernel evaluates the rbf kernel only");
  KernelParams p;
  double gamma_eff = 0;  // gamma after rescaling huge data (see prepare)

  void prepare(Operands<S>& op) {
    detail::center_rows(op);
    // Data near 1e150 would overflow |x|^2; scale it to unit size and fold the scale into gamma,
    // which may then overflow to +inf: the tile maps distance 0 to 1 and anything else to 0 then.
    double scale = op.x.cwiseAbs().maxCoeff();
    if (op.has_y) scale = std::max(scale, static_cast<double>(op.y.cwiseAbs().maxCoeff()));
    gamma_eff = p.gamma;
    if (scale > 1e60) {
      op.x /= static_cast<S>(scale);
      if (op.has_y) op.y /= static_cast<S>(scale);
      gamma_eff = p.gamma * scale * scale;
    }
    op.x_sq = op.x.rowwise().squaredNorm();
    if (op.has_y) op.y_sq = op.y.rowwise().squaredNorm();
  }

  // Squared distances whose expansion cancelled heavily: in float32 the expansion's rounding, a few
  // ε·(|x|² + |y|²), can be most of a small distance (γ = 1, |x - m|² ≈ 250 gave k(x, x) = 0.99997).
  // Entries with d² < (|x|² + |y|²)/8 are recomputed as Σ (x_k - y_k)² accumulated in double; the others
  // keep a relative error below about 8·(2 + √d)·ε, so |Δk| ≤ γ d² e^(-γ d²)·that ≤ 1e-5 at d ≤ 256.
  // In float64 the same bound is about 1e-13 and nothing is recomputed.
  static constexpr double kCancellationRatio = 0.125;

  void tile(const Operands<S>& op, Index i0, Index ni, Index j0, Index nj, S* out, Index ld, S* scratch) const {
    detail::tile_dot(op, i0, ni, j0, nj, out, ld);
    const S ng = static_cast<S>(-gamma_eff);
    const auto ysq = op.rhs_sq().segment(j0, nj).array();
    using Strip = Eigen::Map<Eigen::Array<S, Eigen::Dynamic, 1>, Eigen::AlignedMax>;
    Strip d2(scratch, nj);
    for (Index r = 0; r < ni; ++r) {
      S* row = out + r * ld;
      const S xsq = op.x_sq[i0 + r];
      d2 = (xsq + ysq - S(2) * Eigen::Map<const Eigen::Array<S, Eigen::Dynamic, 1>>(row, nj)).max(S(0));
      if constexpr (std::is_same_v<S, float>) {
        const S* x = op.x.data() + (i0 + r) * op.x.cols();
        for (Index j = 0; j < nj; ++j) {
          if (d2[j] >= static_cast<S>(kCancellationRatio) * (xsq + ysq[j])) continue;
          const S* y = op.rhs().data() + (j0 + j) * op.x.cols();
          double exact = 0;
          for (Index k = 0; k < op.x.cols(); ++k) {
            const double diff = static_cast<double>(x[k]) - static_cast<double>(y[k]);
            exact += diff * diff;
          }
          d2[j] = static_cast<S>(exact);
        }
      }
      // Eigen's select() is not vectorised and would send every entry to the scalar exp, so the guard
      // (d2 > 0 ? -gamma d2 : 0), which keeps 0 · inf from giving NaN, runs only when gamma overflowed.
      if (std::isfinite(ng))
        d2 = (ng * d2).exp();
      else
        d2 = (d2 > S(0)).select(ng * d2, S(0)).exp();
      detail::flush_subnormal(d2.data(), nj);
      Eigen::Map<Eigen::Array<S, Eigen::Dynamic, 1>>(row, nj) = d2;
    }
  }
};

// exp(-gamma |x - y|_1) with a register-tiled L1 distance kernel: R rows of X against W columns of Y
// at a time, Y read transposed so the W columns are contiguous and the inner loop vectorises.
template <class S, KernelKind K>
struct LaplacianKernel {
  static_assert(K == KernelKind::laplacian, "LaplacianKernel evaluates the laplacian kernel only");
  KernelParams p;
  static constexpr Index W = 64 / static_cast<Index>(sizeof(S)) * 2;  // two 512-bit vectors of columns
  static constexpr Index R = 4;

  void prepare(Operands<S>& op) const {
    const RowMatrix<S>& y = op.rhs();
    // l1_block reads a whole strip of W columns from the tile's first column j0 on, and a tile may start at
    // any column (the diagonal evaluates the single entry (i, i)): W zero columns after the last one keep
    // every strip that starts inside Y inside y_t.
    const Index n = y.rows(), padded = n + W;
    op.y_t = RowMatrix<S>::Zero(y.cols(), padded);
    op.y_t.leftCols(n) = y.transpose();
  }

  // acc[r][w] = sum_k |x[r, k] - yt[k, w]| for Rows rows of X and W columns of Y, as fixed-size Eigen
  // arrays so that the W columns map onto whole SIMD registers.
  template <int Rows>
  static void l1_block(const S* x, Index d, const S* yt, Index ldt, S* acc_out) {
    using Strip = Eigen::Array<S, W, 1>;
    Strip acc[Rows];
    for (int r = 0; r < Rows; ++r) acc[r].setZero();
    for (Index k = 0; k < d; ++k) {
      const Eigen::Map<const Strip> yk(yt + k * ldt);
      for (int r = 0; r < Rows; ++r) acc[r] += (yk - x[r * d + k]).abs();
    }
    for (int r = 0; r < Rows; ++r) Eigen::Map<Strip>(acc_out + r * W) = acc[r];
  }

  void tile(const Operands<S>& op, Index i0, Index ni, Index j0, Index nj, S* out, Index ld, S* scratch) const {
    const Index d = op.x.cols(), ldt = op.y_t.cols();
    S acc[R * W];
    for (Index i = 0; i < ni; i += R) {
      const Index rows = std::min(R, ni - i);
      const S* x = op.x.data() + (i0 + i) * d;
      for (Index j = 0; j < nj; j += W) {
        const S* yt = op.y_t.data() + j0 + j;
        if (rows == R) l1_block<R>(x, d, yt, ldt, acc);
        else for (Index r = 0; r < rows; ++r) l1_block<1>(x + r * d, d, yt, ldt, acc + r * W);
        const Index cols = std::min(W, nj - j);
        for (Index r = 0; r < rows; ++r)
          std::copy(acc + r * W, acc + r * W + cols, out + (i + r) * ld + j);
      }
    }
    const S ng = static_cast<S>(-p.gamma);
    // As in RbfKernel: the unvectorised select() only where gamma overflowed.
    const bool finite = std::isfinite(ng);
    using Strip = Eigen::Map<Eigen::Array<S, Eigen::Dynamic, 1>, Eigen::AlignedMax>;
    Strip dist(scratch, nj);
    for (Index r = 0; r < ni; ++r) {
      Eigen::Map<Eigen::Array<S, Eigen::Dynamic, 1>> row(out + r * ld, nj);
      dist = row;
      if (finite)
        dist = (ng * dist).exp();
      else
        dist = (dist > S(0)).select(ng * dist, S(0)).exp();
      detail::flush_subnormal(dist.data(), nj);
      row = dist;
    }
  }
};

}  // namespace fastkpca
