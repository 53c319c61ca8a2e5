// float64 inputs: double pairs over a core domain, with an error of 0 (the value is
// the result) or inf (the element is redone by the f64_double_double path). Every pass but the
// double backward.
//
// Exact form: the double-double path's own pieces (tail_f64), assembled for a core domain
// 0 < |x| < 37 where Q(t) 2^k is normal, so that scaling pairs by 2^k is exact and needs neither
// the double-double path's case split for subnormal results nor its limits beyond |x| = 40, nor
// its care for the sign of -0: Phi = Q or 1 - Q and f' = E S or 1 - E S as pairs. f (and f times
// an operand) is rounded once from its pair; the backward passes round f' and then multiply, as
// the double-double path does, so that those products are IEEE's, zeros, infinities and NaN of
// the other operands included, and need no check.
//
// Logistic forms: f = x p with p = sigmoid(s(x)), q = 1 - p: the factor p and the slope
// f' = p + x s' p q, in double lanes. s = x w(x) and s' are carried as pairs to far below an
// ulp; e = exp(-|s|) (exp_dd), then 1/(1 + e) from a reciprocal within 2^-45.9 (seed_reciprocal)
// and one correction, p and q from e/(1 + e) and 1/(1 + e). Each pair has a relative error near
// 2^-57, and f' one near 2^-56 of its larger term. Core domains (common.h) keep e and its low
// part normal.
//
// Inputs outside the core domains, NaN, and results that other operands make zero, tiny or not
// finite get an infinite error, which sends them to the double-double path. Sampled against
// mpmath: f within 0.56 ulp, f' within 0.55 ulp of its larger term.
#pragma once

#include "common.h"
#include "f64_double_double.h"
#include "passes.h"

