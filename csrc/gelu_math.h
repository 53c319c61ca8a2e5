// THE math of gelu_ext: every GELU formula lives here, shared by the CPU and CUDA kernels.
//
// For each variant, the function f, its first derivative f' and its second derivative f'', as
// inline host+device functions; at the end, PassMath: what each elementwise pass computes from its
// operands. No torch headers.
//
// Forms, chosen to be free of cancellation and overflow:
//   exact:   f = x Phi(x). With t = |x| and Q(t) = erfc(t/sqrt2)/2 (the upper tail),
//            Phi(x) = Q(t) for x < 0 and 1 - Q(t) for x > 0, and Q(t) = exp(-t^2/2) R(t), where
//            R (a Mills ratio) is smooth and bounded. Never 1 + erf(x/sqrt2), which is 0 in float
//            for x < -5.5 although Phi(x) is a normal float down to x = -13.
//   tanh:    0.5 x (1 + tanh u) = x sigmoid(2u), 2u = x (kTanhS1 + kTanhS3 x^2).
//   sigmoid: x sigmoid(1.702 x).
//   sigmoid(s) and sigmoid(-s) both come from exp(-|s|), which never overflows.
//
// Precision. Inputs of float32, float16 and bfloat16 are exact in double; their results are
// computed in double to a relative error below 2^-32 (the polynomials below, fitted by
// tools/fit_polynomials.py, are accurate to 2^-33) and rounded once to the output type (the
// "double path"). float64 inputs go through the *_f64 functions. Faster paths with an error
// bound come last: "narrow" (float arithmetic) for 16-bit outputs, "single" (float pairs) for
// float32 outputs, of every variant, and (double pairs) for float64 outputs of the gated forms;
// what they cannot bound, the double path redoes.
//
// Non-finite inputs: f(+inf) = +inf, f(-inf) = -0, NaN -> NaN; f'(+inf) = 1, f'(-inf) = -0,
// f''(+-inf) = -0 (the limits are approached from below). Beyond |x| = kSaturation every result
// is its limit to within far less than the smallest subnormal float, so it is set to the limit
// and no intermediate ever overflows.
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "kernels.h"

#if defined(__CUDACC__)
#define GELU_HD __host__ __device__ __forceinline__
#else
// Always inlined: the vector kernels rely on the whole computation being one straight block.
#define GELU_HD inline __attribute__((always_inline))
#endif

// Each CPU instruction-set variant compiles this header in its own namespace (see cpu/), so that
// the linker never merges an AVX-512 copy of a function into code for other CPUs.
#ifndef GELU_ISA
#define GELU_ISA portable
#endif

