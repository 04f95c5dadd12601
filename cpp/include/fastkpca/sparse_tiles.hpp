// Kernel tiles of sparse samples (CSR rows), never densified: the same KernelTiles interface as the dense
// tiles of kernel_tiles.hpp, so every storage mode (packed, cached, matrix-free), the one-sided products of
// transform and predict and the Gram matrix run on sparse samples unchanged.
//
// A slab of B × B entries (B = kSlab<S>) is computed as scikit-learn's sparse path computes a kernel: from
// the rows' sparse inner products and their norms. The slab's rows of X are listed by column once
// (SparseScratch: for each column, the rows that have it), then each row y_j of the other side visits, for
// each of its entries (k, y_jk), the rows with column k: acc[i][j] += x_ik·y_jk. The work is the number of
// pairs of entries that meet, plus B² for the slab, never the rows' length: at d = 50,000 and 50 entries a
// row that is about 1,600 look-ups for 1,024 entries, against 2d = 100,000 flops an entry for the dense
// rows. The sums run in double, in the order of y_j's columns, so a slab's numbers do not depend on the
// threads or on which other rows share its tile. The kernel's accumulator is then formed per its
// SparseForm (x·y; −|x − y|²/2 = x·y − (|x|² + |y|²)/2; |x − y|₁ = |x|₁ + |y|₁ − Σ over the shared columns
// of |x_k| + |y_k| − |x_k − y_k|), rounded to S and finished by the kernel's own finish, as a dense slab is.
// A diagonal slab of k(X, X) is made exactly symmetric, with an exact unit diagonal for unit-diagonal
// kernels.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "fastkpca/kernel_registry.hpp"
#include "fastkpca/kernel_tiles.hpp"
#include "fastkpca/sparse_rows.hpp"

namespace fastkpca {

// The operands of a sparse kernel block: the rows of X (and Y), owned, and their squared Euclidean and L1
// norms in double.
template <class S>
struct SparseOperands {
  static constexpr bool kDense = false;
  bool has_y = false;
  SparseRows<S> x, y;
  std::vector<double> x_sq, y_sq, x_l1, y_l1;

  const SparseRows<S>& rhs() const { return has_y ? y : x; }
  Index rows() const { return x.rows; }
  Index cols() const { return rhs().rows; }
  Index features() const { return x.cols; }
  std::size_t bytes() const {
    return x.bytes() + y.bytes() + sizeof(double) * (x_sq.size() + y_sq.size() + x_l1.size() + y_l1.size());
  }

  double max_abs() const {
    double top = 0;
    for (const SparseRows<S>* m : {&x, &y})
      for (S value : m->values) top = std::max(top, std::abs(static_cast<double>(value)));
    return top;
  }
  void scale_values(double factor) {
    for (SparseRows<S>* m : {&x, &y})
      for (S& value : m->values) value = static_cast<S>(static_cast<double>(value) * factor);
  }
  // Each row divided by its Euclidean norm (computed in double, scaled against overflow); zero rows stay zero.
  void normalise_rows() {
    for (SparseRows<S>* m : {&x, &y})
      for (Index i = 0; i < m->rows; ++i) {
        double top = 0;
        for (auto p = m->begin(i); p < m->end(i); ++p) top = std::max(top, std::abs(static_cast<double>(m->values[p])));
        if (top == 0) continue;
        double sum = 0;
        for (auto p = m->begin(i); p < m->end(i); ++p) {
          const double scaled = static_cast<double>(m->values[p]) / top;
          sum += scaled * scaled;
        }
        // divided by top first, then by the scaled norm: top·√sum may round in the subnormal range
        const double norm = std::sqrt(sum);
        for (auto p = m->begin(i); p < m->end(i); ++p)
          m->values[p] = static_cast<S>(static_cast<double>(m->values[p]) / top / norm);
      }
  }
  // Σ x_k² and Σ |x_k| of every row, in the order of its columns (the order of the slab's sums).
  void compute_norms() {
    auto norms = [](const SparseRows<S>& m, std::vector<double>& sq, std::vector<double>& l1) {
      sq.assign(static_cast<std::size_t>(m.rows), 0.0);
      l1.assign(static_cast<std::size_t>(m.rows), 0.0);
      for (Index i = 0; i < m.rows; ++i)
        for (auto p = m.begin(i); p < m.end(i); ++p) {
          const double value = static_cast<double>(m.values[p]);
          sq[static_cast<std::size_t>(i)] += value * value;
          l1[static_cast<std::size_t>(i)] += std::abs(value);
        }
    };
    norms(x, x_sq, x_l1);
    if (has_y) norms(y, y_sq, y_l1);
  }
  const std::vector<double>& rhs_sq() const { return has_y ? y_sq : x_sq; }
  const std::vector<double>& rhs_l1() const { return has_y ? y_l1 : x_l1; }
};

namespace detail {

// A number no other sparse block has, so that a thread's scatter lists are never taken for another block's.
inline std::uint64_t next_sparse_block_id() {
  static std::atomic<std::uint64_t> counter{0};
  return ++counter;
}

// The kernel's function applied to a row of `count` stored accumulators in registers (count a multiple of
// micro::NR<S>), as distance_block applies it to a block in registers; the indices are the block's first row
// and column.
template <class S, class Kernel, class Op>
void finish_stored_row(const Kernel& kernel, const Op& op, S* row, Index count, Index i0, Index j0) {
  for (Index c = 0; c < count; c += micro::NR<S>) {
    micro::Vec<S> acc[1][micro::NV];
    for (int v = 0; v < micro::NV; ++v) acc[0][v] = simd::load(row + c + v * micro::kLanes<S>);
    kernel.finish(acc, i0, j0 + c, op);
    for (int v = 0; v < micro::NV; ++v) simd::store(row + c + v * micro::kLanes<S>, acc[0][v]);
  }
}

template <class S, class Kernel>
class SparseKernelTilesOf final : public KernelTiles<S> {
 public:
  static_assert(kSlab<S> % micro::NR<S> == 0, "a slab's rows are whole register blocks");

