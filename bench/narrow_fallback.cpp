// How often the 16-bit narrow path leaves an element to its fallback, and what that costs the
// CUDA kernels' warps, for bench/gpu_model.py: the rounding test of the kernels applied to the
// narrow path's results (math/narrow16.h) on normally distributed operands, per pass, form and
// dtype; with -DGELU_DEVICE_FORMS, the GPU's forms and test (their approximate instructions'
// stand-ins err by the documented maximum), else the CPU's (value - bound and value + bound round
// to the same 16-bit value).
//
// The kernels queue each lane's vectors of a round (two 16-byte vectors, 16 elements: 32 vectors
// apart in the contiguous kernels, in two rows in the fused ops' rows kernels) that hold an unsure
// element in its warp's entries, and once 32 or more wait, redo 32 of them, one lane per entry;
// after the loop, the rest (gelu_cuda.cu's DeferredVectors). A warp round is 32 lanes' entries.
// This replays that queue and prints, per case: the shares of elements that the first test leaves,
// that the fallback's second look leaves to the settling path, and that reach the double path where
// FP64 is slow (the forward's float-path step settles most of the others there); then, per warp
// round, the share of rounds that queue an entry, redos, the redo's element iterations (the most
// unsure elements of any of its entries, each), and those of them where some lane runs the settling
// path and the double path where FP64 is slow.
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
#include <algorithm>
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

// Whether the narrow path's rounding test settles an element, and whether the fallback's second
// look does: the GPU's forms and test where built with -DGELU_DEVICE_FORMS (as
// bench/gpu_model.py builds this), else the CPU's forms and the test of value -+ bound, and no
// second look.
struct Settled {
  bool first_test, second_look;
};

template <Pass P, Approximate A, bool kBFloat16>
Settled settled(const float* in, uint16_t (*round16)(float)) {
  constexpr int kOutputs = gelu_ext::pass_rule(P).outputs;
#if defined(GELU_DEVICE_FORMS)
  constexpr int kArgBits = gelu_ext::pass_rule(P).argument_is_sum ? 24 : kBFloat16 ? 8 : 11;
  float out[kOutputs];
  // The kernels' loop (cuda/gelu_cuda.cu's apply_narrow): no core check where it needs none.
  bool ok = math::GpuNarrowPass<P, A, kArgBits>::template apply<false>(in, out);
  for (int k = 0; k < kOutputs; ++k) ok &= math::gpu_rounds_surely<kBFloat16>(out[k]);
  (void)round16;
  if (ok) return {true, true};
  // The second look (cuda/gelu_cuda.cu's apply_second_look): the bias passes' large positive
  // sums, settled without f or f', and float16's subnormal results.
  bool second = false;
  float settled_value;
  if constexpr (P == Pass::kBiasForward || P == Pass::kBiasBackward)
    second = math::settles_large_sum<P, A, kBFloat16>(in, settled_value);
  if (!kBFloat16 && !second) {
    second = math::GpuNarrowPass<P, A, kArgBits>::apply(in, out);
    for (int k = 0; k < kOutputs; ++k) second &= math::gpu_rounds_surely_anywhere<false>(out[k]);
  }
  return {false, second};
#else
  math::Bounded<float> out[kOutputs];
  math::NarrowPass<P, A>::apply(in, out);
  bool ok = true;
  for (int k = 0; k < kOutputs; ++k)
    ok &= round16(out[k].value - out[k].error) == round16(out[k].value + out[k].error);
  return {ok, ok};
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

// A warp's queue of entries to redo, each as its elements' ways through the fallback.
constexpr int kWarpSize = 32;
// The elements of a lane's entry (gelu_cuda.cu's kPairedVectors vectors of 8).
constexpr int kEntryElements = 16;
enum Way : uint8_t { kSecondLook, kSettling, kDouble };

struct Tally {
  long elements = 0, unsure = 0, settling = 0, doubled = 0;
  long rounds = 0, queueing_rounds = 0, redos = 0, iterations = 0, settling_iterations = 0,
       double_iterations = 0;
};

// A redo of the queue's first 32 entries (or all, if fewer): each lane its entry's unsure
// elements in turn, the warp as many iterations as the most of any lane.
void redo(std::vector<std::vector<Way>>& queue, Tally& t) {
  ++t.redos;
  const size_t lanes = std::min<size_t>(queue.size(), kWarpSize);
  size_t most = 0;
  for (size_t l = 0; l < lanes; ++l) most = std::max(most, queue[l].size());
  for (size_t i = 0; i < most; ++i) {
    bool settling = false, doubled = false;
    for (size_t l = 0; l < lanes; ++l) {
      if (i < queue[l].size()) {
        settling |= queue[l][i] >= kSettling;
        doubled |= queue[l][i] == kDouble;
      }
    }
    ++t.iterations;
    t.settling_iterations += settling;
    t.double_iterations += doubled;
  }
  queue.erase(queue.begin(), queue.begin() + lanes);
}

template <Pass P, Approximate A, bool kBFloat16>
void count(long n, float sigma, const char* pass, const char* form) {
  constexpr int kInputs = gelu_ext::pass_rule(P).inputs;
  uint16_t (*round16)(float) = kBFloat16 ? to_bfloat16 : to_float16;
  auto widen = [](uint16_t h) { return kBFloat16 ? from_bfloat16(h) : from_float16(h); };
  std::mt19937_64 rng(12345);
  std::normal_distribution<float> normal(0.0f, sigma);
  Tally t;
  std::vector<std::vector<Way>> queue;
  for (long round = 0; round < n / (kWarpSize * kEntryElements); ++round) {
    ++t.rounds;
    if (queue.size() >= kWarpSize) redo(queue, t);
    std::vector<std::vector<Way>> added;
    for (int lane = 0; lane < kWarpSize; ++lane) {
      std::vector<Way> entry;
      for (int e = 0; e < kEntryElements; ++e) {
        float in[kInputs];
        for (int k = 0; k < kInputs; ++k) in[k] = widen(round16(normal(rng)));
        const Settled s = settled<P, A, kBFloat16>(in, round16);
        ++t.elements;
        if (s.first_test) continue;
        Way way = kSecondLook;
        if (!s.second_look) way = settled_by_float_path<P, A, kBFloat16>(in) ? kSettling : kDouble;
        entry.push_back(way);
        ++t.unsure;
        t.settling += way >= kSettling;
        t.doubled += way == kDouble;
      }
      if (!entry.empty()) added.push_back(entry);
    }
    if (added.empty()) continue;
    ++t.queueing_rounds;
    queue.insert(queue.end(), added.begin(), added.end());
  }
  while (!queue.empty()) redo(queue, t);
  const double elements = static_cast<double>(t.elements), rounds = static_cast<double>(t.rounds);
  std::printf("%s\t%s\t%s\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\t%.6f\n", pass, form,
              kBFloat16 ? "bfloat16" : "float16", t.unsure / elements, t.settling / elements,
              t.doubled / elements, t.queueing_rounds / rounds, t.redos / rounds,
              t.iterations / rounds, t.settling_iterations / rounds, t.double_iterations / rounds);
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
