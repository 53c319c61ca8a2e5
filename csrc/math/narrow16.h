// float16 and bfloat16 outputs: float arithmetic with an error bound (the "narrow" path).
//
// A 16-bit result needs far less than the double path's 2^-32 before its final rounding. The
// narrow functions compute in float, over a core domain where every intermediate is a normal
// float, and return the value with a bound on its absolute error. The kernels round
// value - error and value + error to the 16-bit type: where both agree, that is the correctly
// rounded result; where not (about one element in 2^11), and outside the core domain
// (error = inf), they fall back to the f32_via_f64 path. Every result is therefore the correctly
// rounded one, on every platform, whatever reciprocal or exp each uses.
//
// F is float here and on the GPU, or a SIMD vector of floats (cpu/simd_*.h). The CPU reaches
// the same results faster through tables of 16-bit inputs (their results, from the functions
// here; f and f', from the double path: cpu/loops.h) and cubic cells for the bias passes (from
// the functions here, at the end of this file).
#pragma once

#include "common.h"
#include "f32_via_f64.h"
#include "f64_double_double.h"
#include "gpu_approximate.h"
#include "passes.h"

namespace gelu_ext {
namespace math {
inline namespace GELU_ISA {

// Relative error bounds of the narrow functions over their core domain: the analysis gives
// about 2^-21.5 (polynomials below 2^-23.3, each float operation 2^-24); checked exhaustively
// against long double by tools/check_narrow_bounds.cpp. 2^-20 leaves a margin of 2.8.
constexpr float kNarrowRelativeError = 0x1p-20f;
// The CPU's term tables (cpu/loops.h) hold f and f' of the double path rounded to float: within
// 0.502 units in the last place of the exact values at every float32 input (docs/accuracy.md), so
// within 2^-23.99 of themselves; 2^-23 leaves a margin of 2, and kNarrowAbsoluteError covers
// float's subnormal range (its units 2^-149). NaN and infinite values get bounds that fail the
// rounding test.
constexpr float kTableRelativeError = 0x1p-23f;
// Slack for the roundings of the last products a pass forms (grad * f', gelu(gate) * up, ...).
constexpr float kNarrowProductError = 0x1p-22f;
// Absolute slack for results in float's subnormal range, whose roundings are absolute (2^-150):
// the smallest normal float, far below any float16 result, and which sends bfloat16 results
// below it to the double path. (A subnormal constant here would slow every operation on the CPU.)
constexpr float kNarrowAbsoluteError = 0x1p-126f;

// 1/d to a relative error below 2^-22: a division here (SIMD lanes use their own approximations
// of at least this accuracy; the GPU has its own forms, below).
GELU_HD float approximate_reciprocal(float d) { return 1.0f / d; }

// exp(a) for a in [-80, 0], relative error below 2^-22.
template <class F>
GELU_HD F narrow_exp(F a) {
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

// Core domains (common.h): where every intermediate is a normal float and the error bounds
// hold. Beyond them the double path takes over, so the computation below may produce anything
// there.
template <Approximate A>
constexpr float narrow_core() {
  return A == Approximate::kNone ? kNarrowCoreExact : kNarrowCoreLogistic;
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

// The exact form's pieces at t = |x|, shared by its forward and derivatives: E = exp(-t^2/2)
// with t^2 split exactly (t2 + t2_error) so that exp sees no rounding error in its argument,
// Q(t) = E R(t) and t phi(t).
template <class F>
struct NarrowGaussian {
  F t2, t2_error, e, upper, density;
};

template <class F>
GELU_HD NarrowGaussian<F> narrow_gaussian(F t) {
  NarrowGaussian<F> g;
  g.t2 = t * t;
  g.t2_error = fma(t, t, -g.t2);
  g.e = narrow_exp(F(-0.5f) * g.t2);
  g.e = fma(g.e, F(-0.5f) * g.t2_error, g.e);
  const F r = narrow_upper_tail(t);
  g.upper = g.e * r;                                 // Q(t)
  g.density = g.e * t * F(0.3989422917366028f);      // t phi(t)
  return g;
}

// f' of the exact form from its pieces: Q(t) - t phi(t) for x < 0, 1 minus that for x > 0.
template <class F>
GELU_HD Bounded<F> narrow_exact_derivative(F x, const NarrowGaussian<F>& g) {
  const F lower = g.upper - g.density;
  const F value = select(x < F(0.0f), lower, F(1.0f) - lower);
  return Bounded<F>{value, (g.upper + g.density) * F(kNarrowRelativeError) +
                               fabs(value) * F(kNarrowProductError)};
}

// exact: as exact_forward / exact_derivative.
template <class F>
GELU_HD void narrow_exact(F xc, Bounded<F>& f, Bounded<F>& d1) {
  const NarrowGaussian<F> g = narrow_gaussian(fabs(xc));
  f.value = xc * select(xc < F(0.0f), g.upper, F(1.0f) - g.upper);
  f.error = fma(fabs(f.value), F(kNarrowRelativeError), F(kNarrowAbsoluteError));
  d1 = narrow_exact_derivative(xc, g);
}

// The logistic forms' pieces at x, shared by their forward and derivatives: s = x w(x) carried
// as s_hi + s_lo, so that exp(-|s|) sees its argument to far below an ulp (its relative error
// would otherwise be |s| 2^-24); e = exp(-|s|), inv = 1/(1 + e), small = e inv, p = sigma(s)
// (inv for s >= 0, small below), ds = s'(x) and the slope x s' p q of f' = p + slope.
template <class F>
struct NarrowLogistic {
  F s_hi, e, inv, small, p, ds, slope;
};

template <Approximate A, class F>
GELU_HD NarrowLogistic<F> narrow_logistic_pieces(F x) {
  NarrowLogistic<F> g;
  DD<F> w;
  if (A == Approximate::kTanh) {
    const F x2 = x * x, x2_lo = fma(x, x, -x2);
    w = tanh_polynomial_pair(kTanhC1Hi, kTanhC1Lo, kTanhC3Hi, kTanhC3Lo, x2, x2_lo);
    g.ds = fma(F(3.0f * kTanhC3Hi), x2, F(kTanhC1Hi));
  } else {
    w = DD<F>{F(kSigmoidFloatHi), F(kSigmoidFloatLo)};
    g.ds = F(kSigmoidFloatHi);
  }
  g.s_hi = x * w.hi;
  const F s_lo = fma(x, w.hi, -g.s_hi) + x * w.lo;
  const auto nonnegative = g.s_hi >= F(0.0f);
  g.e = narrow_exp(-fabs(g.s_hi));                   // exp(-|s|) = exp(-|s_hi|) (1 -+ s_lo)
  g.e = fma(g.e, select(nonnegative, -s_lo, s_lo), g.e);
  g.inv = approximate_reciprocal(F(1.0f) + g.e);
  g.small = g.e * g.inv;
  g.p = select(nonnegative, g.inv, g.small);
  g.slope = x * g.ds * g.small * g.inv;
  return g;
}

// tanh and sigmoid.
template <Approximate A, class F>
GELU_HD void narrow_logistic(F xc, Bounded<F>& f, Bounded<F>& d1) {
  const NarrowLogistic<F> g = narrow_logistic_pieces<A>(xc);
  f.value = xc * g.p;
  f.error = fma(fabs(f.value), F(kNarrowRelativeError), F(kNarrowAbsoluteError));
  d1.value = g.p + g.slope;
  d1.error = (g.p + fabs(g.slope)) * F(kNarrowRelativeError);
}

template <Approximate A, class F>
GELU_HD void narrow_value_and_derivative(F x, Bounded<F>& f, Bounded<F>& d1) {
  if (A == Approximate::kNone) narrow_exact(x, f, d1);
  else narrow_logistic<A>(x, f, d1);
  narrow_outside_core<A>(x, f, d1);
}

// f'' for the double backward of 16-bit data, with f' from the same exp and reciprocal: f' exactly
// as narrow_exact / narrow_logistic compute it (same operations, same bound), and
//   exact:    f'' = phi(t) (2 - t^2), phi = E/sqrt(2 pi) from the same E;
//   logistic: f'' = p q C, C = 2 s' + x ((q - p) s'^2 + s''), p q = e/(1 + e)^2 and
//             q - p = -+(1 - e)/(1 + e) for s >= 0 and s < 0 (1 - e exact where e >= 1/2).
// The bound of f'' is kNarrowSecondRelativeError of the magnitudes of its terms (phi (2 + t^2), or
// p q (2|s'| + |x| (|q - p| s'^2 + |s''|))): where the terms cancel, f'' is small and its error is
// still theirs. tools/check_narrow_double_backward.cpp checks the bound at every float of the core
// domain and the results at every 16-bit input.
// f'''s relative bound (f''s is kNarrowRelativeError): its computation has more roundings (about
// 2^-20.6 in all, the exp and the reciprocal included), so twice f''s, a margin near 1.5.
constexpr float kNarrowSecondRelativeError = 0x1p-19f;

template <Approximate A, class F>
GELU_HD void narrow_derivatives(F x, Bounded<F>& d1, Bounded<F>& d2) {
  const auto outside = fabs(x) > F(narrow_core<A>());
  if (A == Approximate::kNone) {
    const NarrowGaussian<F> g = narrow_gaussian(fabs(x));
    d1 = narrow_exact_derivative(x, g);
    const F phi = g.e * F(0.3989422917366028f);
    d2.value = phi * ((F(2.0f) - g.t2) - g.t2_error);
    d2.error = phi * (F(2.0f) + g.t2) * F(kNarrowSecondRelativeError);
  } else {
    const NarrowLogistic<F> g = narrow_logistic_pieces<A>(x);
    d1.value = g.p + g.slope;
    d1.error = (g.p + fabs(g.slope)) * F(kNarrowRelativeError);
    const F e = g.e, inv = g.inv, ds = g.ds;
    const F pq = g.small * inv;
    const F q_minus_p = (F(1.0f) - e) * select(g.s_hi >= F(0.0f), -inv, inv);
    const F d2s = A == Approximate::kTanh ? F(kTanh6C3Float) * x : F(0.0f);
    const F ds2 = ds * ds;
    const F c = fma(x, fma(q_minus_p, ds2, d2s), ds + ds);
    d2.value = pq * c;
    d2.error = pq * fma(fabs(x), fma(fabs(q_minus_p), ds2, fabs(d2s)), F(2.0f) * ds) *
               F(kNarrowSecondRelativeError);
  }
  // Outside the core domain, an infinite error (the double path), as narrow_outside_core, and
  // values of the signs of f' and f'' there (x; -1): the result's sign where the other operands'
  // product is zero (the error is then NaN, and both roundings are that zero).
  const F inf = F(__builtin_huge_valf());
  d1.value = select(outside, x, d1.value);
  d1.error = select(outside, inf, d1.error);
  d2.value = select(outside, F(-1.0f), d2.value);
  d2.error = select(outside, inf, d2.error + F(kNarrowAbsoluteError));
}

GELU_HD Bounded<float> rounded_to_float_bounded(float value) {
  return Bounded<float>{value, fmaf(fabsf(value), kTableRelativeError, kNarrowAbsoluteError)};
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

// The narrow path's bias forward takes the same limit: its interval about the computed f, moved
// below the limit where it reaches above (the value at most the limit less the error), still
// holds f. Where x + b is a 16-bit midpoint and f within the bound of it, both ends then round
// down: on normal data of sigma 2, 1.4% of the elements (1.7% in the tanh form) that would
// otherwise go to the double path (bench/narrow_fallback.cpp).
template <class F>
GELU_HD Bounded<F> at_most_upper_limit(Bounded<F> f, F x) {
  return Bounded<F>{at_most_each(f.value, narrow_upper_limit(x) - f.error), f.error};
}

// A pass in this path: each output with its error bound. The bias passes' float sum must be
// exact, and so must the product of two factors (16-bit operands: exact unless it under- or
// overflows), or the output's error is inf.
template <Pass P, Approximate A>
struct NarrowPass {
  static constexpr PassRule kRule = pass_rule(P);

  template <class F>
  GELU_HD static void apply(const F* in, Bounded<F>* out) {
    F inexact_sum = F(0.0f);
    F x;
    if constexpr (kRule.argument_is_sum) {
      x = narrow_sum(in[kRule.argument], in[kRule.argument + 1], inexact_sum);
    } else {
      x = in[kRule.argument];
    }
    Bounded<F> f{}, d1, d2{};
    if constexpr ((needs(P) & kNeedD2) != 0) narrow_derivatives<A>(x, d1, d2);
    else narrow_value_and_derivative<A>(x, f, d1);
    outputs_from_terms(in, f, d1, inexact_sum, out, d2);
    // Not the sigmoid form's: its f comes within the bound of x only from x = 8.2, near the end
    // of its core domain, and the limit cost its kernel 6-8% on AVX-512 (bench/kernel_alone.cpp).
    if constexpr (kRule.argument_is_sum && kRule.out[0].term == Term::kF &&
                  kRule.out[0].num_factors == 0 && A != Approximate::kSigmoid)
      out[0] = at_most_upper_limit(out[0], x);
  }

  // The outputs from f, f' (and f'') at the argument (the CPU's tables give f and f' for 16-bit
  // inputs), inexact_sum inf where a bias sum was inexact.
  template <class F>
  GELU_HD static void outputs_from_terms(const F* in, const Bounded<F>& f, const Bounded<F>& d1,
                                         F inexact_sum, Bounded<F>* out,
                                         const Bounded<F>& d2 = Bounded<F>{}) {
    out[0] = output<0>(in, f, d1, d2, inexact_sum);
    if constexpr (kRule.outputs > 1) out[1] = output<1>(in, f, d1, d2, inexact_sum);
  }

  template <int K, class F>
  GELU_HD static Bounded<F> output(const F* in, const Bounded<F>& f, const Bounded<F>& d1,
                                   const Bounded<F>& d2, F inexact_sum) {
    constexpr OutputRule o = kRule.out[K];
    const Bounded<F>& term = o.term == Term::kF ? f : o.term == Term::kD1 ? d1 : d2;
    Bounded<F> result = term;
    if constexpr (o.num_factors == 1) {
      result = narrow_product(in[o.factors[0]], term);
    } else if constexpr (o.num_factors == 2) {
      const F a = in[o.factors[0]], b = in[o.factors[1]], ab = a * b;
      result = narrow_product(ab, term);
      result.error = result.error + select(fma(a, b, -ab) != F(0.0f), F(__builtin_huge_valf()),
                                           F(0.0f));
    }
    if constexpr (kRule.argument_is_sum) result.error = result.error + inexact_sum;
    return result;
  }
};

// ---------------------------------------------------------------------------------------------
// The GPU's narrow path, which the AVX-512 CPU kernels also take for the 16-bit bias passes
// (narrow16_relative, math/route.h), with their own exponential and reciprocal within the same
// errors (cpu/simd_avx512.h). Its outputs carry one relative bound, kGpuNarrowRelativeError,
// wherever an element is usable (in its core domain, its bias sum and factor product exact), so
// that the kernels' rounding test reads the value's bits alone (cuda/gelu_cuda.cu): far cheaper
// than rounding value -+ error twice. Both the exponential and the reciprocal are the GPU's
// approximate instructions (gpu_approximate.h), and the forms are chosen so that every term keeps
// a relative error bound:
// - exact: Q(t) = exp(-t^2/2) R(t) with R (t + 2.5) a polynomial in y = t / (t + 2.5) (kGpuTail),
//   f = max(x, 0) - E y P(y), no cancellation at small t; f' = Q - t phi as E (t - t0) H(y),
//   H a polynomial too (kGpuSlope), so that f' keeps its relative accuracy at its zero t0.
// - tanh, sigmoid: exp(-|s|) from 2^-m, m = |s| log2(e) carried as m + m_lo so that no rounding
//   of m (up to 100) reaches the exponential; f' = p (1 + x s' q), and within 0.3 of its zero x0
//   (x0 = -0.75) f' = (x - x0) M(x - x0), M a polynomial (kGpuTanhZero, kGpuSigmoidZero).
// The argument's significant bits (kArgBits: 8 for bfloat16 inputs, 11 for float16, 24 for a bias
// sum) decide which products are exact: t^2 of a 16-bit t is, and for bfloat16 the tanh form's
// t^2 + c1/c3 and the sigmoid form's 1.702 log2(e) t with a 16-bit constant are too.
// tools/check_narrow_bounds.cpp, built with -DGELU_DEVICE_FORMS, measures the bound at every
// argument of each core domain, with the approximate instructions erring by their documented
// maximum in each direction.

// The relative bound of every output, products included (docs/accuracy.md has the measured
// maxima, up to 0.95 of it): 14 float units (in the last place of a value at the top of its
// binade) for bfloat16 outputs, and for every form at float arguments (the bias sums), which both
// types' bias passes share; 15 for float16 outputs, which lets the tanh form leave out t^2 +
// c1/c3's rounding error at float16 arguments (3 instructions per element).
constexpr float kGpuNarrowRelativeError = 0x1.Cp-21f;
constexpr float kGpuNarrowRelativeErrorFloat16 = 0x1.Ep-21f;
template <bool kBFloat16>
constexpr float gpu_narrow_relative_error() {
  return kBFloat16 ? kGpuNarrowRelativeError : kGpuNarrowRelativeErrorFloat16;
}
// Below this magnitude an output's bound may fail (float's subnormal range); the kernels' test
// takes only results at least this large, or exactly 0: an output is 0 only where a zero argument
// or operand makes it so, or where it (a product, or f of an argument below 2^-148) underflows
// below 2^-149, and either way its correctly rounded 16-bit value is that zero.
constexpr float kGpuNarrowSmallest = 0x1p-120f;
// Core domains: |x| up to 8.5 for the exact form (kGpuTail's interval), 9 for the others.
constexpr float kGpuCoreExact = 8.5f, kGpuCoreLogistic = 9.0f;
// The logistic forms' f' = p (1 + x s' q) cancels toward its zero x0 = -0.75: within this
// distance of x0 it is (x - x0) M(x - x0) instead (kGpuTanhZero, kGpuSigmoidZero). From 0.3 on
// the general form holds its bound (tools/check_narrow_bounds.cpp -DGELU_DEVICE_FORMS, every
// float argument: at most 0.978 of it, near x = -1.094); from 0.25 on it would not (1.09 at
// 16-bit arguments).
constexpr float kGpuZeroHalfWidth = 0.3f;

#if defined(GELU_DEVICE_FORMS)
using gpu_lanes::GpuPair;
using gpu_lanes::GpuPairMask;
#endif

// The masks of float lanes are bools.
template <class F>
using GpuMask = decltype(F() < F());

template <class F>
struct GpuTerms {
  F f, d1;
  GpuMask<F> usable;
};

template <int kArgBits, int kNeeds, class F>
GELU_HD GpuTerms<F> gpu_exact(F x) {
  // The Gaussian factor is E = 2^(-kC t^2), kC = log2(e)/2 rounded to float: the polynomials
  // carry E's difference from exp(-t^2/2) (coefficients.inc). kC t^2 = u + u_lo exactly (t^2 is
  // exact for 16-bit t), and 2^-(u + u_lo) = 2^-u (1 - ln2 u_lo) to 2^-40.
  constexpr float kC = 0.7213475108146667f;
  constexpr float kLn2 = 0.6931471805599453f;
  const auto& roots = GELU_TABLE(kGpuRoots);
  GpuTerms<F> r{};
  const F t = fabs(x);
  r.usable = t <= F(kGpuCoreExact);
  const F v = t * t;
  const F u = v * F(kC);
  F u_lo = fma(v, F(kC), -u);
  if constexpr (kArgBits > 12) u_lo = fma(fma(t, t, -v), F(kC), u_lo);
  const F e = gpu_exp2(-u);
  const F gauss = fma(e, u_lo * F(-kLn2), e);
  const F inv = gpu_reciprocal(t + F(2.5f));
  const F y = t * inv;
  if constexpr ((kNeeds & kNeedF) != 0) {
    // t Q(t) = E y P(y); f = x - t Q for x > 0, -t Q for x < 0 (and -0 at -0: positive_part).
    r.f = fma(-(gauss * y), horner(y, GELU_TABLE(kGpuTail)), positive_part(x));
  }
  if constexpr ((kNeeds & kNeedD1) != 0) {
    // Q - t phi = E (t - t0) H(y): f' for x < 0, 1 - f' for x > 0.
    const F distance = (t - F(roots[0])) - F(roots[1]);  // the first difference exact near t0
    const F lower = (gauss * distance) * horner(y, GELU_TABLE(kGpuSlope));
    r.d1 = select(x < F(0.0f), lower, F(1.0f) - lower);
  }
  return r;
}

// (x - x0) M(x - x0) from offset = x - hi, x0 = hi + lo (|lo| < 1.2e-8): offset M(offset) -
// lo M(0), one multiply-add in place of lo's subtraction and a product. What that leaves out
// (lo (M(offset) - M(0)), and lo times offset - lo times M's slope) stays below 2^-24.5 of the
// value over the window (tanh 2^-24.7, sigmoid 2^-24.5, evaluated in double at 2e5 points).
template <class F, int N>
GELU_HD F near_zero_slope(F offset, float lo, const float (&m)[N]) {
  return fma(offset, horner(offset, m), F(-(lo * m[0])));
}

template <Approximate A, int kArgBits, int kNeeds, class F>
GELU_HD GpuTerms<F> gpu_logistic(F x) {
  constexpr float kLn2 = 0.6931471805599453f;
  GpuTerms<F> r{};
  const F t = fabs(x);
  r.usable = t <= F(kGpuCoreLogistic);
  F m, m_lo, ds;  // |s| log2(e) = m + m_lo; s'
  if constexpr (A == Approximate::kTanh) {
    // |s| log2(e) = a3 t (t^2 + C) + r t, a3 = c3 log2(e), C = c1/c3 to 2^-17, r = a1 - a3 C.
    constexpr float kA3 = 0.10294324159622192f, kA3Lo = -2.016198436410503e-09f;
    constexpr float kRatio = 22.363861083984375f;  // a multiple of 2^-17
    constexpr float kR = -1.1135864239681259e-07f;
    const F v = t * t;
    // w is exact for bfloat16 t >= 1/4 (and its error harmless below), and for float16 t >= 2
    // (v a multiple of 2^-18 below 2^7); for float16 t < 2 it errs by up to 2^-20, which moves m
    // by up to 2^-22.3 and keeps the tanh form's f' within float16's wider bound (f' 0.95 of it
    // at x = -1.83, tools/check_narrow_bounds.cpp), so only float arguments carry w's error.
    const F w = v + F(kRatio);
    const F tw = t * w;
    F tw_lo = fma(t, w, -tw);
    if constexpr (kArgBits > 12) {
      // w's rounding error and v's, t^2 + kRatio - w, rounded once by one fma: kRatio - w is
      // exact for every t^2 below 128 (t in the core), as kRatio is a multiple of 2^-17 and
      // |kRatio - w| is below 2^24 times the finer of 2^-17 and w's unit
      // (tests/test_coefficients.py checks it).
      tw_lo = fma(t, fma(t, t, F(kRatio) - w), tw_lo);
    }
    m = F(kA3) * tw;
    m_lo = fma(F(kA3), tw, -m);
    m_lo = fma(F(kA3), tw_lo, m_lo);
    m_lo = fma(F(kR), t, m_lo);
    m_lo = fma(F(kA3Lo), tw, m_lo);
    ds = fma(F(static_cast<float>(3.0 * kTanhS3)), v, F(static_cast<float>(kTanhS1)));
  } else {
    if constexpr (kArgBits <= 8) {
      constexpr float kB = 2.4554443359375f;        // 1.702 log2(e) to 16 bits: kB t exact
      constexpr float kBLo = 2.2623655515719325e-05f;
      m = F(kB) * t;
      m_lo = F(kBLo) * t;
    } else {
      constexpr float kB = 2.4554669857025146f, kBLo = -2.610949892911091e-08f;
      m = F(kB) * t;
      m_lo = fma(F(kB), t, -m);
      m_lo = fma(F(kBLo), t, m_lo);
    }
    ds = F(static_cast<float>(kSigmoidScale));
  }
  const F e0 = gpu_exp2(-m);
  const F e = fma(e0, m_lo * F(-kLn2), e0);  // exp(-|s|) = 2^-m (1 - ln2 m_lo)
  const F one_plus_e = F(1.0f) + e;
  F inv = gpu_reciprocal(one_plus_e);
  if constexpr (kArgBits > 12 && (kNeeds & kNeedD1) != 0) {
    // One Newton step for float arguments (bias sums): rcp.approx's error, amplified where
    // f' = p (1 + x s' q) partly cancels, would exceed the bound between x = -2.3 and -1.1
    // (tools/check_narrow_bounds.cpp -DGELU_DEVICE_FORMS).
    inv = fma(inv, fma(-one_plus_e, inv, F(1.0f)), inv);
  }
  const F small = e * inv;                  // sigmoid(-|s|); inv = sigmoid(|s|)
  const auto negative = x < F(0.0f);        // s has the sign of x
  const F p = select(negative, small, inv);
  if constexpr ((kNeeds & kNeedF) != 0) r.f = x * p;
  if constexpr ((kNeeds & kNeedD1) != 0) {
    // f' = p (1 + x s' q), q = inv for x < 0, small for x >= 0 (1 + x s' q rounded once: more
    // accurate where it cancels than p + x s' p q), and within kGpuZeroHalfWidth of its zero x0
    // as (x - x0) M(x - x0).
    const F general = p * fma(t * ds, select(negative, -inv, small), F(1.0f));
    const auto& roots = GELU_TABLE(kGpuRoots);
    const int zero = A == Approximate::kTanh ? 2 : 4;
    const F offset = x - F(roots[zero]);  // x minus x0's high part: exact near x0
    const float lo = roots[zero + 1];
    const F near_zero = A == Approximate::kTanh
                            ? near_zero_slope(offset, lo, GELU_TABLE(kGpuTanhZero))
                            : near_zero_slope(offset, lo, GELU_TABLE(kGpuSigmoidZero));
    r.d1 = select(fabs(offset) < F(kGpuZeroHalfWidth), near_zero, general);
  }
  return r;
}

template <Approximate A, int kArgBits, int kNeeds, class F>
GELU_HD GpuTerms<F> gpu_terms(F x) {
  if constexpr (A == Approximate::kNone) return gpu_exact<kArgBits, kNeeds>(x);
  else return gpu_logistic<A, kArgBits, kNeeds>(x);
}

// A pass in the GPU's narrow path: outputs from the terms, each product of operands rounded once
// (a product of two 16-bit operands is exact unless it under- or overflows, which makes the
// element unusable). Returns where the element is usable: its outputs then have relative error
// below kGpuNarrowRelativeError wherever they are at least kGpuNarrowSmallest or 0.
template <Pass P, Approximate A, int kArgBits>
struct GpuNarrowPass {
  static_assert((needs(P) & kNeedD2) == 0, "the GPU's narrow forms compute no f''");
  static constexpr PassRule kRule = pass_rule(P);

  // A float16 x beyond the core domain needs no check of its own in the forward and backward,
  // where the kernels' test (gpu_rounds_surely) settles it:
  // - the sigmoid form's f' is not small enough beyond its core (-3.2e-6 at x = -9, and f'(9) - 1
  //   = 3.4e-6): its bound holds out to |x| = 16 (tools/check_narrow_bounds.cpp checks float16
  //   arguments of that form there), and what follows holds beyond 16 (mpmath: |65504 f'(-16)|
  //   < 2^-18.5, f'(16) - 1 < 2^-34);
  // - above the core, f(x) and g f'(x) round to x and g, and the value is x or g within 8 float
  //   units (the exact form's tail term is below 2^-52, the logistic forms' e below 2^-22);
  // - below it, |f| < 2^-18 and |g f'| < 2^-18 for every float16 g (mpmath, at the core's edge:
  //   the sigmoid form's f, the exact form's f'), and so is the value, which the test leaves to
  //   the fallback for being below float16's least normal, unless it is zero: then the
  //   exponential flushed to +0 (u or m above 126, where the exact value is far below float16's
  //   least subnormal), and the zero has the exact value's sign (kGpuTail's P > 0.39 and
  //   kGpuSlope's H < -0.39 up to y = 1; the logistic forms' f' as +0 times a negative factor);
  // - infinities and NaN give NaN, which the test leaves to the fallback too.
  // It saves an instruction per element where the loop is issue-bound. The fallback's second look
  // checks the core.
  static constexpr bool kBeyondCoreSettles =
      kArgBits == 11 && (P == Pass::kForward || P == Pass::kBackward);

  // kCheckCore: whether elements beyond the core domain are unusable even where
  // kBeyondCoreSettles.
  template <bool kCheckCore = true, class F>
  GELU_HD static GpuMask<F> apply(const F* in, F* out) {
    GpuMask<F> usable;
    F x;
    if constexpr (kRule.argument_is_sum) {
      const F a = in[kRule.argument], b = in[kRule.argument + 1];
      x = a + b;
      usable = sum_is_exact(a, b, x);
    } else {
      x = in[kRule.argument];
    }
    const GpuTerms<F> terms = gpu_terms<A, kArgBits, needs(P)>(x);
    if constexpr (kRule.argument_is_sum) usable &= terms.usable;
    else if constexpr (kCheckCore || !kBeyondCoreSettles) usable = terms.usable;
    else usable = F(0.0f) == F(0.0f);
    out[0] = output<0>(in, terms, usable);
    if constexpr (kRule.outputs > 1) out[1] = output<1>(in, terms, usable);
    return usable;
  }

  template <int K, class F>
  GELU_HD static F output(const F* in, const GpuTerms<F>& terms, GpuMask<F>& usable) {
    constexpr OutputRule o = kRule.out[K];
    const F term = o.term == Term::kF ? terms.f : terms.d1;
    // f is below the least normal float only for tiny arguments (f(x) ~ x/2), where its bound
    // fails; times an operand, the output may be large nonetheless. (f' never is, in the core.)
    if constexpr (o.term == Term::kF && o.num_factors > 0)
      usable &= (fabs(term) >= F(0x1p-126f)) | (term == F(0.0f));
    if constexpr (o.num_factors == 0) {
      return term;
    } else if constexpr (o.num_factors == 1) {
      return in[o.factors[0]] * term;
    } else {
      const F a = in[o.factors[0]], b = in[o.factors[1]], ab = a * b;
      usable &= fma(a, b, -ab) == F(0.0f);
      return ab * term;
    }
  }
};

// The kernels' rounding test for the values of GpuNarrowPass, whose relative error is below
// gpu_narrow_relative_error where usable: a value v's 16-bit rounding is the exact value's unless
// a rounding boundary of the type, a midpoint between two of its values, lies between them. A
// boundary is a float whose bits below the type's last bit (16 of them for bfloat16, 13 for
// float16) are half their range. The test: no boundary within kGpuUlps (14; float16 15) units in
// the last place of v (v < 2^(e+1) for an ulp of 2^(e-23)), on the bits alone (a shift-add and
// a compare); binade edges, where that count would change, never are boundaries. It is up to
// twice as wide as the bound where v's significand is small, so more elements fail it than a test
// of |v - boundary| against |v| times the bound (float16 forward on normal data: 0.39% against
// 0.23%), but that test's four instructions on every element cost more than redoing the
// difference: predicted 2.3-2.6 instructions per float16 element fewer in all
// (bench/gpu_model.py: H200's exact and tanh forwards 1.11 and 1.13 times F.gelu's time -> 1.03
// and 1.05).
// Values below the smallest taken go to the fallback, except exact zeros: float16's subnormals,
// whose grid the float's bits do not show, and for bfloat16 float's own, where the bound may fail.
template <bool kBFloat16>
constexpr uint32_t kGpuUlps =
    static_cast<uint32_t>(gpu_narrow_relative_error<kBFloat16>() * 0x1p24f);
template <bool kBFloat16>
GELU_HD bool gpu_rounds_surely(float v) {
  constexpr int kLowBits = kBFloat16 ? 16 : 13;
  constexpr uint32_t kMidpoint = 1u << (kLowBits - 1);
  constexpr uint32_t kUlps = kGpuUlps<kBFloat16>;
  constexpr float kSmallest = kBFloat16 ? kGpuNarrowSmallest : 0x1p-14f;  // float16's least normal
  const uint32_t offset = (bit_cast<uint32_t>(v) + (kUlps - kMidpoint)) << (32 - kLowBits);
  const bool far = offset >= ((2 * kUlps + 1) << (32 - kLowBits));
  // Bitwise, not short-circuit: no branches.
  return far & ((fabsf(v) >= kSmallest) | (v == 0.0f));
}

// gpu_rounds_surely over float16's subnormal range too, for the fallback's second look (the
// common path leaves these to it, as its test would take more instructions for every element):
// below 2^-14 float16's grid is 2^-24, its boundaries the odd multiples of 2^-25, which v 2^24
// (exact) shows as k + 1/2. Outputs of normal data there: the forward's f(x) for x from about
// -4.2 to -5.8, 1.8% of the elements of sigma-2 data, which would otherwise run the double path.
template <bool kBFloat16>
GELU_HD bool gpu_rounds_surely_anywhere(float v) {
  if constexpr (kBFloat16) {
    return gpu_rounds_surely<true>(v);
  } else {
    if (fabsf(v) >= 0x1p-14f) return gpu_rounds_surely<false>(v);
    const float w = v * 0x1p24f;
    const float boundary = floorf(w) + 0.5f;
    const bool far = fabsf(w - boundary) > fabsf(w) * kGpuNarrowRelativeErrorFloat16;
    return far & ((fabsf(v) >= kGpuNarrowSmallest) | (v == 0.0f));
  }
}

// The 16-bit bias passes at a large positive sum x = a + b, without computing f or f':
// - forward: f(x) < x, and
//   - from x = 5 in every form, x - f(x) < 2^-11 x (sigmoid at 5: 2.0e-4 x), below a 16-bit unit
//     of x, so where x is a 16-bit midpoint, f(x) rounds to the value below x;
//   - from x = 5.5 (exact form), 5 (tanh), 10 (sigmoid), x - f(x) < 2^-24 x, below a float unit
//     of x, so f(x) lies between the float below x and x, where no rounding boundary lies;
//   either way f(x) rounds as the float below x does, which `out` is given;
// - backward: f'(x) > 1, and from x = 5 (exact, tanh) or 7.5 (sigmoid) f'(x) - 1 < 2^-12 (mpmath:
//   7.1e-6, 1.5e-6 and 3.4e-5 there), below half a 16-bit unit of any value, so grad f'(x)
//   rounds to grad itself, which `out` is given.
// Returns whether the element is so settled (the float sum exact, x in one of those cases). The
// narrow path leaves these sums (the forward's midpoints within its bound of x; beyond its core
// domain, every one): with this test first, its fallback runs the double path for 0.5% of the
// bfloat16 bias forward's elements of normal data of sigma 2 in place of 1.9% (exact form;
// bench/narrow_fallback.cpp).
// In any lanes: x = a + b as the caller formed it, and where x is a rounding boundary of the
// 16-bit type (which the lanes test on its bits).
template <Pass P, Approximate A, class F, class M>
GELU_HD M settles_large_sum(const F* in, F x, M x_is_boundary, F& out) {
  static_assert(P == Pass::kBiasForward || P == Pass::kBiasBackward, "the bias passes");
  constexpr PassRule kRule = pass_rule(P);
  const M exact = sum_is_exact(in[kRule.argument], in[kRule.argument + 1], x);
  if constexpr (P == Pass::kBiasBackward) {
    out = in[0];
    return exact & (x >= F(A == Approximate::kSigmoid ? 7.5f : 5.0f));
  } else {
    constexpr float kAnySum =
        A == Approximate::kNone ? 5.5f : A == Approximate::kTanh ? 5.0f : 10.0f;
    out = narrow_upper_limit(x);  // the float below x
    return exact & (x >= F(5.0f)) & (x_is_boundary | (x >= F(kAnySum)));
  }
}

// One float element (the GPU's second look).
template <Pass P, Approximate A, bool kBFloat16>
GELU_HD bool settles_large_sum(const float* in, float& out) {
  constexpr PassRule kRule = pass_rule(P);
  const float x = in[kRule.argument] + in[kRule.argument + 1];
  constexpr uint32_t kLowBits = kBFloat16 ? 0xFFFFu : 0x1FFFu;  // below the type's last bit
  constexpr uint32_t kMidpoint = kBFloat16 ? 0x8000u : 0x1000u;
  const bool boundary = (bit_cast<uint32_t>(x) & kLowBits) == kMidpoint;
  return settles_large_sum<P, A>(in, x, boundary, out);
}

// Whether a float v within 0.6 unit in its last place of the exact value (the float path's f)
// rounds to the exact value's 16-bit rounding: no rounding boundary of the type, a float far
// inside a binade, lies within kUlps units of v, tested on the bits as gpu_rounds_surely does for
// bfloat16. (Within 0.6 unit, v is on the exact value's side of every boundary unless it is one;
// kUlps = 1 leaves a margin.) Values below the type's least normal (float16) or float's
// (bfloat16) are not taken, zeros included.
template <bool kBFloat16, uint32_t kUlps>
GELU_HD bool float_rounds_surely(float v) {
  constexpr int kLowBits = kBFloat16 ? 16 : 13;
  constexpr uint32_t kMidpoint = 1u << (kLowBits - 1);
  constexpr float kSmallest = kBFloat16 ? 0x1p-126f : 0x1p-14f;
  const uint32_t offset = (bit_cast<uint32_t>(v) + (kUlps - kMidpoint)) << (32 - kLowBits);
  return (offset >= ((2 * kUlps + 1) << (32 - kLowBits))) & (fabsf(v) >= kSmallest);
}

// ---------------------------------------------------------------------------------------------
// Cubic cells, in place of narrow_value_and_derivative, for the CPU's 16-bit bias passes (their
// argument x + b is a float, not a 16-bit value, so no table of every input's result serves
// them). The floats x with 2^-32 <= |x| < 8 fall into cells of the same sign, exponent and top
// kCellBits bits of the significand; a cell's row holds c0 .. c3, the cubic in d = x - (the
// cell's midpoint) through f (or f') at 4 Chebyshev nodes of the cell, from the float64 path.
// Relative to f (or to f''s terms), interpolation leaves out below 2^-24 (tanh near |x| = 8;
// below 2^-27 for |x| < 6), the float operations about 2^-23 of |c0| + |c1 d|. The bound, 2^-20
// of |value| + |c1 d| (of 1.25 |value| for f, below), is checked for every float of every cell
// by tools/check_narrow_bounds.cpp (largest error/bound 0.16). The results are the narrow
// functions' (both are correctly rounded).
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

// A cell's cubic: c0 .. c3, a row of 16 bytes.
struct alignas(16) CubicRow {
  float c[4];
};

// The cubic of f (kD1 false) or f' in a row's cell: Newton's divided differences at the nodes
// m + h u_j (m the midpoint, h the half-width, a power of 2) of the float64 path's values,
// expanded into powers of u, then of d = h u.
template <Approximate A, bool kD1>
inline CubicRow fit_cubic_row(uint32_t row) {
  const uint32_t first = cell_first_bits(row);
  const double start = bit_cast<float>(first);
  const double midpoint = bit_cast<float>(cell_midpoint_bits(first));
  const double half = start < 0 ? start - midpoint : midpoint - start;
  const double u[4] = {-0.92387953251128674, -0.38268343236508978, 0.38268343236508978,
                       0.92387953251128674};  // cos((2j + 1) pi / 8)
  double c[4];
  for (int j = 0; j < 4; ++j) {
    const auto r = f64_double_double<A, kD1 ? kNeedD1 : kNeedF>(midpoint + half * u[j]);
    c[j] = kD1 ? r.d1 : r.f;
  }
  for (int k = 1; k < 4; ++k)
    for (int j = 3; j >= k; --j) c[j] = (c[j] - c[j - 1]) / (u[j] - u[j - k]);
  // c0 + (u - u0) (c1 + (u - u1) (c2 + (u - u2) c3)), from the inside out.
  double power[4] = {c[3], 0.0, 0.0, 0.0};
  for (int k = 2; k >= 0; --k) {
    for (int i = 3; i > 0; --i) power[i] = power[i - 1] - u[k] * power[i];
    power[0] = c[k] - u[k] * power[0];
  }
  CubicRow cubic;
  double scale = 1.0;
  for (int i = 0; i < 4; ++i, scale /= half) cubic.c[i] = static_cast<float>(power[i] * scale);
  return cubic;
}

// The rounding interval [low, high] of a bias pass's output from its cell's cubic c at d, and
// the lanes that qualify for the rounding test: those whose sum is exact in float and lies in a
// cell (in_cell), and in the backward those whose bound is finite (not those of non-finite
// gradients). Qualified lanes have finite ends. The forward's ends come in either order (the
// rounding test orders them); f also lies at most at narrow_upper_limit, which caps the end
// farther from 0 where f > 0.
template <class F, class M>
struct CubicInterval {
  F low, high;
  M qualified;
};
template <Pass P, class F, class M>
GELU_HD CubicInterval<F, M> narrow_cubic_interval(const F* in, const F (&c)[4], F d, F sum,
                                                  M in_cell) {
  static_assert(P == Pass::kBiasForward || P == Pass::kBiasBackward, "the bias passes");
  constexpr PassRule rule = pass_rule(P);
  const M qualified = in_cell & sum_is_exact(in[rule.argument], in[rule.argument + 1], sum);
  if constexpr (P == Pass::kBiasForward) {
    F nearer_zero, farther;
    narrow_cubic_ends(narrow_cubic<false>(c, d).value, nearer_zero, farther);
    return CubicInterval<F, M>{nearer_zero, at_most_each(farther, narrow_upper_limit(sum)),
                               qualified};
  } else {
    const Bounded<F> out = narrow_cubic_product(in[0], c, d);
    const M bounded = qualified & (out.error < F(__builtin_huge_valf()));
    return CubicInterval<F, M>{out.value - out.error, out.value + out.error, bounded};
  }
}

}  // namespace GELU_ISA
}  // namespace math
}  // namespace gelu_ext
