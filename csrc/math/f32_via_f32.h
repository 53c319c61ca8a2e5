// float32 data computed in float ("float path"): for GPUs whose FP64 unit is slow (compute
// capability 8.6, 8.9 and 12.0 run FP64 at 1/64 of FP32).
//
// Only IEEE float operations (fma, +, -, *; no division, no approximate instruction, no double)
// and integer operations on the bits of floats, so that the CPU reproduces the GPU's bits. Where a
// float's rounding (2^-24) would cost too much, quantities are unevaluated pairs hi + lo (DD<F>),
// and each output is rounded once, from a pair times the pass's other operands.
//
// The pieces (tools/fit_polynomials.py fits every polynomial, coefficients.inc gives its error):
//   exp(-c v), c = 1/2 or 1, v >= 0 (+ a low part): k = round(-c v / ln2), r = -c v - k ln2
//            exactly (ln2 rounded to float keeps k ln2 on v's grid); 1 + r and 1 + r + r^2/2 as
//            exact pairs, r^3 P(r) (P of degree 4, 2^-33.2) rounded: 2^k (hi + lo), relative error
//            near 2^-29.5.
//   1/d:     a seed from d's bits (0x7EF311C2 minus them: 2^-4.3), then steps of order 3 and 2
//            (2^-25.8), or one of order 4 (2^-17.2) and the residual 1 - d y as a low part.
//   exact:   t = |x| capped at 25, m = 2/(t + 2) (the reciprocal, with its residual: a pair),
//            z = t m in [0, 50/27], K(z) = R(t)(t + 2)/2 = 1/2 + z L(z), L = k1 + z Rest(z - 13/8)
//            (Rest of degree 11, relative error of K 2^-29.8), L and K as pairs; R = K m and
//            Q(t) = exp(-t^2/2) R (the upper tail); f = x Q or x (1 - Q), f' = E (K m - t phi/E)
//            or 1 - that, f'' = E (2 - t^2)/sqrt(2 pi), E = exp(-t^2/2).
//   tanh, sigmoid: s = x w(x) as a pair (tanh: w = c1 + c3 x^2), e = exp(-|s|), 1/(1 + e) as a
//            pair, p = 1/(1 + e) or e/(1 + e); f = x p, f' = p (1 + x s' q), f'' = p q C.
// Every result is a value (a + a_lo)(hi + lo) 2^k (F32Value); round_value multiplies it by the
// pass's other operands and rounds once, and redoes the rare results below 2^-100, above 2^64 or
// not finite exactly (round_product_exact: subnormal results rounded once, signs of zero).
//
// Accuracy over every float32 input (tools/check_float32_path.cpp): f within 0.6 ulp, f' and f''
// within 1.5 ulps of the larger term (docs/accuracy.md). The CUDA kernels take this path for
// float32 where FP64 is slow (route.h).
//
// Limits and signs as the double path's (f32_via_f64.h): f(+inf) = +inf, f(-inf) = -0, NaN stays;
// f'(+inf) = 1, f'(-inf) = -0, f''(+-inf) = -0; f(+-0) = +-0.
//
// F is float here and on the GPU. SIMD lanes of floats would provide, besides + - * fma fabs,
// comparisons and select, their own pow2_of_shifted, reciprocal_seed and f32_fast_result_ok (the
// operations on the bits), and run round_product_exact lane by lane where a lane fails the test.
#pragma once

#include "common.h"
#include "passes.h"

