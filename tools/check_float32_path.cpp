// Checks the float path of float32 data (csrc/math/f32_via_f32.h) against the float64
// double-double path of gelu_math.h (f64_double_double<A, ...>: relative error near 2^-58), run the
// way the kernels run it (F32ViaF32Pass, fallbacks included).
//
// "functions": f (the forward pass), f' (the backward with grad 1) and f'' (the double backward's
// second output with gg = grad = 1) of each form, at every float32 input (or every step-th), in
// ulps of the exact value; for f' and f'', where their terms cancel, in ulps of the larger term
// (the magnitudes' sum |a| + |b| of f' = a + b, as gelu_ext.reference.derivative_scales): the
// error is |y - exact| / ulp(max(|exact|, |a| + |b|)). Zeros must also have the exact value's
// sign, NaN must stay NaN and infinities must match.
// "passes": a sample of every multi-operand pass (bias sums across binades, sums float cannot
// hold, products near overflow and underflow, zeros of both signs, infinities, NaN), against the
// same passes computed from the double-double path's f, f', f'' (and x + b as an exact pair).
//
//   g++ -O2 -std=c++17 -ffp-contract=off -I csrc tools/check_float32_path.cpp \
//       -o /tmp/check_float32_path -lpthread
//   /tmp/check_float32_path [step [none|tanh|sigmoid|all [functions|passes|both]]]
//
// step 1 (the default) checks all 2^32 inputs, on 2 threads.
//
// With -DGELU_DEVICE_FORMS -DCHECK_DOUBLE_PATH it checks, the same way, the double path's
// device form (F32ViaF64Pass as the GPUs with fast FP64 compute float32: the exact form's tail
// divided by a refined float reciprocal, math/f32_via_f64.h), each output rounded to float as the
// kernels store it.
#include <math.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "checking.h"
#include "gelu_math.h"

using namespace gelu_ext;
using namespace gelu_ext::math;
using namespace gelu_ext::tools;

