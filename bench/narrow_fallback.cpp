// How often the 16-bit narrow path sends an element to the double path, for bench/gpu_model.py:
// the rounding test of the CUDA kernels applied to the narrow path's results (math/narrow16.h) on
// normally distributed operands, per pass, form and dtype; with -DGELU_DEVICE_FORMS, the GPU's
// forms and test (their approximate instructions' stand-ins err by the documented maximum), else
// the CPU's (value - bound and value + bound round to the same 16-bit value). Prints, per case, the share of elements that fail and the share of warps (32 consecutive
// elements) with a failing element, which run the fallback on a GPU; then the same two shares
// for the elements that reach the double path where FP64 is slow (the forward's float-path step
// settles most of the others there).
//
//   g++ -O2 -std=c++17 -mf16c -ffp-contract=off -DGELU_DEVICE_FORMS -I csrc \
//       bench/narrow_fallback.cpp -o narrow_fallback
//   ./narrow_fallback [elements per case] [sigma]
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "gelu_math.h"

using gelu_ext::Approximate;
using gelu_ext::Pass;
namespace math = gelu_ext::math;

namespace {

uint32_t bits_of(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return u;
}
float from_bits(uint32_t u) {
  float v;
  std::memcpy(&v, &u, 4);
  return v;
}

// Round to nearest even, as __float2bfloat16_rn and __float2half_rn.
uint16_t to_bfloat16(float v) {
  const uint32_t u = bits_of(v);
  if (std::isnan(v)) return 0x7fc0;
  return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
uint16_t to_float16(float v) { return _cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT); }
float from_bfloat16(uint16_t h) { return from_bits(static_cast<uint32_t>(h) << 16); }
float from_float16(uint16_t h) { return _cvtsh_ss(h); }

// Whether the narrow path settles an element: the GPU's forms and rounding test where built with
// -DGELU_DEVICE_FORMS (as bench/gpu_model.py builds this), else the CPU's forms and the test of
// value -+ bound.
template <Pass P, Approximate A, bool kBFloat16>
bool settled(const float* in, uint16_t (*round16)(float)) {
  constexpr int kOutputs = gelu_ext::pass_rule(P).outputs;
#if defined(GELU_DEVICE_FORMS)
  constexpr int kArgBits = gelu_ext::pass_rule(P).argument_is_sum ? 24 : kBFloat16 ? 8 : 11;
  float out[kOutputs];
  bool ok = math::GpuNarrowPass<P, A, kArgBits>::apply(in, out);
  for (int k = 0; k < kOutputs; ++k) ok &= math::gpu_rounds_surely<kBFloat16>(out[k]);
  (void)round16;
  // The fallback's second look (cuda/gelu_cuda.cu's apply_second_look), whose cost is left out
  // of the counts: the bias passes' large positive sums, settled without f or f', and
  // float16's subnormal results.
  float settled_value;
  if constexpr (P == Pass::kBiasForward || P == Pass::kBiasBackward)
    ok |= math::settles_large_sum<P, A, kBFloat16>(in, settled_value);
  if (!kBFloat16 && !ok) {
    ok = math::GpuNarrowPass<P, A, kArgBits>::apply(in, out);
    for (int k = 0; k < kOutputs; ++k) ok &= math::gpu_rounds_surely_anywhere<false>(out[k]);
  }
  return ok;
#else
  math::Bounded<float> out[kOutputs];
  math::NarrowPass<P, A>::apply(in, out);
  bool ok = true;
  for (int k = 0; k < kOutputs; ++k)
    ok &= round16(out[k].value - out[k].error) == round16(out[k].value + out[k].error);
  return ok;
#endif
}

// Whether the float path's step settles an element the narrow path left: route.h's
// float_path_first, the 16-bit forward on the GPUs whose FP64 is slow (gelu_cuda.cu's
// apply_float_path); other passes go straight to the double path.
template <Pass P, Approximate A, bool kBFloat16>
bool settled_by_float_path(const float* in) {
  if constexpr (P != Pass::kForward) {
    (void)in;
    return false;
  } else {
    float out[1];
    math::F32ViaF32Pass<P, A>::apply(in, out);
    return math::float_rounds_surely<kBFloat16, 1>(out[0]);
  }
}

template <Pass P, Approximate A, bool kBFloat16>
void count(long n, float sigma, const char* pass, const char* form) {
  constexpr int kInputs = gelu_ext::pass_rule(P).inputs;
  uint16_t (*round16)(float) = kBFloat16 ? to_bfloat16 : to_float16;
  auto widen = [](uint16_t h) { return kBFloat16 ? from_bfloat16(h) : from_float16(h); };
  std::mt19937_64 rng(12345);
  std::normal_distribution<float> normal(0.0f, sigma);
  long failed = 0, warps_failed = 0, doubled = 0, warps_doubled = 0;
  bool warp_failed = false, warp_doubled = false;
  for (long i = 0; i < n; ++i) {
    float in[kInputs];
    for (int k = 0; k < kInputs; ++k) in[k] = widen(round16(normal(rng)));
    const bool ok = settled<P, A, kBFloat16>(in, round16);
    const bool to_double = !ok && !settled_by_float_path<P, A, kBFloat16>(in);
    failed += !ok;
    warp_failed |= !ok;
    doubled += to_double;
    warp_doubled |= to_double;
    if (i % 32 == 31) {
      warps_failed += warp_failed;
      warps_doubled += warp_doubled;
      warp_failed = warp_doubled = false;
    }
  }
  const double warps = static_cast<double>(n / 32);
  std::printf("%s\t%s\t%s\t%.6f\t%.6f\t%.6f\t%.6f\n", pass, form,
              kBFloat16 ? "bfloat16" : "float16", static_cast<double>(failed) / n,
              warps_failed / warps, static_cast<double>(doubled) / n, warps_doubled / warps);
}

template <Pass P, bool kBFloat16>
void forms(long n, float sigma, const char* pass) {
  count<P, Approximate::kNone, kBFloat16>(n, sigma, pass, "none");
  count<P, Approximate::kTanh, kBFloat16>(n, sigma, pass, "tanh");
  count<P, Approximate::kSigmoid, kBFloat16>(n, sigma, pass, "sigmoid");
}

template <bool kBFloat16>
void passes(long n, float sigma) {
  forms<Pass::kForward, kBFloat16>(n, sigma, "forward");
  forms<Pass::kBackward, kBFloat16>(n, sigma, "backward");
  forms<Pass::kBiasForward, kBFloat16>(n, sigma, "bias_gelu");
  forms<Pass::kBiasBackward, kBFloat16>(n, sigma, "bias_gelu backward");
  forms<Pass::kGegluForward, kBFloat16>(n, sigma, "geglu");
  forms<Pass::kGegluBackward, kBFloat16>(n, sigma, "geglu backward");
}

}  // namespace

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 1L << 20;
  const float sigma = argc > 2 ? static_cast<float>(std::atof(argv[2])) : 1.0f;
  passes<true>(n, sigma);
  passes<false>(n, sigma);
  return 0;
}
