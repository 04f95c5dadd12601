// The SIMD vector the micro-kernels compute with, and the exponential on it.
//
// One vector type per ISA build, through GCC/Clang vector extensions: 64 bytes (AVX-512: the v4 module,
// compiled with -mprefer-vector-width=512), 32 bytes (AVX2 + FMA: v3) or 16 bytes (SSE2: baseline, and
// the portable generic build). Vec<S> holds kLanes<S> elements of S; a*b + c contracts to a fused
// multiply-add where the ISA has one (GCC's default -ffp-contract=fast; -ffast-math is never used).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace fastkpca::simd {

#if defined(__AVX512F__)
constexpr int kBytes = 64;
#elif defined(__AVX__)
constexpr int kBytes = 32;
#else
constexpr int kBytes = 16;
#endif

template <class S>
constexpr int kLanes = kBytes / static_cast<int>(sizeof(S));

template <class S>
struct Types;
template <>
struct Types<double> {
  typedef double Vector __attribute__((vector_size(kBytes)));
  typedef double Unaligned __attribute__((vector_size(kBytes), aligned(8)));  // for unaligned loads and stores
  typedef std::uint64_t Bits __attribute__((vector_size(kBytes)));
};
template <>
struct Types<float> {
  typedef float Vector __attribute__((vector_size(kBytes)));
  typedef float Unaligned __attribute__((vector_size(kBytes), aligned(4)));
  typedef std::uint32_t Bits __attribute__((vector_size(kBytes)));
};

template <class S>
using Vec = typename Types<S>::Vector;
template <class S>
using IVec = typename Types<S>::Bits;

template <class S>
inline Vec<S> load(const S* p) {
  return *reinterpret_cast<const typename Types<S>::Unaligned*>(p);
}
template <class S>
inline void store(S* p, Vec<S> v) {
  *reinterpret_cast<typename Types<S>::Unaligned*>(p) = v;
}
// s in every lane: one broadcast instruction (GCC turns a loop over the lanes of a 64-byte vector into one
// masked broadcast per lane; an addition to a zero vector would turn -0.0 into +0.0, and cost an add).
template <class S>
inline Vec<S> broadcast(S s) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<S, double>) return (Vec<S>)(_mm512_set1_pd(s));
  else return (Vec<S>)(_mm512_set1_ps(s));
#elif defined(__AVX__)
  if constexpr (std::is_same_v<S, double>) return (Vec<S>)(_mm256_set1_pd(s));
  else return (Vec<S>)(_mm256_set1_ps(s));
#elif defined(__SSE2__)
  if constexpr (std::is_same_v<S, double>) return (Vec<S>)(_mm_set1_pd(s));
  else return (Vec<S>)(_mm_set1_ps(s));
#else
  Vec<S> v;
#pragma GCC unroll 16
  for (int i = 0; i < kLanes<S>; ++i) v[i] = s;
  return v;
#endif
}

// Bits of a vector as unsigned integers of the same width (shifts defined for every value), and back.
template <class S>
inline IVec<S> bits(Vec<S> v) {
  return (IVec<S>)v;  // a vector cast between types of one size keeps the bits
}
template <class S>
inline Vec<S> from_bits(IVec<S> i) {
  return (Vec<S>)i;
}

template <class S>
inline Vec<S> abs(Vec<S> v) {
  return from_bits<S>(bits<S>(v) & ~bits<S>(broadcast<S>(S(-0.0))));  // the sign bit cleared
}

// *p in every lane, loaded by a broadcast from memory (a load port only: the compiler's own choice, a vector
// load and lane permutes, occupies the shuffle pipe beside the FMAs of a micro-kernel).
template <class S>
inline Vec<S> broadcast_load(const S* p) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<S, double>) return (Vec<S>)(_mm512_set1_pd(*p));
  else return (Vec<S>)(_mm512_set1_ps(*p));
#elif defined(__AVX__)
  if constexpr (std::is_same_v<S, double>) return (Vec<S>)(_mm256_broadcast_sd(p));
  else return (Vec<S>)(_mm256_broadcast_ss(p));
#else
  return broadcast(*p);
#endif
}

// Whether any lane of a comparison's result (all ones or all zeros per lane) is set.
template <class S>
inline bool any(IVec<S> mask) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<S, double>) return _mm512_test_epi64_mask((__m512i)mask, (__m512i)mask) != 0;
  else return _mm512_test_epi32_mask((__m512i)mask, (__m512i)mask) != 0;
