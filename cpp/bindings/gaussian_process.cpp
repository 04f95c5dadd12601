// Gaussian process kernels (sums of registry kernels on scaled samples, sum_tiles.hpp) and the traces of the
// likelihood's gradient (gp_gradient.hpp). A sum crosses as a list of terms (kernel, weight, gamma, x, y or
// None): "constant" for a constant term (its arrays unused), otherwise a registry kernel evaluated on x
// (and y) as given — the Python layer scales them by the term's length scales. float64 throughout.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "block_passes.hpp"
#include "common.hpp"
#include "fastkpca/gp_gradient.hpp"
#include "fastkpca/gp_weights.hpp"
#include "fastkpca/kernel_block.hpp"
#include "fastkpca/laplace.hpp"
#include "fastkpca/sum_tiles.hpp"
#include "fastkpca/tall_products.hpp"
#include "fastkpca/tiled_operator.hpp"

namespace fastkpca::bindings {

namespace {

using RArrayD = py::array_t<double, py::array::c_style>;

// The sum's tiles: its terms' tiles (made here, each keeping its own working copy of its samples), n × cols. A
// term's operands are prepared on the call's threads (release_and_run), as every preparation that may use the team.
std::unique_ptr<SumKernelTiles<double>> sum_tiles(const py::list& terms, double white, bool cross, bool zero_diagonal,
                                                  int n_threads) {
  std::vector<SumKernelTiles<double>::Term> parts;
  Index n = -1, cols = -1;
  for (const py::handle item : terms) {
    const auto term = item.cast<py::tuple>();
    if (term.size() != 5) throw py::value_error("a term is (kernel, weight, gamma, x, y)");
    const auto name = term[0].cast<std::string>();
    const double weight = term[1].cast<double>(), gamma = term[2].cast<double>();
    const auto x = term[3].cast<Input<double>>();
    std::optional<Input<double>> y;
    if (!term[4].is_none()) y = term[4].cast<Input<double>>();
    if (cross != y.has_value()) throw py::value_error("every term of a cross block has y, and of k(X, X) none");
    require_matrix(x, "x");
    if (y) {
      require_matrix(*y, "y");
      if (y->shape(1) != x.shape(1)) throw py::value_error("x and y have different numbers of columns");
    }
    const Index rows = x.shape(0), columns = y ? y->shape(0) : x.shape(0);
    if ((n >= 0 && rows != n) || (cols >= 0 && columns != cols))
      throw py::value_error("the terms' samples differ in number");
    n = rows;
    cols = columns;
    if (rows < 1 || columns < 1 || x.shape(1) < 1) throw py::value_error("x and y must have rows and columns");
    SumKernelTiles<double>::Term part;
    part.weight = weight;
    if (name != "constant") {
      ConstRowMatrixMap<double> xm(x.data(), x.shape(0), x.shape(1));
      std::optional<ConstRowMatrixMap<double>> ym;
      if (y) ym.emplace(y->data(), y->shape(0), y->shape(1));
      const KernelParams params = kernel_params(name, gamma, 3.0, 1.0);
      part.tiles = release_and_run(
          n_threads, [&](Interrupt&) { return make_kernel_tiles<double>(xm, params, ym ? &*ym : nullptr); });
    }
    parts.push_back(std::move(part));
  }
  if (n < 0) throw py::value_error("a sum of kernels needs at least one term (its samples)");
  return std::make_unique<SumKernelTiles<double>>(std::move(parts), n, cols, !cross, white, zero_diagonal);
}

// Whether the terms carry y: a cross block k(X, Y) (sum_tiles checks that every term agrees).
bool has_y(const py::list& terms) { return !terms.empty() && !py::cast<py::tuple>(terms[0])[4].is_none(); }

void sum_gram_into(const py::list& terms, double white, InPlace<double>& out, int n_threads) {
  const bool cross = has_y(terms);
  auto tiles = sum_tiles(terms, white, cross, false, n_threads);
  if (out.ndim() != 2 || out.shape(0) != tiles->n() || out.shape(1) != tiles->cols())
    throw py::value_error("out has the wrong shape");
  double* o = out.mutable_data();
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    gram_from_tiles(*tiles, o, tiles->cols(), interrupt);
    return 0;
  });
}

