// Products with a tall factor F (n × r, n ≫ r, row-major, float32 or float64) on the core's OpenMP team: the
// Gaussian process preconditioner's algebra (python/fastkpca/solvers/low_rank.py: factor_product,
// factor_t_product, factor_gram), which runs beside the kernel's passes on the same team instead of on BLAS's
// threads.
//
//   F C       (n × b): each block of kTallBlockRows rows of F (or of its first columns) times C, by one thread;
//   Fᵀ V      (r × b): each panel of kTallPanel columns of F gives its rows of the result, Σ_B F_B,Jᵀ V_B;
//   Fᵀ D F    (r × r): each panel gives its columns, Σ_B F_Bᵀ (D_B F_B,J), D = diag(d).
//
// Every entry of a result is summed by one thread over the row blocks in their order, so the result is the same bit
// for bit on any number of threads. Each thread holds a converted block of a float32 F (kTallBlockRows rows of the
// columns it reads) and, for Fᵀ D F, its panel's r × kTallPanel sums. Each block's product is one
// of Eigen's single-threaded GEMMs in float64 (a float32 F's block converted first).
#pragma once

#include <Eigen/Dense>
#include <algorithm>
#include <cstddef>
#include <type_traits>

#include "fastkpca/parallel.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca {

// Rows of F per block: 256 rows of r = 1,024 float64 are 2 MiB, a block that stays in a core's cache while it meets
// the other operand.
constexpr Index kTallBlockRows = 256;
// Columns of F per panel of Fᵀ V and Fᵀ D F: enough panels for a team at r of a few hundred, each wide enough for
// GEMM's full rate.
constexpr Index kTallPanel = 64;

// An estimate of the bytes each thread of the team holds during one of the products below, for a factor of r
// columns stored in `itemsize` bytes: a float32 F's converted block (kTallBlockRows × r), the Gram's weighted block
// (kTallBlockRows × kTallPanel) and its panel's sums (r × kTallPanel), and Eigen's packed copies of a block's
// operands (sized by Eigen's cache blocking; counted as one block and one panel of r rows again). The memory plans of
// the iterative Gaussian processes count it per thread.
constexpr std::size_t tall_scratch_bytes(Index r, Index itemsize) {
  const auto rows = static_cast<std::size_t>(kTallBlockRows), panel = static_cast<std::size_t>(kTallPanel),
             columns = static_cast<std::size_t>(r);
  const std::size_t converted = itemsize == sizeof(double) ? 0 : rows * columns;
  return sizeof(double) * (converted + rows * panel + rows * columns + 2 * panel * columns);
}

namespace detail {

inline Index tall_count(Index n, Index size) { return (n + size - 1) / size; }

// Rows [r0, r0 + rows) and columns [c0, c0 + cols) of the row-major n × r F, in float64: a view of a float64 F, a
// converted copy (in `scratch`) of a float32 one.
template <class S>
Eigen::Ref<const RowMatrix<double>, 0, Eigen::OuterStride<>> tall_block(const S* f, Index r, Index r0, Index rows,
                                                                        Index c0, Index cols,
                                                                        RowMatrix<double>& scratch) {
  using Strided = Eigen::Map<const RowMatrix<S>, Eigen::Unaligned, Eigen::OuterStride<>>;
  const Strided block(f + r0 * r + c0, rows, cols, Eigen::OuterStride<>(r));
  if constexpr (std::is_same_v<S, double>) {
    return block;
  } else {
    scratch = block.template cast<double>();
    return scratch;
  }
}

}  // namespace detail

// out (n × b) = F_:,<c C: F's first c columns (of its r) times the c × b matrix C.
template <class S>
void tall_product(const S* f, Index n, Index r, const double* c, Index used, Index b, double* out,
                  Interrupt& interrupt) {
  const ConstRowMatrixMap<double> C(c, used, b);
  const Index blocks = detail::tall_count(n, kTallBlockRows);
#pragma omp parallel
  {
    RowMatrix<double> scratch;
#pragma omp for schedule(static)
    for (Index k = 0; k < blocks; ++k) {
      if (interrupt.poll()) continue;
      const Index r0 = k * kTallBlockRows, rows = std::min(kTallBlockRows, n - r0);
      RowMatrixMap<double>(out + r0 * b, rows, b).noalias() = detail::tall_block(f, r, r0, rows, 0, used, scratch) * C;
    }
  }
  interrupt.throw_if_stopped();
}

// out (r × b) = Fᵀ V; V is n × b.
template <class S>
void tall_t_product(const S* f, Index n, Index r, const double* v, Index b, double* out, Interrupt& interrupt) {
  const Index panels = detail::tall_count(r, kTallPanel);
  RowMatrixMap<double>(out, r, b).setZero();
#pragma omp parallel
  {
    RowMatrix<double> scratch;
#pragma omp for schedule(dynamic, 1)
    for (Index p = 0; p < panels; ++p) {
      const Index c0 = p * kTallPanel, cols = std::min(kTallPanel, r - c0);
      RowMatrixMap<double> rows_out(out + c0 * b, cols, b);
      for (Index r0 = 0; r0 < n; r0 += kTallBlockRows) {
        if (interrupt.poll()) break;
        const Index rows = std::min(kTallBlockRows, n - r0);
        rows_out.noalias() += detail::tall_block(f, r, r0, rows, c0, cols, scratch).transpose() *
                              ConstRowMatrixMap<double>(v + r0 * b, rows, b);
      }
    }
  }
  interrupt.throw_if_stopped();
}

// out (r × r) = Fᵀ diag(d) F: each panel's columns on and below the diagonal, mirrored into the upper triangle (an
// exactly symmetric result, half of the whole product's flops).
template <class S>
void tall_gram(const S* f, Index n, Index r, const double* d, double* out, Interrupt& interrupt) {
  const Index panels = detail::tall_count(r, kTallPanel);
#pragma omp parallel
  {
    RowMatrix<double> scratch, weighted, columns;
#pragma omp for schedule(dynamic, 1)
    for (Index p = 0; p < panels; ++p) {
      const Index c0 = p * kTallPanel, cols = std::min(kTallPanel, r - c0), below = r - c0;
      columns.setZero(below, cols);
      for (Index r0 = 0; r0 < n; r0 += kTallBlockRows) {
        if (interrupt.poll()) break;
        const Index rows = std::min(kTallBlockRows, n - r0);
        const auto block = detail::tall_block(f, r, r0, rows, c0, below, scratch);
        weighted = Eigen::Map<const Eigen::VectorXd>(d + r0, rows).asDiagonal() * block.leftCols(cols);
        columns.noalias() += block.transpose() * weighted;
      }
      for (Index i = 0; i < below; ++i) {
        for (Index j = 0; j < cols && j <= i; ++j) {
          out[(c0 + i) * r + c0 + j] = columns(i, j);
          out[(c0 + j) * r + c0 + i] = columns(i, j);
        }
      }
    }
  }
  interrupt.throw_if_stopped();
}

}  // namespace fastkpca
