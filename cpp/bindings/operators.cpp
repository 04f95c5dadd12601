// The one operator class the solvers multiply by, whatever its storage, and the one eigensolver entry
// point that takes it. Factories build the storage modes; views (centered, shifted, normalized) wrap any operator;
// a Python object with `matmat` becomes an operator too, so Python-side operators run through the same
// native solver.
#include <cstdint>
#include <optional>
#include <string>

#include "common.hpp"
#include "fastkpca/block_lanczos.hpp"
#include "fastkpca/dense_operator.hpp"
#include "fastkpca/operator.hpp"
#include "fastkpca/tiled_operator.hpp"

namespace fastkpca::bindings {

namespace {

// The binding holds operators by shared_ptr<Operator> (pybind11 needs a non-const holder); the core's
// views keep shared_ptr<const Operator>.
using Handle = std::shared_ptr<Operator>;

using FArrayD = py::array_t<double, py::array::f_style>;  // results made here

FArrayD to_numpy(const ColMatrix<double>& m) {
  FArrayD out({m.rows(), m.cols()});
  Eigen::Map<ColMatrix<double>>(out.mutable_data(), m.rows(), m.cols()) = m;
  return out;
}

// An object with `matmat(V) -> W` (V, W: n × b float64) as an operator. apply() runs on the solver's
// calling thread with the GIL released around it, so it takes the GIL for the call; an exception raised
// by the callable propagates to the caller of the solver.
//
// What the object knows of itself comes with it: a storage name, trace(A) (when known) and the cost of a
// pass, from which the solvers choose their block width (a distributed kernel pass evaluates the kernel).
class PythonOperator final : public Operator {
 public:
  PythonOperator(py::object matmat, Index n, std::string storage, std::optional<double> trace, PassCost cost,
                 py::object row_sums)
      : matmat_(std::move(matmat)), n_(n), storage_(std::move(storage)), trace_(trace), cost_(cost),
        row_sums_(std::move(row_sums)) {}
  ~PythonOperator() override {
    py::gil_scoped_acquire gil;
    matmat_ = py::object();
    row_sums_ = py::object();
  }
  Index rows() const override { return n_; }
  void apply(const ColMatrix<double>& v, ColMatrix<double>& w, Interrupt&, Products) const override {
    py::gil_scoped_acquire gil;
    py::object result = matmat_(to_numpy(v));
    auto arr = aligned_array<double, py::array::f_style>(result, true, true);
    if (!arr || arr->ndim() != 2 || arr->shape(0) != n_ || arr->shape(1) != v.cols())
      throw py::value_error("matmat returned an array of the wrong shape: expected (" + std::to_string(n_) + ", " +
                            std::to_string(v.cols()) + ")");
    w = Eigen::Map<const ColMatrix<double>>(arr->data(), n_, v.cols());
  }
  double trace(Interrupt&) const override {
    if (!trace_) throw std::domain_error("the trace of a Python operator is not known to fastkpca");
    return *trace_;
  }
  const char* storage() const override { return storage_.c_str(); }
  std::size_t bytes() const override { return 0; }
  // The flops of the block products: 4 per kernel entry and padded column (a one-triangle pass uses each
  // entry for two products, as the tiled operators), or, when the object says nothing of itself, those
  // of a dense n×n matrix.
  PassCost pass_cost(Index b) const override {
    PassCost c = cost_;
    const double ldv = static_cast<double>((b + 7) / 8 * 8), n = static_cast<double>(n_);
    c.flops = cost_.kernel_entries > 0 ? 4.0 * cost_.kernel_entries * ldv : 2.0 * n * n * static_cast<double>(b);
    return c;
  }

 protected:
  // A·1 from the object's own row_sums() when it has one (a distributed kernel finds them with its first
  // pass), else from a product with ones.
  Eigen::VectorXd compute_row_sums(Interrupt& interrupt) const override {
    if (row_sums_.is_none()) return Operator::compute_row_sums(interrupt);
    py::gil_scoped_acquire gil;
    auto arr = aligned_array<double, py::array::c_style>(row_sums_(), true, true);
    if (!arr || arr->ndim() != 1 || arr->shape(0) != n_)
      throw py::value_error("row_sums returned an array of the wrong shape: expected (" + std::to_string(n_) + ",)");
    return Eigen::Map<const Eigen::VectorXd>(arr->data(), n_);
  }

