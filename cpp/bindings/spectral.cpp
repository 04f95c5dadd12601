// Native halves of double_center, KernelCenterer.transform, the matrix scans and eigsh.
#include <optional>

#include "common.hpp"
#include "fastkpca/block_lanczos.hpp"
#include "fastkpca/centering.hpp"
#include "fastkpca/checks.hpp"
#include "fastkpca/operators.hpp"

namespace fastkpca::bindings {

namespace {

using FArrayD = py::array_t<double, py::array::f_style>;

CenterInput center_input(const std::string& input) {
  return input == "kernel" ? CenterInput::kernel
         : input == "distances" ? CenterInput::distances
                                : CenterInput::squared_distances;
}

py::array_t<double> to_numpy(const Eigen::VectorXd& v) { return py::array_t<double>(v.size(), v.data()); }

// Returns (ok, column means of f(K), grand mean); ok is false (K untouched) when they are not finite.
template <class S>
py::tuple double_center_inplace(CArray<S>& k, const std::string& input, double alpha, int n_threads) {
  S* data = k.mutable_data();
  const Index n = k.shape(0);
  Eigen::VectorXd c;
  double m = 0;
  const bool ok = release_and_run(n_threads, [&](Interrupt& interrupt) {
    return double_center(data, n, center_input(input), alpha, c, m, interrupt);
  });
  return py::make_tuple(ok, to_numpy(c), m);
}

// (column means, grand mean) of K without changing it: one read pass.
template <class S>
py::tuple kernel_means(const CArray<S>& k, int n_threads) {
  const S* data = k.data();
  const Index n = k.shape(0);
  Eigen::VectorXd r, c;
  double m = 0;
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    center_means(data, n, CenterInput::kernel, r, c, m, interrupt);
    return 0;
  });
  return py::make_tuple(to_numpy(c), m);
}

// (column means, grand mean, trace) of a packed symmetric matrix: one read pass.
template <class S>
py::tuple packed_means(const CArray<S>& p, Index n, int n_threads) {
  if (p.ndim() != 1 || p.shape(0) != packed_size(n)) throw py::value_error("p is not a packed n×n matrix");
  const S* data = p.data();
  Eigen::VectorXd c;
  double m = 0, trace = 0;
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    fastkpca::packed_means(data, n, c, m, trace, interrupt);
    return 0;
  });
  return py::make_tuple(to_numpy(c), m, trace);
}

template <class S>
void center_cross_inplace(CArray<S>& k, const CArray<double>& fit_col_mean, double fit_grand_mean, int n_threads) {
  if (fit_col_mean.size() != k.shape(1)) throw py::value_error("fit_col_mean does not match the kernel's columns");
  const Eigen::VectorXd fc = Eigen::Map<const Eigen::VectorXd>(fit_col_mean.data(), fit_col_mean.size());
  S* data = k.mutable_data();
  const Index rows = k.shape(0), cols = k.shape(1);
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    center_cross(data, rows, cols, fc, fit_grand_mean, interrupt);
    return 0;
  });
}

template <class S>
py::tuple scan(const CArray<S>& a, bool check_symmetry, int n_threads) {
  const S* data = a.data();
  const Index n = a.shape(0);
  MatrixScan s = release_and_run(n_threads, [&](Interrupt& interrupt) {
    return scan_square(data, n, check_symmetry, interrupt);
  });
  return py::make_tuple(s.finite, s.max_abs, s.max_asymmetry);
}

