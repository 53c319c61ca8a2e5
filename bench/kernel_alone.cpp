// One CPU kernel alone, without torch: one thread, rows of 2048 columns (x, bias, gate and up
// from N(0, sigma^2), gradients from N(0, 1)), small enough to stay in the L2 cache, so that the
// loop's own cost shows. Prints the minimum and median ns per element over 15 rounds and a hash of
// the outputs (equal hashes: equal bits). For A/B comparisons, build two trees and run the
// binaries in alternation (this machine's speed drifts by 10% or more).
//
//   g++ -O3 -std=c++17 -ffp-contract=off -fno-math-errno -I csrc -DPASS=kBiasForward \
//       bench/kernel_alone.cpp -o /tmp/kernel_alone && /tmp/kernel_alone
//
// PASS: any Pass (kernels.h) but kDoubleBackward; VARIANT: kNone (default), kTanh or kSigmoid;
// ELEMENT: BFloat16 (default), Float16, float or double; SIGMA (2); MEAN (0), the mean of x (not
// of the bias, the gate's partner or the gradient); COLUMN_SUMS=1 also adds the
// bias backward's rows to the bias gradient's column sums, two at a time, as ops.cpp does;
// ROWS (16): 4096 makes each operand 16 MB (bfloat16), so that it streams from memory as in
// the op rather than staying in the L2 cache.
// AVX2 kernels by default, AVX-512 with -DAVX512; -DGELU_ROUTE_NO_TABLES (and the other switches of
// math/route.h) build the kernel without a mechanism, to measure what it earns. The instruction
// count of the inner loop is in `objdump -d` of the binary.
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <type_traits>
#include <vector>

#pragma GCC push_options
#if defined(AVX512)
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,f16c")
#define GELU_ISA avx512
#include "cpu/simd_avx512.h"
#else
#pragma GCC target("avx2,fma,f16c")
#define GELU_ISA avx2
#include "cpu/simd_avx2.h"
#endif
#include "cpu/loops.h"
#pragma GCC pop_options

#ifndef PASS
#define PASS kBiasForward
#endif
#ifndef VARIANT
#define VARIANT kNone
#endif
#ifndef ELEMENT
#define ELEMENT BFloat16
#endif
#ifndef SIGMA
#define SIGMA 2.0
#endif
#ifndef COLUMN_SUMS
#define COLUMN_SUMS 0
#endif
#ifndef ROWS
#define ROWS 16
#endif
#ifndef MEAN
#define MEAN 0.0
#endif

using namespace gelu_ext;
using namespace gelu_ext::cpu;
using T = ELEMENT;

// v rounded to nearest (even) in the element type E, as its bits or value.
template <class E>
__attribute__((target("f16c"))) static E element(double v) {
  if constexpr (std::is_same<E, BFloat16>::value) {
    const float f = static_cast<float>(v);
    uint32_t u;
    memcpy(&u, &f, 4);
    return E{static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16)};
  } else if constexpr (std::is_same<E, Float16>::value) {
    return E{_cvtss_sh(static_cast<float>(v), _MM_FROUND_TO_NEAREST_INT)};
  } else {
    return static_cast<E>(v);
  }
}

int main() {
  constexpr Pass kPass = Pass::PASS;
  static_assert(kPass != Pass::kDoubleBackward, "not measured here");
  constexpr int kOperands = num_operands(kPass);
  constexpr int kOutputs = kPass == Pass::kGegluBackward ? 2 : 1;
  constexpr bool kBias = kPass == Pass::kBiasForward || kPass == Pass::kBiasBackward;
  // The gradient operand, which comes first among the inputs of the backward passes.
  constexpr bool kGradient = kPass == Pass::kBackward || kPass == Pass::kBiasBackward ||
                             kPass == Pass::kGegluBackward;
  constexpr int64_t kColumns = 2048, kRows = ROWS, kElements = kColumns * kRows;
  constexpr int kRounds = 15, kCalls = kRows < 1600 ? int(1600 / kRows) : 1;
  std::mt19937 generator(1);
  std::normal_distribution<double> normal(0.0, 1.0);
  // Operands in the kernels' order (outputs first); the bias, the last operand of the bias
  // passes, is one row, added to every row.
  std::vector<std::vector<T>> operand(kOperands);
  for (int k = 0; k < kOperands; ++k) {
    const bool bias = kBias && k == kOperands - 1;
    operand[k].resize(bias ? kColumns : kElements);
    const double sigma = kGradient && k == kOutputs ? 1.0 : SIGMA;
    const double mean = k == kOutputs + pass_rule(kPass).argument ? MEAN : 0.0;
    if (k >= kOutputs)
      for (auto& v : operand[k]) v = element<T>(mean + sigma * normal(generator));
  }
  std::vector<double> hi(kColumns), lo(kColumns);
  using Kernel = GELU_ISA::Kernel<GELU_ISA::Lanes, kPass, Approximate::VARIANT, T>;
  std::vector<double> ns;
  for (int round = 0; round < kRounds; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int call = 0; call < kCalls; ++call) {
      for (int64_t r = 0; r < kRows; ++r) {
        char* p[kOperands];
        for (int k = 0; k < kOperands; ++k) {
          const bool bias = kBias && k == kOperands - 1;
          p[k] = reinterpret_cast<char*>(operand[k].data() + (bias ? 0 : r * kColumns));
        }
        Kernel::contiguous(p, kColumns);
        // Two rows at a time, as ops.cpp adds each run of 4096 elements.
        if (kPass == Pass::kBiasBackward && COLUMN_SUMS && r % 2 == 1)
          GELU_ISA::ColumnSums<GELU_ISA::Lanes, T>::run(p[0] - 2 * kColumns * sizeof(T), 2, kColumns, 2,
                                                 2 * kColumns, 1, hi.data(), lo.data());
      }
    }
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    ns.push_back(took.count() / (double(kCalls) * kElements));
  }
  std::sort(ns.begin(), ns.end());
  uint64_t hash = 0;
  for (int k = 0; k < kOutputs; ++k)
    for (const T& v : operand[k]) {
      uint64_t bits = 0;
      memcpy(&bits, &v, sizeof(T));
      hash = hash * 1000003 + bits;
    }
  printf("min %.3f median %.3f ns/el  hash %016llx\n", ns[0], ns[ns.size() / 2],
         static_cast<unsigned long long>(hash));
}
