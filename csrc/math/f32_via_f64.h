// float32 (and 16-bit) inputs computed in double: f, f', f'' of every form to a relative error
// below 2^-32 (the polynomials and the rational are accurate to 2^-33), rounded once to the
// output type. Inputs of float32, float16 and bfloat16 are exact in double, and so are the bias
// passes' sums and the products of two of them. Written over a lane type V of doubles: double on
// the GPU, and on the CPU also SIMD vectors, so the CPU and the GPU give identical bits.
//
// This is also the fallback of the 16-bit narrow path, for the elements whose rounding test
// fails.
//
// The mixed form (kMixed; route.h's f32_via_mixed, float32 on A100) keeps the double
// operations where a result needs them and moves the polynomials' small high-order terms to
// float, where FP64 sets the kernels' pace and the FP32 pipe has room: e^r's r^3 P3(r) (the
// float path's fit, f32_via_f32.h) and the exact form's tail beyond its first terms (a fit of
// its own, kMixedMillsRest). Over every float32 input f lies within 0.521 ulp, f' within 0.508
// and f'' within 0.508 (docs/accuracy.md). Written for double lanes: the GPU, and the emulation
// and checks on the CPU.
#pragma once

#include "common.h"
#include "f32_via_f32.h"  // the float polynomials of the mixed form
#include "passes.h"

