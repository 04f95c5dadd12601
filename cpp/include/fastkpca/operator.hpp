// The runtime operator: "multiply by A" for the solvers, whatever A's storage.
//
// Every storage mode (a dense matrix, the packed triangle, cached or recomputed kernel tiles), every view
// (centered H·A·H, shifted A + αI, normalised S·(A − diag a)·S) and every foreign operator (a Python object
// with `matmat`, a distributed one) is one subclass of Operator. The solvers (block_lanczos.hpp) take an
// Operator and never know the storage; the bindings expose this one class.
//
// An operator is symmetric: A·1 gives both its row and its column sums.
#pragma once

#include <cstddef>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>

#include "fastkpca/parallel.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca {

// What one product with a block of b vectors costs: the bytes of stored matrix it reads, the kernel
// entries it evaluates (matrix-free tiles) and the flops of its block products (2 per multiply-add,
// kernel evaluation aside). The Python layer chooses the block width from it; the block Lanczos solver
// weighs its own dense algebra against the flops (a cost model, not a clock, so runs are reproducible).
struct PassCost {
  double bytes_read = 0;
  double kernel_entries = 0;
  double flops = 0;
};

// The arithmetic of a pass's products when the operator's entries are float32 (float64 entries always
// multiply in float64): `float64`, the entries times V accumulated in float64 (the float32 matrix's
// product to float64 rounding); `float32`, V rounded to float32 and the sums over each slab of entries (at
// most 64 terms) in float32, added in float64: about 1e-7 of ‖|A|·|V|‖, at about twice the rate. The
// solvers ask for float32 only when their tolerance is far above that (python/fastkpca/operators).
enum class Products { float64, float32 };

class Operator {
 public:
  Operator() = default;
  Operator(const Operator&) = delete;
  Operator& operator=(const Operator&) = delete;
  virtual ~Operator() = default;

  virtual Index rows() const = 0;

  // W = A·V for V, W of n × b (W is resized), in the given arithmetic (see Products).
  virtual void apply(const ColMatrix<double>& v, ColMatrix<double>& w, Interrupt& interrupt,
                     Products products) const = 0;

  virtual double trace(Interrupt& interrupt) const = 0;

  // "full", "packed", "cached", "matrix_free", "python", or the inner storage for a view.
  virtual const char* storage() const = 0;

  // Bytes the operator holds (stored matrix and working copies of the data), not counting the caller's.
  virtual std::size_t bytes() const = 0;

  // 4 when the stored or evaluated entries are float32.
  virtual int scalar_bytes() const { return 8; }

  virtual PassCost pass_cost(Index b) const = 0;

  // A·1, computed once: by one pass, unless the storage found it on the way (see remember_row_sums).
  Eigen::VectorXd row_sums(Interrupt& interrupt) const {
    if (auto known = known_row_sums()) return *known;
    Eigen::VectorXd sums = compute_row_sums(interrupt);
    remember_row_sums(sums);
    return sums;
  }

 protected:
  virtual Eigen::VectorXd compute_row_sums(Interrupt& interrupt) const {
    ColMatrix<double> ones = ColMatrix<double>::Ones(rows(), 1), w;
    apply(ones, w, interrupt, Products::float64);
    return w.col(0);
  }

  std::optional<Eigen::VectorXd> known_row_sums() const {
    std::lock_guard<std::mutex> lock(sums_mutex_);
    return sums_;
  }
  bool row_sums_known() const {
    std::lock_guard<std::mutex> lock(sums_mutex_);
    return sums_.has_value();
  }
  void remember_row_sums(const Eigen::VectorXd& sums) const {
    std::lock_guard<std::mutex> lock(sums_mutex_);
    if (!sums_) sums_ = sums;
  }

 private:
  mutable std::mutex sums_mutex_;
  mutable std::optional<Eigen::VectorXd> sums_;
};

using OperatorPtr = std::shared_ptr<const Operator>;

// H·A·H applied without forming it (H = I - 11ᵀ/n): U = V - 1(1ᵀV)/n; W = A·U; W -= 1(1ᵀW)/n.
// O(n·b) extra work per pass and no rewrite of A. Its row sums are 0; trace(HAH) = trace(A) - 1ᵀA1/n.
class CenteredOperator final : public Operator {
 public:
  explicit CenteredOperator(OperatorPtr inner) : inner_(std::move(inner)) {}
  Index rows() const override { return inner_->rows(); }