void sum_cross_product_into(const py::list& terms, const Input<double>& v, InPlace<double>& out, int n_threads) {
  auto tiles = sum_tiles(terms, 0.0, true, false, n_threads);
  require_matrix(v, "v");
  if (v.shape(0) != tiles->cols()) throw py::value_error("v must have one row per row of y");
  if (out.ndim() != 2 || out.shape(0) != tiles->n() || out.shape(1) != v.shape(1))
    throw py::value_error("out has the wrong shape");
  ConstRowMatrixMap<double> vm(v.data(), v.shape(0), v.shape(1));
  RowMatrixMap<double> om(out.mutable_data(), out.shape(0), out.shape(1));
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    kernel_block_product(*tiles, static_cast<const double*>(nullptr), 0, nullptr, &vm, om, nullptr, interrupt);
    return 0;
  });
}

std::shared_ptr<Operator> sum_kernel_operator(const py::list& terms, double white, Index cached_tile_rows,
                                              int n_threads, bool zero_diagonal) {
  auto tiles = sum_tiles(terms, white, false, zero_diagonal, n_threads);
  return release_and_run(n_threads, [&](Interrupt& interrupt) -> std::shared_ptr<Operator> {
    return std::make_shared<TiledKernelOperator<double>>(std::move(tiles), cached_tile_rows, interrupt);
  });
}

// A pair of row blocks of a distributed pass (python/fastkpca/engines/dask.py): terms with y, a cross block
// (no white noise); without, the symmetric block of one row block (white on its diagonal).
py::array_t<double> sum_block_tiles(const py::list& terms, double white, int n_threads, bool zero_diagonal) {
  const bool cross = has_y(terms);
  return kept_tiles(*sum_tiles(terms, white, cross, zero_diagonal, n_threads), n_threads);
}

py::tuple sum_block_product(const py::list& terms, double white, const std::optional<Input<double>>& kept,
                            const Input<double>& va, const std::optional<Input<double>>& vb, Index blocks,
                            int n_threads, bool zero_diagonal) {
  const bool cross = has_y(terms);
  return block_product(*sum_tiles(terms, white, cross, zero_diagonal, n_threads), kept, va, vb, blocks, n_threads);
}

py::tuple traces_tuple(RadialTraces& t, bool want_product) {
  py::object product = py::none();
  if (want_product) {
    RArrayD p({t.product.rows(), t.product.cols()});
    RowMatrixMap<double>(p.mutable_data(), t.product.rows(), t.product.cols()) = t.product;
    product = p;
  }
  return py::make_tuple(t.sum_kernel, t.sum_radial, product);
}

py::tuple gp_gradient_pass(const Input<double>& x, const Input<double>& w, const std::string& kind, bool want_product,
                           int n_threads) {
  require_matrix(x, "x");
  require_square(w, "w");
  if (w.shape(0) != x.shape(0)) throw py::value_error("w must have one row per sample");
  const Radial radial = radial_named(kind);
  ConstRowMatrixMap<double> xm(x.data(), x.shape(0), x.shape(1));
  const DenseWeights weights{w.data(), w.shape(0)};
  RadialTraces t = release_and_run(
      n_threads, [&](Interrupt& interrupt) { return radial_traces(radial, xm, weights, want_product, interrupt); });
  return traces_tuple(t, want_product);
}

py::tuple gp_gradient_pass_low_rank(const Input<double>& x, const Input<double>& a, const Input<double>& b,
                                    const std::string& kind, bool want_product, int n_threads) {
  require_matrix(x, "x");
  require_matrix(a, "a");
  require_matrix(b, "b");
  if (a.shape(0) != x.shape(0) || b.shape(0) != x.shape(0) || a.shape(1) != b.shape(1))
    throw py::value_error("a and b must both be n × m, one row per sample");
  const Radial radial = radial_named(kind);
  ConstRowMatrixMap<double> xm(x.data(), x.shape(0), x.shape(1));
  const LowRankWeights weights(ConstRowMatrixMap<double>(a.data(), a.shape(0), a.shape(1)),
                               ConstRowMatrixMap<double>(b.data(), b.shape(0), b.shape(1)));
  RadialTraces t = release_and_run(
      n_threads, [&](Interrupt& interrupt) { return radial_traces(radial, xm, weights, want_product, interrupt); });
  return traces_tuple(t, want_product);
}

