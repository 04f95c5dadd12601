// Kernel functions k(x, y), each as a small functor over the micro-kernels of micro_kernel.hpp. Formulas
// and defaults follow sklearn.metrics.pairwise.
//
// A functor is a template over the scalar type S and the kernel kind K it evaluates (kernel_registry.hpp
// instantiates functor<S, kind> for every entry of kernel_list.hpp). An entry is f(Σ_k a_ik ⊙ b_jk) over
// operand rows the functor prepares; every functor has:
//   accumulate            Accumulate::product (inner products) or Accumulate::l1 (L1 distances);
//   prepare(op)           the working copies of X (and Y) and the packed operand rows a and b the
//                         micro-kernel streams, O((n_X + n_Y)·d) memory;
//   prepare_right(op, bound), prepare_left(op)  the same for a cross block k(X, Y) in two halves: Y once
//                         (its shift and scale recorded in op), then any number of left operands X
//                         against it (a support vector machine's working sets against its active rows);
//                         `bound` bounds |x_k| of every left row to come, for the scale of huge data;
//   finish(acc, i0, j0, op)  the kernel's function applied to a block of accumulators in registers;
//   finish_rows(out, ld, rows, cols, scratch)  a function applied to stored values afterwards (only the
//                         kernels whose function has no vectorised form here: sigmoid, poly of a
//                         non-whole degree);
//   diagonal(op, i)       k(x_i, x_i);
//   sparse_form           what the accumulator holds when the rows are sparse (SparseForm: sparse_tiles.hpp
//                         computes it from sparse inner products and the rows' norms), and
//   prepare_sparse(op)    the kernel's own preparation of sparse rows (cosine normalises them).
// gram.hpp and kernel_tiles.hpp drive them over tiles, sparse_tiles.hpp over sparse rows; adding a kernel
// means adding one functor here and one line to kernel_list.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "fastkpca/kernel_list.hpp"
#include "fastkpca/micro_kernel.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca {

using micro::Accumulate;

// The accumulator of a kernel entry computed from sparse rows x, y (sparse_tiles.hpp), in double before it is
// rounded to S and finished by the kernel's finish: x·y; x·y − (|x|² + |y|²)/2 = −|x − y|²/2 (the rbf
// kernel's folded accumulator, kernels.hpp's RadialKernel); or |x − y|₁ = |x|₁ + |y|₁ − Σ_k (|x_k| + |y_k| −
// |x_k − y_k|) over the columns k both rows have.
enum class SparseForm { dot, half_negative_squared_distance, l1 };

// The operands of a kernel block k(X, Y) (Y = X when symmetric): working copies of the rows (centered,
// normalised or scaled as the kernel needs), their squared norms where the kernel uses them, and the
// packed rows the micro-kernel reads (a: X's in panels of MR rows, b: Y's in panels of NR rows; micro_kernel.hpp).
template <class S>
struct Operands {
  static constexpr bool kDense = true;
  bool has_y = false;
  RowMatrix<S> x, y;
  Vector<S> x_sq, y_sq;
  micro::PackedRows<S> a, b;
  // What prepare_right did to Y, for the left operands prepared after it: the shift subtracted from every
  // row (a radial kernel's centring) and the factor every value was divided by (1: none).
  Eigen::VectorXd shift;
  double scale = 1.0;

