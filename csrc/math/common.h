// What every numeric path shares: the forms' constants, the domain limits, bits and rounding,
// coefficient tables, Horner's rule, the lane operations' scalar versions, and pairs (hi + lo)
// with their error-free transformations. No GELU formula lives here.
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "../kernels.h"

#if defined(__CUDACC__)
#define GELU_HD __host__ __device__ __forceinline__
#else
// Always inlined: the vector kernels rely on the whole computation being one straight block.
#define GELU_HD inline __attribute__((always_inline))
#endif

// GELU_DEVICE_FORMS selects the forms of the math written for the GPU where they differ from the
// CPU's: forms that keep a CUDA kernel straight-line and in registers (no subroutine call, whose
// caller-saved registers spill to local memory; no long-lived coefficient sets), and the GPU's
// approximate instructions, or their host stand-ins, for the 16-bit narrow path's GPU forms
// (math/gpu_approximate.h; the forms themselves serve the AVX-512 CPU too). Device code always
// has it; host builds that run the kernels' own arithmetic define it too
// (tests/test_cuda_emulated.py, tools/check_narrow_bounds.cpp --device, bench/narrow_fallback.cpp),
// so that what they check is what the GPU computes. CPU kernels never have it.
#if defined(__CUDA_ARCH__) && !defined(GELU_DEVICE_FORMS)
#define GELU_DEVICE_FORMS 1
#endif

// Each CPU instruction-set variant compiles the math in its own namespace (see cpu/), so that the
// linker never merges an AVX-512 copy of a function into code for other CPUs.
#ifndef GELU_ISA
#define GELU_ISA portable
#endif