  // y == nullptr: k(X, X); otherwise the cross block k(X, Y). zero_diagonal (k(X, X) only): without its
  // diagonal.
  SparseKernelTilesOf(const SparseView<S>& x, const SparseView<S>* y, Kernel kernel, bool unit_diagonal,
                      bool zero_diagonal = false)
      : kernel_(kernel), unit_diagonal_(unit_diagonal), zero_diagonal_(zero_diagonal && y == nullptr),
        id_(next_sparse_block_id()) {
    op_.x = SparseRows<S>(x);
    op_.has_y = y != nullptr;
    if (y) op_.y = SparseRows<S>(*y);
    kernel_.prepare_sparse(op_);
    op_.compute_norms();
    if (!op_.has_y) {
      if (zero_diagonal_) {
        trace_ = 0.0;
      } else if (unit_diagonal_) {
        trace_ = static_cast<double>(n());
      } else {
        std::vector<S> d(static_cast<std::size_t>(n()));
        diagonal(d.data());
        trace_ = 0;
        for (S value : d) trace_ += static_cast<double>(value);  // in index order: any thread count
      }
    }
  }

  Index n() const override { return op_.rows(); }
  Index cols() const override { return op_.cols(); }
  bool symmetric() const override { return !op_.has_y; }
  double trace() const override { return trace_; }
  std::size_t bytes() const override { return op_.bytes(); }

  void slab(Index i0, Index j0, bool diagonal, S* out, TileWorkspace<S>& ws) const override {
    constexpr Index B = kSlab<S>;
    const Index ni = std::clamp<Index>(n() - i0, 0, B), nj = std::clamp<Index>(cols() - j0, 0, B);
    SparseScratch& s = ws.sparse;
    index_rows(s, i0, ni);
    accumulate(s, j0, nj);
    for (Index r = 0; r < B; ++r)
      for (Index c = 0; c < B; ++c)
        out[r * B + c] = r < ni && c < nj ? static_cast<S>(form(s.acc[r * B + c], i0 + r, j0 + c)) : S(0);
    for (Index r = 0; r < ni; ++r) finish_stored_row(kernel_, op_, out + r * B, B, i0 + r, j0);
    kernel_.finish_rows(out, B, ni, nj, ws.scratch);
    for (Index r = 0; r < B; ++r)
      for (Index c = 0; c < B; ++c)
        if (r >= ni || c >= nj) out[r * B + c] = S(0);
    if (!diagonal) return;
    for (Index r = 0; r < ni; ++r) {
      for (Index c = 0; c < r; ++c) out[c * B + r] = out[r * B + c];
      if (zero_diagonal_) out[r * B + r] = S(0);
      else if (unit_diagonal_) out[r * B + r] = S(1);
    }
  }

  // out[i] = k(x_i, x_i): the accumulator of the pair (x_i, x_i), finished by the kernel.
  void diagonal(S* out) const {
    constexpr Index chunk = kTileScratch / 2;
    static_assert(chunk % micro::NR<S> == 0, "whole register blocks");
    alignas(64) S strip[chunk];
    alignas(64) S scratch[kTileScratch];
    for (Index i0 = 0; i0 < n(); i0 += chunk) {
      const Index m = std::min(chunk, n() - i0);
      for (Index t = 0; t < chunk; ++t) strip[t] = t < m ? static_cast<S>(self_form(i0 + t)) : S(0);
      finish_stored_row(kernel_, op_, strip, chunk, i0, i0);
      kernel_.finish_rows(strip, chunk, 1, m, scratch);
      for (Index t = 0; t < m; ++t) out[i0 + t] = unit_diagonal_ ? S(1) : strip[t];
    }
  }