#elif defined(__AVX__)
  if constexpr (std::is_same_v<S, double>) return _mm256_movemask_pd((__m256d)mask) != 0;
  else return _mm256_movemask_ps((__m256)mask) != 0;
#elif defined(__SSE2__)
  if constexpr (std::is_same_v<S, double>) return _mm_movemask_pd((__m128d)mask) != 0;
  else return _mm_movemask_ps((__m128)mask) != 0;
#else
  bool set = false;
  for (int i = 0; i < kLanes<S>; ++i) set |= mask[i] != 0;
  return set;
#endif
}

// Lane-wise minimum and maximum as the x86 instructions define them (the second operand where either is NaN).
template <class S>
inline Vec<S> min(Vec<S> a, Vec<S> b) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<S, double>) return (Vec<S>)(_mm512_min_pd((__m512d)(a), (__m512d)(b)));
  else return (Vec<S>)(_mm512_min_ps((__m512)(a), (__m512)(b)));
#elif defined(__AVX__)
  if constexpr (std::is_same_v<S, double>) return (Vec<S>)(_mm256_min_pd((__m256d)(a), (__m256d)(b)));
  else return (Vec<S>)(_mm256_min_ps((__m256)(a), (__m256)(b)));
#else
  return a < b ? a : b;
#endif
}
template <class S>
inline Vec<S> max(Vec<S> a, Vec<S> b) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<S, double>) return (Vec<S>)(_mm512_max_pd((__m512d)(a), (__m512d)(b)));
  else return (Vec<S>)(_mm512_max_ps((__m512)(a), (__m512)(b)));
#elif defined(__AVX__)
  if constexpr (std::is_same_v<S, double>) return (Vec<S>)(_mm256_max_pd((__m256d)(a), (__m256d)(b)));
  else return (Vec<S>)(_mm256_max_ps((__m256)(a), (__m256)(b)));
#else
  return a > b ? a : b;
#endif
}

// The correctly rounded square root of every lane (IEEE's sqrt instruction).
template <class S>
inline Vec<S> sqrt(Vec<S> v) {
#if defined(__AVX512F__)
  if constexpr (std::is_same_v<S, double>) return (Vec<S>)(_mm512_sqrt_pd((__m512d)(v)));
  else return (Vec<S>)(_mm512_sqrt_ps((__m512)(v)));
#elif defined(__AVX__)
  if constexpr (std::is_same_v<S, double>) return (Vec<S>)(_mm256_sqrt_pd((__m256d)(v)));
  else return (Vec<S>)(_mm256_sqrt_ps((__m256)(v)));
#elif defined(__SSE2__)
  if constexpr (std::is_same_v<S, double>) return (Vec<S>)(_mm_sqrt_pd((__m128d)(v)));
  else return (Vec<S>)(_mm_sqrt_ps((__m128)(v)));
#else
  Vec<S> out;
  for (int i = 0; i < kLanes<S>; ++i) out[i] = std::sqrt(v[i]);
  return out;
#endif
}

namespace detail {

// e^x for x in [exp_lo, exp_hi] (clamped by the caller), by the range reduction and polynomial described at
// exp() below.
template <class S>
inline Vec<S> exp_reduced(Vec<S> xc) {
  constexpr bool is_double = std::is_same_v<S, double>;
  const S log2e = S(1.4426950408889634074);
  const S ln2_hi = is_double ? S(6.93145751953125e-1) : S(6.93359375e-1f);
  const S ln2_lo = is_double ? S(1.42860682030941723212e-6) : S(-2.12194440e-4f);
  // 1.5·2^52 (1.5·2^23) plus the exponent bias: rounding x/ln2 to an integer n by this addition leaves
  // n + bias in the low mantissa bits.
  const S shifter = is_double ? S(6755399441055744.0 + 1023.0) : S(12582912.0f + 127.0f);
  constexpr int mantissa = is_double ? 52 : 23;
  const Vec<S> t = xc * log2e + shifter;
  const Vec<S> n = t - shifter;
  const Vec<S> r = (xc - n * ln2_hi) - n * ln2_lo;
  // e^r = 1 + r + r²·q(r), q the Chebyshev interpolant of (e^r - 1 - r)/r² on [-ln2/2, ln2/2] (degree 9 in
  // double, 4 in float; tests/test_micro_kernel.py): 1.7e-17 (1.0e-8 in float) relative at most, below a
  // fifth of an ulp.
  Vec<S> p;
  if constexpr (is_double) {
    p = broadcast<S>(S(2.510037583256123366e-8));
    p = p * r + S(2.762007587998336659e-7);
    p = p * r + S(2.755726848031002553e-6);
    p = p * r + S(2.480152132236869327e-5);
    p = p * r + S(1.984126986304054527e-4);
    p = p * r + S(1.388888891719671908e-3);
    p = p * r + S(8.333333333330064449e-3);
    p = p * r + S(4.166666666662416190e-2);
    p = p * r + S(1.666666666666666745e-1);
    p = p * r + S(5.000000000000001021e-1);
  } else {
    p = broadcast<S>(S(1.392617611993557888e-3f));
    p = p * r + S(8.363173074513710903e-3f);
    p = p * r + S(4.166655466205053398e-2f);
    p = p * r + S(1.666657702559798819e-1f);
    p = p * r + S(0.5f);
  }
  p = p * r + S(1);
  p = p * r + S(1);
  return p * from_bits<S>(bits<S>(t) << mantissa);  // times 2^n (the 1.5·2^k part shifts out)
}

// ln of the smallest normal number: below it the result is flushed to 0. Above exp_hi, 2^n would need the
// exponent field's last value (infinity).
template <class S>
constexpr S exp_lo = std::is_same_v<S, double> ? S(-708.39641853226410622) : S(-87.33654475f);
template <class S>
constexpr S exp_hi = std::is_same_v<S, double> ? S(709.0) : S(88.0f);

}  // namespace detail