namespace gelu_ext {
namespace math {
inline namespace GELU_ISA {

// ---------------------------------------------------------------------------------------------
// The forms.
//   exact:   f = x Phi(x)
//   tanh:    0.5 x (1 + tanh u) = x sigmoid(s), s = 2u = x (kTanhS1 + kTanhS3 x^2)
//   sigmoid: x sigmoid(kSigmoidScale x)
// The tanh and sigmoid forms are both x times a logistic sigmoid of s(x): the "logistic forms".

constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1/sqrt(2 pi)
constexpr double kTanhS1 = 1.5957691216057307117;       // 2 sqrt(2/pi)
constexpr double kTanhS3 = kTanhS1 * 0.044715;
constexpr double kSigmoidScale = 1.702;

// The same as pairs hi + lo, from mpmath: in double (the float64 paths), where a double's 2^-53
// error in 1.702, times |s| up to 745, would cost 100 ulps...
constexpr double kTanhS1Hi = 1.5957691216057308, kTanhS1Lo = -9.96930880911092e-17;
constexpr double kTanhS3Hi = 0.07135481627260025, kTanhS3Lo = -6.175149918155315e-19;
constexpr double kTanhS3x3Hi = 0.21406444881780073, kTanhS3x3Lo = 1.2025242832367862e-17;
constexpr double kSigmoidHi = 1.702, kSigmoidLo = 4.263256414560601e-17;
constexpr double kInvSqrt2PiHi = 0.3989422804014327, kInvSqrt2PiLo = -2.49232720227773e-17;
// ... and in float (the 16-bit narrow path): c1 = 2 sqrt(2/pi), c3 = c1 0.044715, 3 c3, 1.702.
constexpr float kTanhC1Hi = 1.5957691669464111f, kTanhC1Lo = -4.534068054340423e-08f;
constexpr float kTanhC3Hi = 0.07135481387376785f, kTanhC3Lo = 2.3988324659995897e-09f;
constexpr float kTanh3C3Hi = 0.21406444907188416f, kTanh3C3Lo = -2.540834209696641e-10f;
constexpr float kSigmoidFloatHi = 1.7020000219345093f, kSigmoidFloatLo = -2.1934509319976314e-08f;
constexpr float kTanh6C3Float = 0.4281288981437683f;  // 6 c3: the tanh form's s'' = 6 c3 x

// ---------------------------------------------------------------------------------------------
// Domain limits, all in one place. Beyond its limits a path returns the function's limits
// (saturation) or gives the element to its fallback path (core domains).
//
//   path                form       limit                  why
//   f32_via_f64         exact      |x| capped at 37       E(37) < 1e-297: every result is its
//                                                         limit; t^2/2 < 700 needs no exp clamp
//   f32_via_f64         tanh       |x| capped at 70       |s| > 12000: exp(-|s|) at its floor
//   f32_via_f64         sigmoid    |x| capped at 420      |s| = 715: exp(-|s|) at its floor;
//                                                         420 e^-700 < 1e-301, below every float
//                                                         result times two floats
//   f32_via_f64         exp        argument >= -700       far below every float result
//   f64_double_double   exact      |x| <= 40              Q(40) = 1e-349: Phi is 0 or 1
//   f64_double_double   logistic   |x| <= 1e10, |s| <= 790  below, |x s'^2| < 2^100 times
//                                                         exp(-|s|) is below every subnormal
//   f64_double_double   exp        argument >= -800       far below the smallest subnormal
//   f64_pair            exact      0 < |x| < 37           Q(t) 2^k normal (t^2/2 < 684.5)
//   f64_pair            tanh       |x| < 20               exp(-|s|) and its low part normal
//   f64_pair            sigmoid    |x| < 380              likewise (|s| <= 647)
//   f32_via_f32         exact      |x| capped at 25       t Q(t), t phi(t), t^2 phi(t) < 2^-440:
//                                                         below every float result times two floats
//   narrow16            exact      |x| <= 8               every intermediate a normal float
//   narrow16            logistic   |x| <= 9               likewise
//   narrow16 cubic      cells      2^-32 <= |x| < 8       the cells' table (narrow16.h)
constexpr double kExactSaturation = 37.0;
constexpr double kTanhSaturation = 70.0, kSigmoidSaturation = 420.0;
constexpr double kExpArgumentFloor = -700.0;
constexpr double kExactSaturationF64 = 40.0;
constexpr double kLogisticSaturationF64 = 1e10;
constexpr double kLogisticTailF64 = 790.0;
constexpr double kExpArgumentFloorF64 = -800.0;
constexpr double kPairCoreExactF64 = kExactSaturation;  // the same bound on t^2/2 serves both
constexpr double kPairCoreTanhF64 = 20.0, kPairCoreSigmoidF64 = 380.0;
constexpr float kF32ExactLimit = 25.0f;
constexpr float kNarrowCoreExact = 8.0f, kNarrowCoreLogistic = 9.0f;

// ---------------------------------------------------------------------------------------------
// Bits and rounding.

// The bits of a value as another type of the same size (memcpy compiles to a register move, on
// the GPU too).
template <class To, class From>
GELU_HD To bit_cast(From from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast between types of different sizes");
  To to;
  memcpy(&to, &from, sizeof to);
  return to;
}

// d rounded to float with round-to-odd: toward zero, then the last bit set if inexact. Rounding
// that float to nearest in a 16-bit type gives d correctly rounded to that type, which rounding d
// to nearest float first would not (it can land exactly on a 16-bit midpoint).
GELU_HD float round_to_odd_float(double d) {
  const float nearest = static_cast<float>(d);
  if (!(static_cast<double>(nearest) != d) || d != d) return nearest;  // exact, or NaN
  uint32_t bits = bit_cast<uint32_t>(nearest);
  if (fabs(static_cast<double>(nearest)) > fabs(d)) bits -= 1;  // one step toward zero
  return bit_cast<float>(bits | 1u);
}

// ---------------------------------------------------------------------------------------------
// Lanes. Every formula is written once over a lane type: V (doubles) or F (floats) is double or
// float here and on the GPU, or a SIMD vector on the CPU (cpu/lanes.h lists what a vector type
// provides). Branches are selects. Every operation is IEEE-rounded, so every lane type gives
// bit-identical results. The scalar versions of the lane operations follow; SIMD lanes may
// override at_least, at_most, at_most_each and times_pow2_normal with single instructions.

GELU_HD double select(bool c, double a, double b) { return c ? a : b; }
GELU_HD float select(bool c, float a, float b) { return c ? a : b; }
// |v| with the sign of x.
GELU_HD double with_sign_of(double v, double x) { return copysign(v, x); }

// x, or floor where x < floor; at_most likewise. NaN stays NaN.
template <class V>
GELU_HD V at_least(V x, double floor) {
  return select(x < V(floor), V(floor), x);
}
template <class V>
GELU_HD V at_most(V x, double ceiling) {
  return select(x > V(ceiling), V(ceiling), x);
}
// x, or ceiling where x > ceiling, lane by lane (NaN x stays NaN; a NaN ceiling leaves x).
template <class V>
GELU_HD V at_most_each(V x, V ceiling) {
  return select(x > ceiling, ceiling, x);
}
template <class V>
GELU_HD V clamp_magnitude(V x, double limit) {
  return at_most(at_least(x, -limit), limit);  // NaN stays
}

constexpr double kRoundToInteger = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds
constexpr double kLog2e = 1.4426950408889634074;
constexpr double kLn2 = 0.69314718055994528623;  // rounded to double

// value * 2^k, where shifted = k + 1.5 * 2^52 holds the integer k in [-1022, 0] in the low bits
// of its significand (see exp_nonpositive).
GELU_HD double times_pow2(double value, double shifted) {
  constexpr int64_t kShiftedBits = 0x4338000000000000;  // bits of 1.5 * 2^52
  return value * bit_cast<double>((bit_cast<int64_t>(shifted) - kShiftedBits + 1023) << 52);
}
// value * 2^k as times_pow2, where value and the product are known to be normal doubles, and k
// is also given as a double (shifted - kRoundToInteger), for lanes that scale by it in one
// instruction (the other SIMD lanes, and the device form, add k to the exponent field instead of
// multiplying: an integer instruction where the product costs an FP64 one on the GPU).
#if defined(GELU_DEVICE_FORMS)
GELU_HD double times_pow2_normal(double value, double shifted, double /*k*/) {
  constexpr uint64_t kShiftedBits = 0x4338000000000000;  // bits of 1.5 * 2^52
  return bit_cast<double>(bit_cast<uint64_t>(value) +
                          ((bit_cast<uint64_t>(shifted) - kShiftedBits) << 52));
}
#else
GELU_HD double times_pow2_normal(double value, double shifted, double /*k*/) {
  return times_pow2(value, shifted);
}
#endif
// |x|, the same bits as fabs; the device form clears the sign bit with an integer instruction,
// where fabs costs an FP64 one (DADD), on GPUs whose float32 kernels are FP64-bound.
template <class V>
GELU_HD V magnitude(V x) {
  return fabs(x);
}
// -|x|, likewise: the device form sets the sign bit.
template <class V>
GELU_HD V negative_magnitude(V x) {
  return -fabs(x);
}
// v with its sign flipped where x >= 0: y's parts from -|y|'s, for x of y's sign.
template <class V>
GELU_HD V negated_where_nonnegative(V v, V x) {
  return select(x >= V(0.0), -v, v);
}
#if defined(GELU_DEVICE_FORMS)
GELU_HD double magnitude(double x) {
  return bit_cast<double>(bit_cast<uint64_t>(x) & ~(uint64_t(1) << 63));
}
GELU_HD double negative_magnitude(double x) {
  return bit_cast<double>(bit_cast<uint64_t>(x) | (uint64_t(1) << 63));
}
// Flips v's sign where x's sign bit is clear (an integer instruction): x = -0 counts as negative
// here, which changes no caller's result, their v being a zero there.
GELU_HD double negated_where_nonnegative(double v, double x) {
  return bit_cast<double>(bit_cast<uint64_t>(v) ^ (~bit_cast<uint64_t>(x) & (uint64_t(1) << 63)));
}

// 1/d in float, correctly rounded (an IEEE division on the GPU and the CPU alike), widened back:
// the seed of f32_via_f64's device-form division.
GELU_HD double float_reciprocal(double d) {
  return static_cast<double>(1.0f / static_cast<float>(d));
}
// 1/d for d in the normal floats: float_reciprocal (relative delta below 2^-23, two float
// roundings) after one Newton step in double, which leaves delta^2 + 2^-53 < 2^-45.9.
GELU_HD double refined_reciprocal(double d) {
  const double seed = float_reciprocal(d);
  return fma(seed, fma(-d, seed, 1.0), seed);
}
#endif

// 1/d to within 2^-45.9, for d in the normal floats, as the seed of a reciprocal or quotient that
// a later correction squares the error of (1/(1 + e) in f64_pair.h, dd_div): a division on the
// CPU, refined_reciprocal on the GPU, two FP64 operations where the GPU's double division takes
// five and calls a subroutine for its rare operands, around which the kernels saved registers to
// local memory (the float64 backward spilled so on every architecture up to 8.9; the float
// division's rare-operand call leaves no kernel spilling, bench/gpu_model.py's LDL/STL column).
template <class V>
GELU_HD V seed_reciprocal(V d) {
  return V(1.0) / d;
}
#if defined(GELU_DEVICE_FORMS)
GELU_HD double seed_reciprocal(double d) { return refined_reciprocal(d); }
#endif

// value * 2^k, where shifted = k + 1.5 * 2^23 holds the integer k in [-126, 0].
GELU_HD float times_pow2(float value, float shifted) {
  return value * bit_cast<float>((bit_cast<uint32_t>(shifted) - 0x4B400000u + 127u) << 23);
}

// ---------------------------------------------------------------------------------------------
// Coefficient tables. Every polynomial's coefficients come from tools/fit_polynomials.py, which
// writes coefficients.inc with each one's interval and measured error. On the GPU the double ones
// live in constant memory, which the multiply-adds read directly (as immediates, every 64-bit
// constant would cost two extra moves per use); the float ones are immediates, which a float
// multiply-add takes in either operand at no cost, where constants from memory go through
// uniform registers that the compiler reloads in every round of a long loop.
#if defined(__CUDACC__)
#define GELU_COEFFICIENTS(name, ...)                         \
  static __constant__ double name##_device[] = {__VA_ARGS__}; \
  static constexpr double name##_host[] = {__VA_ARGS__};
#define GELU_COEFFICIENTS_FLOAT(name, ...)                          \
  static __device__ constexpr float name##_device[] = {__VA_ARGS__}; \
  static constexpr float name##_host[] = {__VA_ARGS__};
#else
#define GELU_COEFFICIENTS(name, ...) static constexpr double name##_host[] = {__VA_ARGS__};
#define GELU_COEFFICIENTS_FLOAT(name, ...) static constexpr float name##_host[] = {__VA_ARGS__};
#endif
#if defined(__CUDA_ARCH__)
#define GELU_TABLE(name) name##_device
#else
#define GELU_TABLE(name) name##_host
#endif

#include "coefficients.inc"

// p(x) = c[0] + c[1] x + c[2] x^2 + ... by Horner's rule, in the precision of V.
template <class V, class C, int N>
GELU_HD V horner(V x, const C (&c)[N]) {
  V p = V(c[N - 1]);
#if defined(__CUDA_ARCH__)
#pragma unroll
#else
#pragma GCC unroll 32
#endif
  for (int i = N - 2; i >= 0; --i) p = fma(p, x, V(c[i]));
  return p;
}

// ---------------------------------------------------------------------------------------------
// Pairs: an unevaluated sum hi + lo with |lo| <= ulp(hi)/2 (a double-double in double lanes, a
// float-float in float lanes), and the error-free transformations that make them.

template <class V>
struct DD {
  V hi, lo;
};

template <class V>
GELU_HD DD<V> two_sum(V a, V b) {  // exact: a + b = hi + lo
  const V s = a + b, bb = s - a;
  return DD<V>{s, (a - (s - bb)) + (b - bb)};
}
template <class V>
GELU_HD DD<V> fast_two_sum(V a, V b) {  // exact if |a| >= |b|
  const V s = a + b;
  return DD<V>{s, b - (s - a)};
}
// Whether s, a + b rounded, is a + b exactly. If it is, s - a = b and s - b = a exactly. If not,
// s minus the operand larger in magnitude is exact (fast_two_sum's s - a) and so differs from the
// other operand. Infinite or NaN operands or sums are never exact. Fewer operations than
// two_sum's error compared with 0.
template <class V>
GELU_HD auto sum_is_exact(V a, V b, V s) {
  return ((s - a) == b) & ((s - b) == a);
}
template <class V>
GELU_HD DD<V> two_prod(V a, V b) {  // exact: a b = hi + lo
  const V p = a * b;
  return DD<V>{p, fma(a, b, -p)};
}
template <class V>
GELU_HD DD<V> dd(V hi) {
  return DD<V>{hi, V(0.0)};
}
template <class V>
GELU_HD DD<V> dd(double hi, double lo) {  // a constant pair
  return DD<V>{V(hi), V(lo)};
}
// Sums and products come unnormalized (lo may exceed ulp(hi)/2 a little: fine as the operand of
// a product), renormalized (dd_add, dd_mul), or rounded once to the lane type (*_rounded).
template <class V>
GELU_HD DD<V> dd_add_unnormalized(DD<V> a, DD<V> b) {
  const DD<V> s = two_sum(a.hi, b.hi);
  return DD<V>{s.hi, s.lo + a.lo + b.lo};
}
template <class V>
GELU_HD DD<V> dd_add(DD<V> a, DD<V> b) {
  const DD<V> s = dd_add_unnormalized(a, b);
  return fast_two_sum(s.hi, s.lo);
}
template <class V>
GELU_HD V dd_add_rounded(DD<V> a, DD<V> b) {
  const DD<V> s = dd_add_unnormalized(a, b);
  return s.hi + s.lo;
}
template <class V>
GELU_HD DD<V> dd_neg(DD<V> a) {
  return DD<V>{-a.hi, -a.lo};
}
template <class V>
GELU_HD DD<V> dd_mul_unnormalized(DD<V> a, DD<V> b) {
  const DD<V> p = two_prod(a.hi, b.hi);
  return DD<V>{p.hi, fma(a.hi, b.lo, fma(a.lo, b.hi, p.lo))};
}
template <class V>
GELU_HD DD<V> dd_mul_unnormalized(DD<V> a, V b) {
  const DD<V> p = two_prod(a.hi, b);
  return DD<V>{p.hi, fma(a.lo, b, p.lo)};
}
template <class V, class B>
GELU_HD DD<V> dd_mul(DD<V> a, B b) {
  const DD<V> p = dd_mul_unnormalized(a, b);
  return fast_two_sum(p.hi, p.lo);
}
template <class V, class B>
GELU_HD V dd_mul_rounded(DD<V> a, B b) {
  const DD<V> p = dd_mul_unnormalized(a, b);
  return p.hi + p.lo;
}
// 1 - a for 0 <= a.hi <= 1/2, so that 1 - hi is exact and the rest a fast two-sum.
template <class V>
GELU_HD DD<V> dd_one_minus(DD<V> a) {
  const V hi = V(1.0) - a.hi;
  return DD<V>{hi, ((V(1.0) - hi) - a.hi) - a.lo};
}
// a / b from one reciprocal (1 / b.hi), the slowest operation here: q = a.hi / b.hi to about an
// ulp, then the remainder, far below q, divided by b.hi to the same relative accuracy. The
// reciprocal's error enters the quotient only through the remainder's term, squared, so
// seed_reciprocal's 2^-45.9 costs 2^-91 (the divisors lie in [1, 41]).
template <class V>
GELU_HD DD<V> dd_div(DD<V> a, DD<V> b) {
  const V inverse = seed_reciprocal(b.hi);
  const V q = a.hi * inverse;
  const V r = fma(-q, b.hi, a.hi) + a.lo - q * b.lo;
  return fast_two_sum(q, r * inverse);
}
template <class M, class V>
GELU_HD DD<V> select(M c, DD<V> a, DD<V> b) {
  return DD<V>{select(c, a.hi, b.hi), select(c, a.lo, b.lo)};
}

// c1 + c x^2 as a pair, x^2 = x2 + x2_lo, c1 and c pairs in the lanes' precision C: the tanh
// form's s/x (c = c3) or s' (c = 3 c3), to far below an ulp.
template <class F, class C>
GELU_HD DD<F> tanh_polynomial_pair(C c1_hi, C c1_lo, C c_hi, C c_lo, F x2, F x2_lo) {
  const F cx2 = F(c_hi) * x2;
  const F cx2_lo = fma(F(c_hi), x2, -cx2) + fma(F(c_hi), x2_lo, F(c_lo) * x2);
  const DD<F> sum = two_sum(F(c1_hi), cx2);
  return DD<F>{sum.hi, sum.lo + (F(c1_lo) + cx2_lo)};
}

// ---------------------------------------------------------------------------------------------
// What a path returns per output where the result carries an error bound: the narrow path's
// |value - exact| <= error, or the float64 pair path's error +0 (the value is the result) or +inf
// (the element is redone by the fallback path).
template <class F>
struct Bounded {
  F value, error;
};

// Which of f, f' and f'' a computation needs (bit flags).
enum Needs : int { kNeedF = 1, kNeedD1 = 2, kNeedD2 = 4 };

// f, f' and f'' at one point (those not needed are left unset).
template <class V>
struct Derivatives {
  V f, d1, d2;
};

}  // namespace GELU_ISA
}  // namespace math
}  // namespace gelu_ext
