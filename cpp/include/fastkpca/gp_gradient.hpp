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
// buffer, all added in run order; the distances are the exact Σ_j (x̃_ij − x̃_kj)², not an expansion. The
// results do not depend on the thread count.
#pragma once

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "fastkpca/block_product.hpp"
#include "fastkpca/packed.hpp"
#include "fastkpca/parallel.hpp"
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

struct RadialTraces {
  double sum_kernel = 0, sum_radial = 0;
  RowMatrix<double> product;  // M·[𝟙, X̃], n × (d + 1), when asked for
};

// W held whole: row-major n × n.
struct DenseWeights {
  const double* w;
  Index n;
  // W's tile over rows i0 … i0 + rows and columns k0 … k0 + cols: W_ik = p[(i − i0)·ld + (k − k0)].
  const double* tile(Index i0, Index, Index k0, Index, std::vector<double>&, Index& ld) const {
    ld = n;
    return w + i0 * n + k0;
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
  std::vector<double> r2, tile;
};

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
  const Index n = x.rows(), d = x.cols(), nt = packed_tiles(n), ldv = want_product ? d + 1 : 0;
  // X̃ column-major: the coordinates of consecutive samples side by side, as the inner loop reads them.
  const ColMatrix<double> xc = x;
  RowMatrix<double> v(n, std::max<Index>(ldv, 1));
  if (want_product) {
    v.col(0).setOnes();
    v.rightCols(d) = x;
  }
  RadialTraces out;
  out.product = RowMatrix<double>::Zero(n, std::max<Index>(ldv, 1));
  FixedBlocks runs = FixedBlocks::triangle(nt, T, FixedBlocks::kMaxBlocks, want_product ? ldv : 0);
  std::vector<double> sums_k(static_cast<std::size_t>(nt), 0.0), sums_r(static_cast<std::size_t>(nt), 0.0);
  runs.run(
      interrupt, [] { return TraceScratch(); },
      [&](TraceScratch& scratch, Index begin, Index end, double* wt) {
        double sk = 0, sr = 0;
        std::vector<double>& r2 = scratch.r2;
        r2.resize(static_cast<std::size_t>(T));
        for (Index I = begin; I < end; ++I) {
          if (interrupt.poll()) break;
          const Index i_end = std::min(n, (I + 1) * T);
          for (Index J = 0; J <= I; ++J) {
            const Index k0 = J * T, k_end = std::min(n, (J + 1) * T);
            Index ldw = 0;
            const double* w_tile = weights.tile(I * T, i_end - I * T, k0, k_end - k0, scratch.tile, ldw);
            double* mirrored = want_product ? (J >= begin ? out.product.data() : wt) : nullptr;
            for (Index i = I * T; i < i_end; ++i) {
              const Index k1 = I == J ? i + 1 : k_end;  // a diagonal tile: its lower triangle and diagonal
              squared_distances(xc, i, xc, k0, k1, r2.data());
              const double* wi = w_tile + (i - I * T) * ldw - k0;  // wi[k] = W_ik
              double* pi = want_product ? out.product.data() + i * ldv : nullptr;
              for (Index k = k0; k < k1; ++k) {
                const double dist2 = r2[static_cast<std::size_t>(k - k0)];
                double kernel, derivative;
                radial_values<R>(dist2, kernel, derivative);
                const double weight = wi[k], twice = k == i ? 1.0 : 2.0;
                sk += twice * weight * kernel;
                sr += twice * weight * derivative * dist2;
                if (!want_product) continue;
                const double m = weight * derivative;
                const double* vk = v.data() + k * ldv;
                for (Index c = 0; c < ldv; ++c) pi[c] += m * vk[c];
                if (k == i) continue;
                const double* vi = v.data() + i * ldv;
                double* pk = mirrored + k * ldv;
                for (Index c = 0; c < ldv; ++c) pk[c] += m * vi[c];
              }
            }
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

// The traces over one rectangular block W_XY of a symmetric W (rows: samples x; columns: samples y; a pair
// of row blocks of a distributed pass), on one thread, tile by tile in a fixed order: sum_kernel and
// sum_radial over the block once (the caller counts its mirror W_YX), and with want_product the block's
// shares of M·[𝟙, X̃]: the first nx rows of `product` are M_XY·[𝟙, Ỹ] (for the samples x), the next ny rows
// M_XYᵀ·[𝟙, X̃] (for the samples y).
template <Radial R>
RadialTraces radial_cross_traces(const ConstRowMatrixMap<double>& x, const ConstRowMatrixMap<double>& y,
                                 const LowRankWeights& weights, bool want_product, Interrupt& interrupt) {
  constexpr Index T = kPackedTile;
  const Index nx = x.rows(), ny = y.rows(), d = x.cols(), ldv = d + 1;
  const ColMatrix<double> xc = x, yc = y;
  RadialTraces out;
  out.product = RowMatrix<double>::Zero(want_product ? nx + ny : 0, ldv);
  TraceScratch scratch;
  scratch.r2.resize(static_cast<std::size_t>(T));
  double* r2 = scratch.r2.data();
  for (Index i0 = 0; i0 < nx; i0 += T) {
    if (interrupt.poll()) break;
    const Index i1 = std::min(nx, i0 + T);
    for (Index k0 = 0; k0 < ny; k0 += T) {
      const Index k1 = std::min(ny, k0 + T);
      Index ldw = 0;
      const double* w_tile = weights.tile(i0, i1 - i0, k0, k1 - k0, scratch.tile, ldw);
      for (Index i = i0; i < i1; ++i) {
        squared_distances(xc, i, yc, k0, k1, r2);
        const double* wi = w_tile + (i - i0) * ldw - k0;  // wi[k] = W_ik
        for (Index k = k0; k < k1; ++k) {
          const double dist2 = r2[k - k0];
          double kernel, derivative;
          radial_values<R>(dist2, kernel, derivative);
          out.sum_kernel += wi[k] * kernel;
          out.sum_radial += wi[k] * derivative * dist2;
          if (!want_product) continue;
          const double m = wi[k] * derivative;
          double* pi = out.product.data() + i * ldv;
          double* pk = out.product.data() + (nx + k) * ldv;
          pi[0] += m;
          pk[0] += m;
          for (Index c = 0; c < d; ++c) {
            pi[c + 1] += m * y(k, c);
            pk[c + 1] += m * x(i, c);
          }
        }
      }
    }
  }
  interrupt.throw_if_stopped();
  if (!want_product) out.product.resize(0, 0);
  return out;
}

}  // namespace detail

// The traces over the block W_XY of a symmetric W (see detail::radial_cross_traces), on one thread.
inline RadialTraces radial_cross_traces(Radial kind, const ConstRowMatrixMap<double>& x,
                                        const ConstRowMatrixMap<double>& y, const LowRankWeights& w, bool want_product,
                                        Interrupt& interrupt) {
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