namespace {

// A pass's output on the double path (F32ViaF64Pass), rounded to float as the kernels store it.
template <Pass P, Approximate A>
float double_path(const float* in, int output) {
  double a[3], b[2];
  for (int i = 0; i < pass_rule(P).inputs; ++i) a[i] = in[i];
#if defined(CHECK_MIXED_PATH)
  F32ViaF64Pass<P, A, false, true>::apply(a, b);
#else
  F32ViaF64Pass<P, A>::apply(a, b);
#endif
  return float(b[output]);
}

#if defined(CHECK_DOUBLE_PATH)
template <Pass P, Approximate A>
struct CheckedPass {
  static void apply(const float* in, float* out) {
    for (int i = 0; i < pass_rule(P).outputs; ++i) out[i] = double_path<P, A>(in, i);
  }
};
#else
template <Pass P, Approximate A>
using CheckedPass = F32ViaF32Pass<P, A>;
#endif

// The spacing of float32 at |r| (the subnormal spacing below 2^-126).
double ulp32(double r) {
  r = fabs(r);
  if (r < 0x1p-126) return 0x1p-149;
  int e;
  frexp(r, &e);
  return ldexp(1.0, e - 24);
}

double ulp_error(float y, double r, double scale) {
  if (r != r) return y != y ? 0.0 : INFINITY;
  if (y != y) return INFINITY;
  if (isinf(y) && float(r) == y) return 0.0;  // r beyond the floats, rounded to infinity
  if (isinf(r) || isinf(y)) return double(y) == r ? 0.0 : INFINITY;
  if (y == 0.0f && signbit(y) != signbit(r)) return INFINITY;  // zeros keep the exact sign
  if (r == 0.0 && y != 0.0f) return INFINITY;
  return fabs(double(y) - r) / ulp32(fmax(fabs(r), scale));
}

// As ulp_error, but where r is zero, infinite or NaN, y must be the
// double path's result `conventional` (gelu_math.h), bit for bit: its limits and signs of zero are
// the conventions (the double-double path drops the sign of some zero results).
double ulp_error(float y, double r, double scale, float conventional) {
  if (r == 0 || !isfinite(r)) {
    return memcmp(&y, &conventional, 4) == 0 || (y != y && conventional != conventional) ? 0.0
                                                                                        : INFINITY;
  }
  return ulp_error(y, r, scale);
}

// The magnitudes |a| + |b| of f' = a + b and |c| + |d| of f'' = c + d (gelu_ext.reference), in
// double: only their size matters. Beyond |x| = 60 every such term is far below the results.
struct Scales {
  double d1, d2;
};
Scales term_scales(double x, Approximate a) {
  if (!(fabs(x) < 60)) return Scales{0, 0};
  constexpr double kInvSqrt2PiD = 0.39894228040143267794;
  if (a == Approximate::kNone) {
    const double pdf = exp(-0.5 * x * x) * kInvSqrt2PiD;
    const double cdf = 0.5 * erfc(-x / sqrt(2.0));
    return Scales{cdf + fabs(x * pdf), pdf * (2 + x * x)};
  }
  double s, ds, d2s;
  if (a == Approximate::kTanh) {
    s = double(kTanhS1) * x + double(kTanhS3) * x * x * x;
    ds = double(kTanhS1) + 3 * double(kTanhS3) * x * x;
    d2s = 6 * double(kTanhS3) * x;
  } else {
    s = 1.702 * x, ds = 1.702, d2s = 0;
  }
  const double e = exp(-fabs(s));
  const double p = s >= 0 ? 1 / (1 + e) : e / (1 + e), q = s >= 0 ? e / (1 + e) : 1 / (1 + e);
  const double pq = e / ((1 + e) * (1 + e));
  return Scales{p + fabs(x * ds * pq), fabs(2 * ds * pq) + fabs(x * pq * ((q - p) * ds * ds + d2s))};
}

struct Stat {
  double worst = 0, worst_normal = 0;
  float at = 0, at_normal = 0;
  uint64_t over_half = 0, over_one = 0, over_two = 0, count = 0;
  void see(double e, float x, double r) {
    ++count;
    if (e > 0.5) ++over_half;
    if (e > 1.0) ++over_one;
    if (e > 2.0) ++over_two;
    if (e > worst || (e == worst && worst == 0)) worst = e, at = x;
    if (fabs(r) >= 0x1p-126 && e > worst_normal) worst_normal = e, at_normal = x;
  }
  void merge(const Stat& o) {
    if (o.worst > worst) worst = o.worst, at = o.at;
    if (o.worst_normal > worst_normal) worst_normal = o.worst_normal, at_normal = o.at_normal;
    over_half += o.over_half, over_one += o.over_one, over_two += o.over_two, count += o.count;
  }
  void print(const char* what) const {
    printf("  %-4s max %.4f ulp at x = %a (%.9g); normal results: max %.4f at %a;\n"
           "       %llu inputs, %llu above 0.5 ulp, %llu above 1, %llu above 2\n",
           what, worst, at, at, worst_normal, at_normal, (unsigned long long)count,
           (unsigned long long)over_half, (unsigned long long)over_one,
           (unsigned long long)over_two);
  }
};

template <Approximate A>
void check_functions(uint64_t step) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<Stat> f(kThreads), d1(kThreads), d2(kThreads);
  sweep(0, uint64_t(1) << 32, step, [&](uint64_t b, int id) {
    const float x = from_bits(uint32_t(b));
    float y[1], dd[2];
    const float in_f[1] = {x}, in_dd[3] = {1.0f, 1.0f, x};
    CheckedPass<Pass::kForward, A>::apply(in_f, y);
    CheckedPass<Pass::kDoubleBackward, A>::apply(in_dd, dd);
    if (x != x) {  // NaN in, NaN out
      const double e = (y[0] != y[0] && dd[0] != dd[0] && dd[1] != dd[1]) ? 0.0 : INFINITY;
      f[id].see(e, x, 1), d1[id].see(e, x, 1), d2[id].see(e, x, 1);
      return;
    }
    // Screened against the double path (relative error 2^-32: 1/256 ulp); the double-double
    // path decides wherever an error may exceed 0.45 ulp.
    const Derivatives<double> c = f32_via_f64<A, kNeedF | kNeedD1 | kNeedD2>(double(x));
    const Scales s = term_scales(x, A);
    double ef = ulp_error(y[0], c.f, 0, float(c.f));
    double e1 = ulp_error(dd[0], c.d1, s.d1, float(c.d1));
    double e2 = ulp_error(dd[1], c.d2, s.d2, float(c.d2));
    Derivatives<double> r = c;
    if (ef > 0.45 || e1 > 0.45 || e2 > 0.45) {
      r = f64_double_double<A, kNeedF | kNeedD1 | kNeedD2>(double(x));
      ef = ulp_error(y[0], r.f, 0, float(c.f));
      e1 = ulp_error(dd[0], r.d1, s.d1, float(c.d1));
      e2 = ulp_error(dd[1], r.d2, s.d2, float(c.d2));
    }
    f[id].see(ef, x, r.f);
    d1[id].see(e1, x, r.d1);
    d2[id].see(e2, x, r.d2);
  });
  for (int id = 1; id < kThreads; ++id) f[0].merge(f[id]), d1[0].merge(d1[id]), d2[0].merge(d2[id]);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printf("%s, every %llu-th float (%.0f s):\n", variant_name(A), (unsigned long long)step, seconds);
  f[0].print("f");
  d1[0].print("f'");
  d2[0].print("f''");
  fflush(stdout);
}

