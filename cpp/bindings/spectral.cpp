// Native halves of double_center, KernelCenterer.transform and the matrix scans.
#include <optional>

#include "common.hpp"
#include "fastkpca/centering.hpp"
#include "fastkpca/checks.hpp"

namespace fastkpca::bindings {

namespace {

CenterInput center_input(const std::string& input) {
  if (input == "kernel") return CenterInput::kernel;
  if (input == "distances") return CenterInput::distances;
  if (input == "squared_distances") return CenterInput::squared_distances;
  throw py::value_error("input must be 'kernel', 'distances' or 'squared_distances', got '" + input + "'");
}

py::array_t<double> to_numpy(const Eigen::VectorXd& v) { return py::array_t<double>(v.size(), v.data()); }

// Returns (ok, column means of f(K), grand mean); ok is false (K untouched) when they are not finite.
template <class S>
py::tuple double_center_inplace(InPlace<S>& k, const std::string& input, double alpha, int n_threads) {
  require_square(k, "k");
  S* data = k.mutable_data();
  const Index n = k.shape(0);
  Eigen::VectorXd c;
  double m = 0;
  const CenterInput what = center_input(input);
  const bool ok = release_and_run(
      n_threads, [&](Interrupt& interrupt) { return double_center(data, n, what, alpha, c, m, interrupt); });
  return py::make_tuple(ok, to_numpy(c), m);
}

template <class S>
void center_cross_inplace(InPlace<S>& k, const Input<double>& fit_col_mean, double fit_grand_mean, int n_threads) {
  require_matrix(k, "k");
  if (fit_col_mean.ndim() != 1 || fit_col_mean.size() != k.shape(1))
    throw py::value_error("fit_col_mean does not match the kernel's columns");
  const Eigen::VectorXd fc = Eigen::Map<const Eigen::VectorXd>(fit_col_mean.data(), fit_col_mean.size());
  S* data = k.mutable_data();
  const Index rows = k.shape(0), cols = k.shape(1);
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    center_cross(data, rows, cols, fc, fit_grand_mean, interrupt);
    return 0;
  });
}

template <class S>
py::tuple scan(const Input<S>& a, bool check_symmetry, int n_threads) {
  require_square(a, "a");
  const S* data = a.data();
  const Index n = a.shape(0);
  MatrixScan s =
      release_and_run(n_threads, [&](Interrupt& interrupt) { return scan_square(data, n, check_symmetry, interrupt); });
  return py::make_tuple(s.finite, s.max_abs, s.max_asymmetry);
}

template <class S>
void def_spectral(py::module_& m) {
  m.def("double_center_inplace", &double_center_inplace<S>, py::arg("k"), py::arg("input"), py::arg("alpha"),
        py::arg("n_threads"), "K <- alpha · H f(K) H in place (f: identity or square).");
  m.def("center_cross_inplace", &center_cross_inplace<S>, py::arg("k"), py::arg("fit_col_mean"),
        py::arg("fit_grand_mean"), py::arg("n_threads"), "Out-of-sample centering of a cross kernel, in place.");
  m.def("scan_square", &scan<S>, py::arg("a"), py::arg("check_symmetry"), py::arg("n_threads"),
        "(all finite, max |a|, max |a - a.T|) in one pass.");
}

}  // namespace

void init_spectral(py::module_& m) {
  def_spectral<double>(m);
  def_spectral<float>(m);
}

}  // namespace fastkpca::bindings