  const RowMatrix<S>& rhs() const { return has_y ? y : x; }
  const Vector<S>& rhs_sq() const { return has_y ? y_sq : x_sq; }
  Index rows() const { return x.rows(); }
  Index cols() const { return rhs().rows(); }
  std::size_t bytes() const {
    return sizeof(S) * static_cast<std::size_t>(x.size() + y.size() + x_sq.size() + y_sq.size()) + a.bytes() +
           b.bytes();
  }
  // Pack a and b, for accumulation A, from functions writing row i of each into a buffer of `depth`.
  template <Accumulate A, class RowA, class RowB>
  void pack(Index depth, RowA&& row_a, RowB&& row_b) {
    a = micro::PackedRows<S>(rows(), depth, micro::MR<A>, micro::MR_TAIL<A>, row_a);
    b = micro::PackedRows<S>(cols(), depth, micro::NR<S>, micro::NR<S>, row_b);
  }
  // Pack a alone (the left operand against a right one packed before), or b alone.
  template <Accumulate A, class RowA>
  void pack_left(Index depth, RowA&& row_a) {
    a = micro::PackedRows<S>(rows(), depth, micro::MR<A>, micro::MR_TAIL<A>, row_a);
  }
  template <class RowB>
  void pack_right(Index depth, RowB&& row_b) {
    b = micro::PackedRows<S>(cols(), depth, micro::NR<S>, micro::NR<S>, row_b);
  }
  // Pack the rows of x and of the right operand as they are.
  template <Accumulate A>
  void pack_rows() {
    pack<A>(x.cols(), copy_row(x), copy_row(rhs()));
  }
  static auto copy_row(const RowMatrix<S>& m) {
    return [&m](Index i, S* out) { std::copy(m.data() + i * m.cols(), m.data() + (i + 1) * m.cols(), out); };
  }
};

namespace detail {
// The parallel part of copy_rows, apart so that the serial part's code stays that of a plain copy.
template <class S>
void copy_rows_on_team(const S* src, S* dst, Index n, Index d) {
#pragma omp parallel for schedule(static)
  for (Index i = 0; i < n; ++i) std::copy(src + i * d, src + (i + 1) * d, dst + i * d);
}
}  // namespace detail

// dst = src, the rows copied by the team where the copy pays for its start: each thread takes the page faults of
// the rows it writes (the operands' working copies are often fresh memory: glibc may have returned the previous
// call's blocks to the system). Called under the call's thread count, never inside a parallel region.
template <class S>
void copy_rows(const ConstRowMatrixMap<S>& src, RowMatrix<S>& dst) {
  const Index n = src.rows(), d = src.cols();
  if (!team_pays(micro::kPackSecondsPerByte * static_cast<double>(n) * static_cast<double>(d) * sizeof(S))) {
    dst = src;  // no parallel region at all: even one that does not start the team costs a small call
    return;
  }
  dst.resize(n, d);
  detail::copy_rows_on_team(src.data(), dst.data(), n, d);
}

namespace detail {

// Elements of the per-thread scratch of finish_rows: two tile rows.
constexpr Index kTileScratch = 512;

// row[0 .. n] = f(row[0 .. n]) through an aligned scratch strip. Eigen's vectorised pow/tanh may round
// differently from their scalar fallbacks, and it uses the fallback on a row's unaligned head: going
// through an aligned strip makes every output independent of where the output buffer happens to sit.
template <class S, class F>
void transform_row(S* row, Index n, S* scratch, F f) {
  Eigen::Map<Eigen::Array<S, Eigen::Dynamic, 1>, Eigen::AlignedMax> strip(scratch, n);
  strip = Eigen::Map<const Eigen::Array<S, Eigen::Dynamic, 1>>(row, n);
  strip = f(strip);
  Eigen::Map<Eigen::Array<S, Eigen::Dynamic, 1>>(row, n) = strip;
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

// e^(scale·acc) for every accumulator, where scale·acc <= 0: the rbf and laplacian kernels. A scale that
// overflowed to -inf (huge gamma) maps 0 to 1 and anything else to 0, as the limit does.
template <class S, int R, int C>
inline void exp_scaled(micro::Vec<S> (&acc)[R][C], S scale) {
  const bool finite = std::isfinite(scale);
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
    for (int v = 0; v < C; ++v) {
      if (finite) acc[r][v] = simd::exp_nonpositive<S>(acc[r][v] * scale);
      else acc[r][v] = acc[r][v] == S(0) ? simd::broadcast<S>(S(1)) : micro::Vec<S>{};
    }
}

}  // namespace detail

// Inner-product kernels: linear, poly, sigmoid, cosine (cosine = linear on L2-normalised rows). A kind
// declared with this functor but not handled below fails to compile.
template <class S, KernelKind K>
struct DotKernel {
  static_assert(K == KernelKind::linear || K == KernelKind::poly || K == KernelKind::sigmoid || K == KernelKind::cosine,
                "DotKernel does not evaluate this kernel kind: handle it in finish(), finish_rows() and prepare()");
  static constexpr Accumulate accumulate = Accumulate::product;
  static constexpr SparseForm sparse_form = SparseForm::dot;
  KernelParams p;

