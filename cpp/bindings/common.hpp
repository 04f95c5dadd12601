// Shared by the binding files: array access and running core work with the GIL released.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "fastkpca/kernel_registry.hpp"
#include "fastkpca/parallel.hpp"
#include "fastkpca/types.hpp"

namespace fastkpca::bindings {

namespace py = pybind11;

// C-contiguous arrays of exactly this dtype; the Python layer has converted (visibly) beforehand, so the
// bindings never copy: pass them with py::arg().noconvert().
template <class S>
using CArray = py::array_t<S, py::array::c_style>;

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

}  // namespace fastkpca::bindings