namespace gelu_ext {
namespace math {
inline namespace GELU_ISA {

constexpr float kF32Round = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
constexpr float kF32Log2e = 1.4426950216293335f;
constexpr float kF32Ln2 = 0.6931471824645996f;       // ln2 rounded to float
constexpr float kF32Ln2Lo = -1.904654323148236e-09f;  // ln2 - kF32Ln2
constexpr float kF32InvSqrt2Pi = 0.3989422917366028f;  // 1/sqrt(2 pi) rounded to float
constexpr float kF32InvSqrt2PiLo = -1.1335170080339907e-08f;

// 2^(k + bias) for the integer k in the low bits of shifted = k + kF32Round, k + bias in
// [-126, 127]: one integer multiply-add on the bits.
template <int kBias, class F>
GELU_HD F pow2_of_shifted(F shifted) {
  return bit_cast<F>((bit_cast<uint32_t>(shifted) - (0x4B400000u - uint32_t(127 + kBias))) << 23);
}

// 1/d for d > 0 normal within 2^-4.3: the integer 0x7EF311C2 minus d's bits (its exponent
// negated, its significand's reciprocal to first order).
template <class F>
GELU_HD F reciprocal_seed(F d) {
  return bit_cast<F>(0x7EF311C2u - bit_cast<uint32_t>(d));
}

// 1/d for d > 0 normal, to 2^-17.2: the seed, then one step of order 4.
template <class F>
GELU_HD F reciprocal_approx(F d) {
  const F y = reciprocal_seed(d);
  const F e = fma(-d, y, F(1.0f));
  return fma(y, fma(fma(e, e, e), e, e), y);  // y (1 + e + e^2 + e^3)
}

// 1/d to 2^-25.8 (the float nearest 1/d or a neighbour): the seed, a step of order 3 (2^-12.9),
// then Newton's step.
template <class F>
GELU_HD F reciprocal_f32(F d) {
  F y = reciprocal_seed(d);
  F e = fma(-d, y, F(1.0f));
  y = fma(y, fma(e, e, e), y);  // y (1 + e + e^2)
  return fma(y, fma(-d, y, F(1.0f)), y);
}

// 1/(d + d_lo), |d_lo| <= 2^-20 d, as y (1 + residual), residual = 1 - (d + d_lo) y (exact to
// 2^-24 of itself): 2^-34 of 1/d left out. The pair is not normalized (its low part reaches 2^-17
// of the high part).
template <class F>
GELU_HD DD<F> reciprocal_pair(F d, F d_lo) {
  const F y = reciprocal_approx(d);
  return DD<F>{y, y * fma(-d_lo, y, fma(-d, y, F(1.0f)))};
}


// exp(-c (v + v_lo)) = 2^k (hi + lo) for c v in [0, 320], |v_lo| <= 2^-14: shifted holds k
// (see pow2_of_shifted), hi + lo lies in [0.7, 1.42].
template <class F>
struct ScaledPair {
  F hi, lo, shifted;
};

// r P(r) / w in powers of w, r = -c w (the same bits as in r: c is a power of 2).
constexpr float f32_exp_poly_in_w(int i, float c) {
  float v = kF32ExpPoly_host[i] * -c * -c * -c;
  for (int j = 0; j < i; ++j) v *= -c;
  return v;
}
GELU_COEFFICIENTS_FLOAT(kF32ExpPolyHalf, f32_exp_poly_in_w(0, 0.5f), f32_exp_poly_in_w(1, 0.5f),
                        f32_exp_poly_in_w(2, 0.5f), f32_exp_poly_in_w(3, 0.5f), f32_exp_poly_in_w(4, 0.5f))
GELU_COEFFICIENTS_FLOAT(kF32ExpPolyOne, f32_exp_poly_in_w(0, 1.0f), f32_exp_poly_in_w(1, 1.0f),
                        f32_exp_poly_in_w(2, 1.0f), f32_exp_poly_in_w(3, 1.0f), f32_exp_poly_in_w(4, 1.0f))

// k = round(-c v / ln2) and r = -c v - k ln2 = -c w exactly (w is exact: ln2 rounded to float
// keeps k ln2 / c on v's grid); 1 + r = s + s_lo and s + r^2/2 = hi + e2 exactly (w^2 as a pair),
// so that only r^3 P(r) (below 0.007) and the low parts are rounded. The low part v_lo enters as
// e^r (1 - c w_lo).
template <bool kHalf, class F>
GELU_HD ScaledPair<F> exp_negative_pair(F v, F v_lo) {
  constexpr float c = kHalf ? 0.5f : 1.0f, half_c2 = 0.5f * c * c;
  const F shifted = fma(v, F(-c * kF32Log2e), F(kF32Round));
  const F k = shifted - F(kF32Round);
  const F w = fma(k, F(kF32Ln2 / c), v);  // exact
  const F w_lo = fma(k, F(kF32Ln2Lo / c), v_lo);
  const F s = fma(w, F(-c), F(1.0f));
  const F s_lo = fma(w, F(-c), F(1.0f) - s);
  const F w2 = w * w;
  const F hi = fma(w2, F(half_c2), s);
  const F e2 = fma(w2, F(half_c2), s - hi);
  const F cubic = w * (kHalf ? horner(w, GELU_TABLE(kF32ExpPolyHalf))
                             : horner(w, GELU_TABLE(kF32ExpPolyOne)));  // r^3 P(r) / w^2
  F lo = s_lo + e2;
  // The rounding of w^2 weighs c^2/2 |w|^2 2^-24 < 2^-28 (c = 1/2), 2^-26 (c = 1): kept for c = 1.
  if (!kHalf) lo = fma(fma(w, w, -w2), F(half_c2), lo);
  lo = fma(w2, cubic, lo);
  return ScaledPair<F>{hi, fma(w_lo * F(-c), hi + lo, lo), shifted};
}

// ---------------------------------------------------------------------------------------------
// Results as (a + a_lo)(hi + lo) 2^k: two pairs, k <= 0 the integer in `shifted` (down to -460:
// 2^k itself may lie below the floats, so it is applied in two steps). Each pass rounds its
// outputs once from this form, multiplied by its other operands.

template <class F>
struct F32Value {
  F a, a_lo, hi, lo, shifted;
};

// ---------------------------------------------------------------------------------------------
// exact: f = x Phi(x), f' = Phi(x) + x phi(x), f'' = phi(x) (2 - x^2).

// Beyond |x| = kF32ExactLimit (25) every result of the exact form, even multiplied by two floats
// (2^256), is below half the smallest subnormal (t Q(t), t phi(t) and t^2 phi(t) < 2^-440).

// K(z) = 1/2 + k1 z + z^2 Rest(z - 13/8), z in [0, 50/27]: k1 = K'(0) = 1/4 - 1/sqrt(2 pi), then
// Rest's coefficients (kF32MillsRest); K'(z) ~ k1 + z (a + b z) (kF32MillsSlope), the factor of
// z's low part.
constexpr float kF32MillsK1 = -0.1489422768354416f, kF32MillsCenter = 1.625f;

// The exact form's pieces at t = |x| (+ t_lo, the argument's low part, where kPair).
template <class F>
struct ExactF32 {
  F t, t_lo;
  F h, h_lo;        // t^2
  ScaledPair<F> e;  // exp(-t^2/2)
  DD<F> m;          // 2/(t + 2) = 1 - z/2
  DD<F> z;          // 2t/(t + 2)
  DD<F> k;          // K(z)
};

template <bool kPair, class F>
GELU_HD ExactF32<F> exact_pieces_f32(F x, F x_lo) {
  ExactF32<F> q;
  q.t = at_most(fabs(x), kF32ExactLimit);  // NaN stays
  q.t_lo = kPair ? select(fabs(x) < F(kF32ExactLimit), select(x < F(0.0f), -x_lo, x_lo), F(0.0f))
                 : F(0.0f);
  q.h = q.t * q.t;
  q.h_lo = fma(q.t, q.t, -q.h);
  if (kPair) q.h_lo = fma(q.t + q.t, q.t_lo, q.h_lo);
  q.e = exp_negative_pair<true>(q.h, q.h_lo);
  // m = 1/d, d = t/2 + 1 = d + d_lo exactly (m = 1 - z/2), as y (1 + residual); z = t m.
  const F half = F(0.5f) * q.t;
  const F big = at_least(half, 1.0), small = at_most(half, 1.0);
  const F d = big + small, d_lo = small - (d - big);
  const F y = reciprocal_f32(d);
  F residual = fma(-d_lo, y, fma(-d, y, F(1.0f)));
  if (kPair) residual = fma(F(-0.5f) * q.t_lo, y, residual);
  q.m = DD<F>{y, y * residual};
  const F z = q.t * y;
  F z_lo = fma(q.t, y, -z) + q.t * q.m.lo;
  if (kPair) z_lo = fma(q.t_lo, y, z_lo);
  q.z = DD<F>{z, z_lo};
  // K(z) = 1/2 + z L, L = k1 + z Rest: L (with z Rest's rounding error) and K as pairs (z Rest
  // below 0.025 = 2^-2.6 |k1|, and z L in [-0.29, 0]), Rest in z - 13/8, where its rounding
  // errors weigh least (z^2/K grows with z); z^2 Rest stays below 7% of K.
  const F rest = horner(z - F(kF32MillsCenter), GELU_TABLE(kF32MillsRest));
  const F z_rest = z * rest;
  const F l = F(kF32MillsK1) + z_rest;
  const F l_lo = ((F(kF32MillsK1) - l) + z_rest) + fma(z, rest, -z_rest);
  const F zl = z * l;
  const F k_hi = F(0.5f) + zl;
  const auto& slope_ab = GELU_TABLE(kF32MillsSlope);
  const F slope = fma(fma(F(slope_ab[1]), z, F(slope_ab[0])), z, F(kF32MillsK1));
  q.k = DD<F>{k_hi, (zl - (k_hi - F(0.5f))) + fma(z, l_lo, fma(z, l, -zl)) + slope * z_lo};
  return q;
}

// Q(t) / 2^k = E R, R(t) = K(z) m, as a pair (its mantissa up to 0.71; E's low part reaches 2^-7
// of its high part, and counts times R's).
template <class F>
GELU_HD DD<F> exact_upper_tail_f32(const ExactF32<F>& q) {
  const F r = q.k.hi * q.m.hi;
  const F r_lo = fma(q.k.hi, q.m.hi, -r) + fma(q.k.hi, q.m.lo, q.k.lo * q.m.hi);
  const F tail = q.e.hi * r;
  return DD<F>{tail, fma(q.e.hi, r, -tail) + fma(q.e.hi, r_lo, q.e.lo * (r + r_lo))};
}

// f = (x + x_lo) Phi(x): Phi = Q 2^k for x < 0, 1 - Q 2^k for x >= 0 (an exact two-sum; 2^k
// clamped at 2^-120, below which Q is far below 1's ulp). Beyond +25, x itself (or +inf) times
// Phi(25); below -25, -25 Phi(-25).
template <bool kPair, class F>
GELU_HD F32Value<F> exact_value_f32(F x, F x_lo, const ExactF32<F>& q) {
  const DD<F> tail = exact_upper_tail_f32(q);
  const F scale = pow2_of_shifted<0>(at_least(q.e.shifted, kF32Round - 120.0));
  const F upper = tail.hi * scale, upper_lo = tail.lo * scale;
  const F phi = F(1.0f) - upper;
  const F phi_lo = (((F(1.0f) - phi) - upper) - upper_lo);
  const auto negative = x < F(0.0f);
  return F32Value<F>{at_least(x, -double(kF32ExactLimit)), kPair ? x_lo : F(0.0f),
                     select(negative, tail.hi, phi), select(negative, tail.lo, phi_lo),
                     select(negative, q.e.shifted, F(kF32Round))};
}

// f' = E S for x < 0 and 1 - E S for x > 0, S = R - t/sqrt(2 pi) = K m - t/sqrt(2 pi), rounded
// once from the exact K m, and its low part kept.
template <bool kPair, class F>
GELU_HD F32Value<F> exact_derivative_f32(F x, const ExactF32<F>& q) {
  const F density = F(kF32InvSqrt2Pi) * q.t;
  F density_lo = fma(F(kF32InvSqrt2Pi), q.t, -density) + F(kF32InvSqrt2PiLo) * q.t;
  if (kPair) density_lo = fma(F(kF32InvSqrt2Pi), q.t_lo, density_lo);
  const F slope = fma(q.k.hi, q.m.hi, -density);
  const F slope_lo = fma(q.k.hi, q.m.lo, fma(q.k.lo, q.m.hi, -density_lo));
  const F scale = pow2_of_shifted<0>(at_least(q.e.shifted, kF32Round - 120.0));
  const F upper = fma(q.e.hi, slope, fma(q.e.hi, slope_lo, q.e.lo * slope)) * scale;
  const F lower = F(1.0f) - upper, lower_lo = (F(1.0f) - lower) - upper;  // exact: |upper| <= 1/2
  const auto negative = x < F(0.0f);
  return F32Value<F>{select(negative, slope, lower), select(negative, slope_lo, lower_lo),
                     select(negative, q.e.hi, F(1.0f)), select(negative, q.e.lo, F(0.0f)),
                     select(negative, q.e.shifted, F(kF32Round))};
}

// f'' = E (2 - t^2)/sqrt(2 pi).
template <class F>
GELU_HD F32Value<F> exact_second_derivative_f32(const ExactF32<F>& q) {
  const F u = (F(2.0f) - q.h) - q.h_lo;
  const F a = F(kF32InvSqrt2Pi) * u;
  return F32Value<F>{a, fma(F(kF32InvSqrt2Pi), u, -a) + F(kF32InvSqrt2PiLo) * u, q.e.hi, q.e.lo,
                     q.e.shifted};
}

// ---------------------------------------------------------------------------------------------
// tanh and sigmoid: f = x p, p = sigmoid(s(x)), q = 1 - p:
//   f' = p (1 + x s' q),  f'' = p q (2 s' + x ((q - p) s'^2 + s'')).
// s = x w(x) as a pair (tanh: w = c1 + c3 x^2), e = exp(-|s|) = 2^k m, 1/(1 + e) as a pair;
// p = 1/(1 + e) for s >= 0, e/(1 + e) for s < 0, and p q = e/(1 + e)^2 either way. x is clamped
// at +-kF32GateLimit, beyond which every result is its limit to far below the smallest float
// even multiplied by two floats (tanh: x e^-|s| < 2^-450 from 16 on; sigmoid from 175).


template <Approximate A>
constexpr float gate_limit_f32() {
  return A == Approximate::kTanh ? 16.0f : 175.0f;
}

template <class F, class M>
struct GateF32 {
  F x, x_lo;    // x clamped to +-limit, and the argument's low part (0 beyond the limit)
  M nonnegative;
  DD<F> ds;     // s'(x)
  ScaledPair<F> e;
  DD<F> inv;    // 1/(1 + e)
  DD<F> m_inv;  // the exp's mantissa times 1/(1 + e): e/(1 + e) = 2^k m_inv
};

template <Approximate A, bool kPair, class F>
GELU_HD auto gate_pieces_f32(F x, F x_lo) {
  constexpr float limit = gate_limit_f32<A>();
  const F xc = clamp_magnitude(x, limit);
  if (kPair) x_lo = select(fabs(x) < F(limit), x_lo, F(0.0f));
  DD<F> w, ds;
  if (A == Approximate::kTanh) {
    const F x2 = xc * xc, x2_lo = fma(xc, xc, -x2);
    w = tanh_polynomial_pair(kTanhC1Hi, kTanhC1Lo, kTanhC3Hi, kTanhC3Lo, x2, x2_lo);
    ds = tanh_polynomial_pair(kTanhC1Hi, kTanhC1Lo, kTanh3C3Hi, kTanh3C3Lo, x2, x2_lo);
    if (kPair) ds.lo = fma(F(kTanh6C3Float) * xc, x_lo, ds.lo);  // + s''(x) x_lo
  } else {
    w = DD<F>{F(kSigmoidFloatHi), F(kSigmoidFloatLo)};
    ds = w;
  }
  const F s = xc * w.hi;
  F s_lo = fma(xc, w.hi, -s) + xc * w.lo;
  if (kPair) s_lo = fma(x_lo, ds.hi, s_lo);  // s(x + x_lo) = s(x) + s'(x) x_lo
  const auto nonnegative = s >= F(0.0f);
  GateF32<F, std::decay_t<decltype(nonnegative)>> g{xc, x_lo, nonnegative, ds, {}, {}, {}};
  g.e = exp_negative_pair<false>(fabs(s), select(nonnegative, s_lo, -s_lo));
  const DD<F> m = fast_two_sum(g.e.hi, g.e.lo);  // so that hi alone is e's mantissa to 2^-24
  g.e.hi = m.hi, g.e.lo = m.lo;
  // 1 + e = d + d_lo exactly (2^k clamped at 2^-120: below, e is far below 1's ulp).
  const F scale = pow2_of_shifted<0>(at_least(g.e.shifted, kF32Round - 120.0));
  const F d = fma(g.e.hi, scale, F(1.0f));
  const F d_lo = fma(g.e.lo, scale, fma(g.e.hi, scale, F(1.0f) - d));
  g.inv = reciprocal_pair(d, d_lo);
  const F mi = g.e.hi * g.inv.hi;
  g.m_inv = DD<F>{mi, fma(g.e.hi, g.inv.hi, -mi) + fma(g.e.hi, g.inv.lo, g.e.lo * g.inv.hi)};
  return g;
}

// f = x p, as (x + x_lo) p: beyond +limit, x itself times p(limit) = 1 - 2^-200 (x, or +inf
// through the exact rounding).
template <Approximate A, bool kPair, class F, class M>
GELU_HD F32Value<F> gate_value_f32(F x, F x_lo, const GateF32<F, M>& g) {
  return F32Value<F>{at_least(x, -double(gate_limit_f32<A>())), kPair ? x_lo : F(0.0f),
                     select(g.nonnegative, g.inv.hi, g.m_inv.hi),
                     select(g.nonnegative, g.inv.lo, g.m_inv.lo),
                     select(g.nonnegative, F(kF32Round), g.e.shifted)};
}

// The other gate q = 1 - p: e/(1 + e) for s >= 0 (2^k clamped at 2^-120), 1/(1 + e) for s < 0.
template <class F, class M>
GELU_HD DD<F> gate_complement_f32(const GateF32<F, M>& g) {
  const F scale = pow2_of_shifted<0>(at_least(g.e.shifted, kF32Round - 120.0));
  return DD<F>{select(g.nonnegative, g.m_inv.hi * scale, g.inv.hi),
               select(g.nonnegative, g.m_inv.lo * scale, g.inv.lo)};
}

// (x + x_lo) s' as a pair.
template <bool kPair, class F, class M>
GELU_HD DD<F> gate_x_ds_f32(const GateF32<F, M>& g) {
  const DD<F> xds = two_prod(g.x, g.ds.hi);
  F lo = fma(g.x, g.ds.lo, xds.lo);
  if (kPair) lo = fma(g.x_lo, g.ds.hi, lo);
  return DD<F>{xds.hi, lo};
}

// f' = p B, B = 1 + x s' q: x s' q as a pair, 1 + its high part rounded once.
template <Approximate A, bool kPair, class F, class M>
GELU_HD F32Value<F> gate_derivative_f32(const GateF32<F, M>& g) {
  const DD<F> xds = gate_x_ds_f32<kPair>(g), q = gate_complement_f32(g);
  const F t = xds.hi * q.hi;
  const F t_lo = fma(xds.hi, q.hi, -t) + fma(xds.hi, q.lo, xds.lo * q.hi);
  const F b = F(1.0f) + t;
  return F32Value<F>{b, t_lo, select(g.nonnegative, g.inv.hi, g.m_inv.hi),
                     select(g.nonnegative, g.inv.lo, g.m_inv.lo),
                     select(g.nonnegative, F(kF32Round), g.e.shifted)};
}

// f'' = p q C, C = 2 s' + x ((q - p) s'^2 + s''), p q = 2^k m_inv / (1 + e),
// q - p = -+(1 - e)/(1 + e) (s >= 0, s < 0), the terms of C carried as pairs.
template <Approximate A, class F, class M>
GELU_HD F32Value<F> gate_second_derivative_f32(const GateF32<F, M>& g) {
  const F scale = pow2_of_shifted<0>(at_least(g.e.shifted, kF32Round - 120.0));
  const F e = g.e.hi * scale, e_lo = g.e.lo * scale;
  const F one_minus_e = F(1.0f) - e, one_minus_e_lo = ((F(1.0f) - one_minus_e) - e) + e_lo;
  F qp = one_minus_e * g.inv.hi;
  F qp_lo = fma(one_minus_e, g.inv.hi, -qp) + fma(one_minus_e, g.inv.lo, -one_minus_e_lo * g.inv.hi);
  qp = select(g.nonnegative, -qp, qp), qp_lo = select(g.nonnegative, -qp_lo, qp_lo);
  const F ds2 = g.ds.hi * g.ds.hi;
  const F ds2_lo = fma(g.ds.hi, g.ds.hi, -ds2) + F(2.0f) * g.ds.hi * g.ds.lo;
  F inner = qp * ds2;
  F inner_lo = fma(qp, ds2, -inner) + fma(qp, ds2_lo, qp_lo * ds2);
  if (A == Approximate::kTanh) {  // + s'' = 6 c3 x
    const DD<F> sum = two_sum(inner, F(kTanh6C3Float) * g.x);
    inner = sum.hi, inner_lo = sum.lo + (inner_lo + fma(F(kTanh6C3Float), g.x, -F(kTanh6C3Float) * g.x));
  }
  const F xi = g.x * inner;
  const F xi_lo = fma(g.x, inner, -xi) + g.x * inner_lo;
  const DD<F> c = two_sum(xi, g.ds.hi + g.ds.hi);
  const F pq = g.m_inv.hi * g.inv.hi;
  const F pq_lo = fma(g.m_inv.hi, g.inv.hi, -pq) + fma(g.m_inv.hi, g.inv.lo, g.m_inv.lo * g.inv.hi);
  return F32Value<F>{c.hi, c.lo + (xi_lo + F(2.0f) * g.ds.lo), pq, pq_lo, g.e.shifted};
}

// ---------------------------------------------------------------------------------------------
// f, f', f'' of every form at x + x_lo (x_lo = 0 unless kPair), as kNeeds asks (kNeedF, kNeedD1, kNeedD2).

template <class F>
struct F32Values {
  F32Value<F> f, d1, d2;
};

template <Approximate A, int kNeeds, bool kPair, class F>
GELU_HD F32Values<F> f32_values(F x, F x_lo) {
  F32Values<F> r{};
  if constexpr (A == Approximate::kNone) {
    const ExactF32<F> q = exact_pieces_f32<kPair>(x, x_lo);
    if (kNeeds & kNeedF) r.f = exact_value_f32<kPair>(x, x_lo, q);
    if (kNeeds & kNeedD1) r.d1 = exact_derivative_f32<kPair>(x, q);
    if (kNeeds & kNeedD2) r.d2 = exact_second_derivative_f32(q);
  } else {
    const auto g = gate_pieces_f32<A, kPair>(x, x_lo);
    if (kNeeds & kNeedF) r.f = gate_value_f32<A, kPair>(x, x_lo, g);
    if (kNeeds & kNeedD1) r.d1 = gate_derivative_f32<A, kPair>(g);
    if (kNeeds & kNeedD2) r.d2 = gate_second_derivative_f32<A>(g);
  }
  return r;
}

// ---------------------------------------------------------------------------------------------
// Rounding o v, o = o_hi + o_lo an exact product of the other operands (or 1), v a value.
//
// The fast path multiplies by 2^(k + 64), then by 2^-64: exact unless the result is below 2^-100
// (then subnormal results would be rounded twice, and zeros may lose their sign), not finite, or
// overflows on the way (beyond 2^64). Those results, rare in practice, are redone exactly by
// round_product_exact, as are NaN and infinite operands.

// The unsigned range test of one comparison: 2^-100 <= |r| < +inf (false for NaN).
template <class F>
GELU_HD bool f32_fast_result_ok(F r) {
  return (bit_cast<uint32_t>(r) & 0x7FFFFFFFu) - 0x0D800000u < 0x7F800000u - 0x0D800000u;
}

template <class F>
GELU_HD F round_value_fast(F o_hi, F o_lo, const F32Value<F>& v) {
  const DD<F> p = two_prod(o_hi, v.a);
  const F p_lo = fma(o_hi, v.a_lo, fma(o_lo, v.a, p.lo));
  const F m = fma(p.hi, v.hi, fma(p.hi, v.lo, p_lo * v.hi));
  // Results below 2^-100, here 0 where 2^(k + 64) is below the floats, are redone exactly.
  const F scale = select(v.shifted < F(kF32Round - 190.0f), F(0.0f), pow2_of_shifted<64>(v.shifted));
  return m * scale * F(0x1p-64f);
}

// x = m 2^e, m in [1, 2), for finite nonzero x (subnormals included).
struct F32Split {
  float m;
  int e;
};
GELU_HD F32Split split_f32(float x) {
  const bool tiny = fabsf(x) < 0x1p-126f;
  const float y = tiny ? x * 0x1p64f : x;
  const uint32_t bits = bit_cast<uint32_t>(y);
  const int e = int((bits >> 23) & 0xFF) - 127 - (tiny ? 64 : 0);
  return F32Split{bit_cast<float>((bits & 0x807FFFFFu) | 0x3F800000u), e};
}

// (y + y_lo) 2^e rounded once, y in [1, 16) in magnitude, |y_lo| <= 2^-20 |y|.
GELU_HD float round_scaled_f32(float y, float y_lo, int e) {
  if (e > 130) return y * 0x1p127f * 0x1p127f;   // +-inf
  if (e < -160) return y * 0x1p-126f * 0x1p-60f;  // +-0
  const int e1 = e / 2, e2 = e - e1;
  const float s1 = bit_cast<float>(uint32_t(e1 + 127) << 23), s2 = bit_cast<float>(uint32_t(e2 + 127) << 23);
  const int top = e + int((bit_cast<uint32_t>(y) >> 23) & 0xFF) - 127;  // the result's exponent
  if (top >= -126) return (y + y_lo) * s1 * s2;  // normal (or overflowing): one rounding
  // Subnormal: round y to the multiple of g = 2^(-149 - e) by adding +-2^(-126 - e) (|y| is
  // below it, so the sum's ulp is g), then the rest y - r + y_lo (below g/2 + |y_lo|) likewise.
  const float unit = bit_cast<float>(uint32_t(-126 - e + 127) << 23);
  const float big = copysignf(unit, y), bigger = 1.5f * unit;
  const float r = (y + big) - big;
  const float adjust = (((y - r) + y_lo) + bigger) - bigger;
  return copysignf((r + adjust) * s1 * s2, y);  // a zero keeps y's sign
}

// o1 o2 v, rounded once, for any operands.
GELU_HD float round_product_exact(float o1, float o2, const F32Value<float>& v) {
  // Zero, infinite or NaN factors: their plain product has the right sign, infinity or NaN.
  const float inf = __builtin_huge_valf();
  if (v.a_lo != v.a_lo || v.lo != v.lo) return v.a_lo + v.lo;  // NaN
  if (!(fabsf(o1) < inf && fabsf(o2) < inf && fabsf(v.a) < inf && fabsf(v.hi) < inf) ||
      o1 == 0.0f || o2 == 0.0f || v.a == 0.0f || v.hi == 0.0f) {
    return o1 * o2 * v.a * v.hi;
  }
  const F32Split a = split_f32(o1), b = split_f32(o2), c = split_f32(v.a), h = split_f32(v.hi);
  const DD<float> ab = two_prod(a.m, b.m);
  const int c1 = -c.e / 2, c2 = -c.e - c1;  // a_lo 2^-e(a), in two exact steps
  const float c_lo = v.a_lo * bit_cast<float>(uint32_t(127 + c1) << 23) *
                     bit_cast<float>(uint32_t(127 + c2) << 23);
  const float abc = ab.hi * c.m;  // [1, 8)
  const float abc_lo = fmaf(ab.hi, c.m, -abc) + fmaf(ab.hi, c_lo, ab.lo * c.m);
  const int h1 = -h.e / 2, h2 = -h.e - h1;  // lo 2^-e(hi), in two exact steps
  const float lo = v.lo * bit_cast<float>(uint32_t(127 + h1) << 23) *
                   bit_cast<float>(uint32_t(127 + h2) << 23);
  const float y = abc * h.m;
  const float y_lo = fmaf(abc, h.m, -y) + fmaf(abc, lo, abc_lo * h.m);
  const int k = int(v.shifted - kF32Round);
  return round_scaled_f32(y, y_lo, a.e + b.e + c.e + h.e + k);
}

// v itself (no other operand): (a + a_lo)(hi + lo) rounded once; kALo false: a_lo is 0.
template <bool kALo, class F>
GELU_HD F round_value_fast(const F32Value<F>& v) {
  const F m = fma(v.a, v.hi, kALo ? fma(v.a, v.lo, v.a_lo * v.hi) : v.a * v.lo);
  const F scale = select(v.shifted < F(kF32Round - 190.0f), F(0.0f), pow2_of_shifted<64>(v.shifted));
  return m * scale * F(0x1p-64f);
}

// The result with operands o1, o2 (kOperands of them: 0, 1 or 2; the others are 1); kALo false
// where v's a_lo is 0.
template <int kOperands, bool kALo = true, class F>
GELU_HD F round_value(F o1, F o2, const F32Value<F>& v) {
  F r;
  if constexpr (kOperands == 0) {
    r = round_value_fast<kALo>(v);
  } else if constexpr (kOperands == 1) {
    r = round_value_fast(o1, F(0.0f), v);
  } else {
    const DD<F> o = two_prod(o1, o2);
    r = round_value_fast(o.hi, o.lo, v);
  }
  if (f32_fast_result_ok(r)) return r;
  return round_product_exact(o1, o2, v);
}

// ---------------------------------------------------------------------------------------------
// A pass in this path, float in and float out: the terms at the argument (the bias passes' x + b
// carried exactly as a pair), then each output rounded once from the term times its factors.
template <Pass P, Approximate A>
struct F32ViaF32Pass {
  static constexpr PassRule kRule = pass_rule(P);

  template <class F>
  GELU_HD static void apply(const F* in, F* out) {
    F x = in[kRule.argument], x_lo = F(0.0f);
    if constexpr (kRule.argument_is_sum) {
      const DD<F> z = two_sum(x, in[kRule.argument + 1]);
      x = z.hi;
      x_lo = select(fabs(z.hi) < F(__builtin_huge_valf()), z.lo, F(0.0f));  // inf - inf
    }
    const F32Values<F> v = f32_values<A, needs(P), kRule.argument_is_sum>(x, x_lo);
    out[0] = output<0>(in, v);
    if constexpr (kRule.outputs > 1) out[1] = output<1>(in, v);
  }

  template <int K, class F>
  GELU_HD static F output(const F* in, const F32Values<F>& v) {
    constexpr OutputRule o = kRule.out[K];
    const F32Value<F>& term = o.term == Term::kF ? v.f : o.term == Term::kD1 ? v.d1 : v.d2;
    // f's a_lo is 0 unless the argument carries a low part.
    if constexpr (o.num_factors == 0)
      return round_value<0, kRule.argument_is_sum>(F(1.0f), F(1.0f), term);
    else if constexpr (o.num_factors == 1)
      return round_value<1>(in[o.factors[0]], F(1.0f), term);
    else
      return round_value<2>(in[o.factors[0]], in[o.factors[1]], term);
  }
};

}  // namespace GELU_ISA
}  // namespace math
}  // namespace gelu_ext