namespace gelu_ext {
namespace math {
inline namespace GELU_ISA {

// exp(a) for a <= 0 with relative error below 2^-34; a below kExpArgumentFloor (where exp
// underflows far below every float result) is taken as that. a = k ln2 + r, |r| <= ln2/2,
// exp(a) = 2^k e^r, k >= -1010. ln2 rounded to double leaves r off by at most
// 1010 * 2^-54 ln2 < 2^-44: no need for its low part. (P by Estrin's scheme, with a shorter
// dependency chain, measured slower on AVX2.)
template <bool kMixed = false, class V>
GELU_HD V exp_nonpositive(V a, V shifted) {
  const V k = shifted - V(kRoundToInteger);
  const V r = fma(k, V(-kLn2), a);
  const V r2 = r * r;
  V p;  // e^r = 1 + r + r^2 p
  if constexpr (kMixed) {
    // p = 1/2 + r P3(r), P3 in float at r rounded to float (kF32ExpPoly, 2^-33.2): r P3(r)
    // below 0.06, its float error near 2^-30.5 of e^r.
    p = fma(r, V(horner(static_cast<float>(r), GELU_TABLE(kF32ExpPoly))), V(0.5));
  } else {
    p = horner(r, GELU_TABLE(kExpPoly));
  }
  return times_pow2_normal(fma(r2, p, V(1.0) + r), shifted, k);  // e^r in [0.7, 1.5]: normal
}
template <bool kMixed = false, class V>
GELU_HD V exp_nonpositive(V a) {
  a = at_least(a, kExpArgumentFloor);
  return exp_nonpositive<kMixed>(a, fma(a, V(kLog2e), V(kRoundToInteger)));
}

// -kExpPoly for w = -2r in place of r: -P(-w/2)/4 = -sum of c[i] (-1)^i 2^-(i+2) w^i. Each step
// of Horner's rule in w is the step in r times a power of two, negated, so that the result has the
// same bits, negated.
constexpr double negated_exp_poly_in_w(int i) {
  return kExpPoly_host[i] * (i % 2 ? 1.0 : -1.0) / static_cast<double>(int64_t(1) << (i + 2));
}
GELU_COEFFICIENTS(kNegatedExpPolyInW, negated_exp_poly_in_w(0), negated_exp_poly_in_w(1),
                  negated_exp_poly_in_w(2), negated_exp_poly_in_w(3), negated_exp_poly_in_w(4),
                  negated_exp_poly_in_w(5))

// Two of negated_gaussian's constants, read from constant memory on the GPU, where as immediates
// they would cost moves; with the third there too, one rarely used kernel spills.
GELU_COEFFICIENTS(kGaussianReduction, kRoundToInteger, 2.0 * kLn2)

// -exp(-t^2/2) for t <= kExactSaturation: the same bits as -exp_nonpositive(-t^2/2), two
// instructions shorter. w = t^2 + 2 k ln2 = -2r (r as in exp_nonpositive, exactly: the scaling
// commutes with rounding), so that -t^2/2 is never formed, and e^r is computed negated: every
// step is the plain one's with its signs flipped, which round-to-nearest mirrors exactly.
template <bool kMixed = false, class V>
GELU_HD V negated_gaussian(V t) {
  const auto& c = GELU_TABLE(kGaussianReduction);
  const V square = t * t;
  const V shifted = fma(square, V(-0.5 * kLog2e), V(c[0]));
  const V k = shifted - V(c[0]);
  const V w = fma(k, V(c[1]), square);
  V p;
  if constexpr (kMixed) {
    // As in exp_nonpositive: p = -1/8 - w h, h = -P3(-w/2)/8 in float (kF32ExpPolyHalf).
    p = fma(-w, V(horner(static_cast<float>(w), GELU_TABLE(kF32ExpPolyHalf))), V(-0.125));
  } else {
    p = horner(w, GELU_TABLE(kNegatedExpPolyInW));
  }
  return times_pow2_normal(fma(w * w, p, fma(w, V(0.5), V(-1.0))), shifted, k);
}

// The mixed form's tail: K(z) = 1/2 + k1 z + z^2 Rest(u), u = z - 13/8, with k1 and Rest(0) in
// double and S(u) = (Rest(u) - Rest(0)) / u in float (kMixedMillsRest, 2^-33.0).
constexpr double kMixedMillsK1 = -0.14894228040143268;  // 1/4 - 1/sqrt(2 pi)
constexpr float mixed_mills_s(int i) { return static_cast<float>(kMixedMillsRest_host[i + 1]); }
GELU_COEFFICIENTS_FLOAT(kMixedMillsS, mixed_mills_s(0), mixed_mills_s(1), mixed_mills_s(2),
                        mixed_mills_s(3), mixed_mills_s(4), mixed_mills_s(5), mixed_mills_s(6),
                        mixed_mills_s(7), mixed_mills_s(8), mixed_mills_s(9), mixed_mills_s(10),
                        mixed_mills_s(11))
static_assert(sizeof(kMixedMillsRest_host) / sizeof(double) == 13, "kMixedMillsS takes 12");

// R(t) = exp(t^2/2) Q(t) for t >= 0, Q(t) = erfc(t/sqrt2)/2 the upper tail (relative error 2^-33
// up to t = 15, 2^-28 at 18.5; beyond 15 it is only ever multiplied by exp(-t^2/2) < 1e-48, so
// that f and f' are below 1e-48 and its error shows only in fused products whose other factors
// exceed about 1e10 (0.555 ulp at most in the sampled fused passes, docs/accuracy.md); the
// rational stays positive and bounded), as numerator / denominator, the denominator in [1, 2^23]
// (t <= 37).
// The CPU divides; the division's latency overlaps the exp's. The device form multiplies by the
// float reciprocal of the denominator, off by a relative delta below 2^-23 (two float roundings),
// after one Newton step in double, which leaves delta^2 + 2^-53 < 2^-45.9: 3 FP64 operations in
// place of a division's 8, where the exact form's float32 kernels were FP64-bound (H200 and B200
// in bench/gpu_model.py; A100 takes the mixed form). IEEE operations alone, so the CUDA
// emulation has the GPU's bits; they differ from the CPU's only where a result lies within
// about 2^-45 of a rounding boundary.
// (On the CPU the conversions cost more than the division saves, bench/kernel_alone.cpp; in the
// logistic forms' 1 / (1 + e) the float division's extra instructions cost B200, which is
// issue-bound there, more than the FP64 operations saved.)
template <class V>
struct ScaledTail {
  V r, t_r;  // R(t) and t R(t)
};
template <bool kMixed = false, class V>
GELU_HD ScaledTail<V> scaled_upper_tail(V t) {
  if constexpr (kMixed) {
    // R = K(z) m with m = 2/(t + 2) = 1/d (d = t/2 + 1, exact; the device form's refined float
    // reciprocal, within 2^-45.9), z = t m and K = 1/2 + z (k1 + z Rest(u)), u = z - 13/8
    // (t <= 25, as the float path's), S in float at u rounded to float: z^2 Rest stays below 7%
    // of K. t R = z K, one multiplication fewer than t (K m).
    const V m = refined_reciprocal(fma(t, V(0.5), V(1.0)));
    const V z = t * m;
    const V u = z - V(kF32MillsCenter);
    const V rest = fma(u, V(horner(static_cast<float>(u), GELU_TABLE(kMixedMillsS))),
                       V(kMixedMillsRest_host[0]));
    const V k = fma(z, fma(z, rest, V(kMixedMillsK1)), V(0.5));
    return ScaledTail<V>{k * m, z * k};
  }
  const V numerator = horner(t, GELU_TABLE(kTailNumerator));
  const V denominator = horner(t, GELU_TABLE(kTailDenominator));
#if defined(GELU_DEVICE_FORMS)
  const V r = numerator * refined_reciprocal(denominator);
#else
  const V r = numerator / denominator;
#endif
  return ScaledTail<V>{r, t * r};
}

// ---------------------------------------------------------------------------------------------
// exact: f = x Phi(x), f' = Phi(x) + x phi(x), f'' = phi(x) (2 - x^2). With t = |x| and the upper
// tail Q(t) = exp(-t^2/2) R(t): Phi(x) = Q(t) for x < 0 and 1 - Q(t) for x > 0, never
// 1 + erf(x/sqrt2), which is 0 in float for x < -5.5 although Phi(x) is a normal float down to
// x = -13. t is capped at kExactSaturation, beyond which every term with the Gaussian factor is
// below 1e-297: each result then rounds to its limit in every output type, with no case split
// (the mixed form, for float32 alone, at kF32ExactLimit, as the float path).

// The Gaussian factor E = exp(-t^2/2), kept negated (-E costs nothing to form and saves the
// forward a negation; the derivatives flip a sign inside an FMA instead, with the same bits), and
// R(t), so that Q(t) = E R.
template <class V>
struct UpperTail {
  V t, minus_gaussian;
  ScaledTail<V> scaled;
};
template <bool kMixed = false, class V>
GELU_HD UpperTail<V> upper_tail(V x) {
  const double limit = kMixed ? double(kF32ExactLimit) : kExactSaturation;
  const V t = at_most(magnitude(x), limit);  // NaN stays
  return UpperTail<V>{t, negated_gaussian<kMixed>(t), scaled_upper_tail<kMixed>(t)};
}

// f = max(x, 0) - t Q(t): x Q(t) for x < 0, x (1 - Q(t)) for x >= 0, rounded once. The sign of
// zero is kept, and NaN comes through t.
template <class V>
GELU_HD V exact_forward(V x, const UpperTail<V>& q) {
  return fma(q.minus_gaussian, q.scaled.t_r, at_least(x, 0.0));
}

// For x < 0, f' = Q(t) - t phi(t) = E (R - t/sqrt(2pi)); for x > 0, f' = 1 - that.
template <class V>
GELU_HD V exact_derivative(V x, const UpperTail<V>& q) {
  const V lower_part = q.minus_gaussian * fma(q.t, V(kInvSqrt2Pi), -q.scaled.r);
  return select(x < V(0.0), lower_part, V(1.0) - lower_part);
}

template <class V>
GELU_HD V exact_second_derivative(const UpperTail<V>& q) {
  return q.minus_gaussian * V(kInvSqrt2Pi) * (q.t * q.t - V(2.0));
}

// ---------------------------------------------------------------------------------------------
// The logistic forms (tanh, sigmoid): f = x p, p = sigmoid(s(x)), q = sigmoid(-s) = 1 - p;
//   f'  = p + x s' p q
//   f'' = p q (2 s' + x ((q - p) s'^2 + s''))
// sigmoid(s) and sigmoid(-s) both come from exp(-|s|), which never overflows.

template <class V>
struct Logistic {
  V x;           // x, clamped to +-logistic_saturation(A)
  V s, ds, d2s;  // s(x), s'(x), s''(x)
  V p, q, pq;    // sigmoid(s), sigmoid(-s), their product
};

// Where the logistic forms saturate: there exp(-|s|) reaches exp_nonpositive's floor, e^-700.
constexpr double logistic_saturation(Approximate A) {
  return A == Approximate::kTanh ? kTanhSaturation : kSigmoidSaturation;
}

template <Approximate A, bool kMixed = false, class V>
GELU_HD Logistic<V> logistic(V x) {
  Logistic<V> g;
  g.x = clamp_magnitude(x, logistic_saturation(A));
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
  const V e = exp_nonpositive<kMixed>(-fabs(g.s));  // sigmoid(-|s|) = e / (1 + e)
  V inv;
  if constexpr (kMixed) {
    inv = refined_reciprocal(V(1.0) + e);
  } else {
    inv = V(1.0) / (V(1.0) + e);
  }
  const V small = e * inv;
  const auto nonnegative = g.s >= V(0.0);
  g.p = select(nonnegative, inv, small);
  g.q = select(nonnegative, small, inv);
  g.pq = small * inv;
  return g;
}

// Beyond |x| = logistic_saturation(A), s is that of x clamped there, so that sigmoid(-|s|) is
// e^-700 at most: every result, even times two floats, is then within far less than the smallest
// subnormal float of its limit, and of the limit's sign, with no case split. The forward
// multiplies by x itself above (x = +inf gives inf).
template <Approximate A, class V>
GELU_HD V logistic_forward(V x, const Logistic<V>& g) {
  return at_least(x, -logistic_saturation(A)) * g.p;
}

template <class V>
GELU_HD V logistic_derivative(const Logistic<V>& g) {
  return fma(g.x * g.ds, g.pq, g.p);
}

template <class V>
GELU_HD V logistic_second_derivative(const Logistic<V>& g) {
  const V inner = fma((g.q - g.p) * g.ds, g.ds, g.d2s);
  return g.pq * fma(g.x, inner, V(2.0) * g.ds);
}

// f, f' and f'' at x, computing what they share (the tail or the logistic) once: kNeeds says
// which are needed, and the rest is never computed.
template <Approximate A, int kNeeds, bool kMixed = false, class V>
GELU_HD Derivatives<V> f32_via_f64(V x) {
  Derivatives<V> r{};
  if constexpr (A == Approximate::kNone) {
    const UpperTail<V> q = upper_tail<kMixed>(x);
    if (kNeeds & kNeedF) r.f = exact_forward(x, q);
    if (kNeeds & kNeedD1) r.d1 = exact_derivative(x, q);
    if (kNeeds & kNeedD2) r.d2 = exact_second_derivative(q);
  } else {
    const Logistic<V> g = logistic<A, kMixed>(x);
    if (kNeeds & kNeedF) r.f = logistic_forward<A>(x, g);
    if (kNeeds & kNeedD1) r.d1 = logistic_derivative(g);
    if (kNeeds & kNeedD2) r.d2 = logistic_second_derivative(g);
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Ties at 16-bit (and float) midpoints. Where a bias sum or a product of operands makes the exact
// neighbour of a result a midpoint of the output type, the side of the midpoint on which the
// result lies decides its rounding, and a term that computes as exactly its limit hides that side.
//
// f(x) < x for x > 0 in every form. Where the computed f rounds to x itself (from about x = 8.2
// for the exact form, 7.1 for tanh, 22 for sigmoid), the double just below x instead: rounding
// to odd then tells the 16-bit conversion that f lies below x, so that at a 16-bit midpoint x (a
// bias sum; or a product f(x) up) f rounds down, where x would round to even.
template <class V>
GELU_HD V settle_ties_of_f(V f, V x) {
  // f at most x (1 - 2^-53), the double below x, where x > 0; elsewhere at most 0, which f is
  // (f(x) <= 0 for x <= 0, of x's sign at zero); NaN stays. Three operations in place of five.
  return at_most_each(f, at_least(x * V(1.0 - 0x1p-53), 0.0));
}
// Likewise f'(x) > 1 for x > 1 in every form (x phi(x) > Q(x); x s' p > 1): where the computed
// f' rounds to 1, the double just above, so that a product grad * up f' at a 16-bit midpoint
// rounds away from zero.
template <class V>
GELU_HD V settle_ties_of_d1(V d1, V x) {
  return select(d1 > V(1.0), d1, select(x > V(1.0), V(1.0 + 0x1p-52), d1));
}

// f(x) > x/2 for every x != 0 (x (Phi(x) - 1/2) and x (p - 1/2) are positive). Below about
// |x| = 2^-52 the computed f is x/2 itself, the rest lost; where x/2 (or up x/2) is a 16-bit
// midpoint (subnormal bfloat16 inputs, and products with up), rounding would then go to even.
// The double just above x/2 instead: rounding to odd then tells the 16-bit conversion on which
// side f lies. (float32 outputs need not: within 0.502 ulp either way.)
template <class V>
GELU_HD V settle_ties_of_tiny_f(V f, V x) {
  const V half = V(0.5) * x;
  const V above = half * select(x > V(0.0), V(1.0 + 0x1p-52), V(1.0 - 0x1p-53));
  return select((f == half) & (x != V(0.0)), above, f);
}

// A pass in this path: the terms at the argument, then the products, each output rounded once
// to its type by the kernel. f needs its ties settled where its argument is a sum or it is
// multiplied by an operand; f' where two operands multiply it (one operand times f' = 1 is that
// operand, exact); and, for 16-bit outputs, f near x = 0.
template <Pass P, Approximate A, bool kSixteenBitOutput = false, bool kMixed = false>
struct F32ViaF64Pass {
  template <class V>
  GELU_HD static void apply(const V* in, V* out) {
    const V x = argument_of<P>(in);
    const Derivatives<V> d = f32_via_f64<A, needs(P), kMixed>(x);
    out[0] = output<0>(in, x, d);
    if constexpr (pass_rule(P).outputs > 1) out[1] = output<1>(in, x, d);
  }

  template <int K, class V>
  GELU_HD static V output(const V* in, V x, const Derivatives<V>& d) {
    constexpr PassRule rule = pass_rule(P);
    constexpr OutputRule o = rule.out[K];
    V term = term_of(o.term, d.f, d.d1, d.d2);
    if constexpr (o.term == Term::kF && kSixteenBitOutput) term = settle_ties_of_tiny_f(term, x);
    if constexpr (o.term == Term::kF && (rule.argument_is_sum || o.num_factors > 0))
      term = settle_ties_of_f(term, x);
    if constexpr (o.term == Term::kD1 && o.num_factors > 1) term = settle_ties_of_d1(term, x);
    return plain_output<P, K>(in, term);
  }
};

}  // namespace GELU_ISA
}  // namespace math
}  // namespace gelu_ext
