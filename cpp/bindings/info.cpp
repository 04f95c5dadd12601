// Build and machine facts for fastkpca.show_config() and the ISA dispatcher.
#include <Eigen/Core>
#include <omp.h>

#include <vector>

#include "common.hpp"

namespace fastkpca::bindings {

namespace {

std::string compiler() {
#if defined(__clang__)
  return "clang " __clang_version__;
#elif defined(__GNUC__)
  return "gcc " __VERSION__;
#else
  return "unknown";
#endif
}

// ISA levels this CPU (and OS) can execute, best last.
py::list supported_isas() {
  py::list out;
#if defined(__x86_64__) || defined(_M_X64)
  out.append("baseline");
#if defined(__GNUC__)
  __builtin_cpu_init();
  const bool v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
                  __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("avx");
  const bool v4 = v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                  __builtin_cpu_supports("avx512cd");
  if (v3) out.append("v3");
  if (v4) out.append("v4");
#endif
#else
  out.append("generic");
#endif
  return out;
}

#ifdef FASTKPCA_SANITIZE
// Defects on purpose, compiled into sanitizer builds only: tests/test_sanitizer_stage.py runs them in a
// child process to show that a report there stops the process and is found by the CI stage.
void sanitizer_probe(const std::string& defect) {
  if (defect == "heap-buffer-overflow") {
    std::vector<double> v(7, 1.0);
    volatile const double* p = v.data();
    volatile double x = p[v.size()];  // one element past the end
    (void)x;
  } else if (defect == "misaligned") {
    alignas(8) unsigned char bytes[2 * sizeof(double)] = {};
    volatile const double* p = reinterpret_cast<const double*>(bytes + 1);
    volatile double x = *p;  // a double at an odd address
    (void)x;
  } else {
    throw py::value_error("unknown defect '" + defect + "'");
  }
}
#endif

}  // namespace

void init_info(py::module_& m) {
  m.attr("ISA") = FASTKPCA_ISA;
  m.attr("VERSION") = FASTKPCA_VERSION;
  m.def("supported_isas", &supported_isas, "ISA levels this CPU can run, best last.");
  m.def("build_info", []() {
    py::dict d;
    d["isa"] = FASTKPCA_ISA;
    d["simd"] = Eigen::SimdInstructionSetsInUse();
    d["eigen"] = std::to_string(EIGEN_WORLD_VERSION) + "." + std::to_string(EIGEN_MAJOR_VERSION) + "." +
                 std::to_string(EIGEN_MINOR_VERSION);
    d["compiler"] = compiler();
    d["openmp"] = _OPENMP;
    d["omp_max_threads"] = omp_get_max_threads();
    d["omp_num_procs"] = omp_get_num_procs();
#ifdef FASTKPCA_SANITIZE
    d["sanitize"] = FASTKPCA_SANITIZE;
#else
    d["sanitize"] = "";
#endif
    return d;
  });
#ifdef FASTKPCA_SANITIZE
  m.def("_sanitizer_probe", &sanitizer_probe, py::arg("defect"),
        "Run a defect on purpose (sanitizer builds only): 'heap-buffer-overflow' or 'misaligned'.");
#endif
  m.def("omp_max_threads", []() { return omp_get_max_threads(); });
}

}  // namespace fastkpca::bindings