  // Cosine: rows normalised (in double) to unit length, zero rows kept at zero.
  template <class SparseOp>
  void prepare_sparse(SparseOp& op) const {
    if constexpr (K == KernelKind::cosine) {
      op.normalise_rows();
    } else {
      (void)op;
    }
  }

  void prepare(Operands<S>& op) const {
    normalise(op.x);
    if (op.has_y) normalise(op.y);
    op.template pack_rows<accumulate>();
  }
  void prepare_right(Operands<S>& op, double = 0) const {
    normalise(op.y);
    op.pack_right(op.y.cols(), Operands<S>::copy_row(op.y));
  }
  void prepare_left(Operands<S>& op) const {
    normalise(op.x);
    op.template pack_left<accumulate>(op.x.cols(), Operands<S>::copy_row(op.x));
  }
  // Cosine: rows normalised (in double) to unit length; zero rows stay zero, so their similarities come out
  // 0, as in scikit-learn. The other kinds take the rows as they are. A row is first divided by its largest
  // magnitude, then by the norm of what is left (in [1, √d]): its norm itself neither overflows near 1e155 nor
  // rounds in the subnormal range (|x| = 5e-324·√2 rounds to 5e-324, and x / |x| to a row of norm √2).
  static void normalise(RowMatrix<S>& m) {
    if constexpr (K == KernelKind::cosine) {
      if (m.cols() == 0) return;
      for (Index i = 0; i < m.rows(); ++i) {
        const double top = m.row(i).template cast<double>().cwiseAbs().maxCoeff();
        if (!(top > 0)) continue;
        const Eigen::Matrix<double, 1, Eigen::Dynamic> scaled = m.row(i).template cast<double>() / top;
        m.row(i) = (scaled / scaled.norm()).template cast<S>();
      }
    } else {
      (void)m;
    }
  }

  // Small whole degrees of poly by repeated multiplication (<= degree - 1 roundings), in registers.
  bool whole_degree() const { return p.degree == std::floor(p.degree) && p.degree <= 16; }

  template <int R, int C, class Op>
  void finish(micro::Vec<S> (&acc)[R][C], Index, Index, const Op&) const {
    if constexpr (K == KernelKind::poly) {
      if (!whole_degree()) return;  // finish_rows
      const S g = static_cast<S>(p.gamma), c0 = static_cast<S>(p.coef0);
      const int degree = static_cast<int>(p.degree);
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
        for (int v = 0; v < C; ++v) {
          const micro::Vec<S> base = acc[r][v] * g + c0;
          micro::Vec<S> power = simd::broadcast<S>(S(1));
          for (int i = 0; i < degree; ++i) power *= base;
          acc[r][v] = power;
        }
    }
    // linear, cosine: the inner product itself; sigmoid: finish_rows
  }

  void finish_rows(S* out, Index ld, Index rows, Index cols, S* scratch) const {
    const S g = static_cast<S>(p.gamma), c0 = static_cast<S>(p.coef0), deg = static_cast<S>(p.degree);
    if constexpr (K == KernelKind::poly) {
      if (whole_degree()) return;
      for (Index r = 0; r < rows; ++r)
        detail::transform_row(out + r * ld, cols, scratch, [&](const auto& x) { return (g * x + c0).pow(deg); });
    } else if constexpr (K == KernelKind::sigmoid) {
      for (Index r = 0; r < rows; ++r)
        detail::transform_row(out + r * ld, cols, scratch, [&](const auto& x) { return (g * x + c0).tanh(); });
    } else {
      (void)out, (void)ld, (void)rows, (void)cols, (void)scratch, (void)g, (void)c0, (void)deg;
    }
  }

