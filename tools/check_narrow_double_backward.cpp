// Checks the narrow path of the 16-bit double backward (math/narrow16.h: narrow_derivatives):
//  1. bounds: at every float x of each form's core domain (or every step-th), f'' lies within its
//     bound of the exact value (the double-double path of gelu_math.h), and f' is bit for bit
//     narrow_value_and_derivative's (whose bound tools/check_narrow_bounds.cpp checks); prints the
//     largest error / bound.
//  2. results: at every float16 and bfloat16 x, f' and f'' (gg = grad = 1), and the pass's outputs
//     gg f' and gg grad f'' for random 16-bit gg and grad (every x with 64 pairs, of every binade,
//     zeros, infinities and NaN among them): wherever the rounding test passes (value -+ bound
//     round to one 16-bit value), the result must be the exact value correctly rounded; prints how
//     often the test fails (the double path then redoes the element), over all 16-bit inputs and
//     over normal data (x, gg, grad ~ N(0, 1)).
//
//   g++ -O2 -std=c++17 -ffp-contract=off -I csrc tools/check_narrow_double_backward.cpp \
//       -o /tmp/check_narrow_dd -lpthread && /tmp/check_narrow_dd [step [none|tanh|sigmoid|all]]
//
// The portable code is checked (scalar float, IEEE division, a polynomial exp); on the GPU the
// narrow path's exp and reciprocal are the approximate instructions within 2^-22, which the bound's
// margin covers as it does for f' (gelu_math.h, kNarrowRelativeError).
#include <math.h>

#include <atomic>
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

