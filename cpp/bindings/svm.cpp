// The support vector machine's dual solver (svm/dual_solver.hpp): kernel column sources over dense, sparse or
// precomputed samples, and one solve. The Python layer (fastkpca.solvers.svm) builds the dual's arrays and
// validates them; here only shapes and the invariants the core relies on are checked.
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common.hpp"
#include "fastkpca/svm/dual_solver.hpp"
#include "fastkpca/svm/probability.hpp"
#include "sparse_input.hpp"

namespace fastkpca::bindings {

namespace {

// A kernel column source and what it reads, kept alive with it; its diagonal computed once.
struct PyKernelColumns {
  std::unique_ptr<svm::KernelColumns> columns;
  std::vector<py::object> keep;
  std::vector<double> diagonal;
  std::string kind, dtype;
  double features = 0;  // the values an entry's rows hold (0: read from a matrix), for the thread rule's work

  void init_diagonal(int n_threads) {
    diagonal.assign(static_cast<std::size_t>(columns->samples()), 0.0);
    release_and_run(n_threads, [&](Interrupt& interrupt) {
      columns->diagonal(diagonal.data(), interrupt);
      return 0;
    });
  }
};

template <class S>
std::shared_ptr<PyKernelColumns> dense_columns(const Input<S>& x, const std::string& kernel, double gamma,
                                               double degree, double coef0, int n_threads) {
  const KernelParams params = kernel_params(kernel, gamma, degree, coef0);
  require_matrix(x, "x");
  if (x.shape(0) < 1 || x.shape(1) < 1) throw py::value_error("x must have at least one row and one column");
  auto out = std::make_shared<PyKernelColumns>();
  out->keep.push_back(x.array());
  out->columns = std::make_unique<svm::DenseColumns<S>>(ConstRowMatrixMap<S>(x.data(), x.shape(0), x.shape(1)), params);
  out->kind = "dense";
  out->dtype = sizeof(S) == 4 ? "float32" : "float64";
  out->features = static_cast<double>(x.shape(1));
  out->init_diagonal(n_threads);
  return out;
}

template <class S>
std::shared_ptr<PyKernelColumns> sparse_columns(const SparseInput<S>& x, const std::string& kernel, double gamma,
                                                double degree, double coef0, int n_threads) {
  const KernelParams params = kernel_params(kernel, gamma, degree, coef0);
  const SparseView<S> xv = checked<S>(x, "x");
  auto out = std::make_shared<PyKernelColumns>();
  out->keep = {x.indptr.array(), x.indices.array(), x.values.array()};
  out->columns = std::make_unique<svm::SparseColumns<S>>(xv, params);
  out->kind = "sparse";
  out->dtype = "float64";  // the sparse products' sums run in double
  out->features = static_cast<double>(xv.indptr[xv.rows]) / static_cast<double>(std::max<Index>(xv.rows, 1));
  out->init_diagonal(n_threads);
  return out;
}

template <class M>
std::shared_ptr<PyKernelColumns> matrix_columns(const Input<M>& k, int n_threads) {
  require_square(k, "k");
  if (k.shape(0) < 1) throw py::value_error("k must have at least one row");
  auto out = std::make_shared<PyKernelColumns>();
  out->keep.push_back(k.array());
  out->columns = std::make_unique<svm::MatrixColumns<M>>(k.data(), k.shape(0));
  out->kind = "matrix";
  out->dtype = sizeof(M) == 4 ? "float32" : "float64";
  out->init_diagonal(n_threads);
  return out;
}

py::dict stats_dict(const svm::SolveStats& s) {
  py::dict d;
  d["rho"] = s.rho;
  d["r"] = s.r;
  d["obj"] = s.obj;
  d["gap"] = s.gap;
  d["iterations"] = s.iterations;
  d["status"] = s.status;
  d["outer_steps"] = s.outer_steps;
  d["columns"] = s.columns;
  d["column_entries"] = s.column_entries;
  d["product_entries"] = s.product_entries;
  d["update_entries"] = s.update_entries;
  d["reconstructions"] = s.reconstructions;
  d["working_set"] = s.working_set;
  d["cache_slots"] = s.cache_slots;
  d["min_rows"] = s.min_rows;
  d["rows"] = s.rows;
  py::dict seconds;
  seconds["columns"] = s.seconds_columns;
  seconds["local"] = s.seconds_local;
  seconds["update"] = s.seconds_update;
  seconds["select"] = s.seconds_select;
  seconds["rebuild"] = s.seconds_rebuild;
  seconds["shrink"] = s.seconds_shrink;
  seconds["product"] = s.seconds_product;
  d["seconds"] = seconds;
  return d;
}

// Solves the dual in place of `alpha` (a feasible start) under the equalities `Equalities` (svm/formulation.hpp),
// with the settings given by name; returns the solver's figures.
template <class Equalities>
py::dict svm_solve(const PyKernelColumns& columns, const Input<std::int64_t>& sample, const Input<std::int8_t>& y,
                   const Input<double>& p, const Input<double>& upper, InPlace<double>& alpha, double tol,
                   long long max_iter, bool shrinking, bool whole, Index working_set, double cache_bytes, int n_threads,
                   const py::object& progress) {
  const Index l = static_cast<Index>(sample.size());
  if (sample.ndim() != 1 || y.ndim() != 1 || p.ndim() != 1 || upper.ndim() != 1 || alpha.ndim() != 1)
    throw py::value_error("the dual's arrays must be 1-D");
  if (l < 1) throw py::value_error("the dual has no variables");
  if (y.size() != l || p.size() != l || upper.size() != l || alpha.size() != l)
    throw py::value_error("the dual's arrays differ in length");
  const Index samples = columns.columns->samples();
  for (Index t = 0; t < l; ++t) {
    if (sample.data()[t] < 0 || sample.data()[t] >= samples) throw py::value_error("a sample index is out of range");
    if (y.data()[t] != 1 && y.data()[t] != -1) throw py::value_error("y must be +1 or -1");
    if (!(upper.data()[t] > 0) || !(alpha.data()[t] >= 0) || !(alpha.data()[t] <= upper.data()[t]))
      throw py::value_error("the bounds must be > 0 and alpha within them");
  }
  if (!(tol > 0)) throw py::value_error("tol must be > 0");
  if (!(cache_bytes > 0) || !std::isfinite(cache_bytes)) throw py::value_error("cache_bytes must be finite and > 0");
  if (working_set < 2) throw py::value_error("working_set must be >= 2");
  static_assert(sizeof(Index) == sizeof(std::int64_t), "sample indices cross as int64");
  svm::DualProblem problem;
  problem.l = l;
  problem.sample = reinterpret_cast<const Index*>(sample.data());
  problem.y = y.data();
  problem.p = p.data();
  problem.upper = upper.data();
  problem.diagonal = columns.diagonal.data();
  const svm::DualSettings settings{tol, max_iter, shrinking, whole, working_set, static_cast<std::size_t>(cache_bytes)};
  svm::Progress report;
  if (!progress.is_none())
    report = [&progress](const svm::SolveStats& s) {
      py::gil_scoped_acquire gil;
      progress(stats_dict(s));
    };
  double* a = alpha.mutable_data();
  const svm::SolveStats stats = release_and_run(n_threads, [&](Interrupt& interrupt) {
    svm::DualSolver<Equalities> solver(*columns.columns, problem, a, settings, interrupt, report);
    return solver.solve();
  });
  return stats_dict(stats);
}

// One solve's binding: the dual's arrays by position, the settings by name only.
template <class Equalities>
void def_solve(py::module_& m, const char* name, const char* doc) {
  m.def(name, &svm_solve<Equalities>, py::arg("columns"), py::arg("sample"), py::arg("y"), py::arg("p"),
        py::arg("upper"), py::arg("alpha"), py::kw_only(), py::arg("tol"), py::arg("max_iter"), py::arg("shrinking"),
        py::arg("whole"), py::arg("working_set"), py::arg("cache_bytes"), py::arg("n_threads"),
        py::arg("progress") = py::none(), doc);
}

// out[t] = Σ_c k(x_targets[t], x_cols[c])·w[c] over the source's samples, by one fused product.
void kernel_product(const PyKernelColumns& columns, const Input<std::int64_t>& targets, const Input<std::int64_t>& cols,
                    const Input<double>& w, InPlace<double>& out, int n_threads) {
  const Index samples = columns.columns->samples();
  if (targets.ndim() != 1 || cols.ndim() != 1 || w.ndim() != 1 || out.ndim() != 1)
    throw py::value_error("the arrays must be 1-D");
  if (w.size() != cols.size() || out.size() != targets.size()) throw py::value_error("the arrays differ in length");
  for (py::ssize_t k = 0; k < targets.size(); ++k)
    if (targets.data()[k] < 0 || targets.data()[k] >= samples) throw py::value_error("a target index is out of range");
  for (py::ssize_t k = 0; k < cols.size(); ++k)
    if (cols.data()[k] < 0 || cols.data()[k] >= samples) throw py::value_error("a column index is out of range");
  double* o = out.mutable_data();
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    const auto session = columns.columns->session();
    session->product(reinterpret_cast<const Index*>(targets.data()), static_cast<Index>(targets.size()),
                     reinterpret_cast<const Index*>(cols.data()), static_cast<Index>(cols.size()), w.data(), o,
                     interrupt);
    return 0;
  });
}

