// fastkpca.gram's native half: the Python layer validates and allocates `out`.
#include "fastkpca/gram.hpp"

#include <optional>

#include "common.hpp"

namespace fastkpca::bindings {

namespace {

KernelParams kernel_params(const std::string& kernel, double gamma, double degree, double coef0) {
  static const std::pair<const char*, KernelKind> kinds[] = {
      {"linear", KernelKind::linear}, {"poly", KernelKind::poly},       {"rbf", KernelKind::rbf},
      {"laplacian", KernelKind::laplacian}, {"sigmoid", KernelKind::sigmoid}, {"cosine", KernelKind::cosine}};
  KernelParams params{KernelKind::linear, gamma, degree, coef0};
  bool known = false;
  for (const auto& [name, kind] : kinds)
    if (kernel == name) params.kind = kind, known = true;
  if (!known) throw py::value_error("unknown kernel " + kernel);
  return params;
}

template <class S>
void gram_into(const CArray<S>& x, const std::optional<CArray<S>>& y, const std::string& kernel, double gamma,
               double degree, double coef0, CArray<S>& out, int n_threads) {
  const KernelParams params = kernel_params(kernel, gamma, degree, coef0);
  const Index m = y ? y->shape(0) : x.shape(0);
  if (out.ndim() != 2 || out.shape(0) != x.shape(0) || out.shape(1) != m)
    throw py::value_error("out has the wrong shape");
  ConstRowMatrixMap<S> xm(x.data(), x.shape(0), x.shape(1));
  std::optional<ConstRowMatrixMap<S>> ym;
  if (y) ym.emplace(y->data(), y->shape(0), y->shape(1));
  RowMatrixMap<S> om(out.mutable_data(), out.shape(0), out.shape(1));
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    gram<S>(xm, ym ? &*ym : nullptr, params, om, interrupt);
    return 0;
  });
}

template <class S>
void gram_packed_into(const CArray<S>& x, const std::string& kernel, double gamma, double degree, double coef0,
                      CArray<S>& out, int n_threads) {
  const KernelParams params = kernel_params(kernel, gamma, degree, coef0);
  if (out.ndim() != 1 || out.shape(0) != packed_size(x.shape(0)))
    throw py::value_error("out has the wrong size for the packed kernel");
  ConstRowMatrixMap<S> xm(x.data(), x.shape(0), x.shape(1));
  S* data = out.mutable_data();
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    gram_packed<S>(xm, params, data, interrupt);
    return 0;
  });
}

template <class S>
void def_gram(py::module_& m) {
  m.def("gram_into", &gram_into<S>, py::arg("x").noconvert(), py::arg("y").noconvert(), py::arg("kernel"),
        py::arg("gamma"), py::arg("degree"), py::arg("coef0"), py::arg("out").noconvert(), py::arg("n_threads"),
        "out[i, j] = k(x_i, y_j) (y=None: y = x, symmetric). Arrays: C-contiguous, one dtype.");
  m.def("gram_packed_into", &gram_packed_into<S>, py::arg("x").noconvert(), py::arg("kernel"), py::arg("gamma"),
        py::arg("degree"), py::arg("coef0"), py::arg("out").noconvert(), py::arg("n_threads"),
        "k(x, x) in packed lower-tile form into the 1-D out of packed_size(len(x)) elements.");
}

}  // namespace

void init_gram(py::module_& m) {
  m.def("packed_size", &packed_size, py::arg("n"), "Elements of the packed lower-tile form of an n×n matrix.");
  def_gram<double>(m);
  def_gram<float>(m);
}

}  // namespace fastkpca::bindings
