// Top-k eigenpairs (algebraically largest) of a symmetric operator by block Lanczos with full
// reorthogonalization and thick restarting.
//
// The basis Q = [Q_0 Q_1 ...] (n × s, orthonormal) grows by one block of b vectors per pass:
//   W = A Q_j;  W -= Q (QᵀW) twice (classical Gram-Schmidt, repeated: orthogonal to working precision);
//   W = Q_{j+1} R  (Gram-Schmidt inside the block; a column that vanishes marks an invariant subspace and
//                   is replaced by a random direction orthogonal to everything, with coupling 0).
// The projection coefficients QᵀAQ_j fill column block j of T = QᵀAQ, kept dense and symmetric, so that
// restarted and plain bases are handled alike. Rayleigh-Ritz on T gives Ritz pairs (θ, Qy), and since
// A Q = Q T + Q_{j+1} R E_jᵀ, the residual of a Ritz pair is exactly ‖R y_j‖ with y_j the last block of y:
// no extra pass is needed to test convergence.
//
// A pair has converged when ‖A x − θ x‖ ≤ tol · |θ_1| (θ_1 the largest Ritz value; floored at a few ulps
// of the largest |θ| so that an indefinite matrix with a tiny θ_1 still terminates). When the basis is
// full, it restarts from the best `keep` Ritz vectors plus the next block (thick restart).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#include <Eigen/Dense>

#include "fastkpca/operator.hpp"
#include "fastkpca/parallel.hpp"
#include "fastkpca/polled_call.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca {

// The policies (default tolerance, basis size, pass limit, when to solve densely) are set in one place,
// the Python layer (python/fastkpca/solvers/krylov/lanczos.py); the solver checks only that they are consistent.
struct LanczosOptions {
  Index k = 1;           // wanted pairs
  Index max_basis = 0;   // basis columns before a restart: k + 2b <= max_basis <= n - b
  Index max_passes = 0;  // >= 1
  double tol = 0;        // >= 0
  std::uint64_t seed = 0;
  Products products = Products::float64;  // the passes' arithmetic (operator.hpp)
  // Called after each pass with (passes, converged pairs, largest residual of the wanted pairs relative
  // to |θ_1|), the last two as of the latest Rayleigh-Ritz step (-1 and NaN before the first); may be empty.
  std::function<void(Index, Index, double)> progress;
};

struct LanczosResult {
  Eigen::VectorXd values;      // descending
  ColMatrix<double> vectors;   // n × k, orthonormal
  Eigen::VectorXd residuals;   // ‖A x − θ x‖ per pair
  Index passes = 0;            // products of A with a block
  Index n_vectors = 0;         // products of A with a vector
  Index restarts = 0;
  bool converged = false;
};

namespace detail {

// Uniform(-1, 1) numbers from a counter-based generator (splitmix64): deterministic for a seed.
class SplitMix {
 public:
  explicit SplitMix(std::uint64_t seed) : state_(seed) {}
  double uniform() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0;
  }

 private:
  std::uint64_t state_;
};

using ConstTall = Eigen::Ref<const ColMatrix<double>>;
using Tall = Eigen::Ref<ColMatrix<double>>;

// Products of tall n × p matrices with small ones, parallel over a fixed list of row chunks (so the
// rounding does not depend on the thread count). Eigen's own GEMMs run sequentially inside each chunk. Chunks of
// at least 128 rows, up to 256 of them: enough that a team of many threads shares them evenly (a chunk's product
// is one small GEMM). Aᵀ B keeps one p × q partial sum per chunk (`partial_entries`), so its chunks also keep
// those within kPartialBytes in all, or to 64 chunks where each partial alone is larger than that allows.
constexpr std::size_t kPartialBytes = std::size_t{32} << 20;
inline Index row_chunks(Index n, Index partial_entries = 0) {
  Index chunks = std::max<Index>(1, std::min<Index>(256, n / 128));
  if (partial_entries > 0)
    chunks = std::min(
        chunks, std::max<Index>(64, static_cast<Index>(kPartialBytes /
                                                       (sizeof(double) * static_cast<std::size_t>(partial_entries)))));
  return chunks;
}

