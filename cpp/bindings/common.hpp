// Shared by the binding files: array access and running core work with the GIL released.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>

#include "fastkpca/kernel_registry.hpp"
#include "fastkpca/parallel.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca::bindings {

namespace py = pybind11;

// Arrays at the boundary. The Python layer converts visibly (dtype, memory order) before it calls, so a
// binding never converts; it takes arrays of exactly its dtype and order. Such an array may still start at
// an address that is not a multiple of its element size: a view of a byte buffer at an odd offset, such
// as a Dask worker deserialises its messages into. Eigen's maps and the SIMD loads assume aligned elements
// (a misaligned load is undefined behaviour), so every array parameter of every binding is one of these
// two types, and the one check below decides at the boundary:
//   Input<S>    read during the call: an aligned array as it is, a misaligned one copied once (aligned);
//   InPlace<S>  written in place, or read after the call returns (an operator over the caller's matrix):
//               a misaligned one is refused with ValueError, since a copy would not be the caller's array.
// Order is py::array::c_style (NumPy's default) or py::array::f_style.
template <class S, int Order = py::array::c_style>
class Input {
 public:
  Input() = default;
  explicit Input(py::array_t<S, Order> array) : array_(std::move(array)) {}
  const S* data() const { return array_.data(); }
  py::ssize_t ndim() const { return array_.ndim(); }
  py::ssize_t shape(py::ssize_t dim) const { return array_.shape(dim); }
  py::ssize_t size() const { return array_.size(); }
  const py::array_t<S, Order>& array() const { return array_; }

 protected:
  py::array_t<S, Order> array_;
};

template <class S, int Order = py::array::c_style>
class InPlace : public Input<S, Order> {
 public:
  using Input<S, Order>::Input;
  S* mutable_data() { return this->array_.mutable_data(); }
};

inline bool is_aligned(const void* p, std::size_t alignment) {
  return reinterpret_cast<std::uintptr_t>(p) % alignment == 0;
}

// `obj` as an aligned array of S in `Order`: as it is, or (when `copy`) an aligned copy; nullopt when it is
// not an array of exactly that dtype and order (or misaligned and no copy is allowed). With `convert`,
// any array-like is converted (the results of Python callbacks, which the caller does not control).
template <class S, int Order>
std::optional<py::array_t<S, Order>> aligned_array(py::handle obj, bool copy, bool convert = false) {
  py::array_t<S, Order> array;
  if (convert) {
    array = py::array_t<S, Order | py::array::forcecast>::ensure(obj);
    if (!array) return std::nullopt;
  } else {
    if (!py::array_t<S, Order>::check_(obj)) return std::nullopt;
    array = py::reinterpret_borrow<py::array_t<S, Order>>(obj);
  }
  if (is_aligned(array.data(), alignof(S))) return array;
  if (!copy) return std::nullopt;
  // NumPy's own copy: a fresh, aligned buffer in the same order.
  return py::reinterpret_steal<py::array_t<S, Order>>(
      array.attr("copy")(Order == py::array::f_style ? "F" : "C").release());
}

// Shapes at the boundary: the Python layer validates, but no entry point may read out of bounds if it
// is called with something else.
template <class A>
void require_matrix(const A& a, const char* name) {
  if (a.ndim() != 2) throw py::value_error(std::string(name) + " must be a 2-D array");
}
template <class A>
void require_square(const A& a, const char* name) {
  require_matrix(a, name);
  if (a.shape(0) != a.shape(1)) throw py::value_error(std::string(name) + " must be a square matrix");
}

// The kernel named `kernel` (std::invalid_argument, i.e. ValueError, for an unknown name).
inline KernelParams kernel_params(const std::string& kernel, double gamma, double degree, double coef0) {
  return KernelParams{kernel_kind(kernel), gamma, degree, coef0};
}

// Polled by the core between blocks, from the thread that made the call.
inline bool python_interrupt_requested() {
  py::gil_scoped_acquire gil;
  return PyErr_CheckSignals() != 0;
}

// Runs f(interrupt) with the GIL released and `n_threads` OpenMP threads (<= 0: the default). A Ctrl-C
// seen while it runs comes back as the pending KeyboardInterrupt.
template <class F>
auto release_and_run(int n_threads, F&& f) {
  Interrupt interrupt(&python_interrupt_requested);
  try {
    py::gil_scoped_release release;
    ThreadScope threads(n_threads);
    return f(interrupt);
  } catch (const Interrupted&) {
    throw py::error_already_set();
  }
}

void init_info(py::module_& m);
void init_gram(py::module_& m);
void init_spectral(py::module_& m);
void init_operators(py::module_& m);
void init_blocks(py::module_& m);
void init_sparse(py::module_& m);
void init_gaussian_process(py::module_& m);
void init_svm(py::module_& m);

}  // namespace fastkpca::bindings

namespace pybind11::detail {

// The casters of Input and InPlace (see above): the one place where arrays cross into the core.
template <class S, int Order>
struct type_caster<fastkpca::bindings::Input<S, Order>> {
  using Value = fastkpca::bindings::Input<S, Order>;
  PYBIND11_TYPE_CASTER(Value, const_name("numpy.ndarray"));
  bool load(handle src, bool) {
    auto array = fastkpca::bindings::aligned_array<S, Order>(src, true);
    if (!array) return false;
    value = Value(std::move(*array));
    return true;
  }
};

template <class S, int Order>
struct type_caster<fastkpca::bindings::InPlace<S, Order>> {
  using Value = fastkpca::bindings::InPlace<S, Order>;
  PYBIND11_TYPE_CASTER(Value, const_name("numpy.ndarray"));
  bool load(handle src, bool) {
    if (!array_t<S, Order>::check_(src)) return false;
    auto array = fastkpca::bindings::aligned_array<S, Order>(src, false);
    if (!array)
      throw value_error(std::string("an array the core writes in place or keeps is not aligned: its address is not "
                                    "a multiple of ") +
                        std::to_string(sizeof(S)) +
                        " bytes (a view of a byte buffer at an odd offset?); pass an aligned copy, "
                        "numpy.require(a, requirements='A')");
    value = Value(std::move(*array));
    return true;
  }
};

}  // namespace pybind11::detail
