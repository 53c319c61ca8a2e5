// Checks narrow16_relative, the GPU's forms of the narrow path on the AVX-512 CPU's float lanes
// (math/narrow16.h, GpuNarrowPass; the 16-bit bias passes), against long double:
// - its exponential and reciprocal (cpu/simd_avx512.h, gpu_exp2 and gpu_reciprocal) at every float
//   argument they take: the forms' bound, kGpuNarrowRelativeError, holds with the GPU's
//   ex2.approx within 2 units in the last place of the correctly rounded result and rcp.approx
//   within 1, which the bound analysis reads as 2.5 and 1.5 units from the exact value
//   (math/gpu_approximate.h), so those are the limits here. 2^u for every float u in [-126, 0]
//   (the forms take u down to -96), 1/d for every float d in [1, 16) (they take [1, 2] and
//   [2.5, 11]);
// - then f and f' of each form, computed in those lanes, at every `step`-th float of the bias
//   sums' core domains, each term's relative error against the term bound, as
//   tools/check_narrow_bounds.cpp -DGELU_DEVICE_FORMS measures the GPU's (there with the
//   instructions' stand-ins erring by their maximum).
// Needs an AVX-512 CPU.
//
//   g++ -O2 -std=c++17 -ffp-contract=off -I csrc tools/check_cpu_relative.cpp \
//       -o /tmp/check_cpu_relative -lpthread && /tmp/check_cpu_relative [step]
#include <math.h>

#include <cstdint>
#include <cstdio>
#include <vector>

// The whole file for AVX-512: its lambdas call the lanes' always-inline functions.
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,f16c")
#define GELU_ISA avx512
#include "cpu/simd_avx512.h"

#include "checking.h"
#include "exact_reference.h"

using namespace gelu_ext;
using namespace gelu_ext::tools;
using ld = long double;

namespace {

// |value - exact| in units in the last place of exact's binade (a float's: 2^(e - 23)).
double ulps(float value, ld exact) {
  int e;
  frexpl(exact, &e);  // exact = m 2^e, m in [1/2, 1)
  return static_cast<double>(fabsl(static_cast<ld>(value) - exact) / ldexpl(1.0L, e - 24));
}

// The largest error of `apply` over the floats with bits [first, end), 16 at a time, and where.
template <class Apply, class Exact>
void check(const char* name, uint32_t first, uint32_t end, double limit, Apply apply,
           Exact exact) {
  std::vector<double> worst(kThreads);
  std::vector<float> at(kThreads);
  sweep(first / 16, (uint64_t(end) + 15) / 16, 1, [&](uint64_t block, int id) {
    alignas(64) float in[16], out[16];
    for (int j = 0; j < 16; ++j) in[j] = from_bits(static_cast<uint32_t>(block * 16 + j));
    _mm512_store_ps(out, apply(cpu::avx512::VecF(_mm512_load_ps(in))).v);
    for (int j = 0; j < 16; ++j) {
      const uint32_t bits = static_cast<uint32_t>(block * 16 + j);
      if (bits < first || bits >= end) continue;
      const double e = ulps(out[j], exact(static_cast<ld>(in[j])));
      if (!(e <= worst[id])) worst[id] = e, at[id] = in[j];  // NaN counts as the worst
    }
  });
  double w = 0;
  float x = 0;
  for (int id = 0; id < kThreads; ++id)
    if (!(worst[id] <= w)) w = worst[id], x = at[id];
  printf("%-10s largest error %.3f ulp (limit %.1f) at %.9g: %s\n", name, w, limit, x,
         w <= limit ? "ok" : "FAILS");
}

// f and f' of form A in the CPU's lanes at the floats of both signs whose magnitude bits are
// multiples of step, up to the core domain's end: the largest relative error of each term to its
// value, as a fraction of the term bound (gpu_term_relative_error, as check_narrow_bounds.cpp
// measures the GPU's), where the element is usable.
template <Approximate A>
void check_forms(uint64_t step) {
  using cpu::avx512::VecF;
  const float core = A == Approximate::kNone ? math::kGpuCoreExact : math::kGpuCoreLogistic;
  const uint64_t top = bits_of(core);
  std::vector<double> worst[2] = {std::vector<double>(kThreads), std::vector<double>(kThreads)};
  std::vector<float> at[2] = {std::vector<float>(kThreads), std::vector<float>(kThreads)};
  std::vector<uint64_t> usable(kThreads);
  sweep(0, top / (16 * step) + 1, 1, [&](uint64_t block, int id) {
    for (int sign = 0; sign < 2; ++sign) {
      alignas(64) float x[16], f[16], d1[16];
      for (int j = 0; j < 16; ++j) {
        const uint64_t bits = (block * 16 + j) * step;
        x[j] = bits <= top ? from_bits(static_cast<uint32_t>(bits) | (sign ? 0x80000000u : 0u))
                           : 0.0f;
      }
      // Each term as the pass that takes it computes it: the forward needs f alone, and the
      // logistic forms refine their reciprocal only for f'.
      const VecF lanes(_mm512_load_ps(x));
      const auto forward = math::gpu_terms<A, 24, math::kNeedF>(lanes);
      const auto backward = math::gpu_terms<A, 24, math::kNeedD1>(lanes);
      _mm512_store_ps(f, forward.f.v);
      _mm512_store_ps(d1, backward.d1.v);
      for (int j = 0; j < 16; ++j) {
        if ((block * 16 + j) * step > top || !((forward.usable.m >> j) & 1)) continue;
        ++usable[id];
        const tools::Exact exact = tools::exact(static_cast<ld>(x[j]), A);
        for (int k = 0; k < 2; ++k) {
          const float value = k ? d1[j] : f[j];
          const ld want = k ? exact.d1 : exact.f;
          const double relative = gpu_term_relative_error(value, want);
          if (relative < 0) continue;
          if (!(relative / kGpuTermBound <= worst[k][id]))
            worst[k][id] = relative / kGpuTermBound, at[k][id] = x[j];
        }
      }
    }
  });
  uint64_t count = 0;
  for (uint64_t u : usable) count += u;
  printf("%-8s %llu arguments:", variant_name(A), static_cast<unsigned long long>(count));
  for (int k = 0; k < 2; ++k) {
    double w = 0;
    float x = 0;
    for (int id = 0; id < kThreads; ++id)
      if (!(worst[k][id] <= w)) w = worst[k][id], x = at[k][id];
    printf("  %s: error/bound %.3f (x=%.8g)%s", k ? "f'" : "f", w, x, w < 1 ? "" : " FAILS");
  }
  printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  const uint64_t step = argc > 1 ? strtoull(argv[1], nullptr, 10) : 16;
  using cpu::avx512::VecF;
  // -0 down to -126: the bit patterns of magnitudes 0 to 126, negated.
  const uint32_t top = bits_of(126.0f) + 1;
  check("exp2", 0x80000000u, 0x80000000u + top, 2.5,
        [](VecF u) { return cpu::avx512::gpu_exp2(u); }, [](ld u) { return exp2l(u); });
  check("reciprocal", bits_of(1.0f), bits_of(16.0f), 1.5,
        [](VecF d) { return cpu::avx512::gpu_reciprocal(d); }, [](ld d) { return 1.0L / d; });
  printf("the forms at every %llu-th float of the bias sums' core domains:\n",
         static_cast<unsigned long long>(step));
  check_forms<Approximate::kNone>(step);
  check_forms<Approximate::kTanh>(step);
  check_forms<Approximate::kSigmoid>(step);
  return 0;
}