// Aᵀ B (p × q): chunk partial products, summed in chunk order. Polls between chunks (a product with the
// whole basis runs for a second at n = 20,000 and a basis of 1,000 columns).
inline Eigen::MatrixXd tall_transpose_times(const ConstTall& a, const ConstTall& b, Interrupt& interrupt) {
  const Index n = a.rows(), chunks = row_chunks(n, a.cols() * b.cols());
  std::vector<Eigen::MatrixXd> part(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(dynamic, 1)
  for (Index c = 0; c < chunks; ++c) {
    if (interrupt.poll()) continue;
    const Index r0 = c * n / chunks, r1 = (c + 1) * n / chunks;
    part[static_cast<size_t>(c)].noalias() = a.middleRows(r0, r1 - r0).transpose() * b.middleRows(r0, r1 - r0);
  }
  interrupt.throw_if_stopped();
  Eigen::MatrixXd sum = part[0];
  for (Index c = 1; c < chunks; ++c) sum += part[static_cast<size_t>(c)];
  return sum;
}

// out = beta · out + A M (n × q), row chunks in parallel; out must not alias A. Polls between chunks.
inline void tall_times(const ConstTall& a, const Eigen::MatrixXd& m, Tall out, double beta, Interrupt& interrupt) {
  const Index n = a.rows(), chunks = row_chunks(n);
#pragma omp parallel for schedule(dynamic, 1)
  for (Index c = 0; c < chunks; ++c) {
    if (interrupt.poll()) continue;
    const Index r0 = c * n / chunks, r1 = (c + 1) * n / chunks;
    auto rows = out.middleRows(r0, r1 - r0);
    if (beta == 0) rows.noalias() = a.middleRows(r0, r1 - r0) * m;
    else rows.noalias() += beta * (a.middleRows(r0, r1 - r0) * m);
  }
  interrupt.throw_if_stopped();
}

// w -= Q (Qᵀ w) twice; returns the coefficients (both passes added).
inline Eigen::MatrixXd project_out(const ConstTall& q, Tall w, Interrupt& interrupt) {
  Eigen::MatrixXd h = Eigen::MatrixXd::Zero(q.cols(), w.cols());
  if (q.cols() == 0) return h;
  for (int pass = 0; pass < 2; ++pass) {
    const Eigen::MatrixXd c = tall_transpose_times(q, w, interrupt);
    tall_times(q, c, w, -1.0, interrupt);
    h += c;
  }
  return h;
}

// Orthonormalizes the columns of W against the basis q (already done for whole W by the caller) and
// against each other: W <- W_new with W_old = W_new R. Columns whose norm falls below `floor` are
// replaced by random unit vectors orthogonal to q and to the earlier columns (R's column is then 0
// below the diagonal entry, which is 0).
// `before` holds the column norms before the caller projected out q: a column that lost most of its norm
// there is mostly rounding noise relative to q, so once normalised it is projected out of q (and the
// earlier columns) again, or orthogonality would be lost ("twice is enough" needs the second projection
// after the cancellation).
inline Eigen::MatrixXd orthonormalize_block(const Eigen::Ref<const ColMatrix<double>>& q, ColMatrix<double>& w,
                                            const Eigen::VectorXd& before, double floor, SplitMix& rng,
                                            Interrupt& interrupt) {
  const Index b = w.cols(), n = w.rows();
  Eigen::MatrixXd r = Eigen::MatrixXd::Zero(b, b);
  // col -= its components along q and along the first c new columns, twice (without coefficients: used
  // only where col is noise or a random direction, whose coupling to the basis is zero).
  auto project_out_all = [&](auto& col, Index c) {
    for (int pass = 0; pass < 2; ++pass) {
      if (q.cols() > 0) col.noalias() -= q * (q.transpose() * col);
      if (c > 0) col.noalias() -= w.leftCols(c) * (w.leftCols(c).transpose() * col);
    }
  };
  for (Index c = 0; c < b; ++c) {
    if (interrupt.poll()) throw Interrupted();
    auto col = w.col(c);
    for (int pass = 0; pass < 2; ++pass) {
      if (c == 0) break;
      Eigen::VectorXd h = w.leftCols(c).transpose() * col;
      col.noalias() -= w.leftCols(c) * h;
      r.col(c).head(c) += h;
    }
    double norm = col.norm();
    if (norm > floor) {
      r(c, c) = norm;
      col /= norm;
      if (norm < 1e-3 * before[c]) {
        project_out_all(col, c);
        col /= col.norm();
      }
      continue;
    }
    // Deflation: an invariant subspace was found; continue the Krylov space in a fresh direction.
    r.col(c).head(c).setZero();
    for (int attempt = 0; attempt < 4 && !(norm > 0.5); ++attempt) {
      for (Index i = 0; i < n; ++i) col[i] = rng.uniform();
      col /= col.norm();
      project_out_all(col, c);
      norm = col.norm();
    }
    col /= norm;
  }
  return r;
}

}  // namespace detail