  S diagonal(const Operands<S>& op, Index i) const {
    const double dot = op.x.row(i).template cast<double>().squaredNorm();
    const double g = p.gamma, c0 = p.coef0;
    if constexpr (K == KernelKind::poly) return static_cast<S>(std::pow(g * dot + c0, p.degree));
    else if constexpr (K == KernelKind::sigmoid) return static_cast<S>(std::tanh(g * dot + c0));
    else return static_cast<S>(dot);
  }
};

// Radial kernels, functions of the Euclidean distance: rbf, exp(-gamma |x - y|^2), and the Matern kernels of
// r = √gamma |x - y| (gamma = 1/ℓ²; scikit-learn's Matern(length_scale=ℓ, nu)): ν = ½ e^(-r), ν = 3/2
// (1 + √3 r) e^(-√3 r), ν = 5/2 (1 + √5 r + 5r²/3) e^(-√5 r). The rows are folded so that the accumulator
// holds -d²/2: with a_i = [x_i, -|x_i|²/2, 1] and b_j = [y_j, 1, -|y_j|²/2] (depth d + 2),
// Σ_k a_ik b_jk = -|x_i - y_j|²/2, clipped at 0 (rounding can make it positive); then rbf is e^(2·gamma·acc)
// and a Matern kernel its function of r = √(-2·gamma·acc), in registers.
template <class S, KernelKind K>
struct RadialKernel {
  static_assert(K == KernelKind::rbf || K == KernelKind::matern12 || K == KernelKind::matern32 ||
                    K == KernelKind::matern52,
                "RadialKernel evaluates the rbf and Matern kernels: handle this kind in finish()");
  static constexpr Accumulate accumulate = Accumulate::product;
  static constexpr SparseForm sparse_form = SparseForm::half_negative_squared_distance;
  KernelParams p;
  double gamma_eff = 0;  // gamma after rescaling huge data (see prepare)

  // Sparse rows are not centred (that would fill them in); their norms and products run in double, and
  // values near 1e150 are scaled to unit size with the scale folded into gamma, as prepare() does.
  template <class SparseOp>
  void prepare_sparse(SparseOp& op) {
    const double scale = op.max_abs();
    gamma_eff = p.gamma;
    if (scale > 1e60) {
      op.scale_values(1.0 / scale);
      gamma_eff = p.gamma * scale * scale;
    }
  }

  void prepare(Operands<S>& op) {
    detail::center_rows(op);
    // Data near 1e150 would overflow |x|^2; scale it to unit size and fold the scale into gamma,
    // which may then overflow to +inf: then distance 0 maps to 1 and anything else to 0.
    double scale = op.x.cwiseAbs().maxCoeff();
    if (op.has_y) scale = std::max(scale, static_cast<double>(op.y.cwiseAbs().maxCoeff()));
    gamma_eff = p.gamma;
    if (scale > 1e60) {
      op.x /= static_cast<S>(scale);
      if (op.has_y) op.y /= static_cast<S>(scale);
      gamma_eff = p.gamma * scale * scale;
    }
    op.x_sq = squared_norms(op.x);
    if (op.has_y) op.y_sq = squared_norms(op.y);
    op.template pack<accumulate>(op.x.cols() + 2, left_row(op), right_row(op));
  }

  // Y centred on its own column means and scaled as prepare() does, the shift and scale recorded; `bound`
  // (>= |x_k| of every left row to come) joins the scale's decision, so left rows cannot overflow either.
  void prepare_right(Operands<S>& op, double bound = 0) {
    const Index d = op.y.cols();
    op.shift = Eigen::VectorXd::Zero(d);
    for (Index i = 0; i < op.y.rows(); ++i) op.shift += op.y.row(i).transpose().template cast<double>();
    op.shift /= static_cast<double>(std::max<Index>(op.y.rows(), 1));
    const Eigen::Matrix<double, 1, Eigen::Dynamic> m = op.shift.transpose();
    for (Index i = 0; i < op.y.rows(); ++i) op.y.row(i) = (op.y.row(i).template cast<double>() - m).template cast<S>();
    const double scale = std::max(op.y.size() ? static_cast<double>(op.y.cwiseAbs().maxCoeff()) : 0.0,
                                  bound + op.shift.cwiseAbs().maxCoeff());
    gamma_eff = p.gamma;
    op.scale = 1.0;
    if (scale > 1e60) {
      op.y /= static_cast<S>(scale);
      op.scale = scale;
      gamma_eff = p.gamma * scale * scale;
    }
    op.y_sq = squared_norms(op.y);
    op.pack_right(d + 2, right_row(op));
  }