// out[c, r] = k(x_rows[r], x_cols[c]) as float, by the session a solve uses (tests check it against NumPy).
void kernel_columns(const PyKernelColumns& columns, const Input<std::int64_t>& rows, const Input<std::int64_t>& cols,
                    InPlace<float>& out, int n_threads) {
  const Index samples = columns.columns->samples();
  if (rows.ndim() != 1 || cols.ndim() != 1) throw py::value_error("rows and cols must be 1-D");
  if (out.ndim() != 2 || out.shape(0) != cols.size() || out.shape(1) != rows.size())
    throw py::value_error("out has the wrong shape");
  std::vector<Index> row_list(rows.data(), rows.data() + rows.size());
  for (Index r = 0; r < static_cast<Index>(row_list.size()); ++r)
    if (row_list[r] < 0 || row_list[r] >= samples || (r && row_list[r] <= row_list[r - 1]))
      throw py::value_error("rows must be increasing sample indices");
  for (py::ssize_t k = 0; k < cols.size(); ++k)
    if (cols.data()[k] < 0 || cols.data()[k] >= samples) throw py::value_error("a column index is out of range");
  float* o = out.mutable_data();
  std::vector<float*> targets(static_cast<std::size_t>(cols.size()));
  for (py::ssize_t k = 0; k < cols.size(); ++k) targets[static_cast<std::size_t>(k)] = o + k * rows.size();
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    const auto session = columns.columns->session();
    session->set_rows(row_list, interrupt);
    session->columns(reinterpret_cast<const Index*>(cols.data()), static_cast<Index>(cols.size()), targets.data(),
                     interrupt);
    return 0;
  });
}

