// Build and machine facts for fastkpca.show_config() and the ISA dispatcher.
#include <Eigen/Core>
#include <omp.h>

#include <chrono>
#include <vector>

#include "common.hpp"
#include "fastkpca/background_release.hpp"
#include "fastkpca/isa.hpp"
#include "fastkpca/simd.hpp"
#include "fastkpca/spare_buffer.hpp"

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
  const IsaSupport support = isa_support();
  if (support.v3) out.append("v3");
  if (support.v4) out.append("v4");
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

// The fused multiply-add throughput of this module's vectors on `threads` threads: each thread runs 12
// independent chains of a·x + b (more than the FMA units' latency × count on current cores) for about
// `seconds`; returns flops per second (2 per lane and FMA). The roofline of bench/roofline.py.
template <class S>
double fma_rate(int threads, double seconds) {
  using Vec = simd::Vec<S>;
  constexpr int chains = 12;
  double flops = 0, elapsed = 0;
  ThreadScope scope(threads);
#pragma omp parallel reduction(+ : flops) reduction(max : elapsed)
  {
    // Twelve named accumulators (an array would be kept in memory around the barrier below).
    Vec c0 = simd::broadcast<S>(S(1.000)), c1 = simd::broadcast<S>(S(1.001)), c2 = simd::broadcast<S>(S(1.002)),
        c3 = simd::broadcast<S>(S(1.003)), c4 = simd::broadcast<S>(S(1.004)), c5 = simd::broadcast<S>(S(1.005)),
        c6 = simd::broadcast<S>(S(1.006)), c7 = simd::broadcast<S>(S(1.007)), c8 = simd::broadcast<S>(S(1.008)),
        c9 = simd::broadcast<S>(S(1.009)), c10 = simd::broadcast<S>(S(1.010)), c11 = simd::broadcast<S>(S(1.011));
    const Vec a = simd::broadcast<S>(S(0.999999)), b = simd::broadcast<S>(S(1e-7));
    const auto start = std::chrono::steady_clock::now();
    long long rounds = 0;
    double spent = 0;
    do {
      for (int it = 0; it < 4096; ++it) {
        c0 = c0 * a + b, c1 = c1 * a + b, c2 = c2 * a + b, c3 = c3 * a + b, c4 = c4 * a + b, c5 = c5 * a + b;
        c6 = c6 * a + b, c7 = c7 * a + b, c8 = c8 * a + b, c9 = c9 * a + b, c10 = c10 * a + b, c11 = c11 * a + b;
        // An empty asm that "changes" the registers: the compiler must compute every step as written.
#if defined(__AVX512F__)
        asm volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5));
        asm volatile("" : "+v"(c6), "+v"(c7), "+v"(c8), "+v"(c9), "+v"(c10), "+v"(c11));
#else
        asm volatile("" : "+x"(c0), "+x"(c1), "+x"(c2), "+x"(c3), "+x"(c4), "+x"(c5));
        asm volatile("" : "+x"(c6), "+x"(c7), "+x"(c8), "+x"(c9), "+x"(c10), "+x"(c11));
#endif
      }
      rounds += 4096;
      spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    } while (spent < seconds);
    const Vec sum = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11;
    volatile S keep = sum[0];  // the chains must be computed
    (void)keep;
    flops += 2.0 * simd::kLanes<S> * chains * static_cast<double>(rounds);
    elapsed = spent;
  }
  return flops / elapsed;
}

template <class S>
py::array_t<S> vector_exp(const Input<S>& x) {
  if (x.ndim() != 1) throw py::value_error("x must be a 1-D array");
  const Index n = x.size();
  py::array_t<S> out(n);
  S* o = out.mutable_data();
  const S* in = x.data();
  constexpr int width = simd::kLanes<S>;
  Index i = 0;
  for (; i + width <= n; i += width) simd::store(o + i, simd::exp<S>(simd::load(in + i)));
  if (i < n) {  // the tail through a whole vector
    S lanes[width] = {};
    std::copy(in + i, in + n, lanes);
    simd::store(lanes, simd::exp<S>(simd::load(lanes)));
    std::copy(lanes, lanes + (n - i), o + i);
  }
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
  m.attr("TEAM_MIN_SECONDS") = kTeamMinSeconds;
  m.attr("BACKGROUND_RELEASE_BYTES") = kBackgroundReleaseBytes;
  m.def(
      "wait_for_releases",
      []() {
        if (detail::releases_in_flight().load() == 0) return;  // the usual case: no wait, the GIL kept
        py::gil_scoped_release nogil;
        wait_for_releases();
      },
      "Return once every large buffer the core has started to free in the background is freed.");
  m.def("releases_in_flight", []() { return detail::releases_in_flight().load(); });
  m.def(
      "release_bytes_in_flight", []() { return detail::release_bytes_in_flight().load(); },
      "Bytes of the large buffers the core is freeing in the background now.");
  m.def(
      "spare_bytes", []() { return spare_bytes(); },
      "Bytes of the buffer a finished fit gave back, kept for a second for the next fit of about its size.");
  m.def(
      "drop_spare", []() { return give_back_spare(); },
      "Give the spare buffer back to the system now (in the background); whether there was one.");
  m.def("omp_max_threads", []() { return omp_get_max_threads(); });
  m.attr("SHORT_CALL_TEAM") = kShortCallTeam;
  m.def(
      "short_call_team",
      []() {
        py::gil_scoped_release release;
        ThreadScope scope(kShortCallTeam);
        return scope.threads();
      },
      "The threads a short call with the default team would run on now (parallel.hpp, kShortCallTeam).");
  m.def("simd_bytes", []() { return simd::kBytes; }, "Bytes of the vectors this module's micro-kernels use.");
  m.def(
      "fma_rate",
      [](int threads, double seconds, const std::string& dtype) {
        if (dtype == "float64") return fma_rate<double>(threads, seconds);
        if (dtype == "float32") return fma_rate<float>(threads, seconds);
        throw py::value_error("dtype must be 'float64' or 'float32'");
      },
      py::arg("threads"), py::arg("seconds"), py::arg("dtype"),
      "Flops per second of this module's fused multiply-adds on `threads` threads (the peak a pass is held to).");
  m.def("vector_exp", &vector_exp<double>, py::arg("x"), "exp(x) by the micro-kernels' vectorised exponential.");
  m.def("vector_exp", &vector_exp<float>, py::arg("x"));
}

}  // namespace fastkpca::bindings