  // X shifted and scaled as prepare_right treated Y.
  void prepare_left(Operands<S>& op) const {
    const Eigen::Matrix<double, 1, Eigen::Dynamic> m = op.shift.transpose();
    for (Index i = 0; i < op.x.rows(); ++i) op.x.row(i) = (op.x.row(i).template cast<double>() - m).template cast<S>();
    if (op.scale != 1.0) op.x /= static_cast<S>(op.scale);
    op.x_sq = squared_norms(op.x);
    op.template pack_left<accumulate>(op.x.cols() + 2, left_row(op));
  }

  // Squared distances whose expansion cancelled heavily: in float32 the expansion's rounding, a few
  // ε·(|x|² + |y|²), can be most of a small distance (γ = 1, |x - m|² ≈ 250 gave k(x, x) = 0.99997).
  // Entries with d² < (|x|² + |y|²)/8 are recomputed as Σ (x_k - y_k)² accumulated in double; the others
  // keep a relative error below about 8·(2 + √d)·ε, so |Δk| ≤ γ d² e^(-γ d²)·that ≤ 1e-5 at d ≤ 256.
  // In float64 the same bound is about 1e-13 and rbf recomputes nothing. A Matern kernel takes the square
  // root of d², which turns an absolute error δ of d² into δ/(2r) in r: near-duplicate points (d² below
  // 1e-6 of |x|² + |y|², where the root would lose more than 1e-10 of k) are recomputed in float64 too.
  static constexpr double kCancellationRatio = std::is_same_v<S, float> ? 0.125 : 1e-6;
  static constexpr bool kRecomputes = std::is_same_v<S, float> || K != KernelKind::rbf;

  template <int R, int C, class Op>
  void finish(micro::Vec<S> (&acc)[R][C], Index i0, Index j0, const Op& op) const {
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
      for (int v = 0; v < C; ++v) acc[r][v] = simd::min<S>(acc[r][v], micro::Vec<S>{});  // -d²/2 <= 0
    // Sparse rows' accumulators come from double sums: no cancellation to repair.
    if constexpr (kRecomputes && Op::kDense) recompute_cancelled(acc, i0, j0, op);
    if constexpr (K == KernelKind::rbf) {
      detail::exp_scaled(acc, static_cast<S>(2.0 * gamma_eff));
    } else {
      matern(acc);
    }
  }

  void finish_rows(S*, Index, Index, Index, S*) const {}

  S diagonal(const Operands<S>&, Index) const { return S(1); }

 private:
  // Zero-padded to whole slabs, so the cancellation test of a block at the edge loads whole vectors.
  static Vector<S> squared_norms(const RowMatrix<S>& m) {
    Vector<S> sq = Vector<S>::Zero((m.rows() + kSlab<S> - 1) / kSlab<S> * kSlab<S>);
    sq.head(m.rows()) = m.rowwise().squaredNorm();
    return sq;
  }
  // The folded rows a_i = [x_i, -|x_i|²/2, 1] and b_j = [y_j, 1, -|y_j|²/2].
  static auto left_row(const Operands<S>& op) {
    return [&op](Index i, S* out) {
      const Index d = op.x.cols();
      std::copy(op.x.data() + i * d, op.x.data() + (i + 1) * d, out);
      out[d] = -op.x_sq[i] / S(2);
      out[d + 1] = S(1);
    };
  }
  static auto right_row(const Operands<S>& op) {
    return [&op](Index i, S* out) {
      const Index d = op.x.cols();
      std::copy(op.rhs().data() + i * d, op.rhs().data() + (i + 1) * d, out);
      out[d] = S(1);
      out[d + 1] = -op.rhs_sq()[i] / S(2);
    };
  }