ConstRowMatrixMap<double> factor(const Input<double>& f, const Input<double>& x, const char* name) {
  require_matrix(f, name);
  if (f.shape(0) != x.shape(0)) throw py::value_error(std::string(name) + " must have one row per sample");
  return ConstRowMatrixMap<double>(f.data(), f.shape(0), f.shape(1));
}

py::tuple gp_gradient_cross_pass_low_rank(const Input<double>& x, const Input<double>& y, const Input<double>& ax,
                                          const Input<double>& bx, const Input<double>& ay, const Input<double>& by,
                                          const std::string& kind, bool want_product) {
  require_matrix(x, "x");
  require_matrix(y, "y");
  if (y.shape(1) != x.shape(1)) throw py::value_error("x and y have different numbers of columns");
  const auto axm = factor(ax, x, "ax"), bxm = factor(bx, x, "bx"), aym = factor(ay, y, "ay"), bym = factor(by, y, "by");
  if (bxm.cols() != axm.cols() || aym.cols() != axm.cols() || bym.cols() != axm.cols())
    throw py::value_error("ax, bx, ay and by must have the same number of columns");
  const Radial radial = radial_named(kind);
  ConstRowMatrixMap<double> xm(x.data(), x.shape(0), x.shape(1)), ym(y.data(), y.shape(0), y.shape(1));
  const LowRankWeights weights(axm, bxm, aym, bym);
  RadialTraces t = release_and_run(
      1, [&](Interrupt& interrupt) { return radial_cross_traces(radial, xm, ym, weights, want_product, interrupt); });
  return traces_tuple(t, want_product);
}

py::tuple gp_gradient_cross_pass(const Input<double>& x, const Input<double>& y, const Input<double>& w,
                                 const std::string& kind, bool want_product) {
  require_matrix(x, "x");
  require_matrix(y, "y");
  require_matrix(w, "w");
  if (y.shape(1) != x.shape(1)) throw py::value_error("x and y have different numbers of columns");
  if (w.shape(0) != x.shape(0) || w.shape(1) != y.shape(0)) throw py::value_error("w must be len(x) × len(y)");
  const Radial radial = radial_named(kind);
  ConstRowMatrixMap<double> xm(x.data(), x.shape(0), x.shape(1)), ym(y.data(), y.shape(0), y.shape(1));
  const DenseWeights weights{w.data(), w.shape(1)};
  RadialTraces t = release_and_run(
      1, [&](Interrupt& interrupt) { return radial_cross_traces(radial, xm, ym, weights, want_product, interrupt); });
  return traces_tuple(t, want_product);
}

double symmetric_sum(const Input<double>& w, int n_threads) {
  require_square(w, "w");
  const double* wd = w.data();
  const Index n = w.shape(0);
  return release_and_run(n_threads, [&](Interrupt&) { return matrix_sum(wd, n); });
}

void laplace_system_into(const Input<double>& k, const Input<double>& s, InPlace<double>& out, int n_threads) {
  require_square(k, "k");
  const Index n = k.shape(0);
  if (s.ndim() != 1 || s.shape(0) != n) throw py::value_error("s must have one entry per row of k");
  if (out.ndim() != 2 || out.shape(0) != n || out.shape(1) != n) throw py::value_error("out has the wrong shape");
  if (out.data() == k.data()) throw py::value_error("out must not be k");
  const double *kd = k.data(), *sd = s.data();
  double* o = out.mutable_data();
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    identity_plus_scaled(kd, sd, n, o, interrupt);
    return 0;
  });
}

void laplace_weights_in_place(InPlace<double>& w, const Input<double>& s, const Input<double>& a,
                              const Input<double>& u, const Input<double>& v, int n_threads) {
  require_square(w, "w");
  const Index n = w.shape(0);
  for (const auto* x : {&s, &a, &u, &v})
    if (x->ndim() != 1 || x->shape(0) != n) throw py::value_error("s, a, u and v must have one entry per row of w");
  double* wd = w.mutable_data();
  const double *sd = s.data(), *ad = a.data(), *ud = u.data(), *vd = v.data();
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    laplace_weights(wd, n, sd, ad, ud, vd, interrupt);
    return 0;
  });
}