 private:
  py::object matmat_;
  Index n_;
  std::string storage_;
  std::optional<double> trace_;
  PassCost cost_;
  py::object row_sums_;
};

// One function for both dtypes (pybind11 overloads with keep_alive would apply it after a failed match).
// The operator reads the caller's matrix after this call returns, so it must be the caller's array itself:
// InPlace's rule (a misaligned one is refused).
Handle dense_operator(const py::array& a) {
  require_square(a, "a");
  if (py::array_t<double, py::array::c_style>::check_(a))
    return std::make_shared<DenseSymmetricOperator<double>>(a.cast<InPlace<double>>().data(), a.shape(0));
  if (py::array_t<float, py::array::c_style>::check_(a))
    return std::make_shared<DenseSymmetricOperator<float>>(a.cast<InPlace<float>>().data(), a.shape(0));
  throw py::type_error("a must be a C-contiguous float32 or float64 array");
}

template <class S>
Handle kernel_operator(const Input<S>& x, const std::string& kernel, double gamma, double degree, double coef0,
                       Index cached_tile_rows, int n_threads, bool zero_diagonal) {
  require_matrix(x, "x");
  if (x.shape(0) < 1 || x.shape(1) < 1) throw py::value_error("x must have at least one row and one column");
  const KernelParams params = kernel_params(kernel, gamma, degree, coef0);
  ConstRowMatrixMap<S> xm(x.data(), x.shape(0), x.shape(1));
  return release_and_run(n_threads, [&](Interrupt& interrupt) -> Handle {
    return std::make_shared<TiledKernelOperator<S>>(make_kernel_tiles<S>(xm, params, nullptr, zero_diagonal),
                                                    cached_tile_rows, interrupt);
  });
}

Products products_named(const std::string& name) {
  if (name == "float64") return Products::float64;
  if (name == "float32") return Products::float32;
  throw py::value_error("products must be 'float64' or 'float32', got '" + name + "'");
}

FArrayD matmat(const Handle& op, const Input<double, py::array::f_style>& v, int n_threads,
               const std::string& products) {
  require_matrix(v, "v");
  if (v.shape(0) != op->rows()) throw py::value_error("v has the wrong number of rows for this operator");
  const Products arithmetic = products_named(products);
  const ColMatrix<double> vin = Eigen::Map<const ColMatrix<double>>(v.data(), v.shape(0), v.shape(1));
  ColMatrix<double> w;
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    op->apply(vin, w, interrupt, arithmetic);
    return 0;
  });
  return to_numpy(w);
}

// Block Lanczos (or, `dense`, a dense solve of the whole operator) for the top-k pairs of op.
py::dict eigsh(const Handle& op, const Input<double, py::array::f_style>& v0, Index k, double tol, Index max_basis,
               Index max_passes, std::uint64_t seed, bool dense, std::optional<py::function> progress, int n_threads,
               const std::string& products) {
  require_matrix(v0, "v0");
  const Index n = op->rows(), b = v0.shape(1);
  if (v0.shape(0) != n) throw py::value_error("v0 does not match the operator");
  if (k < 1 || k > n) throw py::value_error("k must be in [1, n]");
  LanczosOptions opt;
  opt.k = k;
  opt.tol = tol;
  opt.max_basis = max_basis;
  opt.max_passes = max_passes;
  opt.seed = seed;
  opt.products = products_named(products);
  if (progress) {
    opt.progress = [&progress](Index passes, Index converged, double residual) {
      py::gil_scoped_acquire gil;
      (*progress)(passes, converged, residual);
    };
  }
  const ColMatrix<double> start = Eigen::Map<const ColMatrix<double>>(v0.data(), n, b);
  LanczosResult r = release_and_run(n_threads, [&](Interrupt& interrupt) {
    return dense ? dense_eigsh(*op, k, interrupt) : block_lanczos(*op, start, opt, interrupt);
  });
  py::dict d;
  d["values"] = py::array_t<double>(r.values.size(), r.values.data());
  d["vectors"] = to_numpy(r.vectors);
  d["residuals"] = py::array_t<double>(r.residuals.size(), r.residuals.data());
  d["passes"] = r.passes;
  d["n_vectors"] = r.n_vectors;
  d["restarts"] = r.restarts;
  d["converged"] = r.converged;
  return d;
}

template <class S>
void def_factories(py::module_& m) {
  m.def("kernel_operator", &kernel_operator<S>, py::arg("x"), py::arg("kernel"), py::arg("gamma"), py::arg("degree"),
        py::arg("coef0"), py::arg("cached_tile_rows"), py::arg("n_threads"), py::arg("zero_diagonal") = false,
        "k(x, x) over its lower tiles, the first cached_tile_rows tile rows kept (all: packed; 0: matrix-free); "
        "zero_diagonal: without its diagonal (an affinity).");
}

}  // namespace