// exp(x) for every element, branch-free and division-free, with results below the smallest normal number
// flushed to 0 (0 for x = -inf, NaN for NaN). The kernels use it on arguments <= 0; it is accurate up to
// x = 709 in double (88 in float), above which the result is exp(709) (exp(88)).
//
// x = n·ln2 + r with n = round(x/ln2) and |r| <= ln2/2, r computed with ln2 split in two parts (Cody and
// Waite: the first has 14 (9) significant bits, so n·ln2_hi is exact for every n used); exp(r) by a
// polynomial of degree 11 (6 in float) in Horner's form (exp_reduced), then times 2^n built in the exponent
// bits. n is rounded by adding 1.5·2^52 (1.5·2^23), whose low mantissa bits then hold n plus the exponent
// bias. Measured against exp in extended precision over the whole range (tests/test_micro_kernel.py): at
// most 1 ulp in double, 1 in float.
template <class S>
inline Vec<S> exp(Vec<S> x) {
  const Vec<S> lo = broadcast<S>(detail::exp_lo<S>);
  const Vec<S> result = detail::exp_reduced<S>(max<S>(min<S>(x, broadcast<S>(detail::exp_hi<S>)), lo));
  return x < lo ? Vec<S>{} : (x == x ? result : x);  // flushed below the smallest normal result; NaN stays NaN
}

// exp(x) for x <= 0 and not NaN, the kernels' arguments: the same values as exp, three operations fewer.
template <class S>
inline Vec<S> exp_nonpositive(Vec<S> x) {
  const Vec<S> lo = broadcast<S>(detail::exp_lo<S>);
  // Below lo the reduction's n leaves its range and the product is garbage (even NaN for -inf): the
  // selection throws it away.
  return x < lo ? Vec<S>{} : detail::exp_reduced<S>(x);
}

// from[0..n) converted to float at to[0..n) by non-temporal stores where the ISA has them (x86's movntps, 16 bytes a
// store; the head up to 16-byte alignment and the tail by plain stores). A non-temporal store skips the read for
// ownership of its line and does not fill the cache: for output far larger than the cache and not read again soon,
// half the memory traffic of plain stores. Such stores are weakly ordered: the writing thread calls stream_fence()
// before another thread reads what it wrote.
template <class S>
inline void stream_as_float(float* to, const S* from, std::ptrdiff_t n) {
  std::ptrdiff_t i = 0;
#if defined(__SSE2__)
  for (; i < n && (reinterpret_cast<std::uintptr_t>(to + i) & 15); ++i) to[i] = static_cast<float>(from[i]);
  for (; i + 4 <= n; i += 4) {
    if constexpr (std::is_same_v<S, float>) {
      _mm_stream_ps(to + i, _mm_loadu_ps(from + i));
    } else {
      static_assert(std::is_same_v<S, double>, "float or double");
      _mm_stream_ps(to + i,
                    _mm_movelh_ps(_mm_cvtpd_ps(_mm_loadu_pd(from + i)), _mm_cvtpd_ps(_mm_loadu_pd(from + i + 2))));
    }
  }
#endif
  for (; i < n; ++i) to[i] = static_cast<float>(from[i]);
}

// Orders this thread's non-temporal stores before its later stores (and so before a barrier's).
inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace fastkpca::simd