// ---------------------------------------------------------------------------------------------
// Passes, sampled.

// x + b as an exact pair of doubles, and the exact f, f' there: the double-double path's at the
// rounded sum, corrected to first order by the low part (far below a float's ulp otherwise).
template <Approximate A>
Derivatives<double> at_sum(float x, float b) {
  const double s = double(x) + double(b);
  const double lo = isfinite(s) ? (double(x) - s) + double(b) : 0.0;  // exact: |s| >> 2^-1074
  Derivatives<double> r = f64_double_double<A, kNeedF | kNeedD1 | kNeedD2>(s);
  if (lo != 0 && isfinite(r.f) && r.d1 != 0) r.f += r.d1 * lo;
  if (lo != 0 && isfinite(r.d1) && r.d2 != 0) r.d1 += r.d2 * lo;
  return r;
}

// A float of any binade (or a special value, one in 32 draws), either sign.
float random_float(std::mt19937_64& rng) {
  const uint64_t u = rng();
  switch (u & 31) {
    case 0: return (u & 32) ? -0.0f : 0.0f;
    case 1: return (u & 32) ? -INFINITY : INFINITY;
    case 2: return from_bits(uint32_t(u >> 32) | 0x7FC00000u);  // NaN
    case 3: return from_bits(uint32_t(u >> 32) & 0x807FFFFFu);  // subnormal
    default: return from_bits(uint32_t(u >> 32) % 0x7F800000u | uint32_t(u & 0x80000000u));
  }
}

// A GELU argument: mostly where the results vary (|x| < 20), sometimes any float.
float random_argument(std::mt19937_64& rng) {
  const uint64_t u = rng();
  if ((u & 7) == 0) return random_float(rng);
  std::uniform_real_distribution<float> wide(-20.0f, 20.0f);
  const float x = wide(rng);
  return (u & 8) ? x : x * from_bits(uint32_t(127 - (u >> 4) % 40) << 23);  // down to 2^-39 x
}