namespace gelu_ext {
namespace math {
inline namespace GELU_ISA {

constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1/sqrt(2 pi)
// tanh form: 0.5 x (1 + tanh u) = x sigmoid(s), s = 2u = x (kTanhS1 + kTanhS3 x^2)
constexpr double kTanhS1 = 1.5957691216057307117;  // 2 sqrt(2/pi)
constexpr double kTanhS3 = kTanhS1 * 0.044715;
constexpr double kSigmoidScale = 1.702;

// |x| beyond which f, f', f'' of float, float16 and bfloat16 inputs are their limits.
constexpr double kSaturation = 70.0;

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
// Float, float16 and bfloat16 inputs: double arithmetic, written once for every lane type V.
//
// V is double here and on the GPU; the CPU kernels also instantiate it with SIMD vectors of
// doubles (cpu/simd_*.h), which provide the same operations: + - *, fma, fabs, comparisons,
// select(mask, a, b), times_pow2(value, shifted) and float_reciprocal. Every operation is
// IEEE-rounded, so all lane types give bit-identical results.

GELU_HD double select(bool c, double a, double b) { return c ? a : b; }
// |v| with the sign of x.
GELU_HD double with_sign_of(double v, double x) { return copysign(v, x); }

// value * 2^k, where shifted = k + 1.5 * 2^52 holds the integer k in [-1022, 0] in the low bits
// of its significand (see exp_nonpositive).
GELU_HD double times_pow2(double value, double shifted) {
  constexpr int64_t kShiftedBits = 0x4338000000000000;  // bits of 1.5 * 2^52
  return value * bit_cast<double>((bit_cast<int64_t>(shifted) - kShiftedBits + 1023) << 52);
}

// A float reciprocal, correctly rounded: IEEE division on the CPU, __frcp_rn on the GPU.
GELU_HD double float_reciprocal(double d) {
#if defined(__CUDA_ARCH__)
  return __frcp_rn(__double2float_rn(d));
#else
  return 1.0f / static_cast<float>(d);
#endif
}

// 1/d for d in [1, 100], to a relative error below 2^-47: the float reciprocal refined by one
// Newton step. Much cheaper than a double division, and as exactly defined.
template <class V>
GELU_HD V reciprocal(V d) {
  const V y = float_reciprocal(d);
  return fma(y, fma(-d, y, V(1.0)), y);
}

// Polynomial coefficient tables, from tools/fit_polynomials.py. On the GPU they live in constant
// memory, which the multiply-adds read directly; as immediates, every 64-bit constant would cost
// two extra moves per use.
#if defined(__CUDACC__)
#define GELU_COEFFICIENTS(name, ...)                         \
  static __constant__ double name##_device[] = {__VA_ARGS__}; \
  static constexpr double name##_host[] = {__VA_ARGS__};
#else
#define GELU_COEFFICIENTS(name, ...) static constexpr double name##_host[] = {__VA_ARGS__};
#endif
#if defined(__CUDACC__)
#define GELU_COEFFICIENTS_FLOAT(name, ...)                  \
  static __constant__ float name##_device[] = {__VA_ARGS__}; \
  static constexpr float name##_host[] = {__VA_ARGS__};
#else
#define GELU_COEFFICIENTS_FLOAT(name, ...) static constexpr float name##_host[] = {__VA_ARGS__};
#endif
#if defined(__CUDA_ARCH__)
#define GELU_TABLE(name) name##_device
#else
#define GELU_TABLE(name) name##_host
#endif

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

// e^r = 1 + r + r^2 P(r) on |r| <= ln2/2: P, relative error of e^r 2^-34.2.
GELU_COEFFICIENTS(kExpPoly, 0.5000000067645418, 0.1666666586941632, 0.041666295085425645,
                  0.00833349700462535, 0.0013944649093250619, 0.00019790355770667696)
// R(t) = P(t) / Q(t) on [0, 15], P(0) = R(0) = 1/2, Q(0) = 1: relative error 2^-33.3. Every
// coefficient is positive, so neither polynomial cancels; R(0) exact keeps f(x) = x/2 for tiny x.
GELU_COEFFICIENTS(kTailNumerator, 0.5, 0.5078563374075563, 0.25084043414322205,
                  0.07141647487210134, 0.011665904497719655, 0.0008915930328306787)
GELU_COEFFICIENTS(kTailDenominator, 1.0, 1.8135972299151693, 1.4487222036735325,
                  0.657908249541631, 0.1812548850496227, 0.02924190623157, 0.0022348949480913843)

// x, or floor where x < floor; at_most likewise. NaN stays NaN. The SIMD lanes override both
// with one max or min instruction.
template <class V>
GELU_HD V at_least(V x, double floor) {
  return select(x < V(floor), V(floor), x);
}
template <class V>
GELU_HD V at_most(V x, double ceiling) {
  return select(x > V(ceiling), V(ceiling), x);
}

// value * 2^k as times_pow2, where the product is known to be a normal double (the SIMD lanes add
// k to the exponent field instead of multiplying).
GELU_HD double times_pow2_normal(double value, double shifted) {
  return times_pow2(value, shifted);
}

// exp(a) for a <= 0 with relative error below 2^-34; a below -700 (where exp underflows far below
// every float result) is taken as -700. a = k ln2 + r, |r| <= ln2/2, exp(a) = 2^k e^r, k >= -1010.
// ln2 rounded to double leaves r off by at most 1010 * 2^-54 ln2 < 2^-44: no need for its low
// part. P by Estrin's scheme, whose dependency chain is half as long as Horner's.
template <class V>
GELU_HD V exp_nonpositive(V a, V shifted);

template <class V>
GELU_HD V exp_nonpositive(V a) {
  constexpr double kLog2e = 1.4426950408889634074;
  constexpr double kRound = 6755399441055744.0;    // 1.5 * 2^52: adding it rounds to integer
  a = at_least(a, -700.0);
  return exp_nonpositive(a, fma(a, V(kLog2e), V(kRound)));
}

// exp(-t^2/2) = exp_nonpositive(-t^2/2), with the rounding of its exponent computed from t^2
// directly (the same bits, one multiplication earlier).
template <class V>
GELU_HD V gaussian(V t) {
  constexpr double kLog2e = 1.4426950408889634074;
  constexpr double kRound = 6755399441055744.0;
  const V square = at_most(t * t, 1400.0);
  return exp_nonpositive(V(-0.5) * square, fma(square, V(-0.5 * kLog2e), V(kRound)));
}

template <class V>
GELU_HD V exp_nonpositive(V a, V shifted) {
  constexpr double kLn2 = 0.69314718055994528623;  // rounded to double
  constexpr double kRound = 6755399441055744.0;    // 1.5 * 2^52: adding it rounds to integer
  const V k = shifted - V(kRound);
  const V r = fma(k, V(-kLn2), a);
  const V r2 = r * r, r4 = r2 * r2;
  const auto& c = GELU_TABLE(kExpPoly);
  const V p = fma(fma(V(c[5]), r, V(c[4])), r4,
                  fma(fma(V(c[3]), r, V(c[2])), r2, fma(V(c[1]), r, V(c[0]))));
  return times_pow2_normal(fma(r2, p, V(1.0) + r), shifted);  // e^r in [0.7, 1.5]: normal
}

// R(t) = exp(t^2/2) Q(t) for t >= 0 (relative error 2^-33 up to t = 15; beyond, it is only ever
// multiplied by exp(-t^2/2) < 1e-48, and the rational stays positive and bounded): one division,
// whose latency overlaps the exp's.
template <class V>
GELU_HD V scaled_upper_tail(V t) {
  return horner(t, GELU_TABLE(kTailNumerator)) / horner(t, GELU_TABLE(kTailDenominator));
}

template <class V>
GELU_HD V clamp_magnitude(V x, double limit) {
  return at_most(at_least(x, -limit), limit);  // NaN stays
}

// The value at x, or its limit at -inf / +inf beyond |x| = kSaturation (NaN passes through).
template <class V>
GELU_HD V saturate(V x, V value, V at_minus_inf, V at_plus_inf) {
  return select(x > V(kSaturation), at_plus_inf, select(x < V(-kSaturation), at_minus_inf, value));
}

// ---------------------------------------------------------------------------------------------
// exact: f = x Phi(x), f' = Phi(x) + x phi(x), f'' = phi(x) (2 - x^2)
// With t = |x| capped at kSaturation, beyond which every term with E is below 1e-300: each
// result then rounds to its limit in every output type, with no case split.

// Gaussian factor E = exp(-t^2/2) and Mills-ratio factor R(t), so that Q(t) = E R.
template <class V>
struct Tail {
  V t, e, r;
};
template <class V>
GELU_HD Tail<V> tail(V x) {
  const V t = at_most(fabs(x), kSaturation);  // NaN stays
  return Tail<V>{t, gaussian(t), scaled_upper_tail(t)};
}

// f = max(x, 0) - t Q(t): x Q(t) for x < 0, x (1 - Q(t)) for x >= 0, rounded once. The sign of
// zero is kept, and NaN comes through t.
template <class V>
GELU_HD V exact_forward(V x, const Tail<V>& q) {
  return fma(-q.e, q.t * q.r, at_least(x, 0.0));
}

// For x < 0, f' = Q(t) - t phi(t) = E (R - t/sqrt(2pi)); for x > 0, f' = 1 - that.
template <class V>
GELU_HD V exact_derivative(V x, const Tail<V>& q) {
  const V lower_part = q.e * fma(-q.t, V(kInvSqrt2Pi), q.r);
  return select(x < V(0.0), lower_part, V(1.0) - lower_part);
}

template <class V>
GELU_HD V exact_second_derivative(V, const Tail<V>& q) {
  return q.e * V(kInvSqrt2Pi) * (V(2.0) - q.t * q.t);
}

// ---------------------------------------------------------------------------------------------
// tanh and sigmoid: f = x p, p = sigmoid(s(x)), q = sigmoid(-s) = 1 - p;
//   f'  = p + x s' p q
//   f'' = p q (2 s' + x ((q - p) s'^2 + s''))

template <class V>
struct Gate {
  V x;           // x, clamped to +-kSaturation
  V s, ds, d2s;  // s(x), s'(x), s''(x)
  V p, q, pq;    // sigmoid(s), sigmoid(-s), their product
};

template <Approximate A, class V>
GELU_HD Gate<V> gate(V x) {
  Gate<V> g;
  g.x = clamp_magnitude(x, kSaturation);
  if (A == Approximate::kTanh) {
    const V x2 = g.x * g.x;
    g.s = g.x * fma(V(kTanhS3), x2, V(kTanhS1));
    g.ds = fma(V(3.0 * kTanhS3), x2, V(kTanhS1));
    g.d2s = V(6.0 * kTanhS3) * g.x;
  } else {
    g.s = V(kSigmoidScale) * g.x;
    g.ds = V(kSigmoidScale);
    g.d2s = V(0.0);
  }
  const V e = exp_nonpositive(-fabs(g.s));  // sigmoid(-|s|) = e / (1 + e)
  const V inv = V(1.0) / (V(1.0) + e);
  const V small = e * inv;
  const auto nonnegative = g.s >= V(0.0);
  g.p = select(nonnegative, inv, small);
  g.q = select(nonnegative, small, inv);
  g.pq = small * inv;
  return g;
}

// Beyond |x| = kSaturation, s is that of x clamped there, so that sigmoid(-|s|) < 1e-300: every
// result is then within far less than the smallest subnormal float of its limit, and of the
// limit's sign, with no case split. The forward multiplies by x itself above (x = +inf gives inf).
template <class V>
GELU_HD V gate_forward(V x, const Gate<V>& g) {
  return at_least(x, -kSaturation) * g.p;
}

template <class V>
GELU_HD V gate_derivative(V, const Gate<V>& g) {
  return fma(g.x * g.ds, g.pq, g.p);
}

template <class V>
GELU_HD V gate_second_derivative(V, const Gate<V>& g) {
  const V inner = fma((g.q - g.p) * g.ds, g.ds, g.d2s);
  return g.pq * fma(g.x, inner, V(2.0) * g.ds);
}

// ---------------------------------------------------------------------------------------------
// float64 inputs: double-double arithmetic where a double alone would not reach 2 ulps.
// Results are rounded once from a double-double whose relative error is below 2^-58.

// Written once for every lane type V, like the double path (float64 data is not narrowed, so
// the CPU vector kernels run this too): branches are selects, and V provides in addition
// binary_exponent(x), table_row(row) (each lane's row, of whatever index type the lanes use)
// and table_entry(column, row) (a lookup in a table column of 16 rows), and optionally their own
// table_row_entries (cpu/simd_avx2.h).

// An unevaluated sum hi + lo with |lo| <= ulp(hi)/2.
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
GELU_HD DD<V> dd(double hi, double lo) {  // a double-double constant
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
// a / b from one division (1 / b.hi), the slowest operation here: q = a.hi / b.hi to about an
// ulp, then the remainder, far below q, divided by b.hi to the same relative accuracy.
template <class V>
GELU_HD DD<V> dd_div(DD<V> a, DD<V> b) {
  const V inverse = V(1.0) / b.hi;
  const V q = a.hi * inverse;
  const V r = fma(-q, b.hi, a.hi) + a.lo - q * b.lo;
  return fast_two_sum(q, r * inverse);
}
template <class M, class V>
GELU_HD DD<V> select(M c, DD<V> a, DD<V> b) {
  return DD<V>{select(c, a.hi, b.hi), select(c, a.lo, b.lo)};
}

constexpr double kRoundToInteger = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds

// y 2^k for integers k (as doubles) in [-1600, 0], y in [2^-4, 4]: rounded once, also into the
// subnormals (in two steps below 2^-1000, the first exact).
template <class V>
GELU_HD V scale_pow2(V y, V k) {
  const auto deep = k < V(-1000.0);
  const V scaled = times_pow2(y, select(deep, k + V(600.0), k) + V(kRoundToInteger));
  return select(deep, scaled * V(0x1p-600), scaled);
}
template <class V>
GELU_HD DD<V> scale_pow2(DD<V> y, V k) {
  return DD<V>{scale_pow2(y.hi, k), scale_pow2(y.lo, k)};
}

// exp(a) as m 2^k (exp_dd, below): m a double-double, k an integer.
template <class V>
struct ScaledDD {
  DD<V> m;
  V k;  // an integer
};
// F(t) = R(t) (t + 1) for t in [0, 40]: 16 polynomials of degree 13 on the intervals
// [2^(n/3) - 1, 2^((n+1)/3) - 1) (tools/fit_polynomials.py; relative error below 2^-58.9).
// F varies by less than 2% across each interval, so only its value at the center needs
// double-double precision. Row: center, F(center) as hi and lo, coefficients of d^1 .. d^13.
#define GELU_TAIL_F64_TABLE \
  { \
    {0.1299605249474366, 0.5108559268169747, 4.136763778878924e-17, 0.06770276036229204, -0.10973735270931051, 0.08579537854487086, -0.05078702273106203, 0.025356820541723155, -0.011194474671269798, 0.004486759903994794, -0.0016603468823666713, 0.0005739722919703594, -0.0001869637082596634, 5.776876478902206e-05, -1.7098306326345506e-05, 4.823065241289473e-06}, \
    {0.42366105093153633, 0.5231190071389308, -2.5481541952064476e-18, 0.02111287726538992, -0.055074078935268056, 0.04332378930884058, -0.024785311853021665, 0.011851921603033817, -0.005001409109158326, 0.0019165328130316057, -0.0006787546885476877, 0.00022484568037525287, -7.027477979008064e-05, 2.086177211800892e-05, -5.9524622314358426e-06, 1.6168006350112103e-06}, \
    {0.7937005259840998, 0.5251918199590032, -3.373951012071247e-18, -0.005940013906359197, -0.022506726794834207, 0.018833526245975084, -0.010457213471349907, 0.004761917733893219, -0.0019040518673840163, 0.0006907756348766462, -0.00023177307593992913, 7.282938290029813e-05, -2.162278727164841e-05, 6.106723337242413e-06, -1.6650531161893308e-06, 4.313964197682431e-07}, \
    {1.2599210498948732, 0.519033057819441, -3.672707575363887e-17, -0.017968713810818725, -0.006063137078598055, 0.00673226688425222, -0.003717563544068378, 0.0016107615012986773, -0.0006054532275286386, 0.00020578521547425725, -6.466559659226911e-05, 1.90475504241018e-05, -5.308278381473041e-06, 1.4095072017694576e-06, -3.633777826008654e-07, 8.877918963575523e-08}, \
    {1.8473221018630726, 0.5074000381673608, -6.907106606241642e-19, -0.020383324756940484, 0.0005292032969627693, 0.0017583380769913871, -0.0010682722063985817, 0.00044742139345028194, -0.00015763959425789197, 4.97328546724363e-05, -1.4463016493407265e-05, 3.941531954268375e-06, -1.0171373722794995e-06, 2.5046695146698705e-07, -6.029373052168915e-08, 1.37028833360396e-08}, \
    {2.5874010519681994, 0.4930752963130125, 3.9714601229752394e-18, -0.017936033745682832, 0.002205968490127002, 0.0001534525827477771, -0.00022280518495597243, 9.77775019025193e-05, -3.279347803065445e-05, 9.578298217604938e-06, -2.5533621973672315e-06, 6.35674472564621e-07, -1.4973665716428248e-07, 3.368404755436381e-08, -7.46459885725429e-09, 1.5537285607402526e-09}, \
    {3.5198420997897464, 0.4782770067350685, 1.3341557324881815e-17, -0.013879377028287484, 0.0019995217177677066, -0.00017994372108304926, -1.696489396544872e-05, 1.477171056242978e-05, -5.177831258239322e-06, 1.4320776746813672e-06, -3.5028403701887424e-07, 7.903223668726365e-08, -1.67846820595635e-08, 3.3994380907200317e-09, -6.833260559166469e-10, 1.2811937084578608e-10}, \
    {4.6946442037261455, 0.46442993138021643, -2.1217041018854784e-17, -0.009945493287213643, 0.0013645917562608472, -0.00015933654190492343, 1.2755918649818171e-05, 4.197498756676008e-07, -5.054132251887497e-07, 1.53828820341204e-07, -3.603411120632382e-08, 7.446737748889569e-09, -1.4217884452190311e-09, 2.5681937456821597e-10, -4.625640272848922e-11, 7.693033674408384e-12}, \
    {6.174802103936399, 0.45224262523854547, -7.730741185815873e-18, -0.00679112940849929, 0.000817369981163062, -9.124462527622513e-05, 9.077479913304763e-06, -7.187000349952168e-07, 2.2541479000062942e-08, 7.348450065001166e-09, -2.3749014190230946e-09, 4.963630515528973e-10, -8.819859929979258e-11, 1.4352616390127868e-11, -2.314658818604384e-12, 3.3853473679439326e-13}, \
    {8.039684199579492, 0.4419236847759781, -2.636291032949145e-17, -0.004498291610440933, 0.00045544679915279925, -4.43185284751179e-05, 4.098223924883466e-06, -3.5260037499488355e-07, 2.6942161093475088e-08, -1.5902054374026913e-09, 2.1093604195066218e-11, 1.4359186359535504e-11, -3.3244240960355354e-12, 5.439068679088029e-13, -8.241106098274373e-14, 1.0770375891328151e-14}, \
    {10.389288407452291, 0.43339756491528475, 1.4930203924487805e-17, -0.0029233069821860947, 0.00024320212112060444, -1.978767685761332e-05, 1.5684887610566126e-06, -1.2040857930986997e-07, 8.866114337733905e-09, -6.15517598391526e-10, 3.8893259202196224e-11, -2.0397091768404162e-12, 5.735425583685777e-14, 5.570185696475624e-15, -1.543271092815558e-15, 2.1385868073841865e-16}, \
    {13.349604207872797, 0.42645962367178947, -1.4031537016100368e-17, -0.001877378519191358, 0.00012658299517014538, -8.425447864588473e-06, 5.527922710402285e-07, -3.5678769642588046e-08, 2.259012364583841e-09, -1.3974092518891746e-10, 8.393462375377786e-12, -4.846325056902799e-13, 2.642622690125968e-14, -1.311588351351559e-15, 5.2480751853589703e-17, -8.89945696671819e-19}, \
    {17.079368399158984, 0.4208673621740312, 4.2389110540532714e-18, -0.0011968563417293244, 6.486894006238616e-05, -3.4890773336859747e-06, 1.8612200368947734e-07, -9.839335172427743e-09, 5.149827062743562e-10, -2.665219594315581e-11, 1.361657853605411e-12, -6.85202459134875e-14, 3.384155261252316e-15, -1.6343603511585924e-16, 7.883753503468295e-18, -3.52711308008642e-19}, \
    {21.778576814904582, 0.416386165482733, 1.6591317563546757e-17, -0.0007595622142103034, 3.29295704837827e-05, -1.4210616084073978e-06, 6.102788506228961e-08, -2.6073282709390682e-09, 1.1077769054284214e-10, -4.678453714316464e-12, 1.962953173459186e-13, -8.176693968463757e-15, 3.376566674680552e-16, -1.3825716798258616e-17, 5.821945141292507e-19, -2.3269333382379006e-20}, \
    {27.699208415745595, 0.4128082949150244, -2.6646844622180166e-17, -0.0004806934821321308, 1.661953497220217e-05, -5.730037469703279e-07, 1.9698444535225155e-08, -6.751234328822882e-10, 2.3064487729138153e-11, -7.853018699907189e-13, 2.6642519665952667e-14, -9.004324762910869e-16, 3.028518936633567e-17, -1.0148693457733937e-18, 3.531718320593795e-20, -1.17097538425558e-21}, \
    {35.15873679831797, 0.4099580591502109, -1.8738504310297636e-17, -0.00030368296941304024, 8.358065304378784e-06, -2.296409057952416e-07, 6.298350561869299e-09, -1.7242966056608832e-10, 4.711675570437905e-12, -1.2849452648974517e-13, 3.49708857299056e-15, -9.497191200424265e-17, 2.571372088442019e-18, -6.951137466535343e-20, 1.959932065430781e-21, -5.2696984257270805e-23}, \
  }
// Stored by rows and by columns (column c holds the c-th number of every row): the AVX-512 lanes
// look a column up with one permute across two registers, the AVX2 lanes read whole rows.
struct TailF64Table {
  double row[16][16];
  double column[16][16];
};
constexpr TailF64Table tail_f64_table(const double (&rows)[16][16]) {
  TailF64Table table{};
  for (int r = 0; r < 16; ++r)
    for (int c = 0; c < 16; ++c) table.row[r][c] = table.column[c][r] = rows[r][c];
  return table;
}
constexpr double kTailF64Rows[16][16] = GELU_TAIL_F64_TABLE;
#undef GELU_TAIL_F64_TABLE
#if defined(__CUDACC__)
static __device__ const TailF64Table kTailF64Device = tail_f64_table(kTailF64Rows);
#endif
static constexpr TailF64Table kTailF64Host = tail_f64_table(kTailF64Rows);

// Each lane's row (a small non-negative integer) as the lanes index tables, then that row's
// entry in a column of 16 rows.
GELU_HD int table_row(double row) { return static_cast<int>(row); }
GELU_HD double table_entry(const double (&column)[16], int row) { return column[row]; }
// All 16 numbers of each lane's row, by default one column at a time (cpu/simd_avx2.h reads whole
// rows instead).
template <class V, class Row>
GELU_HD void table_row_entries(const double (&)[16][16] /* rows */, const double (&columns)[16][16],
                               Row row, V (&entries)[16]) {
  for (int c = 0; c < 16; ++c) entries[c] = table_entry(columns[c], row);
}
// Two columns' entries at each lane's row, by default one column at a time; `pairs` holds the
// same two columns side by side (cpu/simd_avx2.h reads a pair at once).
template <class V, class Row>
GELU_HD void table_pair_entries(const double (&)[16][2] /* pairs */, const double (&first)[16],
                                const double (&second)[16], Row row, V& a, V& b) {
  a = table_entry(first, row);
  b = table_entry(second, row);
}
GELU_HD double binary_exponent(double x) {  // floor(log2 x) for normal positive x
  return static_cast<double>(((bit_cast<int64_t>(x) >> 52) & 0x7ff) - 1023);
}

// 2^(j/16), j = 0 .. 15, as double-doubles hi + lo (tools/fit_polynomials.py, from mpmath), and
// the Taylor coefficients of (e^r - 1 - r) / r^2 through r^5/7!: on |r| <= ln2/32 they leave
// 2^-59.5 of e^r out.
struct Exp2TableF64 {
  double hi[16], lo[16];
  double pair[16][2];  // hi[j] and lo[j] side by side, for the AVX2 lanes (cpu/simd_avx2.h)
};
constexpr Exp2TableF64 with_pairs(Exp2TableF64 table) {
  for (int j = 0; j < 16; ++j) {
    table.pair[j][0] = table.hi[j];
    table.pair[j][1] = table.lo[j];
  }
  return table;
}
static constexpr Exp2TableF64 kExp2F64Host = with_pairs({
    {1.0, 1.0442737824274138, 1.0905077326652577, 1.1387886347566916, 1.189207115002721,
     1.241857812073484, 1.2968395546510096, 1.3542555469368927, 1.4142135623730951,
     1.4768261459394993, 1.5422108254079407, 1.6104903319492543, 1.681792830507429,
     1.7562521603732995, 1.8340080864093424, 1.9152065613971474},
    {0.0, 8.551889705537965e-17, -3.046782079812471e-17, 8.912812676025408e-17,
     3.982015231465646e-17, 4.658027591836937e-17, 2.5382502794888315e-17, 7.70094837980299e-17,
     -9.667293313452913e-17, -3.483994556892796e-17, 7.949834809697621e-17,
     2.4707192569797888e-17, 8.199010020581497e-17, 2.960140695448873e-17,
     3.283107224245627e-17, -1.0619946056195963e-16}});
#if defined(__CUDACC__)
static __device__ const Exp2TableF64 kExp2F64Device = kExp2F64Host;  // global memory: lanes diverge
#endif
GELU_COEFFICIENTS(kExpPolyF64, 0.5, 0.16666666666666666, 0.041666666666666664,
                  0.008333333333333333, 0.001388888888888889, 0.0001984126984126984)

// exp(a) for a <= 0 as m 2^k, m a double-double in [0.97, 1.96] with relative error near
// 2^-57.5: a = (16 k + j) ln2/16 + r, |r| <= ln2/32, m = 2^(j/16) (1 + expm1(r)). a below -800
// (far below the smallest subnormal), and NaN, are taken as -800, so that every table row is in
// range; callers pass NaN on through x.
template <class V>
GELU_HD ScaledDD<V> exp_dd(DD<V> a) {
  constexpr double k16OverLn2 = 23.083120654223414;
  constexpr double kLn2Over16Hi = 0.04332169878489367;    // 38 significant bits: n * hi is exact
  constexpr double kLn2Over16Lo = 1.0291218489310676e-13;  // ln2/16 - hi
  const auto in_range = a.hi >= V(-800.0);
  a = DD<V>{select(in_range, a.hi, V(-800.0)), select(in_range, a.lo, V(0.0))};
  const V n = fma(a.hi, V(k16OverLn2), V(kRoundToInteger)) - V(kRoundToInteger);
  V r = fma(n, V(-kLn2Over16Hi), a.hi);                     // exact
  r = fma(n, V(-kLn2Over16Lo), r) + a.lo;
  // k = floor(n / 16): n / 16 - 15/32 is never halfway between integers, so rounding it is exact.
  const V k = (fma(n, V(0.0625), V(-15.0 / 32.0)) + V(kRoundToInteger)) - V(kRoundToInteger);
  const auto row = table_row(fma(k, V(-16.0), n));         // j = n - 16 k, in [0, 15]
#if defined(__CUDA_ARCH__)
  const Exp2TableF64& table = kExp2F64Device;
#else
  const Exp2TableF64& table = kExp2F64Host;
#endif
  const V expm1_r = fma(r * r, horner(r, GELU_TABLE(kExpPolyF64)), r);
  V hi, lo;
  table_pair_entries(table.pair, table.hi, table.lo, row, hi, lo);
  return ScaledDD<V>{fast_two_sum(hi, fma(hi, expm1_r, lo)), k};
}

template <class V>
GELU_HD DD<V> tail_factor_f64(V t) {
  // n = floor(3 log2(t + 1)): the exponent of (t + 1)^3. Rounding can pick a neighbour at an
  // interval's edge, whose polynomial is just as accurate there.
  const V u = t + V(1.0);
  V n = binary_exponent(u * u * u);
  n = select(n > V(15.0), V(15.0), n);  // and NaN
  n = select(n >= V(0.0), n, V(15.0));
#if defined(__CUDA_ARCH__)
  const TailF64Table& table = kTailF64Device;
#else
  const TailF64Table& table = kTailF64Host;
#endif
  V c[16];
  table_row_entries(table.row, table.column, table_row(n), c);
  const V d = t - c[0];
  V p = c[15];
  for (int i = 14; i >= 3; --i) p = fma(p, d, c[i]);
  return fast_two_sum(c[1], fma(p, d, c[2]));
}

constexpr double kInvSqrt2PiHi = 0.3989422804014327, kInvSqrt2PiLo = -2.49232720227773e-17;

constexpr double kSaturationExactF64 = 40.0;  // Q(40) = 1e-349: Phi is 0 or 1 in double

// Q(t) = m 2^k (the upper tail) for t = |x| <= 40, and the pieces it is made of.
template <class V>
struct TailF64 {
  V t;
  DD<V> t_squared;    // exact
  ScaledDD<V> gauss;  // exp(-t^2/2)
  DD<V> r;            // R(t) = F(t) / (t + 1)
};
template <class V>
GELU_HD TailF64<V> tail_f64(V x) {
  TailF64<V> q;
  q.t = clamp_magnitude(fabs(x), kSaturationExactF64);  // the callers return limits beyond
  q.t_squared = two_prod(q.t, q.t);
  q.gauss = exp_dd(DD<V>{V(-0.5) * q.t_squared.hi, V(-0.5) * q.t_squared.lo});
  q.r = dd_div(tail_factor_f64(q.t), two_sum(q.t, V(1.0)));
  return q;
}

template <class V>
GELU_HD V round_scaled(DD<V> v, V k) {
  return scale_pow2(v.hi + v.lo, k);
}

// The value, or the limits beyond |x| = limit (NaN passes through).
template <class V>
GELU_HD V saturate_f64(V x, double limit, V value, V at_minus_inf, V at_plus_inf) {
  return select(x > V(limit), at_plus_inf, select(x < V(-limit), at_minus_inf, value));
}

template <class V>
GELU_HD V exact_forward_f64(V x, const TailF64<V>& q) {
  const DD<V> upper = dd_mul(q.gauss.m, q.r);  // Q(t) / 2^k
  const V negative = -scale_pow2(dd_mul_rounded(upper, q.t), q.gauss.k);
  const V positive = dd_mul_rounded(dd_one_minus(scale_pow2(upper, q.gauss.k)), x);
  // f has the sign of x, which a zero's product may lose.
  return saturate_f64(x, kSaturationExactF64,
                      with_sign_of(select(x < V(0.0), negative, positive), x), V(-0.0), x);
}

// f' = E (R - t/sqrt(2 pi)) for x < 0, 1 - that for x > 0 (E = exp(-t^2/2)).
template <class V>
GELU_HD V exact_derivative_f64(V x, const TailF64<V>& q) {
  const DD<V> slope = dd_mul(dd<V>(kInvSqrt2PiHi, kInvSqrt2PiLo), q.t);
  const DD<V> lower = dd_mul(q.gauss.m, dd_add(q.r, dd_neg(slope)));
  const DD<V> y = dd_one_minus(scale_pow2(lower, q.gauss.k));  // |E S| <= 1/2
  const V value = select(x < V(0.0), round_scaled(lower, q.gauss.k), y.hi + y.lo);
  return saturate_f64(x, kSaturationExactF64, value, V(-0.0), V(1.0));
}

template <class V>
GELU_HD V exact_second_derivative_f64(V x, const TailF64<V>& q) {
  const DD<V> two_minus_t2 = dd_add(dd(V(2.0)), dd_neg(q.t_squared));
  const DD<V> density = dd_mul(q.gauss.m, dd<V>(kInvSqrt2PiHi, kInvSqrt2PiLo));
  return saturate_f64(x, kSaturationExactF64,
                      scale_pow2(dd_mul_rounded(density, two_minus_t2), q.gauss.k), V(-0.0),
                      V(-0.0));
}

// Gates in double-double: s = x (c1 + c3 x^2) or 1.702 x with the decimal constants carried
// exactly enough (a double's 2^-53 error in 1.702, times |s| up to 745, would cost 100 ulps).
// Double-double constants (hi, lo) from mpmath.
constexpr double kTanhS1Hi = 1.5957691216057308, kTanhS1Lo = -9.96930880911092e-17;  // 2 sqrt(2/pi)
constexpr double kTanhS3Hi = 0.07135481627260025, kTanhS3Lo = -6.175149918155315e-19;  // * 0.044715
constexpr double kTanhS3x3Hi = 0.21406444881780073, kTanhS3x3Lo = 1.2025242832367862e-17;  // * 3
constexpr double kSigmoidHi = 1.702, kSigmoidLo = 4.263256414560601e-17;  // 1.702
// Beyond |x| = 1e10, or where |s| > 790, every result is its limit to far below the smallest
// subnormal (the largest factor multiplying exp(-|s|) is |x s'^2| < 2^100).
constexpr double kSaturationGateF64 = 1e10;
constexpr double kGateTailF64 = 790.0;

template <class V>
struct GateF64 {
  V saturated;      // 1 where every result is its limit (x or -0; 1 or -0; -0), else 0
  V x;              // x, or 0 where saturated
  DD<V> s, ds;      // s(x), s'(x)
  ScaledDD<V> e;    // exp(-|s|)
  DD<V> inv;        // 1 / (1 + exp(-|s|))
};

template <Approximate A, class V>
GELU_HD GateF64<V> gate_f64(V x) {
  GateF64<V> g;
  const auto huge = fabs(x) > V(kSaturationGateF64);  // also +-inf; NaN runs through
  g.x = select(huge, V(0.0), x);
  if (A == Approximate::kTanh) {
    const DD<V> x2 = two_prod(g.x, g.x);
    g.s = dd_mul(dd_add(dd<V>(kTanhS1Hi, kTanhS1Lo), dd_mul(dd<V>(kTanhS3Hi, kTanhS3Lo), x2)), g.x);
    g.ds = dd_add(dd<V>(kTanhS1Hi, kTanhS1Lo), dd_mul(dd<V>(kTanhS3x3Hi, kTanhS3x3Lo), x2));
  } else {
    g.s = dd_mul(dd<V>(kSigmoidHi, kSigmoidLo), g.x);
    g.ds = dd<V>(kSigmoidHi, kSigmoidLo);
  }
  g.saturated = select(huge, V(1.0), select(fabs(g.s.hi) > V(kGateTailF64), V(1.0), V(0.0)));
  g.e = exp_dd(select(g.s.hi >= V(0.0), dd_neg(g.s), g.s));
  const DD<V> e = scale_pow2(g.e.m, g.e.k);
  const DD<V> one_plus_e = fast_two_sum(V(1.0), e.hi);  // e <= 1
  g.inv = dd_div(dd(V(1.0)), DD<V>{one_plus_e.hi, one_plus_e.lo + e.lo});
  return g;
}

// The value, or its limits where the gate saturates.
template <class V>
GELU_HD V saturate_gate(V x, const GateF64<V>& g, V value, V at_minus_inf, V at_plus_inf) {
  return select(g.saturated > V(0.0), select(x > V(0.0), at_plus_inf, at_minus_inf), value);
}

// f = x sigmoid(s): x / (1 + e) for s >= 0, x e / (1 + e) for s < 0, e = exp(-|s|).
template <class V>
GELU_HD V gate_forward_f64(V x, const GateF64<V>& g) {
  const V positive = dd_mul_rounded(g.inv, g.x);
  const V negative = scale_pow2(dd_mul_rounded(dd_mul(g.e.m, g.inv), g.x), g.e.k);
  return saturate_gate(x, g, select(g.s.hi >= V(0.0), positive, negative), V(-0.0), x);
}

// f' = p + x s' p q. For s < 0, p = e/(1+e) and f' = p (1 + x s' / (1 + e)), scaled at the end.
template <class V>
GELU_HD V gate_derivative_f64(V x, const GateF64<V>& g) {
  const DD<V> xs = dd_mul(g.ds, g.x);
  const DD<V> small = dd_mul(g.e.m, g.inv);                    // p (s < 0) or q (s >= 0), / 2^k
  const DD<V> pq = dd_mul(scale_pow2(small, g.e.k), g.inv);
  const V positive = dd_add_rounded(g.inv, dd_mul(xs, pq));
  const DD<V> factor = dd_add_unnormalized(dd(V(1.0)), dd_mul(xs, g.inv));
  const V negative = scale_pow2(dd_mul_rounded(small, factor), g.e.k);
  return saturate_gate(x, g, select(g.s.hi >= V(0.0), positive, negative), V(-0.0), V(1.0));
}

// f'' = p q (2 s' + x ((q - p) s'^2 + s'')), q - p = -sign(s) (1 - e) / (1 + e).
template <Approximate A, class V>
GELU_HD V gate_second_derivative_f64(V x, const GateF64<V>& g) {
  const DD<V> q_minus_p = dd_mul(dd_add(dd(V(1.0)), dd_neg(scale_pow2(g.e.m, g.e.k))), g.inv);
  const DD<V> signed_q_minus_p = select(g.s.hi >= V(0.0), dd_neg(q_minus_p), q_minus_p);
  const DD<V> d2s = A == Approximate::kTanh ? dd_mul(dd<V>(kTanhS3x3Hi, kTanhS3x3Lo), V(2.0) * g.x)
                                            : dd(V(0.0));
  const DD<V> inner = dd_add(dd_mul(dd_mul(signed_q_minus_p, g.ds), g.ds), d2s);
  const DD<V> bracket = dd_add(dd_mul(inner, g.x), DD<V>{V(2.0) * g.ds.hi, V(2.0) * g.ds.lo});
  const DD<V> pq = dd_mul(dd_mul(g.e.m, g.inv), g.inv);  // scaled by 2^k below
  return saturate_gate(x, g, scale_pow2(dd_mul_rounded(pq, bracket), g.e.k), V(-0.0), V(-0.0));
}

// ---------------------------------------------------------------------------------------------
// float16 and bfloat16 outputs: float arithmetic with an error bound ("narrow" path).
//
// A 16-bit result needs far less than the double path's 2^-32 before its final rounding. The
// narrow functions compute in float, over a core domain where every intermediate is a normal
// float, and return the value with a bound on its absolute error. The kernels round
// value - error and value + error to the 16-bit type: where both agree, that is the correctly
// rounded result; where not (about one element in 2^11), and outside the core domain
// (error = inf), they fall back to the double path. Every result is therefore the correctly
// rounded one, on every platform, whatever reciprocal or exp each uses.
//
// F is float here and on the GPU, or a SIMD vector of floats (cpu/simd_*.h).

template <class F>
struct Bounded {
  F value, error;  // |value - exact| <= error
};

// Relative error bounds of the narrow functions over their core domain: the analysis gives
// about 2^-21.5 (polynomials below 2^-23.3, each float operation 2^-24); checked exhaustively
// against long double by tools/check_narrow_bounds.cpp. 2^-20 leaves a margin of 2.8.
constexpr float kNarrowRelativeError = 0x1p-20f;
// Slack for the roundings of the last products a pass forms (grad * f', gelu(gate) * up, ...).
constexpr float kNarrowProductError = 0x1p-22f;
// Absolute slack for results in float's subnormal range, whose roundings are absolute (2^-150):
// the smallest normal float, far below any float16 result, and which sends bfloat16 results
// below it to the double path. (A subnormal constant here would slow every operation on the CPU.)
constexpr float kNarrowAbsoluteError = 0x1p-126f;

// e^r = 1 + r + r^2 P(r), |r| <= 0.35: P in float, relative error of e^r 2^-27.6.
GELU_COEFFICIENTS_FLOAT(kNarrowExpPoly, 0.4999999403953552f, 0.16666515171527863f,
                        0.04166845604777336f, 0.008369410410523415f, 0.001381315989419818f)
// W(v) = R(t) (t + 2.5), v = (t - 2.5) / (t + 2.5), t in [0, 8.5]: relative error 2^-23.4.
GELU_COEFFICIENTS_FLOAT(kNarrowTailPoly, 0.7066566944122314f, -0.4336925446987152f,
                        0.1319839060306549f, 0.009248900227248669f, -0.0163460373878479f,
                        -0.0016689477488398552f, 0.002331334399059415f, 0.0007384094060398638f)

GELU_HD float select(bool c, float a, float b) { return c ? a : b; }
// a b - c rounded once (the vector lanes give their own, a subtracting FMA).
GELU_HD float fms(float a, float b, float c) { return fma(a, b, -c); }

// value * 2^k, where shifted = k + 1.5 * 2^23 holds the integer k in [-126, 0].
GELU_HD float times_pow2(float value, float shifted) {
  return value * bit_cast<float>((bit_cast<uint32_t>(shifted) - 0x4B400000u + 127u) << 23);
}

// 1/d to a relative error below 2^-22: the GPU's approximate reciprocal; on the CPU, a division
// (SIMD lanes use their own approximations of at least this accuracy).
GELU_HD float approximate_reciprocal(float d) {
#if defined(__CUDA_ARCH__)
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  return r;
#else
  return 1.0f / d;
#endif
}

// exp(a) for a in [-80, 0], relative error below 2^-22.
template <class F>
GELU_HD F narrow_exp(F a) {
#if defined(__CUDA_ARCH__)
  if constexpr (std::is_same<F, float>::value) {
    // 2^(a log2e) on the special-function unit (relative error about 2^-22), with the product
    // carried as u + u_lo so that no rounding of it reaches the exponent.
    constexpr float kLog2eHi = 1.44269502f, kLog2eLo = 1.925963033e-08f, kLn2 = 0.693147182f;
    const float u = a * kLog2eHi;
    const float u_lo = fma(a, kLog2eHi, -u) + a * kLog2eLo;
    float p;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(p) : "f"(u));
    return fma(p, u_lo * kLn2, p);
  }
#endif
  constexpr float kLog2e = 1.44269504f, kRound = 12582912.0f;  // 1.5 * 2^23
  constexpr float kLn2Hi = 0.693145751953125f;  // 16 significant bits: k * kLn2Hi is exact
  constexpr float kLn2Lo = 1.4286068203094173e-06f;  // ln2 - kLn2Hi
  const F shifted = fma(a, F(kLog2e), F(kRound));
  const F k = shifted - F(kRound);
  F r = fma(k, F(-kLn2Hi), a);
  r = fma(k, F(-kLn2Lo), r);
  return times_pow2(fma(r * r, horner(r, GELU_TABLE(kNarrowExpPoly)), r) + F(1.0f), shifted);
}

// R(t) = exp(t^2/2) Q(t) for t in [0, 8.5], relative error below 2^-21.5.
template <class F>
GELU_HD F narrow_upper_tail(F t) {
  const F inv = approximate_reciprocal(t + F(2.5f));
  return horner((t - F(2.5f)) * inv, GELU_TABLE(kNarrowTailPoly)) * inv;
}

// Core domains: where every intermediate is a normal float and the error bounds hold. Beyond
// them the double path takes over, so the computation below may produce anything there.
constexpr float kNarrowCoreExact = 8.0f, kNarrowCoreTanh = 9.0f, kNarrowCoreSigmoid = 9.0f;

template <Approximate A>
constexpr float narrow_core() {
  return A == Approximate::kNone ? kNarrowCoreExact
                                 : A == Approximate::kTanh ? kNarrowCoreTanh : kNarrowCoreSigmoid;
}

// Outside the core domain: value x (finite, so that value -+ inf round apart) and an infinite
// error, which sends the element to the double path. NaN stays NaN with a NaN error: both of its
// roundings are NaN, which is the right result.
template <Approximate A, class F>
GELU_HD void narrow_outside_core(F x, Bounded<F>& f, Bounded<F>& d1) {
  const auto outside = fabs(x) > F(narrow_core<A>());
  const F inf = F(__builtin_huge_valf());
  f.value = select(outside, x, f.value);
  f.error = select(outside, inf, f.error);
  d1.value = select(outside, x, d1.value);
  d1.error = select(outside, inf, d1.error);
}

// exact: as exact_forward / exact_derivative, with t^2 split exactly so that exp sees no
// rounding error in its argument.
template <class F>
GELU_HD void narrow_exact(F xc, Bounded<F>& f, Bounded<F>& d1) {
  const F t = fabs(xc);
  const F t2 = t * t, t2_error = fma(t, t, -t2);
  F e = narrow_exp(F(-0.5f) * t2);
  e = fma(e, F(-0.5f) * t2_error, e);
  const F r = narrow_upper_tail(t);
  const F upper = e * r;                          // Q(t)
  const F density = e * t * F(0.3989422917366028f);  // t phi(t)
  const auto negative = xc < F(0.0f);
  f.value = xc * select(negative, upper, F(1.0f) - upper);
  f.error = fma(fabs(f.value), F(kNarrowRelativeError), F(kNarrowAbsoluteError));
  const F lower = upper - density;                // f' for x < 0; 1 - f' for x > 0
  d1.value = select(negative, lower, F(1.0f) - lower);
  d1.error = (upper + density) * F(kNarrowRelativeError) + fabs(d1.value) * F(kNarrowProductError);
}

// The gated forms' constants as float pairs hi + lo: 2 sqrt(2/pi) and that times 0.044715 and
// 3 * 0.044715 (tanh: s = x (c1 + c3 x^2), s' = c1 + 3 c3 x^2), and 1.702 (sigmoid).
constexpr float kTanhC1Hi = 1.5957691669464111f, kTanhC1Lo = -4.534068054340423e-08f;
constexpr float kTanhC3Hi = 0.07135481387376785f, kTanhC3Lo = 2.3988324659995897e-09f;
constexpr float kTanh3C3Hi = 0.21406444907188416f, kTanh3C3Lo = -2.540834209696641e-10f;
constexpr float kSigmoidFloatHi = 1.7020000219345093f, kSigmoidFloatLo = -2.1934509319976314e-08f;

// c1 + c x^2 as a pair, x^2 = x2 + x2_lo, c1 and c pairs in the lanes' precision C: tanh's s/x
// (c = c3) or s' (c = 3 c3), to far below an ulp.
template <class F, class C>
GELU_HD DD<F> tanh_polynomial_pair(C c1_hi, C c1_lo, C c_hi, C c_lo, F x2, F x2_lo) {
  const F cx2 = F(c_hi) * x2;
  const F cx2_lo = fma(F(c_hi), x2, -cx2) + fma(F(c_hi), x2_lo, F(c_lo) * x2);
  const DD<F> sum = two_sum(F(c1_hi), cx2);
  return DD<F>{sum.hi, sum.lo + (F(c1_lo) + cx2_lo)};
}

// tanh and sigmoid: s = x w(x) carried as s_hi + s_lo, so that exp(-|s|) sees its argument to
// far below an ulp: its relative error would otherwise be |s| 2^-24.
template <Approximate A, class F>
GELU_HD void narrow_gate(F xc, Bounded<F>& f, Bounded<F>& d1) {
  DD<F> w;
  F ds;
  if (A == Approximate::kTanh) {
    const F x2 = xc * xc, x2_lo = fma(xc, xc, -x2);
    w = tanh_polynomial_pair(kTanhC1Hi, kTanhC1Lo, kTanhC3Hi, kTanhC3Lo, x2, x2_lo);
    ds = fma(F(3.0f * kTanhC3Hi), x2, F(kTanhC1Hi));
  } else {
    w = DD<F>{F(kSigmoidFloatHi), F(kSigmoidFloatLo)};
    ds = F(kSigmoidFloatHi);
  }
  const F s_hi = xc * w.hi, s_lo = fma(xc, w.hi, -s_hi) + xc * w.lo;
  const auto nonnegative = s_hi >= F(0.0f);
  F e = narrow_exp(-fabs(s_hi));                    // exp(-|s|) = exp(-|s_hi|) (1 -+ s_lo)
  e = fma(e, select(nonnegative, -s_lo, s_lo), e);
  const F inv = approximate_reciprocal(F(1.0f) + e);
  const F small = e * inv;
  const F p = select(nonnegative, inv, small);
  f.value = xc * p;
  f.error = fma(fabs(f.value), F(kNarrowRelativeError), F(kNarrowAbsoluteError));
  const F slope = xc * ds * small * inv;            // x s' p q
  d1.value = p + slope;
  d1.error = (p + fabs(slope)) * F(kNarrowRelativeError);
}

template <Approximate A, class F>
GELU_HD void narrow_value_and_derivative(F x, Bounded<F>& f, Bounded<F>& d1) {
  if (A == Approximate::kNone) narrow_exact(x, f, d1);
  else narrow_gate<A>(x, f, d1);
  narrow_outside_core<A>(x, f, d1);
}

// The passes the narrow path serves (the double backward always takes the double path), each
// output with its error bound. bias_gelu's sum must be exact in float, or the error is inf.
template <Pass P>
constexpr bool has_narrow_path() {
  return P == Pass::kForward || P == Pass::kBackward || P == Pass::kBiasForward ||
         P == Pass::kBiasBackward || P == Pass::kGegluForward || P == Pass::kGegluBackward;
}

template <class F>
GELU_HD Bounded<F> narrow_product(F a, Bounded<F> b) {  // a * b, a exact
  const F value = a * b.value;
  const F rounding = fma(fabs(value), F(kNarrowProductError), F(kNarrowAbsoluteError));
  return Bounded<F>{value, fma(fabs(a), b.error, rounding)};
}

// z = x + b and, where the float sum is inexact, an infinite error to force the double path.
template <class F>
GELU_HD F narrow_sum(F x, F b, F& inexact) {
  const F z = x + b;
  const F bb = z - x;
  const F error = (x - (z - bb)) + (b - bb);
  inexact = select(error != F(0.0f), F(__builtin_huge_valf()), F(0.0f));
  return z;
}

template <Pass P, Approximate A>
struct NarrowPassMath {
  // The input that is the GELU argument in the passes that take it unchanged (not x + b), or -1;
  // and which of f and f' at it those passes need. (For 16-bit data the CPU kernels look f and f'
  // up in tables of every input's instead of computing them.)
  static constexpr int kArgument = P == Pass::kForward || P == Pass::kGegluForward ? 0
                                   : P == Pass::kBackward || P == Pass::kGegluBackward ? 1 : -1;
  static constexpr bool kNeedsF = P == Pass::kForward || P == Pass::kGegluForward ||
                                  P == Pass::kGegluBackward;
  static constexpr bool kNeedsD1 = P == Pass::kBackward || P == Pass::kGegluBackward;

  // The outputs of a pass with an argument, from f and f' there.
  template <class F>
  GELU_HD static void from_parts(const F* in, const Bounded<F>& f, const Bounded<F>& d1,
                                 Bounded<F>* out) {
    if constexpr (P == Pass::kForward) {
      out[0] = f;
    } else if constexpr (P == Pass::kBackward) {
      out[0] = narrow_product(in[0], d1);
    } else if constexpr (P == Pass::kGegluForward) {
      out[0] = narrow_product(in[1], f);
    } else if constexpr (P == Pass::kGegluBackward) {
      // grad * up is exact in float for 16-bit data unless it under- or overflows.
      const F grad_up = in[0] * in[2];
      const F inexact = select(fma(in[0], in[2], -grad_up) != F(0.0f), F(__builtin_huge_valf()),
                               F(0.0f));
      out[0] = narrow_product(grad_up, d1);
      out[0].error = out[0].error + inexact;
      out[1] = narrow_product(in[0], f);
    }
  }

  template <class F>
  GELU_HD static void apply(const F* in, Bounded<F>* out) {
    Bounded<F> f, d1;
    if constexpr (kArgument >= 0) {
      narrow_value_and_derivative<A>(in[kArgument], f, d1);
      from_parts(in, f, d1, out);
    } else if constexpr (P == Pass::kBiasForward) {
      F inexact;
      narrow_value_and_derivative<A>(narrow_sum(in[0], in[1], inexact), f, d1);
      out[0] = Bounded<F>{f.value, f.error + inexact};
    } else if constexpr (P == Pass::kBiasBackward) {
      F inexact;
      narrow_value_and_derivative<A>(narrow_sum(in[1], in[2], inexact), f, d1);
      out[0] = narrow_product(in[0], d1);
      out[0].error = out[0].error + inexact;
    }
  }
};

// Which of f, f' and f'' a computation needs (kWant below).
enum Want : int { kF = 1, kD1 = 2, kD2 = 4 };

// ---------------------------------------------------------------------------------------------
// float32 data: float arithmetic with float-pair corrections ("single" path).
//
// The double path holds 8 lanes per AVX-512 vector; this path holds 16. Every quantity that
// reaches the leading bits of the result is carried as a pair hi + lo (DD<F> above, in float),
// so the only rounding of relative size 2^-24 is the last one.
//   exact:   Q(t) = E R to a relative error below 2^-27 (analysis: E 2^-28.5, R 2^-31, the
//            products 2^-28), with
//            E = exp(-t^2/2) = 2^floor(k/32) 2^((k mod 32)/32) e^r, t^2 split exactly, k the
//                nearest integer to -t^2/2 32/ln2 and |r| <= ln2/64, kept as scale (1 + em);
//            R(t) = exp(t^2/2) Q(t) by one of 32 polynomials of degree 6 in s = t - i/4,
//                i = round(4 t), |s| <= 1/8; S(t) = R(t) - t/sqrt(2 pi), for the derivative, by
//                the same polynomials with its own constant and linear terms.
//            The forward is f = max(x, 0) - t Q(t), one two-sum and no case split; f = x above
//            the core domain (where x Q(x) < ulp(x)/2), and f' = 1 there; f = x/2 below 2^-125.
//   tanh, sigmoid: s(x) and s'(x) as pairs, e = exp(-|s|) by the same exp, 1/(1 + e) by a
//            correctly rounded division and one correction.
// Over every float in the core domains (tools/check_single_path.cpp) the forward is within
// 0.554 ulp and the derivative within 0.545 ulp (of the sum of its terms' magnitudes), far
// inside the float32 bounds (1 ulp forward, 2 ulps derivative). Only IEEE operations and table
// lookups, so every instruction set gives the same bits. Inputs outside the core domains
// (|x| < 7.875 exact, 9 gated; the exact form's forward and backward take x >= 7.875 too), NaN,
// and results that other operands make zero, tiny or not finite get an infinite error, which
// sends them to the double path.
//
// F is float, or a SIMD vector of floats providing, besides the arithmetic, fms, fmin, fmax,
// table_entry32(table, shifted) and times_pow2_floor32(value, k) (cpu/simd_*.h), and optionally
// its own single_coefficients (cpu/simd_avx2.h).

// From tools/fit_polynomials.py: 2^(j/32) = Exp2Hi[j] (1 + Exp2Ratio[j]);
// e^r - 1 = r + r^2 (c2 + c3 r) on |r| <= ln2/64, relative error of e^r 2^-33.2.
// R(t) and S(t) on [i/4 - 1/8, i/4 + 1/8]: coefficients of s^k, k = 0 and 1 as float pairs
// (Tail: R, Slope: S), 2..6 shared; relative error of R 2^-32.9.
GELU_COEFFICIENTS_FLOAT(kSingleExp2Hi, 1.0f, 1.0218971967697144f, 1.0442737340927124f,
                        1.0671404600143433f, 1.0905077457427979f, 1.114386796951294f,
                        1.1387885808944702f, 1.1637248992919922f, 1.1892070770263672f,
                        1.215247392654419f, 1.2418577671051025f, 1.2690509557724f,
                        1.2968395948410034f, 1.3252366781234741f, 1.3542555570602417f,
                        1.3839099407196045f, 1.4142135381698608f, 1.4451807737350464f,
                        1.4768261909484863f, 1.5091644525527954f, 1.5422108173370361f,
                        1.5759809017181396f, 1.610490322113037f, 1.6457555294036865f,
                        1.6817928552627563f, 1.7186193466186523f, 1.7562521696090698f,
                        1.7947090864181519f, 1.8340080976486206f, 1.8741676807403564f,
                        1.9152065515518188f, 1.9571441411972046f)
GELU_COEFFICIENTS_FLOAT(kSingleExp2Ratio, 0.0f, -4.708457979063496e-08f, 4.6285471455576044e-08f,
                        -5.560422522421504e-08f, -1.199215660108166e-08f, -4.877606230024867e-08f,
                        4.7297824323777604e-08f, -3.481442689690084e-08f, 3.1934181521364735e-08f,
                        -2.6886665338565763e-08f, 3.621057231839586e-08f, 1.1184210224612912e-09f,
                        -3.0990722876822474e-08f, -2.638301133117693e-08f, -7.475213337215791e-09f,
                        -4.2456356652564864e-08f, 1.7114272665708086e-08f, 2.300196655369291e-08f,
                        -3.047683350132502e-08f, -1.653853765049007e-08f, 5.233334210430485e-09f,
                        -3.592064601320999e-08f, 6.10759176566944e-09f, -3.114054436537117e-08f,
                        -1.4719605090363075e-08f, -2.821810163311511e-08f, -5.258795177098818e-09f,
                        -6.360387327930539e-09f, -6.128259677495862e-09f, -2.4880407067939814e-08f,
                        5.1406088275030015e-09f, -8.69726690666539e-09f)
constexpr float kSingleExpC2 = 0.5000041127204895f, kSingleExpC3 = 0.16666710376739502f;
GELU_COEFFICIENTS_FLOAT(kSingleTail0Hi, 0.5f, 0.41403210163116455f, 0.3496188223361969f,
                        0.300232470035553f, 0.2615782916545868f, 0.23076032102108002f,
                        0.20578067004680634f, 0.18523167073726654f, 0.16810199618339539f,
                        0.15365193784236908f, 0.14133132994174957f, 0.1307247281074524f,
                        0.12151394784450531f, 0.11345206201076508f, 0.10634515434503555f,
                        0.10003920644521713f, 0.09441064298152924f, 0.08935932070016861f,
                        0.08480339497327805f, 0.0806754007935524f, 0.0769193023443222f,
                        0.07348822802305222f, 0.07034269720315933f, 0.06744923442602158f,
                        0.06477931141853333f, 0.06230848655104637f, 0.06001567468047142f,
                        0.057882633060216904f, 0.05589348077774048f, 0.054034359753131866f,
                        0.052293095737695694f, 0.05065898224711418f)
GELU_COEFFICIENTS_FLOAT(kSingleTail0Lo, 0.0f, 1.3165708523388275e-09f, 1.2384201220072555e-08f,
                        -7.695602377566502e-09f, 2.1053657428549144e-10f, 2.845517432792377e-10f,
                        -3.0694116137652827e-09f, -6.059027501947867e-09f, 5.039775263782076e-09f,
                        -4.18527434931093e-10f, 1.4388257252306857e-09f, 5.99329474937349e-09f,
                        5.110568634947299e-10f, 1.1853357184676838e-10f, -7.113301059291643e-10f,
                        3.190236075312214e-09f, -1.6795602686414668e-09f, -2.080497107925794e-09f,
                        -2.8654776329517517e-09f, -1.621002998497545e-09f, 2.630684114990345e-09f,
                        2.8296407439398763e-09f, -3.1780313936025095e-09f, -3.0745628265549385e-09f,
                        2.9059135098208344e-09f, 3.5731570480201924e-10f, 6.627003945602894e-10f,
                        -1.3363369300023464e-09f, 1.662800008794818e-09f, -3.438963280810725e-10f,
                        1.3804990484089785e-09f, 8.808272861093869e-11f)
GELU_COEFFICIENTS_FLOAT(kSingleTail1Hi, -0.3989422917366028f, -0.29543426632881165f,
                        -0.22413286566734314f, -0.17376793920993805f, -0.1373639851808548f,
                        -0.11049187928438187f, -0.09027127921581268f, -0.07478686422109604f,
                        -0.06273827701807022f, -0.05322542041540146f, -0.04561395198106766f,
                        -0.039449263364076614f, -0.03440043702721596f, -0.030223079025745392f,
                        -0.0267342422157526f, -0.023795243352651596f, -0.02129971608519554f,
                        -0.019165176898241043f, -0.017327016219496727f, -0.01573413424193859f,
                        -0.01434575580060482f, -0.013129068538546562f, -0.012057463638484478f,
                        -0.011109200306236744f, -0.010266394354403019f, -0.009514236822724342f,
                        -0.008840390481054783f, -0.008234516717493534f, -0.0076879034750163555f,
                        -0.0071931746788322926f, -0.006744051817804575f, -0.006335167214274406f)
GELU_COEFFICIENTS_FLOAT(kSingleTail1Lo, 9.745090956414515e-09f, 1.085129142097685e-08f,
                        2.1982429210254395e-09f, 5.332030372784402e-09f, -3.483951127591922e-09f,
                        4.418576060594148e-10f, -7.621379638500514e-10f, -3.0188034294553745e-09f,
                        -9.524661059856498e-10f, -7.919734312800131e-10f, 2.5010729598484716e-11f,
                        1.7357955073293851e-09f, 1.6899145416360284e-09f, 5.428336669055511e-10f,
                        -4.688586185963572e-10f, -9.166175041208646e-10f, 8.910931437178249e-10f,
                        6.300284738358641e-10f, 3.0289287744622584e-10f, -9.008083862172e-11f,
                        2.7406094060822284e-10f, 1.136466407092307e-10f, 3.751774169113986e-10f,
                        1.7563331344838673e-10f, -1.0039250680771161e-10f, -4.014787946537979e-10f,
                        -1.8978665861091315e-10f, 4.522310026455756e-10f, 1.5735196479127467e-10f,
                        -5.654842913371816e-12f, -1.9717728838575255e-10f, -8.938980111672379e-11f)
GELU_COEFFICIENTS_FLOAT(kSingleSlope0Hi, 0.5f, 0.31429654359817505f, 0.1501476913690567f,
                        0.001025752048008144f, -0.1373639851808548f, -0.26791754364967346f,
                        -0.39263275265693665f, -0.5129173398017883f, -0.6297825574874878f,
                        -0.7439681887626648f, -0.8560243844985962f, -0.9663665294647217f,
                        -1.075312852859497f, -1.1831103563308716f, -1.2899528741836548f,
                        -1.3959943056106567f, -1.5013585090637207f, -1.6061453819274902f,
                        -1.7104368209838867f, -1.8143004179000854f, -1.9177920818328857f,
                        -2.020958662033081f, -2.123839855194092f, -2.226468801498413f,
                        -2.328874349594116f, -2.4310808181762695f, -2.533109188079834f,
                        -2.6349778175354004f, -2.7367024421691895f, -2.838297128677368f,
                        -2.9397740364074707f, -3.0411436557769775f)
GELU_COEFFICIENTS_FLOAT(kSingleSlope0Lo, 0.0f, -1.075079758550146e-08f, 3.1506250941504277e-09f,
                        -9.131716216526087e-12f, -3.3554545808556213e-09f, 1.4453514829426695e-08f,
                        -9.678177148586542e-10f, 1.377752045783609e-08f, -2.0922068522111203e-09f,
                        -4.71671723900613e-09f, 1.487558964896607e-08f, -7.538471180623674e-09f,
                        -3.9989238587168074e-08f, 7.155513959133941e-09f, 4.641234596647337e-08f,
                        -3.625926225936382e-08f, 2.8759959747048924e-08f, 8.841072762777458e-09f,
                        -4.8714760225720966e-08f, -1.4834170336541774e-08f,
                        -1.5199271174992646e-08f, -7.922174916075164e-08f, 7.0113399530669085e-09f,
                        -7.945836699718711e-08f, -1.849003261611415e-08f, 5.257567892158477e-08f,
                        4.0813691981611555e-08f, 5.6549609439571213e-08f, -3.820029803591751e-08f,
                        -4.482378201942083e-08f, 3.051491859196176e-08f, -3.499892997638199e-08f)
GELU_COEFFICIENTS_FLOAT(kSingleSlope1Hi, -0.7978845834732056f, -0.694376528263092f,
                        -0.6230751276016235f, -0.5727102160453796f, -0.5363062620162964f,
                        -0.509434163570404f, -0.4892135560512543f, -0.47372913360595703f,
                        -0.4616805613040924f, -0.45216768980026245f, -0.44455623626708984f,
                        -0.4383915364742279f, -0.43334272503852844f, -0.4291653633117676f,
                        -0.42567652463912964f, -0.4227375388145447f, -0.42024198174476624f,
                        -0.41810745000839233f, -0.41626930236816406f, -0.4146764278411865f,
                        -0.41328802704811096f, -0.4120713472366333f, -0.41099974513053894f,
                        -0.41005149483680725f, -0.4092086851596832f, -0.4084565043449402f,
                        -0.4077826738357544f, -0.40717679262161255f, -0.40663018822669983f,
                        -0.4061354696750641f, -0.40568631887435913f, -0.40527746081352234f)
GELU_COEFFICIENTS_FLOAT(kSingleSlope1Lo, 2.1080261092265573e-08f, -7.615860830867405e-09f,
                        -1.6268909774908025e-08f, 1.766039314787804e-09f, -7.049942407633125e-09f,
                        4.326447200497796e-09f, -4.328128966335498e-09f, -1.403537552846501e-08f,
                        2.93212343294158e-09f, -1.1808545252733893e-08f, 3.909600199136776e-09f,
                        -5.555485849129127e-09f, 9.29979471209208e-09f, 4.427423316855084e-09f,
                        1.5530857710999157e-09f, 1.4143842541614049e-08f, -1.385076853210876e-08f,
                        -6.661252882622648e-09f, 6.050127510093262e-09f, 1.3107734453399189e-08f,
                        -8.8798657316147e-09f, -1.5896992611175165e-09f, 1.4657992597477687e-09f,
                        1.4304771589479515e-08f, 1.0303454978100035e-08f, -1.3280695654316332e-08f,
                        2.763480333456414e-09f, -4.045082491188623e-09f, 4.507602735515093e-09f,
                        1.4589144115007002e-08f, -1.354205547698939e-08f, 1.3108425456209716e-08f)
GELU_COEFFICIENTS_FLOAT(kSingleTail2, 0.25f, 0.17008677124977112f, 0.11877620220184326f,
                        0.08495325595140457f, 0.062107153236866f, 0.04632273688912392f,
                        0.03518687188625336f, 0.027177322655916214f, 0.02131272293627262f,
                        0.016947370022535324f, 0.01364822592586279f, 0.011119632050395012f,
                        0.009156321175396442f, 0.007613528519868851f, 0.006387651897966862f,
                        0.005403521936386824f, 0.00460589025169611f, 0.0039536599069833755f,
                        0.003415910294279456f, 0.002969130640849471f, 0.0025952637661248446f,
                        0.0022803107276558876f, 0.0020133231300860643f, 0.0017856652848422527f,
                        0.001590473810210824f, 0.0014222521567717195f, 0.0012765680439770222f,
                        0.001149823423475027f, 0.0010390796232968569f, 0.00094192149117589f,
                        0.00085635349387303f, 0.0007807178772054613f)
GELU_COEFFICIENTS_FLOAT(kSingleTail3, -0.13297994434833527f, -0.08430377393960953f,
                        -0.054914701730012894f, -0.03668421134352684f, -0.02508554607629776f,
                        -0.017529448494315147f, -0.012496967799961567f, -0.009075503796339035f,
                        -0.0067042694427073f, -0.005031274631619453f, -0.0038311260286718607f,
                        -0.002956755692139268f, -0.0023104893043637276f, -0.0018263694364577532f,
                        -0.0014591527869924903f, -0.0011773454025387764f, -0.0009587177773937583f,
                        -0.0007873739232309163f, -0.0006518064765259624f, -0.000543587957508862f,
                        -0.00045647897059097886f, -0.00038581216358579695f, -0.0003280621313024312f,
                        -0.00028054151334799826f, -0.00024118386500049382f,
                        -0.00020838712225668132f, -0.0001808995584724471f, -0.0001577359507791698f,
                        -0.00013811534154228866f, -0.0001214146614074707f, -0.0001071335791493766f,
                        -9.486794442636892e-05f)
GELU_COEFFICIENTS_FLOAT(kSingleTail4, 0.062499720603227615f, 0.03725254535675049f,
                        0.02282961644232273f, 0.014359966851770878f, 0.00925536546856165f,
                        0.00610270956531167f, 0.004110341425985098f, 0.002823788905516267f,
                        0.00197603995911777f, 0.0014067464508116245f, 0.001017599948681891f,
                        0.0007471368298865855f, 0.0005562120932154357f, 0.0004194561333861202f,
                        0.0003201536601409316f, 0.0002471186744514853f, 0.00019275446538813412f,
                        0.0001518298959126696f, 0.00012069510557921603f, 9.677177877165377e-05f,
                        7.821708277333528e-05f, 6.369915354298428e-05f, 5.224525011726655e-05f,
                        4.313784302212298e-05f, 3.584261139621958e-05f, 2.9958124287077226e-05f,
                        2.5180186639772728e-05f, 2.127644074789714e-05f, 1.8068034478346817e-05f,
                        1.541628262202721e-05f, 1.3212910744186956e-05f, 1.1372817425581161e-05f)
GELU_COEFFICIENTS_FLOAT(kSingleTail5, -0.026700269430875778f, -0.015051443129777908f,
                        -0.008728035725653172f, -0.005198023281991482f, -0.0031744614243507385f,
                        -0.0019850071985274553f, -0.0012690848670899868f, -0.0008284389623440802f,
                        -0.0005514504737220705f, -0.0003738474624697119f, -0.00025782265583984554f,
                        -0.00018068173085339367f, -0.00012853811495006084f, -9.273880277760327e-05f,
                        -6.779822433600202e-05f, -5.0181595725007355e-05f, -3.757573358598165e-05f,
                        -2.8444506824598648e-05f, -2.1753579858341254e-05f,
                        -1.6797264834167436e-05f, -1.3088063496979885e-05f,
                        -1.0285193638992496e-05f, -8.147748303599656e-06f, -6.5036015257646795e-06f,
                        -5.228518148214789e-06f, -4.231962520861998e-06f, -3.4473530376999406e-06f,
                        -2.825293222485925e-06f, -2.328833716092049e-06f, -1.9301153315609554e-06f,
                        -1.6079745819297386e-06f, -1.3462180277201696e-06f)
GELU_COEFFICIENTS_FLOAT(kSingleTail6, 0.010452340357005596f, 0.005601311568170786f,
                        0.0030887399334460497f, 0.0017500297399237752f, 0.0010173118207603693f,
                        0.0006058954750187695f, 0.0003692221362143755f, 0.0002299105399288237f,
                        0.0001461068750359118f, 9.46473446674645e-05f, 6.242865492822602e-05f,
                        4.188280217931606e-05f, 2.8551470677484758e-05f, 1.9758452253881842e-05f,
                        1.3868352652934846e-05f, 9.864711500995327e-06f, 7.105500571924495e-06f,
                        5.178941592021147e-06f, 3.817063770839013e-06f, 2.8430577003746293e-06f,
                        2.138719537470024e-06f, 1.6240350078078336e-06f, 1.2441929584383615e-06f,
                        9.612213034415618e-07f, 7.485292599085369e-07f, 5.873044415238837e-07f,
                        4.6410715981437534e-07f, 3.692464645155269e-07f, 2.956720948077418e-07f,
                        2.382115127375073e-07f, 1.930389146309608e-07f, 1.5730270774838573e-07f)

constexpr float kSingleCore = 7.875f;

// table[k mod 32] for the integer k held in the low bits of shifted = k + 1.5 * 2^23.
GELU_HD float table_entry32(const float (&table)[32], float shifted) {
  return table[bit_cast<uint32_t>(shifted) & 31u];
}

// value * 2^floor(k / 32) for an integer-valued k, the result a normal float (so exact).
GELU_HD float times_pow2_floor32(float value, float k) {
  const int32_t m = static_cast<int32_t>(k) >> 5;  // arithmetic shift: floor for negative k
  return value * bit_cast<float>(static_cast<uint32_t>(m + 127) << 23);
}

// exp(c (a + a_lo)) = scale (1 + em), with c = -1/2 (kHalfNegated) or 1: relative error below
// 2^-28.5, for c a in [-66.5, 0] and |a_lo| <= 2^-15. c a = (k + j/32) ln2 + c r, |c r| <= ln2/64;
// scale = 2^(j/32) rounded to float, times 2^floor(k/32) (one scaling instead of a pair's two);
// em = e^(c r) - 1 plus that rounding's relative error (their product, below 2^-30.6, is
// dropped). Every core domain keeps c a above -66.5; beyond, the argument is clamped (NaN too:
// fmin and fmax return the other operand), so that the results the double path will redo never
// pass through subnormals (each a microcode assist on x86, ten times slower).
template <class F>
struct ScaledExp {
  F scale, em;
};

template <bool kHalfNegated, class F>
GELU_HD ScaledExp<F> single_exp(F a, F a_lo) {
  constexpr float c = kHalfNegated ? -0.5f : 1.0f;       // scaling by it is exact
  constexpr float kRound = 12582912.0f;                  // 1.5 * 2^23: adding it rounds to integer
  constexpr float k32OverLn2 = 46.16624130844683f;
  constexpr float kLn2Over32Hi = 0.02165985107421875f;     // 12 significant bits: k * hi is exact
  constexpr float kLn2Over32Lo = 9.983182280848268e-07f;  // ln2/32 - hi
  a = kHalfNegated ? fmin(a, F(133.0f)) : fmax(a, F(-66.5f));
  const F shifted = fma(a, F(c * k32OverLn2), F(kRound));  // k in the low bits of its significand
  const F k = shifted - F(kRound);
  F r = fma(k, F(-kLn2Over32Hi / c), a);                  // exact
  r = fma(k, F(-kLn2Over32Lo / c), r) + a_lo;
  // e^(c r) - 1 = r (c + r (c2 c^2 + r c3 c^3))
  F p = fma(r, F(kSingleExpC3 * c * c * c), F(kSingleExpC2 * c * c));
  p = fma(r, p, F(c));
  return ScaledExp<F>{times_pow2_floor32(table_entry32(GELU_TABLE(kSingleExp2Hi), shifted), k),
                      fma(r, p, table_entry32(GELU_TABLE(kSingleExp2Ratio), shifted))};
}

// exp(-(t + t_lo)^2/2), for t < kSingleCore and |t_lo| <= ulp(t) (t_lo: the low part of an
// argument pair, 0 without one).
template <bool kPair, class F>
GELU_HD ScaledExp<F> single_gaussian(F t, F t_lo) {
  const F h = t * t;
  F h_lo = fms(t, t, h);                                  // t^2 = h + h_lo exactly
  if (kPair) h_lo = fma(F(2.0f) * t, t_lo, h_lo);         // + 2 t t_lo (t_lo^2 is negligible)
  return single_exp<true>(h, h_lo);
}

// The nine numbers of an interval's polynomial, c6 .. c2, c0 hi and lo, c1 hi and lo (R's for
// the forward, S's for the derivative), also stored by rows, padded to three groups of four, for
// the SIMD lanes that read whole rows rather than look each column up (cpu/simd_avx2.h).
constexpr int kSingleCoefficients = 9;
using SingleRow = float[12];
struct SingleRows {
  SingleRow row[32];
};
constexpr SingleRows single_rows(const float (&c0_hi)[32], const float (&c0_lo)[32],
                                 const float (&c1_hi)[32], const float (&c1_lo)[32]) {
  SingleRows rows{};
  for (int i = 0; i < 32; ++i) {
    const float entries[kSingleCoefficients] = {
        kSingleTail6_host[i], kSingleTail5_host[i], kSingleTail4_host[i], kSingleTail3_host[i],
        kSingleTail2_host[i], c0_hi[i], c0_lo[i], c1_hi[i], c1_lo[i]};
    for (int c = 0; c < kSingleCoefficients; ++c) rows.row[i][c] = entries[c];
  }
  return rows;
}
alignas(64) static constexpr SingleRows kSingleTailRows = single_rows(
    kSingleTail0Hi_host, kSingleTail0Lo_host, kSingleTail1Hi_host, kSingleTail1Lo_host);
alignas(64) static constexpr SingleRows kSingleSlopeRows = single_rows(
    kSingleSlope0Hi_host, kSingleSlope0Lo_host, kSingleSlope1Hi_host, kSingleSlope1Lo_host);
// R's (kTail) or S's rows; none on the GPU, which reads columns.
template <bool kTail>
GELU_HD const SingleRow* single_rows_or_none() {
#if defined(__CUDA_ARCH__)
  return nullptr;
#else
  return kTail ? kSingleTailRows.row : kSingleSlopeRows.row;
#endif
}

// The nine numbers for each lane's interval (picked by `shifted`), by default one column at a
// time; `rows` is the same table by rows (nullptr on the GPU, which does not read it).
template <class F, class Table>
GELU_HD void single_coefficients(const SingleRow* /* rows */, F shifted,
                                 const Table& c0_hi, const Table& c0_lo, const Table& c1_hi,
                                 const Table& c1_lo, F (&c)[kSingleCoefficients]) {
  c[0] = table_entry32(GELU_TABLE(kSingleTail6), shifted);
  c[1] = table_entry32(GELU_TABLE(kSingleTail5), shifted);
  c[2] = table_entry32(GELU_TABLE(kSingleTail4), shifted);
  c[3] = table_entry32(GELU_TABLE(kSingleTail3), shifted);
  c[4] = table_entry32(GELU_TABLE(kSingleTail2), shifted);
  c[5] = table_entry32(c0_hi, shifted);
  c[6] = table_entry32(c0_lo, shifted);
  c[7] = table_entry32(c1_hi, shifted);
  c[8] = table_entry32(c1_lo, shifted);
}

// c0 + c1 (s + t_lo) + s^2 (c2 + c3 s + ... + c6 s^4) as a float pair, c0 and c1 themselves
// pairs; the interval is picked by `shifted`. hi = c0 + c1 s rounded once, and its rounding error
// recovered exactly, as |c1 s| <= |c0| / 8 makes c0 - hi exact; except where S(t) crosses zero
// (near t = 0.75), where c0 - hi is then inexact by at most half an ulp of c1 s, far below the
// derivative's bound there (2 ulps of its larger term).
template <bool kPair, class F, class Table>
GELU_HD DD<F> single_polynomial(F s, F t_lo, F shifted, const SingleRow* rows,
                                const Table& c0_hi, const Table& c0_lo, const Table& c1_hi,
                                const Table& c1_lo) {
  F c[kSingleCoefficients];
  single_coefficients(rows, shifted, c0_hi, c0_lo, c1_hi, c1_lo, c);
  F upper = c[0];
  upper = fma(upper, s, c[1]);
  upper = fma(upper, s, c[2]);
  upper = fma(upper, s, c[3]);
  upper = fma(upper, s, c[4]);
  F rest = fma(s * s, upper, fma(c[8], s, c[6]));
  if (kPair) rest = fma(c[7], t_lo, rest);
  const F hi = fma(c[7], s, c[5]);
  return DD<F>{hi, fma(c[7], s, c[5] - hi) + rest};
}

// i = round(4 t) in the low bits of the returned shift, and s = t - i/4 (exact).
template <class F>
GELU_HD F single_interval(F t, F& s) {
  constexpr float kRound = 12582912.0f;
  const F shifted = fma(t, F(4.0f), F(kRound));
  s = fma(shifted - F(kRound), F(-0.25f), t);
  return shifted;
}

// scale (1 + em) (p.hi + p.lo) as a pair, for |em| <= 2^-5 and |p.lo| <= 2^-6 |p.hi| (p is not
// renormalized), so that em p.lo counts too.
template <class F>
GELU_HD DD<F> single_scaled_product(ScaledExp<F> e, DD<F> p) {
  const F hi = e.scale * p.hi;
  return DD<F>{hi, fma(e.scale, fma(e.em, p.hi + p.lo, p.lo), fms(e.scale, p.hi, hi))};
}

// a b for pairs whose lo parts may reach 2^-6 of their hi parts, so that lo * lo counts too.
template <class F>
GELU_HD DD<F> single_product(DD<F> a, DD<F> b) {
  const F hi = a.hi * b.hi;
  return DD<F>{hi, fma(a.hi, b.hi, -hi) + fma(a.hi, b.lo, a.lo * (b.hi + b.lo))};
}

// a for x < 0, 1 - a otherwise, for |a.hi| <= 1/2 (so the difference is a fast two-sum).
template <class M, class F>
GELU_HD DD<F> single_reflect(M negative, DD<F> a) {
  const DD<F> reflected = dd_one_minus(a);
  return DD<F>{select(negative, a.hi, reflected.hi), select(negative, a.lo, reflected.lo)};
}

// What the single path computes at z = x + x_lo, |x_lo| <= ulp(x)/2 (x_lo = 0 unless kPair), as
// float pairs: f(z) itself if kWant & kF, and the slope f'(z) if kWant & kD1; the gated forms
// also give their gate p, f = z p.
template <class F>
struct SingleParts {
  DD<F> value, slope, gate;
};

// f = max(z, 0) - (t + t_lo) Q, t + t_lo = |z|, from Q = Q(t + t_lo): no case split, and
// (t + t_lo) Q <= t/2 makes the difference a fast two-sum.
template <bool kPair, class F>
GELU_HD DD<F> single_exact_value(F x, F x_lo, F t, F t_lo, DD<F> q) {
  const F p = t * q.hi;
  F p_lo = fma(t, q.lo, fms(t, q.hi, p));                 // t Q = p + p_lo
  if (kPair) p_lo = fma(t_lo, q.hi, p_lo);
  const F c = fmax(x, F(0.0f));
  const F u = c - p;
  F v = ((c - u) - p) - p_lo;
  if (kPair) v = v + select(x > F(0.0f), x_lo, F(0.0f));
  return DD<F>{u, v};
}

// The exact form, for |x| < kSingleCore: f from Q(t) as above, and f' = E S(t) for z < 0,
// 1 - E S(t) otherwise (|E S| <= 1/2).
template <int kWant, bool kPair, class F>
GELU_HD SingleParts<F> single_exact(F x, F x_lo) {
  const F t = fabs(x);
  const auto negative = x < F(0.0f);
  const F t_lo = kPair ? select(negative, -x_lo, x_lo) : F(0.0f);
  F s;
  const F shifted = single_interval(t, s);
  const ScaledExp<F> e = single_gaussian<kPair>(t, t_lo);
  SingleParts<F> r{};
  if (kWant & kF) {
    r.value = single_exact_value<kPair>(x, x_lo, t, t_lo, single_scaled_product(
        e, single_polynomial<kPair>(s, t_lo, shifted, single_rows_or_none<true>(),
                                    GELU_TABLE(kSingleTail0Hi), GELU_TABLE(kSingleTail0Lo),
                                    GELU_TABLE(kSingleTail1Hi), GELU_TABLE(kSingleTail1Lo))));
  }
  if (kWant & kD1) {
    r.slope = single_reflect(negative, single_scaled_product(e, single_polynomial<kPair>(
        s, t_lo, shifted, single_rows_or_none<false>(), GELU_TABLE(kSingleSlope0Hi),
        GELU_TABLE(kSingleSlope0Lo), GELU_TABLE(kSingleSlope1Hi), GELU_TABLE(kSingleSlope1Lo))));
  }
  return r;
}

// The gated forms, f = x p with p = sigmoid(s(x)), q = 1 - p: the gate p and the slope
// f' = p + x s' p q, in float lanes or (kFloat64) double lanes. s = x w(x) and s' are carried as
// pairs to far below an ulp; e = exp(-|s|), then 1/(1 + e) by a correctly rounded division and
// one correction, p and q from e/(1 + e) and 1/(1 + e). Each pair has a relative error near 2^-28
// (float) or 2^-57 (double), and f' one near 2^-27 or 2^-56 of its larger term. Core domains keep
// e and its low part normal: |s| <= 66.4 (float), |s| <= 647 (double).
constexpr float kSingleCoreGate = 9.0f;
constexpr double kSingleCoreTanhF64 = 20.0, kSingleCoreSigmoidF64 = 380.0;

// exp(a + a_lo) as a pair, for the arguments of the core domains.
template <bool kFloat64, class F>
GELU_HD DD<F> single_gate_exp(F a, F a_lo) {
  if constexpr (kFloat64) {
    const ScaledDD<F> e = exp_dd(DD<F>{a, a_lo});
    const F scale = e.k + F(kRoundToInteger);  // k >= -935 in the core domains: 2^k is normal
    return DD<F>{times_pow2(e.m.hi, scale), times_pow2(e.m.lo, scale)};
  } else {
    const ScaledExp<F> e = single_exp<false>(a, a_lo);
    return DD<F>{e.scale, e.scale * e.em};
  }
}

template <Approximate A, int kWant, bool kPair, bool kFloat64, class F>
GELU_HD SingleParts<F> single_gate(F x, F x_lo) {
  // The constants as pairs in the lanes' precision.
  using C = typename std::conditional<kFloat64, double, float>::type;
  constexpr C c1_hi = kFloat64 ? kTanhS1Hi : kTanhC1Hi, c1_lo = kFloat64 ? kTanhS1Lo : kTanhC1Lo;
  constexpr C c3_hi = kFloat64 ? kTanhS3Hi : kTanhC3Hi, c3_lo = kFloat64 ? kTanhS3Lo : kTanhC3Lo;
  constexpr C c3x3_hi = kFloat64 ? kTanhS3x3Hi : kTanh3C3Hi;
  constexpr C c3x3_lo = kFloat64 ? kTanhS3x3Lo : kTanh3C3Lo;
  constexpr C sigmoid_hi = kFloat64 ? kSigmoidHi : kSigmoidFloatHi;
  constexpr C sigmoid_lo = kFloat64 ? kSigmoidLo : kSigmoidFloatLo;
  DD<F> w, ds;  // s = x w, and s'
  if (A == Approximate::kTanh) {
    const F x2 = x * x, x2_lo = fma(x, x, -x2);
    w = tanh_polynomial_pair(c1_hi, c1_lo, c3_hi, c3_lo, x2, x2_lo);
    ds = tanh_polynomial_pair(c1_hi, c1_lo, c3x3_hi, c3x3_lo, x2, x2_lo);
  } else {
    w = DD<F>{F(sigmoid_hi), F(sigmoid_lo)};
    ds = w;
  }
  const F s_hi = x * w.hi;
  F s_lo = fma(x, w.hi, -s_hi) + x * w.lo;
  if (kPair) s_lo = fma(x_lo, ds.hi, s_lo);           // s(x + x_lo) = s(x) + s'(x) x_lo
  const auto nonnegative = s_hi >= F(0.0f);
  DD<F> e = single_gate_exp<kFloat64>(-fabs(s_hi), select(nonnegative, -s_lo, s_lo));
  // Normalized (exp_dd's pairs already are): the division's correction is first-order in e.lo.
  if (!kFloat64) e = fast_two_sum(e.hi, e.lo);
  const F d = F(1.0f) + e.hi, d_lo = ((F(1.0f) - d) + e.hi) + e.lo;  // 1 + e = d + d_lo
  const F q0 = F(1.0f) / d;
  const DD<F> inv{q0, q0 * (fma(-d, q0, F(1.0f)) - d_lo * q0)};     // 1 / (1 + e)
  const DD<F> small = single_product(e, inv);                        // e / (1 + e)
  SingleParts<F> r{};
  r.gate = DD<F>{select(nonnegative, inv.hi, small.hi), select(nonnegative, inv.lo, small.lo)};
  if (kWant & kF) r.value = single_pair_times(x, x_lo, r.gate);
  if (kWant & kD1) {
    DD<F> xds = two_prod(x, ds.hi);
    xds.lo = fma(x, ds.lo, xds.lo);
    if (kPair) xds.lo = fma(x_lo, ds.hi, xds.lo);
    if (kPair && A == Approximate::kTanh) {  // + x s'' x_lo, s'' = 6 c3 x
      xds.lo = fma(F(C(6) * c3_hi) * (x * x), x_lo, xds.lo);
    }
    const DD<F> term = single_product(xds, single_product(small, inv));  // x s' p q
    const DD<F> sum = two_sum(r.gate.hi, term.hi);
    r.slope = DD<F>{sum.hi, sum.lo + (r.gate.lo + term.lo)};
  }
  return r;
}

// a b, a a float, b a pair: rounded once.
template <class F>
GELU_HD F single_times(F a, DD<F> b) {
  return fma(a, b.hi, a * b.lo);
}

// (a + a_lo) b as a pair, a and a_lo floats, b a pair.
template <class F>
GELU_HD DD<F> single_pair_times(F a, F a_lo, DD<F> b) {
  const F hi = a * b.hi;
  return DD<F>{hi, fma(a, b.hi, -hi) + fma(a_lo, b.hi, a * b.lo)};
}

template <Approximate A, int kWant, bool kPair, bool kFloat64, class F>
GELU_HD SingleParts<F> single_parts(F x, F x_lo) {
  static_assert(!kFloat64 || A != Approximate::kNone, "float64: gated forms only");
  if constexpr (A == Approximate::kNone) return single_exact<kWant, kPair>(x, x_lo);
  else return single_gate<A, kWant, kPair, kFloat64>(x, x_lo);
}

// Error 0 where the single path holds: the argument in the core domain (false for NaN).
template <Approximate A, bool kFloat64, class F>
GELU_HD F single_domain_error(F x) {
  constexpr double kCore = A == Approximate::kNone ? kSingleCore
                           : !kFloat64               ? kSingleCoreGate
                           : A == Approximate::kTanh ? kSingleCoreTanhF64
                                                     : kSingleCoreSigmoidF64;
  return select(fabs(x) < F(kCore), F(0.0f), F(__builtin_huge_valf()));
}

// A result formed from more than x alone (a gradient, a bias, up): error 0 where its magnitude
// lies in (2^-100, inf) (double lanes: (2^-900, inf)). Zeros (whose sign a sum of products may
// lose), results near the subnormals (where the low parts' roundings are no longer relative) and
// inf or NaN (from infinite operands or overflow) go to the double path.
template <bool kFloat64, class F>
GELU_HD Bounded<F> single_result(F value, F domain_error) {
  constexpr double kSmallest = kFloat64 ? 0x1p-900 : 0x1p-100;
  const F magnitude = fabs(value), inf = F(__builtin_huge_valf());
  const F error = select(magnitude > F(kSmallest), select(magnitude < inf, F(0.0f), inf), inf);
  return Bounded<F>{value, domain_error + error};
}

// The passes the single path serves: every pass but the double backward; for float64, of the
// gated forms only (the exact form has no double-lane single path: its R(t) stays in
// double-double).
template <Pass P, Approximate A, bool kFloat64>
constexpr bool has_single_path() {
  return P != Pass::kDoubleBackward && kFloat64 && A != Approximate::kNone;
}

template <Pass P, Approximate A, bool kFloat64 = false>
struct SinglePassMath {
  template <int kWant, bool kPair, class F>
  GELU_HD static SingleParts<F> parts(F x, F x_lo) {
    return single_parts<A, kWant, kPair, kFloat64>(x, x_lo);
  }
  template <class F>
  GELU_HD static F domain(F x) {
    return single_domain_error<A, kFloat64>(x);
  }
  template <class F>
  GELU_HD static Bounded<F> result(F value, F domain_error) {
    return single_result<kFloat64>(value, domain_error);
  }
  // Error 0 above -kSingleCore (false for NaN): the exact form's forward and backward take every
  // x above the core domain as its limit.
  template <class F>
  GELU_HD static F exact_lower_domain(F x) {
    return select(x > F(-kSingleCore), F(0.0f), F(__builtin_huge_valf()));
  }
  // x + b: exactly, as a pair, for float32; rounded for float64, as its double path rounds it.
  template <class F>
  GELU_HD static DD<F> bias_sum(F x, F b) {
    if constexpr (kFloat64) return DD<F>{x + b, F(0.0f)};
    else return two_sum(x, b);
  }

  template <class F>
  GELU_HD static void apply(const F* in, Bounded<F>* out) {
    if constexpr (P == Pass::kForward && A == Approximate::kNone && !kFloat64) {
      // Above the core domain f = x, +inf included: x Q(x) < ulp(x)/2 there. Below 2^-125 in
      // magnitude (zeros included, with their signs) f is x/2 rounded into the subnormals, where
      // the pair's low parts would underflow: that product, as the double path gives it.
      const F x = in[0];
      const DD<F> f = parts<kF, false>(x, F(0.0f)).value;
      const F value = select(x < F(kSingleCore), f.hi + f.lo, x);
      out[0] = Bounded<F>{select(fabs(x) < F(0x1p-125f), x * F(0.5f), value),
                          exact_lower_domain(x)};
    } else if constexpr (P == Pass::kForward) {
      const SingleParts<F> g = parts<kF, false>(in[0], F(0.0f));
      out[0] = Bounded<F>{single_times(in[0], g.gate), domain(in[0])};
    } else if constexpr (P == Pass::kBackward && A == Approximate::kNone && !kFloat64) {
      // Above the core domain f' rounds to 1, so that the result is the gradient itself.
      const F x = in[1];
      const SingleParts<F> g = parts<kD1, false>(x, F(0.0f));
      out[0] = result(select(x < F(kSingleCore), single_times(in[0], g.slope), in[0]),
                      exact_lower_domain(x));
    } else if constexpr (P == Pass::kBackward) {
      const SingleParts<F> g = parts<kD1, false>(in[1], F(0.0f));
      out[0] = result(single_times(in[0], g.slope), domain(in[1]));
    } else if constexpr (P == Pass::kBiasForward) {
      const DD<F> z = bias_sum(in[0], in[1]);
      const DD<F> f = parts<kF, !kFloat64>(z.hi, z.lo).value;
      out[0] = result(f.hi + f.lo, domain(z.hi));
    } else if constexpr (P == Pass::kBiasBackward) {
      const DD<F> z = bias_sum(in[1], in[2]);
      const SingleParts<F> g = parts<kD1, !kFloat64>(z.hi, z.lo);
      out[0] = result(single_times(in[0], g.slope), domain(z.hi));
    } else if constexpr (P == Pass::kGegluForward) {
      const DD<F> f = parts<kF, false>(in[0], F(0.0f)).value;
      out[0] = result(single_times(in[1], f), domain(in[0]));
    } else if constexpr (P == Pass::kGegluBackward) {
      const SingleParts<F> g = parts<kF | kD1, false>(in[1], F(0.0f));
      const F in_domain = domain(in[1]);
      const DD<F> grad_up = two_prod(in[0], in[2]);
      const DD<F> dgate = single_pair_times(grad_up.hi, grad_up.lo, g.slope);
      out[0] = result(dgate.hi + dgate.lo, in_domain);
      out[1] = result(single_times(in[0], g.value), in_domain);
    }
  }
};

// ---------------------------------------------------------------------------------------------
// f, f' and f'' at one point, computing what they share (the exp, the tail or the gate) once:
// kWant says which are needed, and the rest is never computed. kFloat64: float64 inputs, V =
// double.

template <class V>
struct Derivatives {
  V f, d1, d2;
};

template <Approximate A, bool kFloat64, int kWant, class V>
GELU_HD Derivatives<V> evaluate(V x) {
  Derivatives<V> r{};
  if constexpr (kFloat64) {
    if constexpr (A == Approximate::kNone) {
      const TailF64<V> q = tail_f64(x);
      if (kWant & kF) r.f = exact_forward_f64(x, q);
      if (kWant & kD1) r.d1 = exact_derivative_f64(x, q);
      if (kWant & kD2) r.d2 = exact_second_derivative_f64(x, q);
    } else {
      const GateF64<V> g = gate_f64<A>(x);
      if (kWant & kF) r.f = gate_forward_f64(x, g);
      if (kWant & kD1) r.d1 = gate_derivative_f64(x, g);
      if (kWant & kD2) r.d2 = gate_second_derivative_f64<A>(x, g);
    }
  } else if constexpr (A == Approximate::kNone) {
    const Tail<V> q = tail(x);
    if (kWant & kF) r.f = exact_forward(x, q);
    if (kWant & kD1) r.d1 = exact_derivative(x, q);
    if (kWant & kD2) r.d2 = exact_second_derivative(x, q);
  } else {
    const Gate<V> g = gate<A>(x);
    if (kWant & kF) r.f = gate_forward(x, g);
    if (kWant & kD1) r.d1 = gate_derivative(x, g);
    if (kWant & kD2) r.d2 = gate_second_derivative(x, g);
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// What each elementwise pass computes from its operands (see Pass in kernels.h): inputs and
// outputs in the order TensorIterator lists them, as lanes of doubles. Sums and products of the
// operands are formed in double too, so each output is rounded once, to its storage type.

template <Pass P, Approximate A, bool kFloat64>
struct PassMath;

template <Approximate A, bool kFloat64>
struct PassMath<Pass::kForward, A, kFloat64> {
  static constexpr int kInputs = 1, kOutputs = 1;
  template <class V>
  GELU_HD static void apply(const V* in, V* out) {
    out[0] = evaluate<A, kFloat64, kF>(in[0]).f;
  }
};

template <Approximate A, bool kFloat64>
struct PassMath<Pass::kBackward, A, kFloat64> {
  static constexpr int kInputs = 2, kOutputs = 1;  // in: grad, x
  template <class V>
  GELU_HD static void apply(const V* in, V* out) {
    out[0] = in[0] * evaluate<A, kFloat64, kD1>(in[1]).d1;
  }
};

template <Approximate A, bool kFloat64>
struct PassMath<Pass::kDoubleBackward, A, kFloat64> {
  static constexpr int kInputs = 3, kOutputs = 2;  // in: gg, grad, x; out: ggrad, gx
  template <class V>
  GELU_HD static void apply(const V* in, V* out) {
    const Derivatives<V> d = evaluate<A, kFloat64, kD1 | kD2>(in[2]);
    out[0] = in[0] * d.d1;
    out[1] = in[0] * in[1] * d.d2;
  }
};

template <Approximate A, bool kFloat64>
struct PassMath<Pass::kBiasForward, A, kFloat64> {
  static constexpr int kInputs = 2, kOutputs = 1;  // in: x, b
  template <class V>
  GELU_HD static void apply(const V* in, V* out) {
    out[0] = evaluate<A, kFloat64, kF>(in[0] + in[1]).f;
  }
};

template <Approximate A, bool kFloat64>
struct PassMath<Pass::kBiasBackward, A, kFloat64> {
  static constexpr int kInputs = 3, kOutputs = 1;  // in: grad, x, b
  template <class V>
  GELU_HD static void apply(const V* in, V* out) {
    out[0] = in[0] * evaluate<A, kFloat64, kD1>(in[1] + in[2]).d1;
  }
};

template <Approximate A, bool kFloat64>
struct PassMath<Pass::kGegluForward, A, kFloat64> {
  static constexpr int kInputs = 2, kOutputs = 1;  // in: gate, up
  template <class V>
  GELU_HD static void apply(const V* in, V* out) {
    out[0] = evaluate<A, kFloat64, kF>(in[0]).f * in[1];
  }
};

template <Approximate A, bool kFloat64>
struct PassMath<Pass::kGegluBackward, A, kFloat64> {
  static constexpr int kInputs = 3, kOutputs = 2;  // in: grad, gate, up; out: dgate, dup
  template <class V>
  GELU_HD static void apply(const V* in, V* out) {
    const Derivatives<V> d = evaluate<A, kFloat64, kF | kD1>(in[1]);
    out[0] = in[0] * in[2] * d.d1;
    out[1] = in[0] * d.f;
  }
};

}  // namespace GELU_ISA
}  // namespace math
}  // namespace gelu_ext