// Dense solve of the whole operator (small problems, or k close to n): materialise A by applying it to
// the identity in blocks, then a symmetric eigendecomposition.
template <class Op>
LanczosResult dense_eigsh(const Op& op, Index k, Interrupt& interrupt) {
  const Index n = op.rows(), block = 64;
  Eigen::MatrixXd a(n, n);
  LanczosResult out;
  for (Index c0 = 0; c0 < n; c0 += block) {
    const Index nb = std::min(block, n - c0);
    ColMatrix<double> e = ColMatrix<double>::Zero(n, nb), w;
    for (Index c = 0; c < nb; ++c) e(c0 + c, c) = 1.0;
    op.apply(e, w, interrupt, Products::float64);
    a.middleCols(c0, nb) = w;
    out.passes += 1;
    out.n_vectors += nb;
  }
  a = (a + a.transpose()).eval() * 0.5;
  // The eigensolver and the residuals' product run seconds at n of a few thousand, without a poll: on a
  // helper thread, which owns A from here on.
  struct Pairs {
    Eigen::VectorXd values, residuals;
    ColMatrix<double> vectors;
  };
  Pairs pairs = polled_call(
      [a = std::move(a), k]() {
        Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(a);
        if (eig.info() != Eigen::Success) throw std::runtime_error("dense eigensolver did not converge");
        Pairs p;
        p.values = eig.eigenvalues().reverse().head(k);
        p.vectors = eig.eigenvectors().rowwise().reverse().leftCols(k);
        p.residuals = (a * p.vectors - p.vectors * p.values.asDiagonal()).colwise().norm().transpose();
        return p;
      },
      interrupt, 9.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n));
  out.values = std::move(pairs.values);
  out.vectors = std::move(pairs.vectors);
  out.residuals = std::move(pairs.residuals);
  out.converged = true;
  return out;
}

