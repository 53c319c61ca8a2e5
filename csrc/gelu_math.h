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
// computed in double to a relative error below 2^-32 (the polynomials and the rational below,
// fitted by tools/fit_polynomials.py, are accurate to 2^-33) and rounded once to the output type
// (the "double path", which float32 takes on the CPU and the GPU). float64 inputs go through the
// *_f64 functions. Faster paths with an error bound come last: "narrow" (float arithmetic) for
// 16-bit outputs, and "single" (double pairs) for float64 outputs of the gated forms; what they
// cannot bound, the double (or double-double) path redoes.
//
// Non-finite inputs: f(+inf) = +inf, f(-inf) = -0, NaN -> NaN; f'(+inf) = 1, f'(-inf) = -0,
// f''(+-inf) = -0 (the limits are approached from below). Beyond |x| = kSaturation every result
// is its limit to within far less than the smallest subnormal float: the double path clamps its
// argument there and lets the result round to the limit; no intermediate ever overflows.
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

// |x| beyond which the gated forms' f, f', f'' of float, float16 and bfloat16 inputs are their
// limits (the exact form's: kSaturationExact, below).
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
// doubles (cpu/simd_*.h), which provide the same operations: + - * /, fma, fabs, comparisons,
// select(mask, a, b) and times_pow2(value, shifted), and may override at_least, at_most,
// at_most_each and times_pow2_normal (below). Every operation is IEEE-rounded, so all lane types
// give bit-identical results.

GELU_HD double select(bool c, double a, double b) { return c ? a : b; }
// |v| with the sign of x.
GELU_HD double with_sign_of(double v, double x) { return copysign(v, x); }

constexpr double kRoundToInteger = 6755399441055744.0;  // 1.5 * 2^52: adding it rounds
constexpr double kLog2e = 1.4426950408889634074;
constexpr double kLn2 = 0.69314718055994528623;  // rounded to double

