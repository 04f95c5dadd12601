// The x86-64 ISA levels this CPU (and OS) can execute: what the ISA dispatcher (fastkpca/_native.py) reads
// from the baseline module, and what CMake's configure step asks of the building CPU (cpp/host_isa.cpp) when
// a source build compiles for that CPU only.
#pragma once

namespace fastkpca {

struct IsaSupport {
  bool v3 = false;  // x86-64-v3: AVX, AVX2, FMA, BMI2 (the instructions the v3 module's code needs)
  bool v4 = false;  // x86-64-v4: v3 and AVX-512 F, BW, DQ, VL, CD
};

inline IsaSupport isa_support() {
  IsaSupport s;
#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__)
  __builtin_cpu_init();
  s.v3 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2") &&
         __builtin_cpu_supports("avx");
  s.v4 = s.v3 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512cd");
#endif
  return s;
}

}  // namespace fastkpca