  // A Matern kernel of r = √(-2·gamma·acc), s = √(2ν)·r: e^(-s) (ν = ½), (1 + s) e^(-s) (3/2),
  // (1 + s + s²/3) e^(-s) (5/2). A gamma that overflowed (huge data) maps distance 0 to 1 and anything else to
  // 0, as the limit does.
  template <int R, int C>
  void matern(micro::Vec<S> (&acc)[R][C]) const {
    constexpr double root = K == KernelKind::matern12   ? 1.0
                            : K == KernelKind::matern32 ? 1.7320508075688772
                                                        : 2.2360679774997896;
    const bool finite = std::isfinite(gamma_eff);
    const S scale = static_cast<S>(-2.0 * gamma_eff * root * root);  // s² = scale·acc
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
#pragma GCC unroll 2
      for (int v = 0; v < C; ++v) {
        if (!finite) {
          acc[r][v] = acc[r][v] == S(0) ? simd::broadcast<S>(S(1)) : micro::Vec<S>{};
          continue;
        }
        const micro::Vec<S> s = simd::sqrt<S>(acc[r][v] * scale);
        const micro::Vec<S> e = simd::exp_nonpositive<S>(-s);
        if constexpr (K == KernelKind::matern12) acc[r][v] = e;
        else if constexpr (K == KernelKind::matern32) acc[r][v] = (s + S(1)) * e;
        else acc[r][v] = (s * s * S(1.0 / 3.0) + s + S(1)) * e;
      }
  }

  template <int R, int C>
  static void recompute_cancelled(micro::Vec<S> (&acc)[R][C], Index i0, Index j0, const Operands<S>& op) {
    constexpr int Wd = micro::kLanes<S>;
    const S ratio = static_cast<S>(kCancellationRatio);
    // d² = -2·acc against (|x|² + |y|²)/8, lane by lane (the norms are zero-padded; a padding entry's
    // d² is |x|² or |y|², never below); most blocks have no such entry.
    simd::IVec<S> cancelled[R][C];
    simd::IVec<S> any{};
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const S xsq = op.x_sq[i0 + r];
#pragma GCC unroll 2
      for (int v = 0; v < C; ++v) {
        const micro::Vec<S> ysq = simd::load(op.rhs_sq().data() + j0 + v * Wd);
        cancelled[r][v] = (simd::IVec<S>)(acc[r][v] * S(-2) < (ysq + xsq) * ratio);
        any |= cancelled[r][v];
      }
    }
    if (!simd::any<S>(any)) return;
    const Index n_x = op.rows(), n_y = op.cols(), d = op.x.cols();
    for (int r = 0; r < R && i0 + r < n_x; ++r)
      for (int v = 0; v < C; ++v) {
        const Index j = j0 + v * Wd;
        if (!simd::any<S>(cancelled[r][v])) continue;
        S lanes[Wd];
        simd::store(lanes, acc[r][v]);
        for (int l = 0; l < Wd && j + l < n_y; ++l) {
          if (!cancelled[r][v][l]) continue;
          const S* x = op.x.data() + (i0 + r) * d;
          const S* y = op.rhs().data() + (j + l) * d;
          double exact = 0;
          for (Index k = 0; k < d; ++k) {
            const double diff = static_cast<double>(x[k]) - static_cast<double>(y[k]);
            exact += diff * diff;
          }
          lanes[l] = static_cast<S>(-exact / 2);
        }
        acc[r][v] = simd::load(lanes);
      }
  }
};

// exp(-gamma |x - y|_1): the micro-kernel accumulates Σ_k |x_k - y_k| directly.
template <class S, KernelKind K>
struct LaplacianKernel {
  static_assert(K == KernelKind::laplacian, "LaplacianKernel evaluates the laplacian kernel only");
  static constexpr Accumulate accumulate = Accumulate::l1;
  static constexpr SparseForm sparse_form = SparseForm::l1;
  KernelParams p;

  template <class SparseOp>
  void prepare_sparse(SparseOp&) const {}

  void prepare(Operands<S>& op) const { op.template pack_rows<accumulate>(); }
  void prepare_right(Operands<S>& op, double = 0) const { op.pack_right(op.y.cols(), Operands<S>::copy_row(op.y)); }
  void prepare_left(Operands<S>& op) const {
    op.template pack_left<accumulate>(op.x.cols(), Operands<S>::copy_row(op.x));
  }

  template <int R, int C, class Op>
  void finish(micro::Vec<S> (&acc)[R][C], Index, Index, const Op&) const {
    detail::exp_scaled(acc, static_cast<S>(-p.gamma));
  }

  void finish_rows(S*, Index, Index, Index, S*) const {}

  S diagonal(const Operands<S>&, Index) const { return S(1); }
};

}  // namespace fastkpca