// value * 2^k, where shifted = k + 1.5 * 2^52 holds the integer k in [-1022, 0] in the low bits
// of its significand (see exp_nonpositive).
GELU_HD double times_pow2(double value, double shifted) {
  constexpr int64_t kShiftedBits = 0x4338000000000000;  // bits of 1.5 * 2^52
  return value * bit_cast<double>((bit_cast<int64_t>(shifted) - kShiftedBits + 1023) << 52);
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

// x, or ceiling where x > ceiling, lane by lane (NaN x stays NaN; a NaN ceiling leaves x). The
// SIMD lanes override it with one min instruction.
template <class V>
GELU_HD V at_most_each(V x, V ceiling) {
  return select(x > ceiling, ceiling, x);
}

// value * 2^k as times_pow2, where the product is known to be a normal double (the SIMD lanes add
// k to the exponent field instead of multiplying).
GELU_HD double times_pow2_normal(double value, double shifted) {
  return times_pow2(value, shifted);
}

// exp(a) for a <= 0 with relative error below 2^-34; a below -700 (where exp underflows far below
// every float result) is taken as -700. a = k ln2 + r, |r| <= ln2/2, exp(a) = 2^k e^r, k >= -1010.
// ln2 rounded to double leaves r off by at most 1010 * 2^-54 ln2 < 2^-44: no need for its low
// part. (P by Estrin's scheme, with a shorter dependency chain, measured slower on AVX2.)
template <class V>
GELU_HD V exp_nonpositive(V a, V shifted);

template <class V>
GELU_HD V exp_nonpositive(V a) {
  a = at_least(a, -700.0);
  return exp_nonpositive(a, fma(a, V(kLog2e), V(kRoundToInteger)));
}

// |x| beyond which the exact form's f, f', f'' of float, float16 and bfloat16 inputs are their
// limits (E(37) < 1e-297), and t^2/2 < 700: its exp needs no clamp.
constexpr double kSaturationExact = 37.0;

// kExpPoly for w = -2r in place of r: P(-w/2)/4 = sum of c[i] (-1)^i 2^-(i+2) w^i. Each step of
// Horner's rule in w is the step in r times a power of two, so that the result has the same bits.
constexpr double exp_poly_in_w(int i) {
  return kExpPoly_host[i] * (i % 2 ? -1.0 : 1.0) / static_cast<double>(int64_t(1) << (i + 2));
}
GELU_COEFFICIENTS(kExpPolyInW, exp_poly_in_w(0), exp_poly_in_w(1), exp_poly_in_w(2),
                  exp_poly_in_w(3), exp_poly_in_w(4), exp_poly_in_w(5))

// Shifting by this in place of kRoundToInteger puts k + 2048 in shifted, whose low 12 bits then
// also carry the sign bit into times_pow2 and times_pow2_normal: they return -value 2^k.
constexpr double kRoundToIntegerNegating = kRoundToInteger + 2048.0;
// Two of negated_gaussian's constants, read from constant memory on the GPU, where as immediates
// each would cost two moves per use (kRoundToIntegerNegating, unlike kRoundToInteger, has low
// bits); with the third there too, one rarely used kernel spills.
GELU_COEFFICIENTS(kGaussianReduction, kRoundToIntegerNegating, 2.0 * kLn2)

// -exp(-t^2/2) for t <= kSaturationExact: the same bits as -exp_nonpositive(-t^2/2), two
// instructions shorter. w = t^2 + 2 k ln2 = -2r (r as in exp_nonpositive, exactly: the scaling
// commutes with rounding), so that -t^2/2 is never formed, and the sign comes with the power of 2.
template <class V>
GELU_HD V negated_gaussian(V t) {
  const auto& c = GELU_TABLE(kGaussianReduction);
  const V square = t * t;
  const V shifted = fma(square, V(-0.5 * kLog2e), V(c[0]));
  const V k = shifted - V(c[0]);
  const V w = fma(k, V(c[1]), square);
  const V p = horner(w, GELU_TABLE(kExpPolyInW));
  return times_pow2_normal(fma(w * w, p, fma(w, V(-0.5), V(1.0))), shifted);
}

template <class V>
GELU_HD V exp_nonpositive(V a, V shifted) {
  const V k = shifted - V(kRoundToInteger);
  const V r = fma(k, V(-kLn2), a);
  const V r2 = r * r;
  const V p = horner(r, GELU_TABLE(kExpPoly));
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

// ---------------------------------------------------------------------------------------------
// exact: f = x Phi(x), f' = Phi(x) + x phi(x), f'' = phi(x) (2 - x^2)
// With t = |x| capped at kSaturationExact, beyond which every term with E is below 1e-297: each
// result then rounds to its limit in every output type, with no case split.

// Gaussian factor E = exp(-t^2/2) and Mills-ratio factor R(t), so that Q(t) = E R.
// (The Gaussian factor is kept negated, -E, which costs nothing to form and saves the forward a
// negation; the derivatives flip a sign inside an FMA instead, with the same bits.)
template <class V>
struct Tail {
  V t, minus_e, r;
};
template <class V>
GELU_HD Tail<V> tail(V x) {
  const V t = at_most(fabs(x), kSaturationExact);  // NaN stays
  return Tail<V>{t, negated_gaussian(t), scaled_upper_tail(t)};
}

// f = max(x, 0) - t Q(t): x Q(t) for x < 0, x (1 - Q(t)) for x >= 0, rounded once. The sign of
// zero is kept, and NaN comes through t.
template <class V>
GELU_HD V exact_forward(V x, const Tail<V>& q) {
  return fma(q.minus_e, q.t * q.r, at_least(x, 0.0));
}

// For x < 0, f' = Q(t) - t phi(t) = E (R - t/sqrt(2pi)); for x > 0, f' = 1 - that.
template <class V>
GELU_HD V exact_derivative(V x, const Tail<V>& q) {
  const V lower_part = q.minus_e * fma(q.t, V(kInvSqrt2Pi), -q.r);
  return select(x < V(0.0), lower_part, V(1.0) - lower_part);
}

template <class V>
GELU_HD V exact_second_derivative(V, const Tail<V>& q) {
  return q.minus_e * V(kInvSqrt2Pi) * (q.t * q.t - V(2.0));
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
#if defined(__CUDA_ARCH__) || defined(GELU_TAIL_F64_BY_HORNER)
  // The terms from d^3 up (below 2^-6 of F) by Horner's rule on the GPU, whose other warps hide
  // its dependency chain: Estrin's scheme (below) keeps every coefficient live at once, and the
  // GPU kernels then spill (float64 backward: 8 bytes per element to local memory).
  V p = c[15];
  for (int i = 14; i >= 3; --i) p = fma(p, d, c[i]);
#else
  // The terms from d^3 up by Estrin's scheme on the CPU: 15 operations in place of Horner's 12,
  // but a dependency chain of 6 in place of 12, which this long computation (one vector of it
  // fills much of an out-of-order window) was waiting on: float64 5-10% faster.
  const V d2 = d * d, d4 = d2 * d2, d8 = d4 * d4;
  V q[6];
  for (int i = 0; i < 6; ++i) q[i] = fma(c[4 + 2 * i], d, c[3 + 2 * i]);
  const V r0 = fma(q[1], d2, q[0]), r1 = fma(q[3], d2, q[2]), r2 = fma(q[5], d2, q[4]);
  const V s0 = fma(r1, d4, r0), s1 = fma(c[15], d4, r2);
  const V p = fma(s1, d8, s0);
#endif
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

// Q(t) / 2^k = m R, and E S / 2^k with S = R - t/sqrt(2 pi) (f' = E S for x < 0, 1 - E S for
// x > 0): the pairs both float64 paths scale and assemble.
template <class V>
GELU_HD DD<V> upper_tail_unscaled(const TailF64<V>& q) {
  return dd_mul(q.gauss.m, q.r);
}
template <class V>
GELU_HD DD<V> slope_term_unscaled(const TailF64<V>& q) {
  const DD<V> slope = dd_mul(dd<V>(kInvSqrt2PiHi, kInvSqrt2PiLo), q.t);
  return dd_mul(q.gauss.m, dd_add(q.r, dd_neg(slope)));
}

template <class V>
GELU_HD V exact_forward_f64(V x, const TailF64<V>& q) {
  const DD<V> upper = upper_tail_unscaled(q);
  const V negative = -scale_pow2(dd_mul_rounded(upper, q.t), q.gauss.k);
  const V positive = dd_mul_rounded(dd_one_minus(scale_pow2(upper, q.gauss.k)), x);
  // f has the sign of x, which a zero's product may lose.
  return saturate_f64(x, kSaturationExactF64,
                      with_sign_of(select(x < V(0.0), negative, positive), x), V(-0.0), x);
}

// f' = E (R - t/sqrt(2 pi)) for x < 0, 1 - that for x > 0 (E = exp(-t^2/2)).
template <class V>
GELU_HD V exact_derivative_f64(V x, const TailF64<V>& q) {
  const DD<V> lower = slope_term_unscaled(q);
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
    constexpr float kLog2eHi = 1.44269502f, kLog2eLo = 1.925963033e-08f;
    const float u = a * kLog2eHi;
    const float u_lo = fma(a, kLog2eHi, -u) + a * kLog2eLo;
    float p;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(p) : "f"(u));
    return fma(p, u_lo * static_cast<float>(kLn2), p);
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

// Cubic interpolation, in place of narrow_value_and_derivative, for the CPU's 16-bit bias passes
// (their argument x + b is a float, not a 16-bit value, so no table of every input's result
// serves them). The floats x with 2^-32 <= |x| < 8 fall into cells of the same sign, exponent
// and top kCellBits bits of the significand; a cell's row holds c0 .. c3, the cubic in
// d = x - (the cell's midpoint) through f (or f') at 4 Chebyshev nodes of the cell, from the
// float64 path (cpu/loops.h). Relative to f (or to f''s terms), interpolation leaves out below
// 2^-24 (tanh near |x| = 8; below 2^-27 for |x| < 6), the float operations about 2^-23 of
// |c0| + |c1 d|. The bound, 2^-20 of |value| + |c1 d| (of 1.25 |value| for f, below), is checked
// for every float of every cell by tools/check_narrow_bounds.cpp (largest error/bound 0.16). Same
// results as the narrow functions (both are correctly rounded), in less time on AVX2.
constexpr int kCellBits = 9;
constexpr uint32_t kCellFirstExponent = 127 - 32, kCellLastExponent = 129;  // exponent fields
constexpr int kCellsPerSign = int(kCellLastExponent - kCellFirstExponent + 1) << kCellBits;
constexpr int kCellLowBits = 23 - kCellBits;  // the significand bits below a cell's own

// The bits of the midpoint of the cell holding the float with these bits.
GELU_HD uint32_t cell_midpoint_bits(uint32_t bits) {
  return (bits & ~((1u << kCellLowBits) - 1)) | (1u << (kCellLowBits - 1));
}

// x's cell as its row (negative cells after the positive ones) and x minus the cell's midpoint;
// false where x lies in no cell. One float; the SIMD lanes (cpu/simd_*.h) do the same per lane.
GELU_HD bool cell_of(float x, uint32_t& row, float& d) {
  const uint32_t bits = bit_cast<uint32_t>(x);
  // Below the first cell, offset wraps around to a large unsigned number.
  const uint32_t offset =
      ((bits & 0x7FFFFFFFu) >> kCellLowBits) - (kCellFirstExponent << kCellBits);
  row = offset + (bits >> 31) * uint32_t(kCellsPerSign);
  d = x - bit_cast<float>(cell_midpoint_bits(bits));
  return offset < uint32_t(kCellsPerSign);
}

// The bits of the first float (the smallest in magnitude) of a row's cell: cell_of's inverse.
GELU_HD uint32_t cell_first_bits(uint32_t row) {
  const uint32_t negative = row >= uint32_t(kCellsPerSign);
  const uint32_t offset = row - negative * uint32_t(kCellsPerSign);
  return (((kCellFirstExponent << kCellBits) + offset) << kCellLowBits) | (negative << 31);
}

// The cubic of f (kD1 false) or f' at d, with its bound. f has no zero in a cell, and there
// |c1 d| < |value| / 4: |d| <= 2^-10 |x|, and |x f'(x) / f(x)| < 128 for |x| < 8 (at most 124,
// tanh's near x = -8), so 1.25 |value| covers |value| + |c1 d| in two operations fewer; and
// |f| > 2^-70 in every cell (its least, 3e-21, is tanh's at x = -8), so f's bound needs no
// absolute term. f' has a zero (exact form: at x = -0.75), near which |c1 d| is the larger term;
// its bound is d1_relative of |value| + |c1 d|.
constexpr float kCubicRelativeBound = 1.25f * kNarrowRelativeError;  // f's, relative to |value|
template <bool kD1, class F>
GELU_HD Bounded<F> narrow_cubic(const F (&c)[4], F d, float d1_relative = kNarrowRelativeError) {
  const F value = fma(fma(fma(c[3], d, c[2]), d, c[1]), d, c[0]);
  if constexpr (kD1) {
    return Bounded<F>{value, fma(fabs(value) + fabs(c[1] * d), F(d1_relative),
                                 F(kNarrowAbsoluteError))};
  } else {
    return Bounded<F>{value, fabs(value) * F(kCubicRelativeBound)};
  }
}
// The interval that narrow_cubic's bound puts around f's value, from two products: the ends
// value (1 - 1.25 2^-20) and value (1 + 1.25 2^-20), nearer to 0 and farther from it.
template <class F>
GELU_HD void narrow_cubic_ends(F value, F& nearer_zero, F& farther) {
  nearer_zero = value * F(1.0f - kCubicRelativeBound);
  farther = value * F(1.0f + kCubicRelativeBound);
}

// The bias backward's g f' from the cubic of f', with one bound: |g| times f''s bound with
// kNarrowProductError added to its relative term, plus 2^-126. That covers |g| times f''s bound
// and the product's rounding (2^-24 |g value|, or 2^-150 in float's subnormal range), as
// narrow_product's bound does, in two operations fewer.
template <class F>
GELU_HD Bounded<F> narrow_cubic_product(F g, const F (&c)[4], F d) {
  const Bounded<F> d1 = narrow_cubic<true>(c, d, kNarrowRelativeError + kNarrowProductError);
  return Bounded<F>{g * d1.value, fma(fabs(g), d1.error, F(kNarrowAbsoluteError))};
}

// An upper limit on f(x) for the rounding test of the bias forward: f(x) < x for x > 0 in every
// variant (Phi(x), p < 1), and no 16-bit rounding boundary lies strictly between x and the float
// just below it (which x (1 - 2^-24) is, for x > 2^-126), so the test may take f to lie at most
// there. Where x + b is a 16-bit midpoint and f is within the bound of x (2% of
// bfloat16 sums, at large x + b), this tells on which side of the midpoint f lies, which the
// bound alone cannot. For x < 0 the limit, |x| (1 - 2^-24), lies above f(x) <= 0 and so never
// caps anything (cheaper than a select); NaN stays NaN, which at_most_each ignores.
template <class F>
GELU_HD F narrow_upper_limit(F x) {
  return fabs(x) * F(1.0f - 0x1p-24f);
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
  inexact = select(sum_is_exact(x, b, z), F(0.0f), F(__builtin_huge_valf()));
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
    } else {
      F inexact;
      narrow_value_and_derivative<A>(bias_sum(in, inexact), f, d1);
      from_sum(in, P == Pass::kBiasForward ? f : d1, inexact, out);
    }
  }

  // The bias passes: their GELU argument x + b, with inexact = inf where the float sum is
  // inexact; then their output from f (forward) or f' (backward) there.
  template <class F>
  GELU_HD static F bias_sum(const F* in, F& inexact) {
    return P == Pass::kBiasForward ? narrow_sum(in[0], in[1], inexact)
                                   : narrow_sum(in[1], in[2], inexact);
  }
  template <class F>
  GELU_HD static void from_sum(const F* in, const Bounded<F>& f_or_d1, F inexact,
                               Bounded<F>* out) {
    out[0] = P == Pass::kBiasForward ? f_or_d1 : narrow_product(in[0], f_or_d1);
    out[0].error = out[0].error + inexact;
  }
};

// Which of f, f' and f'' a computation needs (kWant below).
enum Want : int { kF = 1, kD1 = 2, kD2 = 4 };

// ---------------------------------------------------------------------------------------------
// float64 data: double pairs ("single" path, as against the double-double path's pairs of pairs).
//
// Exact form: the double-double path's own pieces (tail_f64), assembled for a core domain
// 0 < |x| < 37 where Q(t) 2^k is normal, so that scaling pairs by 2^k is exact and needs neither
// the double-double path's case split for subnormal results nor its limits beyond |x| = 40, nor
// its care for the sign of -0: Phi = Q or 1 - Q and f' = E S or 1 - E S as pairs. The forward
// rounds x Phi once from its pair; the backward passes round f' and then multiply, as the
// double-double path does. Inputs outside the domain, zeros and NaN go to the double-double path.
//
// Gated forms:
// f = x p with p = sigmoid(s(x)), q = 1 - p: the gate p and the slope f' = p + x s' p q, in double
// lanes. s = x w(x) and s' are carried as pairs to far below an ulp; e = exp(-|s|) (exp_dd), then
// 1/(1 + e) by a correctly rounded division and one correction, p and q from e/(1 + e) and
// 1/(1 + e). Each pair has a relative error near 2^-57, and f' one near 2^-56 of its larger term.
// Core domains keep e and its low part normal: |x| < 20 (tanh), |x| < 380 (sigmoid), |s| <= 647.
// Inputs outside them, NaN, and results that other operands make zero, tiny or not finite get an
// infinite error, which sends them to the double-double path.
constexpr double kSingleCoreTanhF64 = 20.0, kSingleCoreSigmoidF64 = 380.0;
// t^2/2 < 684.5 there: k >= -988, and Q 2^k > 1e-300.
constexpr double kSingleCoreExactF64 = 37.0;

// What the single path computes at x, as double pairs: the gate p, f = x p if kWant & kF, and the
// slope f'(x) if kWant & kD1.
template <class F>
struct SingleParts {
  DD<F> value, slope, gate;
};

// a b for pairs whose lo parts may reach 2^-6 of their hi parts, so that lo * lo counts too.
template <class F>
GELU_HD DD<F> single_product(DD<F> a, DD<F> b) {
  const F hi = a.hi * b.hi;
  return DD<F>{hi, fma(a.hi, b.hi, -hi) + fma(a.hi, b.lo, a.lo * (b.hi + b.lo))};
}

// a b, a a double, b a pair: rounded once.
template <class F>
GELU_HD F single_times(F a, DD<F> b) {
  return fma(a, b.hi, a * b.lo);
}

// (a + a_lo) b as a pair, a and a_lo doubles, b a pair.
template <class F>
GELU_HD DD<F> single_pair_times(F a, F a_lo, DD<F> b) {
  const F hi = a * b.hi;
  return DD<F>{hi, fma(a, b.hi, -hi) + fma(a_lo, b.hi, a * b.lo)};
}

template <Approximate A, int kWant, class F>
GELU_HD SingleParts<F> single_gate(F x) {
  DD<F> w, ds;  // s = x w, and s'
  if (A == Approximate::kTanh) {
    const F x2 = x * x, x2_lo = fma(x, x, -x2);
    w = tanh_polynomial_pair(kTanhS1Hi, kTanhS1Lo, kTanhS3Hi, kTanhS3Lo, x2, x2_lo);
    ds = tanh_polynomial_pair(kTanhS1Hi, kTanhS1Lo, kTanhS3x3Hi, kTanhS3x3Lo, x2, x2_lo);
  } else {
    w = DD<F>{F(kSigmoidHi), F(kSigmoidLo)};
    ds = w;
  }
  const F s_hi = x * w.hi;
  const F s_lo = fma(x, w.hi, -s_hi) + x * w.lo;
  const auto nonnegative = s_hi >= F(0.0);
  const ScaledDD<F> scaled = exp_dd(DD<F>{-fabs(s_hi), select(nonnegative, -s_lo, s_lo)});
  const F scale = scaled.k + F(kRoundToInteger);  // k >= -935 in the core domains: 2^k is normal
  const DD<F> e{times_pow2(scaled.m.hi, scale), times_pow2(scaled.m.lo, scale)};
  const F d = F(1.0) + e.hi, d_lo = ((F(1.0) - d) + e.hi) + e.lo;  // 1 + e = d + d_lo
  const F q0 = F(1.0) / d;
  const DD<F> inv{q0, q0 * (fma(-d, q0, F(1.0)) - d_lo * q0)};     // 1 / (1 + e)
  const DD<F> small = single_product(e, inv);                       // e / (1 + e)
  SingleParts<F> r{};
  r.gate = DD<F>{select(nonnegative, inv.hi, small.hi), select(nonnegative, inv.lo, small.lo)};
  if (kWant & kF) r.value = single_pair_times(x, F(0.0), r.gate);
  if (kWant & kD1) {
    DD<F> xds = two_prod(x, ds.hi);
    xds.lo = fma(x, ds.lo, xds.lo);
    const DD<F> term = single_product(xds, single_product(small, inv));  // x s' p q
    const DD<F> sum = two_sum(r.gate.hi, term.hi);
    r.slope = DD<F>{sum.hi, sum.lo + (r.gate.lo + term.lo)};
  }
  return r;
}

// Phi(x) from v = Q(t) / 2^k: v 2^k, a pair, exact where it is normal (x < 0 in the core domain),
// and 1 - v 2^k on the x > 0 side (v 2^k <= 1/2), where 2^k is capped at 2^-200: beyond it
// 1 - v 2^k is 1 to far below an ulp.
template <class F, class M>
GELU_HD DD<F> exact_single_factor(M negative, DD<F> v, F k) {
  const F shifted = select(negative, k, at_least(k, -200.0)) + F(kRoundToInteger);
  const DD<F> scaled{times_pow2(v.hi, shifted), times_pow2(v.lo, shifted)};
  return select(negative, scaled, dd_one_minus(scaled));
}

// The gate Phi(x), f = x Phi if kWant & kF, and f' = Phi + x phi if kWant & kD1.
template <int kWant, class F>
GELU_HD SingleParts<F> exact_single(F x) {
  const TailF64<F> q = tail_f64(x);
  const auto negative = x < F(0.0);
  SingleParts<F> r{};
  r.gate = exact_single_factor(negative, upper_tail_unscaled(q), q.gauss.k);
  if (kWant & kF) r.value = single_pair_times(x, F(0.0), r.gate);
  if (kWant & kD1) r.slope = exact_single_factor(negative, slope_term_unscaled(q), q.gauss.k);
  return r;
}

// The exact form's backward passes round f' to double and multiply it by the gradient (and up),
// as the double-double path does: the products are then IEEE's, zeros, infinities and NaN of the
// other operands included, and need no check (single_result, below).
template <class F>
GELU_HD F exact_single_slope(F x) {
  const DD<F> slope = exact_single<kD1>(x).slope;
  return slope.hi + slope.lo;
}

template <Approximate A, int kWant, class F>
GELU_HD SingleParts<F> single_parts(F x) {
  if constexpr (A == Approximate::kNone) return exact_single<kWant>(x);
  else return single_gate<A, kWant>(x);
}

// Error 0 where the single path holds: x in the core domain (false for NaN). The exact form's
// excludes zeros, whose Phi(0) pair may have a negative low part, so that x Phi at x = -0 would
// come out +0.
template <Approximate A, class F>
GELU_HD F single_domain_error(F x) {
  const F inf = F(__builtin_huge_val()), t = fabs(x);
  if constexpr (A == Approximate::kNone)
    return select(t < F(kSingleCoreExactF64), select(t > F(0.0), F(0.0), inf), inf);
  constexpr double kCore = A == Approximate::kTanh ? kSingleCoreTanhF64 : kSingleCoreSigmoidF64;
  return select(t < F(kCore), F(0.0), inf);
}

// A result formed from more than x alone (a gradient, a bias, up): error 0 where its magnitude
// lies in (2^-900, inf). Zeros (whose sign a sum of products may lose), results near the
// subnormals (where the low parts' roundings are no longer relative) and inf or NaN (from
// infinite operands or overflow) go to the double-double path.
template <class F>
GELU_HD Bounded<F> single_result(F value, F domain_error) {
  const F magnitude = fabs(value), inf = F(__builtin_huge_val());
  const F error = select(magnitude > F(0x1p-900), select(magnitude < inf, F(0.0), inf), inf);
  return Bounded<F>{value, domain_error + error};
}

// The passes the single path serves: every pass but the double backward, for float64 data.
template <Pass P, Approximate A, bool kFloat64>
constexpr bool has_single_path() {
  return P != Pass::kDoubleBackward && kFloat64;
}

template <Pass P, Approximate A>
struct SinglePassMath {
  template <class F>
  GELU_HD static void apply(const F* in, Bounded<F>* out) {
    if constexpr (P == Pass::kForward) {
      const SingleParts<F> g = single_parts<A, kF>(in[0]);
      out[0] = Bounded<F>{single_times(in[0], g.gate), single_domain_error<A>(in[0])};
    } else if constexpr (P == Pass::kBackward || P == Pass::kBiasBackward) {
      F z = in[1];
      if constexpr (P == Pass::kBiasBackward) z = z + in[2];  // rounded, as in the forward
      if constexpr (A == Approximate::kNone)
        out[0] = Bounded<F>{in[0] * exact_single_slope(z), single_domain_error<A>(z)};
      else
        out[0] = single_result(single_times(in[0], single_parts<A, kD1>(z).slope),
                               single_domain_error<A>(z));
    } else if constexpr (P == Pass::kBiasForward) {
      // z rounded, as the double-double path rounds it; then f(z) as the forward computes it.
      const F z = in[0] + in[1];
      out[0] = Bounded<F>{single_times(z, single_parts<A, 0>(z).gate), single_domain_error<A>(z)};
    } else if constexpr (P == Pass::kGegluForward) {
      const DD<F> f = single_parts<A, kF>(in[0]).value;
      out[0] = single_result(single_times(in[1], f), single_domain_error<A>(in[0]));
    } else if constexpr (P == Pass::kGegluBackward && A == Approximate::kNone) {
      // As the double-double path rounds them: f and f', then the products.
      const SingleParts<F> g = exact_single<kD1>(in[1]);
      const F in_domain = single_domain_error<A>(in[1]);
      out[0] = Bounded<F>{in[0] * in[2] * (g.slope.hi + g.slope.lo), in_domain};
      out[1] = Bounded<F>{in[0] * single_times(in[1], g.gate), in_domain};
    } else if constexpr (P == Pass::kGegluBackward) {
      const SingleParts<F> g = single_parts<A, kF | kD1>(in[1]);
      const F in_domain = single_domain_error<A>(in[1]);
      const DD<F> grad_up = two_prod(in[0], in[2]);
      const DD<F> dgate = single_pair_times(grad_up.hi, grad_up.lo, g.slope);
      out[0] = single_result(dgate.hi + dgate.lo, in_domain);
      out[1] = single_result(single_times(in[0], g.value), in_domain);
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

// f(x) < x for x > 0 in every variant. Where the computed f rounds to x itself (from about
// x = 8.2 for the exact form, 7.1 for tanh, 22 for sigmoid), the double just below x instead:
// rounding to odd then tells the 16-bit conversion that f lies below x, so that at a 16-bit
// midpoint x (a bias sum; or a product f(x) up) f rounds down, where x would round to even.
// float64 data keep f: their results are these doubles, not rounded again.
template <bool kFloat64, class V>
GELU_HD V below_positive_argument(V f, V x) {
  // f at most x (1 - 2^-53), the double below x, where x > 0; elsewhere at most 0, which f is
  // (f(x) <= 0 for x <= 0, of x's sign at zero); NaN stays. Three operations in place of five.
  if constexpr (kFloat64) return f;
  else return at_most_each(f, at_least(x * V(1.0 - 0x1p-53), 0.0));
}

// Likewise f'(x) > 1 for x > 1 in every variant (x phi(x) > Q(x); x s' p > 1): where the computed
// f' rounds to 1, the double just above, so that a product grad * up f' at a 16-bit midpoint
// rounds away from zero.
template <bool kFloat64, class V>
GELU_HD V above_one_beyond_one(V d1, V x) {
  if constexpr (kFloat64) return d1;
  else return select(d1 > V(1.0), d1, select(x > V(1.0), V(1.0 + 0x1p-52), d1));
}

template <Approximate A, bool kFloat64>
struct PassMath<Pass::kBiasForward, A, kFloat64> {
  static constexpr int kInputs = 2, kOutputs = 1;  // in: x, b
  template <class V>
  GELU_HD static void apply(const V* in, V* out) {
    const V z = in[0] + in[1];
    out[0] = below_positive_argument<kFloat64>(evaluate<A, kFloat64, kF>(z).f, z);
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
    const V f = evaluate<A, kFloat64, kF>(in[0]).f;
    out[0] = below_positive_argument<kFloat64>(f, in[0]) * in[1];
  }
};

template <Approximate A, bool kFloat64>
struct PassMath<Pass::kGegluBackward, A, kFloat64> {
  static constexpr int kInputs = 3, kOutputs = 2;  // in: grad, gate, up; out: dgate, dup
  template <class V>
  GELU_HD static void apply(const V* in, V* out) {
    const Derivatives<V> d = evaluate<A, kFloat64, kF | kD1>(in[1]);
    out[0] = in[0] * in[2] * above_one_beyond_one<kFloat64>(d.d1, in[1]);
    out[1] = in[0] * below_positive_argument<kFloat64>(d.f, in[1]);
  }
};

}  // namespace GELU_ISA
}  // namespace math
}  // namespace gelu_ext