 private:
  static constexpr SparseForm kForm = Kernel::sparse_form;

  // The slab's rows [i0, i0 + ni) of X listed by column in `s`, unless they already are.
  void index_rows(SparseScratch& s, Index i0, Index ni) const {
    if (s.owner == id_ && s.first_row == i0) return;
    for (std::int32_t k : s.touched) s.head[static_cast<std::size_t>(k)] = -1;
    s.touched.clear();
    s.next.clear();
    s.row.clear();
    s.value.clear();
    if (static_cast<Index>(s.head.size()) < op_.features()) s.head.assign(static_cast<std::size_t>(op_.features()), -1);
    for (Index r = 0; r < ni; ++r)
      for (auto p = op_.x.begin(i0 + r); p < op_.x.end(i0 + r); ++p) {
        const std::int32_t k = op_.x.indices[static_cast<std::size_t>(p)];
        std::int32_t& head = s.head[static_cast<std::size_t>(k)];
        if (head < 0) s.touched.push_back(k);
        s.next.push_back(head);
        s.row.push_back(static_cast<std::int32_t>(r));
        s.value.push_back(static_cast<double>(op_.x.values[static_cast<std::size_t>(p)]));
        head = static_cast<std::int32_t>(s.next.size() - 1);
      }
    s.owner = id_;
    s.first_row = i0;
  }

  // s.acc (B × B) = the sums over the columns shared by each indexed row of X and each row [j0, j0 + nj) of
  // the other side: x·y, or for the l1 form Σ (|x_k − y_k| − |x_k| − |y_k|).
  void accumulate(SparseScratch& s, Index j0, Index nj) const {
    constexpr Index B = kSlab<S>;
    s.acc.assign(static_cast<std::size_t>(B * B), 0.0);
    const SparseRows<S>& y = op_.rhs();
    for (Index c = 0; c < nj; ++c)
      for (auto p = y.begin(j0 + c); p < y.end(j0 + c); ++p) {
        const double w = static_cast<double>(y.values[static_cast<std::size_t>(p)]);
        for (std::int32_t node = s.head[static_cast<std::size_t>(y.indices[static_cast<std::size_t>(p)])]; node >= 0;
             node = s.next[static_cast<std::size_t>(node)]) {
          const double u = s.value[static_cast<std::size_t>(node)];
          double& a = s.acc[static_cast<std::size_t>(s.row[static_cast<std::size_t>(node)] * B + c)];
          if constexpr (kForm == SparseForm::l1) a += std::abs(u - w) - std::abs(u) - std::abs(w);
          else a += u * w;
        }
      }
  }

  // The kernel's accumulator of entry (i, j) from the sum over their shared columns.
  double form(double shared, Index i, Index j) const {
    const auto si = static_cast<std::size_t>(i), sj = static_cast<std::size_t>(j);
    if constexpr (kForm == SparseForm::dot) {
      return shared;
    } else if constexpr (kForm == SparseForm::half_negative_squared_distance) {
      return std::min(shared - 0.5 * (op_.x_sq[si] + op_.rhs_sq()[sj]), 0.0);
    } else {
      return std::max(op_.x_l1[si] + op_.rhs_l1()[sj] + shared, 0.0);
    }
  }

  // The accumulator of (x_i, x_i).
  double self_form(Index i) const {
    if constexpr (kForm == SparseForm::dot) return op_.x_sq[static_cast<std::size_t>(i)];
    else return 0.0;
  }

  SparseOperands<S> op_;
  Kernel kernel_;
  bool unit_diagonal_, zero_diagonal_;
  std::uint64_t id_;
  double trace_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace detail

// Sparse k(X, X), or the cross block k(X, Y) when y is given (X and Y with the same number of columns);
// zero_diagonal: k(X, X) without its diagonal.
template <class S>
std::unique_ptr<KernelTiles<S>> make_sparse_kernel_tiles(const SparseView<S>& x, const KernelParams& params,
                                                         const SparseView<S>* y = nullptr, bool zero_diagonal = false) {
  return with_kernel<S>(params, [&](auto kernel, bool unit_diagonal) -> std::unique_ptr<KernelTiles<S>> {
    return std::make_unique<detail::SparseKernelTilesOf<S, decltype(kernel)>>(x, y, kernel, unit_diagonal,
                                                                              zero_diagonal);
  });
}

// k(x_i, x_i) of sparse rows.
template <class S>
void sparse_kernel_diagonal(const SparseView<S>& x, const KernelParams& params, S* out) {
  with_kernel<S>(params, [&](auto kernel, bool unit_diagonal) {
    detail::SparseKernelTilesOf<S, decltype(kernel)>(x, nullptr, kernel, unit_diagonal).diagonal(out);
    return 0;
  });
}

}  // namespace fastkpca