void init_operators(py::module_& m) {
  // module_local: every ISA build registers its own Operator class (they are loaded side by side).
  py::class_<Operator, Handle>(m, "Operator", py::module_local(), "A symmetric operator W = A·V, whatever its storage.")
      .def_property_readonly("n", &Operator::rows)
      .def_property_readonly("storage", [](const Operator& op) { return std::string(op.storage()); })
      .def_property_readonly("nbytes", &Operator::bytes)
      .def_property_readonly("scalar_bytes", &Operator::scalar_bytes)
      .def(
          "pass_cost",
          [](const Operator& op, Index b) {
            const PassCost c = op.pass_cost(b);
            py::dict d;
            d["bytes_read"] = c.bytes_read;
            d["kernel_entries"] = c.kernel_entries;
            d["flops"] = c.flops;
            return d;
          },
          py::arg("b"))
      .def("matmat", &matmat, py::arg("v"), py::arg("n_threads"), py::arg("products") = "float64",
           "W = A·V (V: n × b, Fortran order); products 'float32' lets float32 entries multiply in float32.")
      .def(
          "row_sums",
          [](const Handle& op, int n_threads) {
            Eigen::VectorXd s =
                release_and_run(n_threads, [&](Interrupt& interrupt) { return op->row_sums(interrupt); });
            return py::array_t<double>(s.size(), s.data());
          },
          py::arg("n_threads"), "A·1 (computed once; free after the first pass of a tiled kernel operator).")
      .def(
          "trace",
          [](const Handle& op, int n_threads) {
            return release_and_run(n_threads, [&](Interrupt& interrupt) { return op->trace(interrupt); });
          },
          py::arg("n_threads"))
      .def(
          "centered", [](const Handle& op) -> Handle { return std::make_shared<CenteredOperator>(op); },
          "H·A·H, applied implicitly.")
      .def(
          "shifted",
          [](const Handle& op, double alpha) -> Handle { return std::make_shared<ShiftedOperator>(op, alpha); },
          py::arg("alpha"), "A + alpha·I.")
      .def(
          "normalized",
          [](const Handle& op, const py::array_t<double, py::array::c_style | py::array::forcecast>& scale,
             const py::array_t<double, py::array::c_style | py::array::forcecast>& diagonal) -> Handle {
            // copied: the view outlives the caller's arrays (its constructor checks the sizes)
            Eigen::VectorXd s = Eigen::Map<const Eigen::VectorXd>(scale.data(), scale.size());
            Eigen::VectorXd a = Eigen::Map<const Eigen::VectorXd>(diagonal.data(), diagonal.size());
            return std::make_shared<NormalizedOperator>(op, std::move(s), std::move(a));
          },
          py::arg("scale"), py::arg("diagonal"), "S·(A − diag(diagonal))·S with S = diag(scale).");
  // The packed layout's sizes (packed.hpp), defined once: Python's storage planner reads them here.
  m.attr("TILE") = kPackedTile;
  m.attr("SLAB_DOUBLE") = kSlab<double>;
  m.attr("SLAB_FLOAT") = kSlab<float>;
  m.attr("PASS_BLOCKS") = detail::FixedBlocks::kMaxBlocks;
  m.def("packed_prefix_size", &packed_prefix_size, py::arg("tile_rows"),
        "Elements held by the first tile_rows tile rows of the packed lower-tile form.");
  m.def(
      "python_operator",
      [](py::object matmat, Index n, std::string storage, std::optional<double> trace, double kernel_entries,
         double bytes_read, py::object row_sums) -> Handle {
        if (n < 1) throw py::value_error("n must be >= 1");
        return std::make_shared<PythonOperator>(std::move(matmat), n, std::move(storage), trace,
                                                PassCost{bytes_read, kernel_entries, 0.0}, std::move(row_sums));
      },
      py::arg("matmat"), py::arg("n"), py::arg("storage") = "python", py::arg("trace") = py::none(),
      py::arg("kernel_entries") = 0.0, py::arg("bytes_read") = 0.0, py::arg("row_sums") = py::none(),
      "An operator whose products come from the Python callable matmat(V); storage, trace(A), the cost of a "
      "pass (kernel entries evaluated, bytes of stored matrix read) and a row_sums() callable, where known.");
  // keep_alive: the operator reads the caller's array, which must outlive it.
  m.def("dense_operator", &dense_operator, py::arg("a"), py::keep_alive<0, 1>(),
        "The full storage: a symmetric C-contiguous n×n array, read in place.");
  def_factories<double>(m);
  def_factories<float>(m);
  m.def("eigsh", &eigsh, py::arg("op"), py::arg("v0"), py::arg("k"), py::arg("tol"), py::arg("max_basis"),
        py::arg("max_passes"), py::arg("seed"), py::arg("dense"), py::arg("progress"), py::arg("n_threads"),
        py::arg("products") = "float64", "Top-k eigenpairs of a symmetric operator (block Lanczos, or dense).");
}

}  // namespace fastkpca::bindings
