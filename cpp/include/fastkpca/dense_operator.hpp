// A dense symmetric matrix held by the caller (the "full" storage): a NumPy buffer, row-major, N×N.
#pragma once

#include <algorithm>

#include "fastkpca/block_product.hpp"
#include "fastkpca/micro_kernel.hpp"
#include "fastkpca/operator.hpp"

namespace fastkpca {

// A dense symmetric matrix held by the caller (a NumPy buffer, row-major; symmetric, so row i is also
// column i). One pass reads every entry of A from memory once for all b vectors: rows are split over the
// threads, and each piece of A (a register block of rows × J columns) is used for all of V's columns while
// it sits in cache (J rows of V, padded to a multiple of 8 columns, stay in cache too), through the same
// register-blocked loops as the kernel blocks' slabs (micro_kernel.hpp). For float matrices the products
// accumulate in double. The rows' work units are fixed, so the rounding does not depend on the thread
// count.
template <class S>
class DenseSymmetricOperator final : public Operator {
 public:
  DenseSymmetricOperator(const S* a, Index n) : a_(a), n_(n) {}
  Index rows() const override { return n_; }
  double trace(Interrupt&) const override {
    double t = 0;
    for (Index i = 0; i < n_; ++i) t += static_cast<double>(a_[i * n_ + i]);
    return t;
  }
  const char* storage() const override { return "full"; }
  std::size_t bytes() const override { return 0; }  // the matrix is the caller's
  int scalar_bytes() const override { return static_cast<int>(sizeof(S)); }
  PassCost pass_cost(Index b) const override {
    const double entries = static_cast<double>(n_) * static_cast<double>(n_);
    return PassCost{(b <= 8 ? 0.5 : 1.0) * entries * sizeof(S), 0.0, 2.0 * entries * static_cast<double>(b)};
  }

  // A pass reads memory, not arithmetic, so float32 entries always multiply in float64.
  void apply(const ColMatrix<double>& v, ColMatrix<double>& w, Interrupt& interrupt, Products) const override {
    constexpr Index C = 8;
    const Index b = v.cols(), ldv = (b + C - 1) / C * C;
    RowMatrix<double> vr = RowMatrix<double>::Zero(n_, ldv), wr = RowMatrix<double>::Zero(n_, ldv);
    vr.leftCols(b) = v;
    if (ldv == 8 && n_ >= 1024) apply_symmetric(vr, wr, interrupt);
    else apply_full(vr, wr, interrupt);
    interrupt.throw_if_stopped();
    w = wr.leftCols(b);
  }

 private:
  // Every row of A read once: rows split over the threads.
  void apply_full(const RowMatrix<double>& vr, RowMatrix<double>& wr, Interrupt& interrupt) const {
    constexpr Index rows_per_task = 64;
    const Index ldv = vr.cols();
    // Columns of A per sweep: the matching rows of V (J × ldv doubles, 512 KiB) stay in L2, and each row
    // of A is read in long runs that the hardware prefetcher follows (J = 2048 gave 25 GB/s at b = 16,
    // J = 4096 36 GB/s, on this 2-core machine at N = 20000).
    const Index J = std::clamp<Index>((Index{1} << 16) / ldv, 256, 8192);
    const Index tasks = (n_ + rows_per_task - 1) / rows_per_task;
    const double* v = vr.data();
    double* w = wr.data();
    // Dynamic scheduling: a thread whose core is taken by another process does not hold up the rest.
#pragma omp parallel for schedule(dynamic, 1)
    for (Index t = 0; t < tasks; ++t) {
      if (interrupt.poll()) continue;
      const Index begin = t * rows_per_task, end = std::min(n_, begin + rows_per_task);
      // The micro-kernel's register blocks (micro::product): each block of rows of this piece of A is used
      // for all of V's columns while it is in cache; a float matrix's entries are widened to double.
      for (Index j0 = 0; j0 < n_; j0 += J) {
        const Index j1 = std::min(n_, j0 + J);
        micro::product(a_ + begin * n_ + j0, n_, 1, end - begin, j1 - j0, v + j0 * ldv, ldv, w + begin * ldv, ldv, ldv);
      }
    }
  }

  // One triangle of A read, for single-slice blocks (b <= 8), where a pass is bound by memory traffic (at
  // N = 20000: 0.054 s against 0.079 s for NumPy's matrix-vector product; from b = 16 on a pass is bound
  // by arithmetic, which the triangle does not reduce, so the full-matrix sweep is used). The rows are the
  // units of a triangle pass (FixedBlocks): each run reads its rows left of its diagonal block (both
  // directions in one sweep, micro::symmetric_product, the mirrored contributions to earlier rows going to
  // its buffer) and its diagonal block in full (row direction only, micro::product).
  void apply_symmetric(const RowMatrix<double>& vr, RowMatrix<double>& wr, Interrupt& interrupt) const {
    const Index ldv = vr.cols();
    const Index J = std::clamp<Index>((Index{1} << 15) / ldv, 256, 4096);
    detail::FixedBlocks runs = detail::FixedBlocks::triangle(n_, 1, detail::FixedBlocks::kMaxBlocks, ldv);
    const double* v = vr.data();
    double* w = wr.data();
    const auto no_state = [] { return 0; };
    runs.run(interrupt, no_state, [&](int, Index begin, Index end, double* wt) {
      const S* a = a_ + begin * n_;
      for (Index j0 = 0; j0 < begin; j0 += J)
        micro::symmetric_product(a + j0, n_, end - begin, std::min(begin, j0 + J) - j0, v + begin * ldv, v + j0 * ldv,
                                 w + begin * ldv, wt + j0 * ldv, ldv);
      micro::product(a + begin, n_, 1, end - begin, end - begin, v + begin * ldv, ldv, w + begin * ldv, ldv, ldv);
    });
    if (interrupt.stopped()) return;
    runs.add_transposed(w, n_);
  }

  const S* a_;
  Index n_;
};

}  // namespace fastkpca
