// Build and machine facts for fastkpca.show_config() and the ISA dispatcher.
#include <Eigen/Core>
#include <omp.h>

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
    return d;
  });
  m.def("omp_max_threads", []() { return omp_get_max_threads(); });
}

}  // namespace fastkpca::bindings