namespace gelu_ext {
namespace math {
inline namespace GELU_ISA {

// What the pair path computes at x: the factor (Phi(x) or p, f = x factor), f as a pair if
// needed, and the slope f'(x) if needed.
template <class F>
struct PairParts {
  DD<F> value, slope, factor;
};

// a b, a a double, b a pair: rounded once.
template <class F>
GELU_HD F times_pair_rounded(F a, DD<F> b) {
  return fma(a, b.hi, a * b.lo);
}

// (a + a_lo) b as a pair, a and a_lo doubles, b a pair.
template <class F>
GELU_HD DD<F> pair_times_pair(F a, F a_lo, DD<F> b) {
  const F hi = a * b.hi;
  return DD<F>{hi, fma(a, b.hi, -hi) + fma(a_lo, b.hi, a * b.lo)};
}

template <Approximate A, int kNeeds, class F>
GELU_HD PairParts<F> logistic_pair(F x) {
  DD<F> w, ds;  // s = x w, and s'
  if (A == Approximate::kTanh) {
    const F x2 = x * x, x2_lo = fma(x, x, -x2);
    w = tanh_polynomial_pair(kTanhS1Hi, kTanhS1Lo, kTanhS3Hi, kTanhS3Lo, x2, x2_lo);
    ds = tanh_polynomial_pair(kTanhS1Hi, kTanhS1Lo, kTanhS3x3Hi, kTanhS3x3Lo, x2, x2_lo);
  } else {
    w = DD<F>{F(kSigmoidHi), F(kSigmoidLo)};
    ds = w;
  }
  // -|s| = -|x| w (w > 0), the argument of exp, from -|x| (a bit operation) rather than by
  // negating s's parts (FP64 operations on the GPU).
  const F minus_t = negative_magnitude(x);
  const F a_hi = minus_t * w.hi;
  const F a_lo = fma(minus_t, w.hi, -a_hi) + minus_t * w.lo;
  const auto nonnegative = x >= F(0.0);  // s >= 0
  const ScaledDD<F> scaled = exp_dd(DD<F>{a_hi, a_lo});
  // k >= -935 in the core domains: e = m 2^k and its low part are normal
  const F scale = scaled.shifted, k = scale - F(kRoundToInteger);
  const DD<F> e{times_pow2_normal(scaled.m.hi, scale, k), times_pow2(scaled.m.lo, scale)};
  const F d = F(1.0) + e.hi, d_lo = ((F(1.0) - d) + e.hi) + e.lo;  // 1 + e = d + d_lo
  const F q0 = seed_reciprocal(d);  // error delta <= 2^-45.9; inv's, delta^2 + 2^-98
  const DD<F> inv{q0, q0 * (fma(-d, q0, F(1.0)) - d_lo * q0)};     // 1 / (1 + e)
  const DD<F> small = dd_mul_unnormalized(e, inv);                  // e / (1 + e)
  PairParts<F> r{};
  r.factor = DD<F>{select(nonnegative, inv.hi, small.hi), select(nonnegative, inv.lo, small.lo)};
  if (kNeeds & kNeedF) r.value = pair_times_pair(x, F(0.0), r.factor);
  if (kNeeds & kNeedD1) {
    DD<F> xds;  // x s'
    if (A == Approximate::kTanh) {
      xds = two_prod(x, ds.hi);
      xds.lo = fma(x, ds.lo, xds.lo);
    } else {  // s' = w: x s' = s, from -|s|
      xds = DD<F>{negated_where_nonnegative(a_hi, x), negated_where_nonnegative(a_lo, x)};
    }
    const DD<F> term = dd_mul_unnormalized(xds, dd_mul_unnormalized(small, inv));  // x s' p q
    const DD<F> sum = two_sum(r.factor.hi, term.hi);
    r.slope = DD<F>{sum.hi, sum.lo + (r.factor.lo + term.lo)};
  }
  return r;
}

// Phi(x) from v = Q(t) / 2^k (shifted_k = k + kRoundToInteger): v 2^k, a pair, exact where it is
// normal (x < 0 in the core domain), and 1 - v 2^k on the x > 0 side (v 2^k <= 1/2), where 2^k
// is capped at 2^-200: beyond it 1 - v 2^k is 1 to far below an ulp.
template <class F, class M>
GELU_HD DD<F> exact_pair_factor(M negative, DD<F> v, F shifted_k) {
  const F shifted = select(negative, shifted_k, at_least(shifted_k, kRoundToInteger - 200.0));
  const DD<F> scaled{times_pow2(v.hi, shifted), times_pow2(v.lo, shifted)};
  return select(negative, scaled, dd_one_minus(scaled));
}

// The factor Phi(x), f = x Phi, and f' = Phi + x phi, as kNeeds asks.
template <int kNeeds, class F>
GELU_HD PairParts<F> exact_pair(F x) {
  const TailF64<F> q = tail_f64(x);
  const auto negative = x < F(0.0);
  PairParts<F> r{};
  r.factor = exact_pair_factor(negative, upper_tail_unscaled(q), q.gauss.shifted);
  if (kNeeds & kNeedF) r.value = pair_times_pair(x, F(0.0), r.factor);
  if (kNeeds & kNeedD1)
    r.slope = exact_pair_factor(negative, slope_term_unscaled(q), q.gauss.shifted);
  return r;
}

template <Approximate A, int kNeeds, class F>
GELU_HD PairParts<F> pair_parts(F x) {
  if constexpr (A == Approximate::kNone) return exact_pair<kNeeds>(x);
  else return logistic_pair<A, kNeeds>(x);
}

// Error 0 where the pair path holds: x in the core domain (false for NaN). The exact form's
// excludes zeros, whose Phi(0) pair may have a negative low part, so that x Phi at x = -0 would
// come out +0.
template <Approximate A, class F>
GELU_HD F pair_domain_error(F x) {
  const F inf = F(__builtin_huge_val()), t = fabs(x);
  if constexpr (A == Approximate::kNone)
    return select(t < F(kPairCoreExactF64), select(t > F(0.0), F(0.0), inf), inf);
  constexpr double kCore = A == Approximate::kTanh ? kPairCoreTanhF64 : kPairCoreSigmoidF64;
  return select(t < F(kCore), F(0.0), inf);
}

// A result formed from more than x alone (a gradient, a bias, up): error 0 where its magnitude
// lies in (2^-900, inf). Zeros (whose sign a sum of products may lose), results near the
// subnormals (where the low parts' roundings are no longer relative) and inf or NaN (from
// infinite operands or overflow) go to the double-double path.
template <class F>
GELU_HD auto pair_result_in_range(F value) {
  const F magnitude = fabs(value);
  return (magnitude > F(0x1p-900)) & (magnitude < F(__builtin_huge_val()));
}
#if defined(GELU_DEVICE_FORMS)
// The device form compares the magnitude's bits, which order as the values do: integer
// instructions, where the compares cost two FP64 ones.
GELU_HD bool pair_result_in_range(double value) {
  const uint64_t magnitude = bit_cast<uint64_t>(value) << 1;  // the sign shifted out
  return magnitude > (bit_cast<uint64_t>(0x1p-900) << 1) &&
         magnitude < (bit_cast<uint64_t>(__builtin_huge_val()) << 1);
}
#endif
template <class F>
GELU_HD Bounded<F> checked_pair_result(F value, F domain_error) {
  return Bounded<F>{value, select(pair_result_in_range(value), domain_error,
                                  F(__builtin_huge_val()))};
}

// A pass in this path. The bias sum is rounded to double, as the double-double path rounds it,
// and f computed there as the forward computes it, so that float64 bias_gelu(x, b) is
// gelu(x + b) bit for bit.
template <Pass P, Approximate A>
struct F64PairPass {
  static_assert(!(needs(P) & kNeedD2), "the pair path computes no f''");

  template <class F>
  GELU_HD static void apply(const F* in, Bounded<F>* out) {
    const F x = argument_of<P>(in);
    const F domain_error = pair_domain_error<A>(x);
    const PairParts<F> parts = pair_parts<A, needs(P)>(x);
    out[0] = output<0>(in, x, parts, domain_error);
    if constexpr (pass_rule(P).outputs > 1) out[1] = output<1>(in, x, parts, domain_error);
  }

  template <int K, class F>
  GELU_HD static Bounded<F> output(const F* in, F x, const PairParts<F>& parts, F domain_error) {
    constexpr OutputRule o = pass_rule(P).out[K];
    if constexpr (o.term == Term::kF) {
      if constexpr (o.num_factors == 0)
        return Bounded<F>{times_pair_rounded(x, parts.factor), domain_error};
      else  // one factor, times f's pair, rounded once
        return checked_pair_result(times_pair_rounded(in[o.factors[0]], parts.value),
                                   domain_error);
    } else if constexpr (A == Approximate::kNone) {  // f' rounded, then the products
      return Bounded<F>{plain_output<P, K>(in, parts.slope.hi + parts.slope.lo), domain_error};
    } else if constexpr (o.num_factors == 1) {
      return checked_pair_result(times_pair_rounded(in[o.factors[0]], parts.slope), domain_error);
    } else {  // the two factors' exact product times the slope, rounded once
      const DD<F> factors = two_prod(in[o.factors[0]], in[o.factors[1]]);
      const DD<F> product = pair_times_pair(factors.hi, factors.lo, parts.slope);
      return checked_pair_result(product.hi + product.lo, domain_error);
    }
  }
};

}  // namespace GELU_ISA
}  // namespace math
}  // namespace gelu_ext