// Platt's (A, B) for decision values f of classes `positive` (svm/probability.hpp).
py::tuple platt(const Input<double>& f, const Input<std::uint8_t>& positive) {
  if (f.ndim() != 1 || positive.ndim() != 1 || f.size() != positive.size())
    throw py::value_error("f and positive must be 1-D arrays of one length");
  svm::Sigmoid s;
  {
    py::gil_scoped_release release;
    s = svm::platt_sigmoid(f.size(), f.data(), positive.data());
  }
  return py::make_tuple(s.a, s.b);
}

// p[s] (k values) from r[s] (k × k) for every sample s (svm/probability.hpp).
py::array_t<double> couple(const Input<double>& r) {
  if (r.ndim() != 3 || r.shape(1) != r.shape(2) || r.shape(1) < 1)
    throw py::value_error("r must be an array of shape (n, k, k)");
  const Index n = r.shape(0), k = r.shape(1);
  py::array_t<double> out({n, k});
  double* o = out.mutable_data();
  const double* in = r.data();
  {
    py::gil_scoped_release release;
    std::vector<double> q, qp;
    for (Index s = 0; s < n; ++s) svm::couple_pairwise(k, in + s * k * k, o + s * k, q, qp);
  }
  return out;
}

template <class S>
void def_columns(py::module_& m) {
  m.def("svm_dense_columns", &dense_columns<S>, py::arg("x"), py::arg("kernel"), py::arg("gamma"), py::arg("degree"),
        py::arg("coef0"), py::arg("n_threads"),
        "The kernel columns of dense samples x (C-contiguous, read in place while the source lives).");
  m.def("svm_sparse_columns", &sparse_columns<S>, py::arg("x"), py::arg("kernel"), py::arg("gamma"), py::arg("degree"),
        py::arg("coef0"), py::arg("n_threads"), "The kernel columns of sparse samples (a canonical CSR tuple).");
  m.def("svm_matrix_columns", &matrix_columns<S>, py::arg("k"), py::arg("n_threads"),
        "The kernel columns of a whole square kernel matrix k (read in place).");
}

}  // namespace

