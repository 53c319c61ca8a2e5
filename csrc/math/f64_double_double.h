// float64 inputs: double-double arithmetic, where a double alone would not reach 2 ulps. Results
// are rounded once from a double-double whose relative error is below 2^-58. Written over a lane
// type V of doubles (float64 data is not narrowed, so the CPU vector kernels run this too):
// branches are selects, and V provides in addition binary_exponent(x), table_row(row) (each
// lane's row, of whatever index type the lanes use) and table_entry(column, row) (a lookup in a
// table column of 16 rows), and optionally their own table_row_entries and table_pair_entries.
//
// The CUDA kernels' float64 path, and the CPU's for the double backward; on the CPU it is the
// fallback of the float64 pair path (f64_pair.h) for the rest.
#pragma once

#include "common.h"
#include "passes.h"

namespace gelu_ext {
namespace math {
inline namespace GELU_ISA {

// y 2^k for integers k in [-1600, 0], given as shifted = k + kRoundToInteger, y in [2^-4, 4]:
// rounded once, also into the subnormals (in two steps below 2^-1000, the first exact).
template <class V>
GELU_HD V scale_pow2(V y, V shifted) {
  const auto deep = shifted < V(kRoundToInteger - 1000.0);
  const V scaled = times_pow2(y, select(deep, shifted + V(600.0), shifted));
  return select(deep, scaled * V(0x1p-600), scaled);
}
template <class V>
GELU_HD DD<V> scale_pow2(DD<V> y, V shifted) {
  return DD<V>{scale_pow2(y.hi, shifted), scale_pow2(y.lo, shifted)};
}


// m 2^k, with k carried as shifted = k + kRoundToInteger (the integer k in the low bits of its
// significand), the form times_pow2 and scale_pow2 take.
template <class V>
struct ScaledDD {
  DD<V> m;
  V shifted;
};
// F(t) = R(t) (t + 1) for t in [0, 40]: 16 polynomials of degree 13 (kTailF64Rows, in
// coefficients.inc). F varies by less than 2% across each interval, so only its value at the
// center needs double-double precision.
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
constexpr Exp2TableF64 exp2_table_f64(const double (&hi)[16], const double (&lo)[16]) {
  Exp2TableF64 table{};
  for (int j = 0; j < 16; ++j) {
    table.hi[j] = table.pair[j][0] = hi[j];
    table.lo[j] = table.pair[j][1] = lo[j];
  }
  return table;
}
static constexpr Exp2TableF64 kExp2F64Host = exp2_table_f64(kExp2F64Hi, kExp2F64Lo);
#if defined(__CUDACC__)
static __device__ const Exp2TableF64 kExp2F64Device = kExp2F64Host;  // global memory: lanes diverge
#endif


// a, or -800 where a is below -800 or NaN.
template <class V>
GELU_HD DD<V> exp_argument_floored(DD<V> a) {
  const auto in_range = a.hi >= V(kExpArgumentFloorF64);
  return DD<V>{select(in_range, a.hi, V(kExpArgumentFloorF64)), select(in_range, a.lo, V(0.0))};
}
#if defined(GELU_DEVICE_FORMS)
// The device form floors a.hi alone (one FP64 operation, where the selects cost two compares):
// below -800, a.lo (at most half an ulp of a.hi) changes exp by a factor that no result sees.
GELU_HD DD<double> exp_argument_floored(DD<double> a) {
  return DD<double>{fmax(a.hi, kExpArgumentFloorF64), a.lo};
}
#endif

// n = 16 k + j for an integer n given as n and as shifted_n = n + kRoundToInteger: returns the
// table row j in [0, 15] and sets shifted_k = k + kRoundToInteger, k = floor(n / 16).
template <class V>
GELU_HD auto exp_split(V /*shifted_n*/, V n, V& shifted_k) {
  // n / 16 - 15/32 is never halfway between integers, so rounding it gives floor(n / 16) exactly.
  shifted_k = fma(n, V(0.0625), V(-15.0 / 32.0)) + V(kRoundToInteger);
  return table_row(fma(shifted_k - V(kRoundToInteger), V(-16.0), n));
}
#if defined(GELU_DEVICE_FORMS)
// The device form takes n from shifted_n's low word and splits it by integer instructions, where
// the generic form spends four FP64 ones (the float64 kernels' pace on most GPUs).
GELU_HD int exp_split(double shifted_n, double /*n*/, double& shifted_k) {
  const int32_t n = static_cast<int32_t>(bit_cast<uint64_t>(shifted_n));
  shifted_k = bit_cast<double>(bit_cast<int64_t>(kRoundToInteger) + (n >> 4));  // >> floors
  return n & 15;
}
#endif

// exp(a) for a <= 0 as m 2^k, m a double-double in [0.97, 1.96] with relative error near
// 2^-57.5: a = (16 k + j) ln2/16 + r, |r| <= ln2/32, m = 2^(j/16) (1 + expm1(r)). a below -800
// (far below the smallest subnormal), and NaN, are taken as -800, so that every table row is in
// range; callers pass NaN on through x.
template <class V>
GELU_HD ScaledDD<V> exp_dd(DD<V> a) {
  constexpr double k16OverLn2 = 23.083120654223414;
  constexpr double kLn2Over16Hi = 0.04332169878489367;    // 38 significant bits: n * hi is exact
  constexpr double kLn2Over16Lo = 1.0291218489310676e-13;  // ln2/16 - hi
  a = exp_argument_floored(a);
  const V shifted_n = fma(a.hi, V(k16OverLn2), V(kRoundToInteger));
  const V n = shifted_n - V(kRoundToInteger);
  V r = fma(n, V(-kLn2Over16Hi), a.hi);                     // exact
  r = fma(n, V(-kLn2Over16Lo), r) + a.lo;
  V shifted_k;
  const auto row = exp_split(shifted_n, n, shifted_k);
#if defined(__CUDA_ARCH__)
  const Exp2TableF64& table = kExp2F64Device;
#else
  const Exp2TableF64& table = kExp2F64Host;
#endif
  const V expm1_r = fma(r * r, horner(r, GELU_TABLE(kExpPolyF64)), r);
  V hi, lo;
  table_pair_entries(table.pair, table.hi, table.lo, row, hi, lo);
  return ScaledDD<V>{fast_two_sum(hi, fma(hi, expm1_r, lo)), shifted_k};
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
#if defined(GELU_DEVICE_FORMS)
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
  q.t = clamp_magnitude(fabs(x), kExactSaturationF64);  // the callers return limits beyond
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
  const V negative = -scale_pow2(dd_mul_rounded(upper, q.t), q.gauss.shifted);
  const V positive = dd_mul_rounded(dd_one_minus(scale_pow2(upper, q.gauss.shifted)), x);
  // f has the sign of x, which a zero's product may lose.
  return saturate_f64(x, kExactSaturationF64,
                      with_sign_of(select(x < V(0.0), negative, positive), x), V(-0.0), x);
}

// f' = E (R - t/sqrt(2 pi)) for x < 0, 1 - that for x > 0 (E = exp(-t^2/2)).
template <class V>
GELU_HD V exact_derivative_f64(V x, const TailF64<V>& q) {
  const DD<V> lower = slope_term_unscaled(q);
  const DD<V> y = dd_one_minus(scale_pow2(lower, q.gauss.shifted));  // |E S| <= 1/2
  const V value = select(x < V(0.0), round_scaled(lower, q.gauss.shifted), y.hi + y.lo);
  return saturate_f64(x, kExactSaturationF64, value, V(-0.0), V(1.0));
}

template <class V>
GELU_HD V exact_second_derivative_f64(V x, const TailF64<V>& q) {
  const DD<V> two_minus_t2 = dd_add(dd(V(2.0)), dd_neg(q.t_squared));
  const DD<V> density = dd_mul(q.gauss.m, dd<V>(kInvSqrt2PiHi, kInvSqrt2PiLo));
  return saturate_f64(x, kExactSaturationF64,
                      scale_pow2(dd_mul_rounded(density, two_minus_t2), q.gauss.shifted), V(-0.0),
                      V(-0.0));
}

// The logistic forms in double-double: s = x (c1 + c3 x^2) or 1.702 x with the decimal
// constants carried as pairs. Beyond |x| = kLogisticSaturationF64, or where |s| >
// kLogisticTailF64, every result is its limit to far below the smallest subnormal.

template <class V>
struct LogisticF64 {
  V saturated;      // 1 where every result is its limit (x or -0; 1 or -0; -0), else 0
  V x;              // x clamped to +-kLogisticSaturationF64, where |s| is past kLogisticTailF64
  DD<V> s, ds;      // s(x), s'(x)
  ScaledDD<V> e;    // exp(-|s|)
  DD<V> inv;        // 1 / (1 + exp(-|s|))
};

template <Approximate A, class V>
GELU_HD LogisticF64<V> logistic_f64(V x) {
  LogisticF64<V> g;
  // Clamped, not set to 0, so that the saturation follows from s alone: no flag lives through
  // the computation (one the GPU would keep in a register, which spilled). NaN runs through.
  g.x = clamp_magnitude(x, kLogisticSaturationF64);
  if (A == Approximate::kTanh) {
    const DD<V> x2 = two_prod(g.x, g.x);
    g.s = dd_mul(dd_add(dd<V>(kTanhS1Hi, kTanhS1Lo), dd_mul(dd<V>(kTanhS3Hi, kTanhS3Lo), x2)), g.x);
    g.ds = dd_add(dd<V>(kTanhS1Hi, kTanhS1Lo), dd_mul(dd<V>(kTanhS3x3Hi, kTanhS3x3Lo), x2));
  } else {
    g.s = dd_mul(dd<V>(kSigmoidHi, kSigmoidLo), g.x);
    g.ds = dd<V>(kSigmoidHi, kSigmoidLo);
  }
  g.saturated = select(fabs(g.s.hi) > V(kLogisticTailF64), V(1.0), V(0.0));
  g.e = exp_dd(select(g.s.hi >= V(0.0), dd_neg(g.s), g.s));
  const DD<V> e = scale_pow2(g.e.m, g.e.shifted);
  const DD<V> one_plus_e = fast_two_sum(V(1.0), e.hi);  // e <= 1
  g.inv = dd_div(dd(V(1.0)), DD<V>{one_plus_e.hi, one_plus_e.lo + e.lo});
  return g;
}

// The value, or its limits where the gate saturates.
template <class V>
GELU_HD V saturate_logistic(V x, const LogisticF64<V>& g, V value, V at_minus_inf, V at_plus_inf) {
  return select(g.saturated > V(0.0), select(x > V(0.0), at_plus_inf, at_minus_inf), value);
}

// f = x sigmoid(s): x / (1 + e) for s >= 0, x e / (1 + e) for s < 0, e = exp(-|s|).
template <class V>
GELU_HD V logistic_forward_f64(V x, const LogisticF64<V>& g) {
  const V positive = dd_mul_rounded(g.inv, g.x);
  const V negative = scale_pow2(dd_mul_rounded(dd_mul(g.e.m, g.inv), g.x), g.e.shifted);
  return saturate_logistic(x, g, select(g.s.hi >= V(0.0), positive, negative), V(-0.0), x);
}

// f' = p + x s' p q. For s < 0, p = e/(1+e) and f' = p (1 + x s' / (1 + e)), scaled at the end.
template <class V>
GELU_HD V logistic_derivative_f64(V x, const LogisticF64<V>& g) {
  const DD<V> xs = dd_mul(g.ds, g.x);
  const DD<V> small = dd_mul(g.e.m, g.inv);                    // p (s < 0) or q (s >= 0), / 2^k
  const DD<V> pq = dd_mul(scale_pow2(small, g.e.shifted), g.inv);
  const V positive = dd_add_rounded(g.inv, dd_mul(xs, pq));
  const DD<V> factor = dd_add_unnormalized(dd(V(1.0)), dd_mul(xs, g.inv));
  const V negative = scale_pow2(dd_mul_rounded(small, factor), g.e.shifted);
  return saturate_logistic(x, g, select(g.s.hi >= V(0.0), positive, negative), V(-0.0), V(1.0));
}

// f'' = p q (2 s' + x ((q - p) s'^2 + s'')), q - p = -sign(s) (1 - e) / (1 + e).
template <Approximate A, class V>
GELU_HD V logistic_second_derivative_f64(V x, const LogisticF64<V>& g) {
  const DD<V> q_minus_p = dd_mul(dd_add(dd(V(1.0)), dd_neg(scale_pow2(g.e.m, g.e.shifted))), g.inv);
  const DD<V> signed_q_minus_p = select(g.s.hi >= V(0.0), dd_neg(q_minus_p), q_minus_p);
  const DD<V> d2s = A == Approximate::kTanh ? dd_mul(dd<V>(kTanhS3x3Hi, kTanhS3x3Lo), V(2.0) * g.x)
                                            : dd(V(0.0));
  const DD<V> inner = dd_add(dd_mul(dd_mul(signed_q_minus_p, g.ds), g.ds), d2s);
  const DD<V> bracket = dd_add(dd_mul(inner, g.x), DD<V>{V(2.0) * g.ds.hi, V(2.0) * g.ds.lo});
  const DD<V> pq = dd_mul(dd_mul(g.e.m, g.inv), g.inv);  // scaled by 2^k below
  return saturate_logistic(x, g, scale_pow2(dd_mul_rounded(pq, bracket), g.e.shifted), V(-0.0),
                           V(-0.0));
}

// f, f' and f'' of float64 x, computing what they share once (kNeeds: which are needed).
template <Approximate A, int kNeeds, class V>
GELU_HD Derivatives<V> f64_double_double(V x) {
  Derivatives<V> r{};
  if constexpr (A == Approximate::kNone) {
    const TailF64<V> q = tail_f64(x);
    if (kNeeds & kNeedF) r.f = exact_forward_f64(x, q);
    if (kNeeds & kNeedD1) r.d1 = exact_derivative_f64(x, q);
    if (kNeeds & kNeedD2) r.d2 = exact_second_derivative_f64(x, q);
  } else {
    const LogisticF64<V> g = logistic_f64<A>(x);
    if (kNeeds & kNeedF) r.f = logistic_forward_f64(x, g);
    if (kNeeds & kNeedD1) r.d1 = logistic_derivative_f64(x, g);
    if (kNeeds & kNeedD2) r.d2 = logistic_second_derivative_f64<A>(x, g);
  }
  return r;
}

// A pass in this path: the bias sum rounded to double, the terms there, then the products, each
// rounded (the results are doubles: no ties to settle).
template <Pass P, Approximate A>
struct F64DoubleDoublePass {
  template <class V>
  GELU_HD static void apply(const V* in, V* out) {
    const Derivatives<V> d = f64_double_double<A, needs(P)>(argument_of<P>(in));
    out[0] = plain_output<P, 0>(in, term_of(pass_rule(P).out[0].term, d.f, d.d1, d.d2));
    if constexpr (pass_rule(P).outputs > 1)
      out[1] = plain_output<P, 1>(in, term_of(pass_rule(P).out[1].term, d.f, d.d1, d.d2));
  }
};

}  // namespace GELU_ISA
}  // namespace math
}  // namespace gelu_ext