// The 16-bit formats: their bits from a float rounded to nearest even, and back.
struct BFloat16 {
  static uint16_t round(float f) {
    if (f != f) return 0x7FC0;
    const uint32_t b = bits_of(f);
    return uint16_t((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
  }
  static float value(uint16_t h) { return from_bits(uint32_t(h) << 16); }
  static const char* name() { return "bfloat16"; }
};
struct Float16 {
  static uint16_t round(float f) {
    const uint32_t b = bits_of(f), sign = (b >> 16) & 0x8000u;
    const float a = fabsf(f);
    if (a != a) return 0x7E00;
    if (a >= 65520.0f) return uint16_t(sign | 0x7C00u);  // beyond the largest half + ulp/2
    if (a < 0x1p-14f) {                                    // subnormal: multiples of 2^-24
      const float q = nearbyintf(a * 0x1p24f);             // round half even
      return uint16_t(sign | uint32_t(q));
    }
    uint32_t m = bits_of(a);
    m += 0xFFFu + ((m >> 13) & 1u);                        // round the 13 low bits, half even
    return uint16_t(sign | (((m >> 13) - ((127 - 15) << 10)) & 0x7FFFu));
  }
  static float value(uint16_t h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 0x1F, m = h & 0x3FF;
    if (e == 0) return from_bits(sign) + (sign ? -1.0f : 1.0f) * ldexpf(float(m), -24);
    if (e == 31) return from_bits(sign | 0x7F800000u | (m << 13));
    return from_bits(sign | ((e + 127 - 15) << 23) | (m << 13));
  }
  static const char* name() { return "float16"; }
};

// The exact value correctly rounded to the 16-bit type: round to odd to float, then to nearest.
template <class T>
uint16_t correctly_rounded(double exact) {
  return T::round(round_to_odd_float(exact));
}

template <Approximate A>
void check_bounds(uint64_t step) {
  const float core = narrow_core<A>();
  const uint64_t top = bits_of(core);
  std::vector<double> worst2(kThreads), worst1(kThreads);
  std::vector<float> at2(kThreads);
  std::atomic<uint64_t> mismatches{0};
  for_each_float(0, top + 1, step, [&](float x, int id) {
    Bounded<float> d1, d2, f, e1;
    narrow_derivatives<A>(x, d1, d2);
    narrow_value_and_derivative<A>(x, f, e1);
    if (bits_of(d1.value) != bits_of(e1.value) || bits_of(d1.error) != bits_of(e1.error))
      ++mismatches;
    const Derivatives<double> r = f64_double_double<A, kNeedD1 | kNeedD2>(double(x));
    const double ratio = fabs(double(d2.value) - r.d2) / double(d2.error);
    if (ratio > worst2[id]) worst2[id] = ratio, at2[id] = x;
    worst1[id] = fmax(worst1[id], fabs(double(d1.value) - r.d1) / double(d1.error));
  });
  double w2 = 0, w1 = 0;
  float x2 = 0;
  for (int id = 0; id < kThreads; ++id) {
    if (worst2[id] > w2) w2 = worst2[id], x2 = at2[id];
    w1 = fmax(w1, worst1[id]);
  }
  printf("%-8s |x| <= %g, every %llu-th float: f'' max error/bound %.3f (x = %.8g); f' %.3f; f' "
         "differing from the narrow path's: %llu\n",
         variant_name(A), core, (unsigned long long)step, w2, x2, w1,
         (unsigned long long)mismatches.load());
}

// Outcome counts of the rounding test over a set of inputs.
struct Tally {
  uint64_t kept = 0, redone = 0, wrong = 0, differs = 0;
  // Kept results must also be the double path's (its conventions for zeros).
  void compare(const Bounded<float>& b, double double_path, bool is_float16) {
    const uint16_t lo = is_float16 ? Float16::round(b.value - b.error)
                                   : BFloat16::round(b.value - b.error);
    const uint16_t hi = is_float16 ? Float16::round(b.value + b.error)
                                   : BFloat16::round(b.value + b.error);
    if (lo != hi) return;
    const uint16_t want = is_float16 ? correctly_rounded<Float16>(double_path)
                                     : correctly_rounded<BFloat16>(double_path);
    const uint16_t got = is_float16 ? Float16::round(b.value) : BFloat16::round(b.value);
    if (got != want && !(double_path != double_path && b.value != b.value)) {
      if (differs < 4 && getenv("GELU_CHECK_SHOW"))
        printf("    kept %04x = %a +- %a, double path %04x (%a)\n", got, b.value, b.error, want,
               double_path);
      ++differs;
    }
  }
  void see(const Bounded<float>& b, double exact, bool is_float16, bool print,
           const float* in = nullptr) {
    const uint16_t lo = is_float16 ? Float16::round(b.value - b.error)
                                   : BFloat16::round(b.value - b.error);
    const uint16_t hi = is_float16 ? Float16::round(b.value + b.error)
                                   : BFloat16::round(b.value + b.error);
    if (lo != hi) {
      ++redone;
      return;
    }
    ++kept;
    const uint16_t want = is_float16 ? correctly_rounded<Float16>(exact)
                                     : correctly_rounded<BFloat16>(exact);
    const uint16_t got = is_float16 ? Float16::round(b.value) : BFloat16::round(b.value);
    const bool nan = is_float16 ? (want & 0x7C00) == 0x7C00 && (want & 0x3FF)
                                : (want & 0x7F80) == 0x7F80 && (want & 0x7F);
    if (got != want && !(nan && got == lo)) {
      if (print && wrong < 5) {
        printf("    kept %04x = %a +- %a, correctly rounded %04x (exact %.17g)", got, b.value,
               b.error, want, exact);
        if (in) printf(" at gg %a, grad %a, x %a", in[0], in[1], in[2]);
        printf("\n");
      }
      ++wrong;
    }
  }
  double redone_share() const { return double(redone) / double(kept + redone); }
};

// The double path's double backward (gelu_math.h's PassMath, 16-bit data in double).
template <Approximate A>
void double_path(const float* in, double* out) {
  const double a[3] = {in[0], in[1], in[2]};
  F32ViaF64Pass<Pass::kDoubleBackward, A>::apply(a, out);
}

// The magnitudes of the terms of f' and f'' (gelu_ext.reference.derivative_scales), in double.
template <Approximate A>
void term_scales(double x, double& d1, double& d2) {
  d1 = d2 = 0;
  if (!(fabs(x) < 60)) return;
  if (A == Approximate::kNone) {
    const double pdf = exp(-0.5 * x * x) * 0.39894228040143267794;
    d1 = 0.5 * erfc(-x / sqrt(2.0)) + fabs(x * pdf), d2 = pdf * (2 + x * x);
    return;
  }
  const double s = A == Approximate::kTanh ? kTanhS1 * x + kTanhS3 * x * x * x : 1.702 * x;
  const double ds = A == Approximate::kTanh ? kTanhS1 + 3 * kTanhS3 * x * x : 1.702;
  const double d2s = A == Approximate::kTanh ? 6 * kTanhS3 * x : 0;
  const double e = exp(-fabs(s)), pq = e / ((1 + e) * (1 + e));
  const double p = s >= 0 ? 1 / (1 + e) : e / (1 + e), q = 1 - p;
  d1 = p + fabs(x * ds * pq), d2 = fabs(2 * ds * pq) + fabs(x * pq * ((q - p) * ds * ds + d2s));
}

// The alternative: the float32 path's double backward (csrc/math/f32_via_f32.h, every result
// within 2 ulps of its terms' magnitude, checked at every float32 input), with a bound of 2 float32
// ulps of the other operands times that magnitude.
template <Approximate A>
void float32_path(const float* in, Bounded<float>* out) {
  float r[2];
  F32ViaF32Pass<Pass::kDoubleBackward, A>::apply(in, r);
  double s1, s2;
  term_scales<A>(in[2], s1, s2);
  const double m[2] = {fabs(double(in[0])) * s1, fabs(double(in[0]) * double(in[1])) * s2};
  for (int k = 0; k < 2; ++k) {
    const double mag = fmax(m[k], fabs(double(r[k])));
    int e;
    frexp(mag, &e);
    out[k] = Bounded<float>{r[k], float(2 * ldexp(1.0, std::max(e - 24, -149)))};
  }
}

template <class T, Approximate A>
void check_results() {
  constexpr bool kHalf = std::is_same<T, Float16>::value;
  Tally d1, d2, out0, out1, normal0, normal1, alt0, alt1;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> gauss(0.0f, 1.0f);
  auto random16 = [&]() -> float {
    const uint64_t u = rng();
    return T::value(uint16_t(u));  // any 16-bit value: every binade, zeros, infinities, NaN
  };
  for (uint32_t h = 0; h < 65536; ++h) {
    const float x = T::value(uint16_t(h));
    const Derivatives<double> r = f64_double_double<A, kNeedD1 | kNeedD2>(double(x));
    Bounded<float> out[2];
    const float unit[3] = {1.0f, 1.0f, x};
    NarrowPass<Pass::kDoubleBackward, A>::apply(unit, out);
    d1.see(out[0], r.d1, kHalf, true);
    d2.see(out[1], r.d2, kHalf, true);
    double dp[2];
    double_path<A>(unit, dp);
    d1.compare(out[0], dp[0], kHalf);
    d2.compare(out[1], dp[1], kHalf);
    for (int k = 0; k < 64; ++k) {
      const float gg = random16(), g = random16();
      const float in[3] = {gg, g, x};
      NarrowPass<Pass::kDoubleBackward, A>::apply(in, out);
      out0.see(out[0], double(gg) * r.d1, kHalf, true, in);
      out1.see(out[1], double(gg) * double(g) * r.d2, kHalf, true, in);
      double_path<A>(in, dp);
      out0.compare(out[0], dp[0], kHalf);
      out1.compare(out[1], dp[1], kHalf);
    }
  }
  for (int k = 0; k < 1 << 21; ++k) {  // normal data: x, gg, grad ~ N(0, 1), rounded to 16 bits
    const float x = T::value(T::round(gauss(rng))), gg = T::value(T::round(gauss(rng))),
                g = T::value(T::round(gauss(rng)));
    const Derivatives<double> r = f64_double_double<A, kNeedD1 | kNeedD2>(double(x));
    Bounded<float> out[2];
    const float in[3] = {gg, g, x};
    NarrowPass<Pass::kDoubleBackward, A>::apply(in, out);
    normal0.see(out[0], double(gg) * r.d1, kHalf, true);
    normal1.see(out[1], double(gg) * double(g) * r.d2, kHalf, true);
    float32_path<A>(in, out);
    alt0.see(out[0], double(gg) * r.d1, kHalf, true);
    alt1.see(out[1], double(gg) * double(g) * r.d2, kHalf, true);
  }
  printf("%-8s %-8s wrong results kept: f' %llu, f'' %llu, gg f' %llu, gg grad f'' %llu, normal "
         "data %llu + %llu; kept results that differ from the double path's: %llu\n", T::name(),
         variant_name(A), (unsigned long long)d1.wrong, (unsigned long long)d2.wrong,
         (unsigned long long)out0.wrong, (unsigned long long)out1.wrong,
         (unsigned long long)normal0.wrong, (unsigned long long)normal1.wrong,
         (unsigned long long)(d1.differs + d2.differs + out0.differs + out1.differs));
  printf("                  redone by the double path: f' %.3f%%, f'' %.3f%% of the 65536 inputs; "
         "gg f' %.3f%%, gg grad f'' %.3f%% of 4.2M random 16-bit triples; normal data %.4f%%, "
         "%.4f%%\n",
         100 * d1.redone_share(), 100 * d2.redone_share(), 100 * out0.redone_share(),
         100 * out1.redone_share(), 100 * normal0.redone_share(), 100 * normal1.redone_share());
  printf("                  the float32 path with a 2-ulp bound instead, normal data: redone %.4f%%, "
         "%.4f%%, wrong %llu + %llu\n", 100 * alt0.redone_share(), 100 * alt1.redone_share(),
         (unsigned long long)alt0.wrong, (unsigned long long)alt1.wrong);
}

template <Approximate A>
void check(uint64_t step) {
  check_bounds<A>(step);
  check_results<Float16, A>();
  check_results<BFloat16, A>();
  fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const uint64_t step = argc > 1 ? strtoull(argv[1], nullptr, 0) : 1;
  const std::string which = argc > 2 ? argv[2] : "all";
  if (which == "all" || which == "none") check<Approximate::kNone>(step);
  if (which == "all" || which == "tanh") check<Approximate::kTanh>(step);
  if (which == "all" || which == "sigmoid") check<Approximate::kSigmoid>(step);
}