void init_svm(py::module_& m) {
  py::class_<PyKernelColumns, std::shared_ptr<PyKernelColumns>>(m, "SvmKernelColumns")
      .def_property_readonly("samples", [](const PyKernelColumns& c) { return c.columns->samples(); })
      .def_property_readonly("kind", [](const PyKernelColumns& c) { return c.kind; })
      .def_property_readonly("dtype", [](const PyKernelColumns& c) { return c.dtype; })
      .def_property_readonly("features", [](const PyKernelColumns& c) { return c.features; })
      .def("diagonal",
           [](const PyKernelColumns& c) { return py::array_t<double>(c.diagonal.size(), c.diagonal.data()); })
      .def(
          "session_bytes", [](const PyKernelColumns& c, Index rows) { return c.columns->session_bytes(rows); },
          py::arg("rows"));
  def_columns<double>(m);
  def_columns<float>(m);
  def_solve<svm::OneEquality>(m, "svm_solve",
                              "Solve an SVM dual under y'alpha = const (LIBSVM's Solver: C-SVC, one-class, "
                              "epsilon-SVR) in place of alpha; returns the solver's figures.");
  def_solve<svm::PerSignEqualities>(m, "svm_solve_nu",
                                    "Solve an SVM dual under one equality per sign of y (LIBSVM's Solver_NU: nu-SVC, "
                                    "nu-SVR) in place of alpha; returns the solver's figures.");
  m.def("svm_platt", &platt, py::arg("f"), py::arg("positive"),
        "Platt's sigmoid (A, B) of P(+1 | f) = 1/(1 + exp(A f + B)) for decision values f (LIBSVM's fit).");
  m.def("svm_couple", &couple, py::arg("r"),
        "Class probabilities (n, k) from pairwise ones r (n, k, k) by Wu, Lin & Weng's second method (LIBSVM's).");
  m.attr("SVM_STREAM_COLUMN_BYTES") = svm::kStreamColumnBytes;
  m.def("svm_kernel_columns", &kernel_columns, py::arg("columns"), py::arg("rows"), py::arg("cols"), py::arg("out"),
        py::arg("n_threads"), "out[c, r] = k(x_rows[r], x_cols[c]) as float, as a solve's session evaluates it.");
  m.def("svm_kernel_product", &kernel_product, py::arg("columns"), py::arg("targets"), py::arg("cols"), py::arg("w"),
        py::arg("out"), py::arg("n_threads"), "out[t] = sum_c k(x_targets[t], x_cols[c]) w[c], nothing stored.");
}

}  // namespace fastkpca::bindings