// A bias for x: the same binade, a few binades apart, far apart (a sum float cannot hold), or
// the negation (a zero sum), or any float.
float random_bias(std::mt19937_64& rng, float x) {
  const uint64_t u = rng();
  const int shift = int((u >> 8) % 64) - 32;
  std::uniform_real_distribution<float> unit(-2.0f, 2.0f);
  switch (u & 7) {
    case 0: return -x;
    case 1: return random_float(rng);
    case 2: return ldexpf(unit(rng), shift - 20) * (fabsf(x) + 1e-30f);
    default: return ldexpf(unit(rng), shift / 8) * (fabsf(x) + 1e-3f);
  }
}

// An operand (gradient, up): mostly of moderate size, sometimes near overflow or underflow,
// zero, infinite or NaN.
float random_operand(std::mt19937_64& rng) {
  const uint64_t u = rng();
  std::uniform_real_distribution<float> unit(-4.0f, 4.0f);
  switch (u & 7) {
    case 0: return random_float(rng);
    case 1: return unit(rng) * 0x1p120f * from_bits(uint32_t(127 + (u >> 4) % 8) << 23);
    case 2: return unit(rng) * 0x1p-120f * from_bits(uint32_t(127 - (u >> 4) % 30) << 23);
    default: return unit(rng);
  }
}

// Error in ulps of max(|exact|, factor * scale) (factor: the other operands' product), infinite
// for a wrong special value or zero sign. Where exact is zero, and with an infinite or NaN
// operand, the result must be the double path's (its conventions: inf times a derivative's tiny
// value beyond the saturation is inf, where the double-double path's exact zero would give NaN),
// or else the exact value rounded (the double path's clamps, |x| = 70 or 37, leave f(x) up
// nonzero for |up| > 1e20 where the exact product is far below the floats). GELU_CHECK_SHOW=N
// prints the first N errors above 2 ulps.
double pass_error(float y, double exact, double factor_scale, const char* pass, const float* in,
                  int inputs, float special, int unused = -1) {
  bool finite = true;
  for (int i = 0; i < inputs; ++i) finite = finite && (i == unused || isfinite(in[i]));
  const float rounded = float(exact);
  const bool conventional = memcmp(&y, &special, 4) == 0 || (y != y && special != special) ||
                            memcmp(&y, &rounded, 4) == 0;
  const double e = finite && exact != 0 ? ulp_error(y, exact, fabs(factor_scale))
                                        : conventional ? 0.0 : INFINITY;
  static std::atomic<int> shown{0};
  static const int show = getenv("GELU_CHECK_SHOW") ? atoi(getenv("GELU_CHECK_SHOW")) : 0;
  if (e > 2.0 && shown++ < show) {
    printf("    %s(", pass);
    for (int i = 0; i < inputs; ++i) printf("%s%a", i ? ", " : "", in[i]);
    printf(") = %a, exact %a (%.3g ulp)\n", y, exact, e);
  }
  return e;
}