void gp_weights_in_place(InPlace<double>& w, const Input<double>& a, double outer_weight, double inverse_weight,
                         int n_threads) {
  require_square(w, "w");
  require_matrix(a, "a");
  const Index n = w.shape(0), m = a.shape(1);
  if (a.shape(0) != n) throw py::value_error("a must have one row per row of w");
  double* wd = w.mutable_data();
  const double* ad = a.data();
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    gp_regression_weights(wd, n, ad, m, outer_weight, inverse_weight, interrupt);
    return 0;
  });
}

// The preconditioner's products with its tall factor F (n × r, float32 or float64; tall_products.hpp).
template <class S>
void factor_product_into(const Input<S>& f, const Input<double>& c, InPlace<double>& out, int n_threads) {
  require_matrix(f, "f");
  require_matrix(c, "c");
  require_matrix(out, "out");
  const Index n = f.shape(0), r = f.shape(1), used = c.shape(0), b = c.shape(1);
  if (used > r) throw py::value_error("c must have at most one row per column of f");
  if (out.shape(0) != n || out.shape(1) != b) throw py::value_error("out must be len(f) × c.shape[1]");
  const S* fd = f.data();
  const double* cd = c.data();
  double* o = out.mutable_data();
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    tall_product(fd, n, r, cd, used, b, o, interrupt);
    return 0;
  });
}

template <class S>
void factor_t_product_into(const Input<S>& f, const Input<double>& v, InPlace<double>& out, int n_threads) {
  require_matrix(f, "f");
  require_matrix(v, "v");
  require_matrix(out, "out");
  const Index n = f.shape(0), r = f.shape(1), b = v.shape(1);
  if (v.shape(0) != n) throw py::value_error("v must have one row per row of f");
  if (out.shape(0) != r || out.shape(1) != b) throw py::value_error("out must be f.shape[1] × v.shape[1]");
  const S* fd = f.data();
  const double* vd = v.data();
  double* o = out.mutable_data();
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    tall_t_product(fd, n, r, vd, b, o, interrupt);
    return 0;
  });
}

template <class S>
void factor_gram_into(const Input<S>& f, const Input<double>& d, InPlace<double>& out, int n_threads) {
  require_matrix(f, "f");
  require_square(out, "out");
  const Index n = f.shape(0), r = f.shape(1);
  if (d.ndim() != 1 || d.shape(0) != n) throw py::value_error("d must have one entry per row of f");
  if (out.shape(0) != r) throw py::value_error("out must be f.shape[1] × f.shape[1]");
  const S* fd = f.data();
  const double* dd = d.data();
  double* o = out.mutable_data();
  release_and_run(n_threads, [&](Interrupt& interrupt) {
    tall_gram(fd, n, r, dd, o, interrupt);
    return 0;
  });
}

template <class S>
void def_factor_products(py::module_& m) {
  m.def("factor_product_into", &factor_product_into<S>, py::arg("f"), py::arg("c"), py::arg("out"),
        py::arg("n_threads"), "out = f[:, :len(c)] @ c in float64, f tall (n × r), by row blocks on the team.");
  m.def("factor_t_product_into", &factor_t_product_into<S>, py::arg("f"), py::arg("v"), py::arg("out"),
        py::arg("n_threads"), "out = f.T @ v in float64, f tall (n × r): the same bits on any number of threads.");
  m.def("factor_gram_into", &factor_gram_into<S>, py::arg("f"), py::arg("d"), py::arg("out"), py::arg("n_threads"),
        "out = f.T @ diag(d) @ f in float64, f tall (n × r): the same bits on any number of threads.");
}

}  // namespace