  void apply(const ColMatrix<double>& v, ColMatrix<double>& w, Interrupt& interrupt, Products products) const override {
    const double n = static_cast<double>(rows());
    ColMatrix<double> u = v.rowwise() - v.colwise().sum() / n;
    inner_->apply(u, w, interrupt, products);
    w.rowwise() -= w.colwise().sum() / n;
  }

  double trace(Interrupt& interrupt) const override {
    return inner_->trace(interrupt) - inner_->row_sums(interrupt).sum() / static_cast<double>(rows());
  }
  const char* storage() const override { return inner_->storage(); }
  std::size_t bytes() const override { return inner_->bytes(); }
  int scalar_bytes() const override { return inner_->scalar_bytes(); }
  PassCost pass_cost(Index b) const override { return inner_->pass_cost(b); }
  const OperatorPtr& inner() const { return inner_; }

 protected:
  Eigen::VectorXd compute_row_sums(Interrupt&) const override { return Eigen::VectorXd::Zero(rows()); }

 private:
  OperatorPtr inner_;
};

// A + αI: W = A·V + α·V (the systems of kernel ridge regression).
class ShiftedOperator final : public Operator {
 public:
  ShiftedOperator(OperatorPtr inner, double alpha) : inner_(std::move(inner)), alpha_(alpha) {}
  Index rows() const override { return inner_->rows(); }

  void apply(const ColMatrix<double>& v, ColMatrix<double>& w, Interrupt& interrupt, Products products) const override {
    inner_->apply(v, w, interrupt, products);
    w += alpha_ * v;
  }

  double trace(Interrupt& interrupt) const override {
    return inner_->trace(interrupt) + alpha_ * static_cast<double>(rows());
  }
  const char* storage() const override { return inner_->storage(); }
  std::size_t bytes() const override { return inner_->bytes(); }
  int scalar_bytes() const override { return inner_->scalar_bytes(); }
  PassCost pass_cost(Index b) const override { return inner_->pass_cost(b); }
  double alpha() const { return alpha_; }

 protected:
  Eigen::VectorXd compute_row_sums(Interrupt& interrupt) const override {
    return (inner_->row_sums(interrupt).array() + alpha_).matrix();
  }

 private:
  OperatorPtr inner_;
  double alpha_;
};

// S·(A − diag(a))·S with S = diag(s), applied without forming it: W = s ⊙ A·(s ⊙ V) − (s² ⊙ a) ⊙ V, O(n·b)
// extra per pass. With a = A's diagonal and s = d^(-1/2), d = A·1 − a the degrees of the graph whose
// weights are A's off-diagonal entries, it is the normalised affinity D^(-1/2) (A − diag A) D^(-1/2) of
// spectral embedding (I minus the normalised graph Laplacian). Its trace is 0 when a is A's diagonal, the
// caller's contract; its row sums take one pass.
class NormalizedOperator final : public Operator {
 public:
  NormalizedOperator(OperatorPtr inner, Eigen::VectorXd scale, Eigen::VectorXd diagonal)
      : inner_(std::move(inner)), scale_(std::move(scale)), diagonal_(scale_.array().square() * diagonal.array()) {
    if (scale_.size() != inner_->rows() || diagonal.size() != inner_->rows())
      throw std::invalid_argument("NormalizedOperator: scale and diagonal must have one entry per row");
  }
  Index rows() const override { return inner_->rows(); }

  void apply(const ColMatrix<double>& v, ColMatrix<double>& w, Interrupt& interrupt, Products products) const override {
    ColMatrix<double> u = scale_.asDiagonal() * v;
    inner_->apply(u, w, interrupt, products);
    w = scale_.asDiagonal() * w;
    w -= diagonal_.asDiagonal() * v;
  }

  double trace(Interrupt&) const override { return 0.0; }
  const char* storage() const override { return inner_->storage(); }
  std::size_t bytes() const override { return inner_->bytes() + 2 * sizeof(double) * scale_.size(); }
  int scalar_bytes() const override { return inner_->scalar_bytes(); }
  PassCost pass_cost(Index b) const override { return inner_->pass_cost(b); }

 private:
  OperatorPtr inner_;
  Eigen::VectorXd scale_;
  Eigen::VectorXd diagonal_;  // s² ⊙ a
};

}  // namespace fastkpca