// Block Lanczos (or the dense fallback) on op, or on H·op·H when centered.
template <class Op>
py::dict run_eigsh(const Op& op, const FArrayD& v0, Index k, double tol, Index max_basis, Index max_passes,
                   std::uint64_t seed, bool centered, bool dense, std::optional<py::function> progress,
                   int n_threads) {
  const Index n = op.rows(), b = v0.shape(1);
  if (v0.shape(0) != n) throw py::value_error("v0 does not match the matrix");
  LanczosOptions opt;
  opt.k = k;
  opt.tol = tol;
  opt.max_basis = max_basis;
  opt.max_passes = max_passes;
  opt.seed = seed;
  if (progress) {
    opt.progress = [&progress](Index passes, Index converged) {
      py::gil_scoped_acquire gil;
      (*progress)(passes, converged);
    };
  }
  const ColMatrix<double> start = Eigen::Map<const ColMatrix<double>>(v0.data(), n, b);
  LanczosResult r = release_and_run(n_threads, [&](Interrupt& interrupt) {
    if (centered) {
      CenteredOperator<Op> cop(op);
      return dense ? dense_eigsh(cop, k, interrupt) : block_lanczos(cop, start, opt, interrupt);
    }
    return dense ? dense_eigsh(op, k, interrupt) : block_lanczos(op, start, opt, interrupt);
  });
  py::dict d;
  d["values"] = py::array_t<double>(r.values.size(), r.values.data());
  FArrayD vectors({r.vectors.rows(), r.vectors.cols()});
  Eigen::Map<ColMatrix<double>>(vectors.mutable_data(), r.vectors.rows(), r.vectors.cols()) = r.vectors;
  d["vectors"] = vectors;
  d["residuals"] = py::array_t<double>(r.residuals.size(), r.residuals.data());
  d["passes"] = r.passes;
  d["n_vectors"] = r.n_vectors;
  d["restarts"] = r.restarts;
  d["converged"] = r.converged;
  return d;
}

template <class S>
py::dict eigsh(const CArray<S>& a, const FArrayD& v0, Index k, double tol, Index max_basis, Index max_passes,
               std::uint64_t seed, bool centered, bool dense, std::optional<py::function> progress, int n_threads) {
  DenseSymmetricOperator<S> op(a.data(), a.shape(0));
  return run_eigsh(op, v0, k, tol, max_basis, max_passes, seed, centered, dense, progress, n_threads);
}

template <class S>
py::dict eigsh_packed(const CArray<S>& p, Index n, const FArrayD& v0, Index k, double tol, Index max_basis,
                      Index max_passes, std::uint64_t seed, bool centered, bool dense,
                      std::optional<py::function> progress, int n_threads) {
  if (p.ndim() != 1 || p.shape(0) != packed_size(n)) throw py::value_error("p is not a packed n×n matrix");
  PackedSymmetricOperator<S> op(p.data(), n);
  return run_eigsh(op, v0, k, tol, max_basis, max_passes, seed, centered, dense, progress, n_threads);
}

template <class S>
void def_spectral(py::module_& m) {
  m.def("double_center_inplace", &double_center_inplace<S>, py::arg("k").noconvert(), py::arg("input"),
        py::arg("alpha"), py::arg("n_threads"), "K <- alpha · H f(K) H in place (f: identity or square).");
  m.def("kernel_means", &kernel_means<S>, py::arg("k").noconvert(), py::arg("n_threads"),
        "(column means, grand mean) of a square matrix in one pass.");
  m.def("center_cross_inplace", &center_cross_inplace<S>, py::arg("k").noconvert(),
        py::arg("fit_col_mean").noconvert(), py::arg("fit_grand_mean"), py::arg("n_threads"),
        "Out-of-sample centering of a cross kernel, in place.");
  m.def("scan_square", &scan<S>, py::arg("a").noconvert(), py::arg("check_symmetry"), py::arg("n_threads"),
        "(all finite, max |a|, max |a - a.T|) in one pass.");
  m.def("eigsh", &eigsh<S>, py::arg("a").noconvert(), py::arg("v0").noconvert(), py::arg("k"), py::arg("tol"),
        py::arg("max_basis"), py::arg("max_passes"), py::arg("seed"), py::arg("centered"), py::arg("dense"),
        py::arg("progress"), py::arg("n_threads"), "Top-k eigenpairs of a symmetric matrix (block Lanczos).");
  m.def("eigsh_packed", &eigsh_packed<S>, py::arg("p").noconvert(), py::arg("n"), py::arg("v0").noconvert(),
        py::arg("k"), py::arg("tol"), py::arg("max_basis"), py::arg("max_passes"), py::arg("seed"),
        py::arg("centered"), py::arg("dense"), py::arg("progress"), py::arg("n_threads"),
        "eigsh on a symmetric matrix in packed lower-tile form (p: 1-D, packed_size(n) elements).");
  m.def("packed_means", &packed_means<S>, py::arg("p").noconvert(), py::arg("n"), py::arg("n_threads"),
        "(column means, grand mean, trace) of a packed symmetric n×n matrix.");
}

}  // namespace

void init_spectral(py::module_& m) {
  def_spectral<double>(m);
  def_spectral<float>(m);
}

}  // namespace fastkpca::bindings