void init_gaussian_process(py::module_& m) {
  m.def("sum_gram_into", &sum_gram_into, py::arg("terms"), py::arg("white"), py::arg("out"), py::arg("n_threads"),
        "out = Σ c_t k_t(x_t, y_t) (+ white on the diagonal when the terms have no y).");
  m.def("sum_cross_product_into", &sum_cross_product_into, py::arg("terms"), py::arg("v"), py::arg("out"),
        py::arg("n_threads"), "out = (Σ c_t k_t(x_t, y_t)) @ v, tile by tile.");
  m.def("sum_kernel_operator", &sum_kernel_operator, py::arg("terms"), py::arg("white"), py::arg("cached_tile_rows"),
        py::arg("n_threads"), py::arg("zero_diagonal") = false,
        "Σ c_t k_t(x_t, x_t) + white I over its lower tiles, the first cached_tile_rows tile rows kept.");
  m.def("gp_gradient_pass", &gp_gradient_pass, py::arg("x"), py::arg("w"), py::arg("kind"), py::arg("want_product"),
        py::arg("n_threads"),
        "(Σ W∘κ(r), Σ W∘G(r)r², (W∘G)·[1, x] or None) for a radial kernel of the scaled samples x.");
  m.def("gp_gradient_pass_low_rank", &gp_gradient_pass_low_rank, py::arg("x"), py::arg("a"), py::arg("b"),
        py::arg("kind"), py::arg("want_product"), py::arg("n_threads"),
        "gp_gradient_pass for W = (a bᵀ + b aᵀ)/2, each tile of W formed where it is read.");
  m.def("sum_block_tiles", &sum_block_tiles, py::arg("terms"), py::arg("white"), py::arg("n_threads"),
        py::arg("zero_diagonal") = false,
        "The tiles of a sum's block (terms with y: a cross block; without: the symmetric one, white on its "
        "diagonal) in the panel form sum_block_product reads.");
  m.def("sum_block_product", &sum_block_product, py::arg("terms"), py::arg("white"), py::arg("kept"), py::arg("va"),
        py::arg("vb"), py::arg("blocks"), py::arg("n_threads"), py::arg("zero_diagonal") = false,
        "kernel_block_product for a sum of kernels: (K·vb, Kᵀ·va) of a cross block, (K·va, None) of a "
        "symmetric one.");
  m.def("gp_gradient_cross_pass_low_rank", &gp_gradient_cross_pass_low_rank, py::arg("x"), py::arg("y"), py::arg("ax"),
        py::arg("bx"), py::arg("ay"), py::arg("by"), py::arg("kind"), py::arg("want_product"),
        "gp_gradient_pass_low_rank over the block W_xy = (ax byᵀ + bx ayᵀ)/2 of a symmetric W, on one thread: "
        "(Σ W∘κ(r), Σ W∘G(r)r² over the block once, [(W∘G)·[1, y]; (W∘G)ᵀ·[1, x]] or None).");
  m.def("gp_gradient_cross_pass", &gp_gradient_cross_pass, py::arg("x"), py::arg("y"), py::arg("w"), py::arg("kind"),
        py::arg("want_product"),
        "The traces over the block W_xy given whole (len(x) × len(y)), on one thread: (Σ W∘κ(r), Σ W∘G(r)r², "
        "[(W∘G)·[1, y]; (W∘G)ᵀ·[1, x]] or None).");
  m.def("laplace_system_into", &laplace_system_into, py::arg("k"), py::arg("s"), py::arg("out"), py::arg("n_threads"),
        "out = I + diag(s) k diag(s) (the Laplace approximation's B).");
  m.def("gp_weights_in_place", &gp_weights_in_place, py::arg("w"), py::arg("a"), py::arg("outer_weight"),
        py::arg("inverse_weight"), py::arg("n_threads"),
        "w (K̂⁻¹ in its upper triangle) becomes outer_weight · a aᵀ + inverse_weight · K̂⁻¹, whole and symmetric.");
  m.def("laplace_weights_in_place", &laplace_weights_in_place, py::arg("w"), py::arg("s"), py::arg("a"), py::arg("u"),
        py::arg("v"), py::arg("n_threads"),
        "w (B⁻¹ in its upper triangle) becomes (a aᵀ − diag(s) B⁻¹ diag(s))/2 + (u vᵀ + v uᵀ)/2, whole.");
  m.def("symmetric_sum", &symmetric_sum, py::arg("w"), py::arg("n_threads"), "Σ_ik w_ik, by rows in a fixed order.");
  def_factor_products<double>(m);
  def_factor_products<float>(m);
  m.def(
      "tall_scratch_bytes", [](Index r, Index itemsize) { return tall_scratch_bytes(r, itemsize); }, py::arg("r"),
      py::arg("itemsize"), "About the bytes each thread holds in the factor products of an r-column factor.");
}

}  // namespace fastkpca::bindings