// v0: the starting block (n × b), any full-rank random block.
template <class Op>
LanczosResult block_lanczos(const Op& op, const ColMatrix<double>& v0, const LanczosOptions& opt,
                            Interrupt& interrupt) {
  const Index n = op.rows(), b = v0.cols(), k = opt.k, max_basis = opt.max_basis;
  if (v0.rows() != n || b < 1 || k < 1 || max_basis < k + 2 * b || max_basis > n - b || opt.max_passes < 1 ||
      !(opt.tol >= 0))
    throw std::invalid_argument("block_lanczos: inconsistent options (need k + 2b <= max_basis <= n - b)");
  const double eps = std::numeric_limits<double>::epsilon();

  detail::SplitMix rng(opt.seed ^ 0x5eedf00dULL);
  ColMatrix<double> q(n, max_basis + b);  // room for the basis and the block being built
  Eigen::MatrixXd t = Eigen::MatrixXd::Zero(max_basis, max_basis);
  ColMatrix<double> w(n, b), aw;

  // Starting block.
  ColMatrix<double> start = v0;
  detail::orthonormalize_block(q.leftCols(0), start, start.colwise().norm().transpose(), 0.0, rng, interrupt);
  q.leftCols(b) = start;
  Index s = b, cur = 0;  // basis size; first column of the block to multiply next

  LanczosResult out;
  Eigen::VectorXd theta;
  Eigen::MatrixXd y;
  Eigen::VectorXd res;
  // Rayleigh-Ritz costs O(s³) and can dominate when passes are cheap (small n, large basis); it runs
  // when the work of the passes since the last one at least matches its own estimated cost, and always
  // before a restart or at the pass limit. A cost model rather than a clock keeps results deterministic.
  const double pass_flops = op.pass_cost(b).flops;  // the operator's own cost model
  double flops_since_rr = 0;
  Index last_converged = -1;
  double last_residual = std::numeric_limits<double>::quiet_NaN();
  while (true) {
    recheck_short_call_team();  // a core held as the call started may be free by now
    op.apply(q.middleCols(cur, b), aw, interrupt, opt.products);
    // NaN or infinity in the operator (a kernel that overflows, say) would otherwise run to the pass limit.
    if (!aw.allFinite()) throw std::domain_error("the operator's products contain NaN or infinity");
    out.passes += 1;
    out.n_vectors += b;
    flops_since_rr += pass_flops + 4.0 * static_cast<double>(n) * static_cast<double>(s) * static_cast<double>(b);
    const Eigen::VectorXd before = aw.colwise().norm().transpose();
    const double scale = before.maxCoeff();

    // Full reorthogonalization; the coefficients are column block `cur` of T = QᵀAQ.
    Eigen::MatrixXd h = detail::project_out(q.leftCols(s), aw, interrupt);
    t.block(0, cur, s, b) = h;
    t.block(cur, 0, b, s) = h.transpose();
    t.block(cur, cur, b, b) = 0.5 * (h.middleRows(cur, b) + h.middleRows(cur, b).transpose());

    Eigen::MatrixXd r = detail::orthonormalize_block(q.leftCols(s), aw, before, 1e-13 * scale + 1e-300, rng, interrupt);

    const bool must_restart = s + b > max_basis;
    const bool at_limit = out.passes >= opt.max_passes && s >= k;
    const double rr_flops = 9.0 * static_cast<double>(s) * static_cast<double>(s) * static_cast<double>(s);
    if (must_restart || at_limit || (s >= k && flops_since_rr >= rr_flops)) {
      // Rayleigh-Ritz on the current basis.
      // O(s³) without a poll (seconds at s above 1,000): on a helper thread, from a copy of T.
      std::tie(theta, y) = polled_call(
          [ts = Eigen::MatrixXd(t.topLeftCorner(s, s))]() {
            Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(ts);
            return std::make_pair(Eigen::VectorXd(eig.eigenvalues().reverse()),
                                  Eigen::MatrixXd(eig.eigenvectors().rowwise().reverse()));
          },
          interrupt, rr_flops);
      res = (r * y.middleRows(cur, b)).colwise().norm().transpose();
      flops_since_rr = 0;

      const double top = std::abs(theta[0]), big = theta.cwiseAbs().maxCoeff();
      const double threshold = std::max(opt.tol * top, 64 * eps * big);
      Index n_conv = 0;
      if (s >= k)
        while (n_conv < k && res[n_conv] <= threshold) ++n_conv;
      last_converged = n_conv;
      last_residual = res.head(std::min(k, s)).maxCoeff() / std::max(top, 1e-300);
      if (n_conv == k || at_limit) {
        out.converged = n_conv == k;
        if (opt.progress) opt.progress(out.passes, last_converged, last_residual);
        break;
      }
    }
    if (opt.progress) opt.progress(out.passes, last_converged, last_residual);

    if (s + b <= max_basis) {
      // Append the new block; its coupling to the block just multiplied is R.
      q.middleCols(s, b) = aw;
      t.block(s, cur, b, b) = r;
      t.block(cur, s, b, b) = r.transpose();
      cur = s;
      s += b;
      continue;
    }

    // Thick restart: keep the best `keep` Ritz vectors, then the new block. In the new basis
    // [Q y_keep, Q_new], T = [diag θ, (R y_last)ᵀ; R y_last, ·].
    const Index keep = std::min(s, k + (max_basis - k - b) / 3);
    ColMatrix<double> kept(n, keep);
    detail::tall_times(q.leftCols(s), y.leftCols(keep), kept, 0.0, interrupt);
    q.leftCols(keep) = kept;
    q.middleCols(keep, b) = aw;
    const Eigen::MatrixXd coupling = r * y.block(cur, 0, b, keep);
    t.setZero();
    t.topLeftCorner(keep, keep) = theta.head(keep).asDiagonal();
    t.block(keep, 0, b, keep) = coupling;
    t.block(0, keep, keep, b) = coupling.transpose();
    cur = keep;
    s = keep + b;
    out.restarts += 1;
  }

  const Index kk = std::min(k, s);
  out.values = theta.head(kk);
  out.vectors.resize(n, kk);
  detail::tall_times(q.leftCols(s), y.leftCols(kk), out.vectors, 0.0, interrupt);
  out.residuals = res.head(kk);
  return out;
}

}  // namespace fastkpca