template <Approximate A>
void check_passes(uint64_t samples) {
  const auto start = std::chrono::steady_clock::now();
  constexpr int kPasses = 6;
  const char* names[kPasses] = {"bias_gelu", "bias_gelu backward", "geglu", "geglu backward dgate",
                                "geglu backward dup", "double backward gx"};
  std::vector<std::vector<Stat>> stats(kThreads, std::vector<Stat>(kPasses + 1));
  std::vector<std::thread> pool;
  for (int id = 0; id < kThreads; ++id) {
    pool.emplace_back([&, id] {
      std::mt19937_64 rng(12345 + id);
      std::vector<Stat>& st = stats[id];
      for (uint64_t i = id; i < samples; i += kThreads) {
        const float x = random_argument(rng), b = random_bias(rng, x);
        const float g = random_operand(rng), u = random_operand(rng);
        {  // bias forward and backward
          const Derivatives<double> r = at_sum<A>(x, b);
          const Scales s = term_scales(double(x) + double(b), A);
          float out[1];
          const float in_f[2] = {x, b}, in_b[3] = {g, x, b};
          CheckedPass<Pass::kBiasForward, A>::apply(in_f, out);
          st[0].see(pass_error(out[0], r.f, 0, "bias_gelu", in_f, 2,
                               double_path<Pass::kBiasForward, A>(in_f, 0)), x, r.f);
          CheckedPass<Pass::kBiasBackward, A>::apply(in_b, out);
          const double exact = double(g) * r.d1;
          st[1].see(pass_error(out[0], exact, double(g) * s.d1, "bias_gelu_backward", in_b, 3,
                               double_path<Pass::kBiasBackward, A>(in_b, 0)), x, exact);
        }
        {  // geglu forward and backward, double backward
          const Derivatives<double> r = f64_double_double<A, kNeedF | kNeedD1 | kNeedD2>(double(x));
          const Scales s = term_scales(double(x), A);
          float out[2];
          const float in_f[2] = {x, u}, in_b[3] = {g, x, u}, in_dd[3] = {u, g, x};
          CheckedPass<Pass::kGegluForward, A>::apply(in_f, out);
          double exact = r.f * double(u);
          st[2].see(pass_error(out[0], exact, 0, "geglu", in_f, 2,
                               double_path<Pass::kGegluForward, A>(in_f, 0)), x, exact);
          CheckedPass<Pass::kGegluBackward, A>::apply(in_b, out);
          exact = double(g) * double(u) * r.d1;
          st[3].see(pass_error(out[0], exact, double(g) * double(u) * s.d1, "geglu_backward[0]",
                               in_b, 3, double_path<Pass::kGegluBackward, A>(in_b, 0)), x, exact);
          exact = double(g) * r.f;
          st[4].see(pass_error(out[1], exact, 0, "geglu_backward[1]", in_b, 3,
                               double_path<Pass::kGegluBackward, A>(in_b, 1), 2), x, exact);
          CheckedPass<Pass::kDoubleBackward, A>::apply(in_dd, out);
          exact = double(u) * double(g) * r.d2;
          st[5].see(pass_error(out[1], exact, double(u) * double(g) * s.d2, "double_backward[1]",
                               in_dd, 3, double_path<Pass::kDoubleBackward, A>(in_dd, 1)), x, exact);
          exact = double(u) * r.d1;
          st[6].see(pass_error(out[0], exact, double(u) * s.d1, "double_backward[0]", in_dd, 3,
                               double_path<Pass::kDoubleBackward, A>(in_dd, 0), 1), x, exact);
        }
      }
    });
  }
  for (auto& t : pool) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  printf("%s passes, %llu samples (%.0f s):\n", variant_name(A), (unsigned long long)samples,
         seconds);
  const char* all[kPasses + 1] = {names[0], names[1], names[2], names[3], names[4], names[5],
                                  "double backward ggrad"};
  for (int p = 0; p <= kPasses; ++p) {
    for (int id = 1; id < kThreads; ++id) stats[0][p].merge(stats[id][p]);
    printf(" %s\n", all[p]);
    stats[0][p].print("");
  }
  fflush(stdout);
}

template <Approximate A>
void check(uint64_t step, const std::string& what) {
  if (what != "passes") check_functions<A>(step);
  if (what != "functions") check_passes<A>((uint64_t(1) << 32) / step / 16 + 100000);
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t step = argc > 1 ? strtoull(argv[1], nullptr, 0) : 1;
  const std::string which = argc > 2 ? argv[2] : "all";
  const std::string what = argc > 3 ? argv[3] : "both";
  if (which == "all" || which == "none") check<Approximate::kNone>(step, what);
  if (which == "all" || which == "tanh") check<Approximate::kTanh>(step, what);
  if (which == "all" || which == "sigmoid") check<Approximate::kSigmoid>(step, what);
  return 0;
}
