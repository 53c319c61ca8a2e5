// The CPU kernel of one 16-bit bias pass alone, without torch: one thread, bfloat16 rows of 2048
// columns (x and bias from N(0, sigma^2), grad from N(0, 1)), small enough to stay in the L2
// cache, so that the loop's own cost shows. Prints the minimum and median ns per element over
// 15 rounds and a hash of the outputs (equal hashes: equal bits). For A/B comparisons, build
// two trees and run the binaries in alternation (this machine's speed drifts by 10% or more).
//
//   g++ -O3 -std=c++17 -ffp-contract=off -fno-math-errno -I csrc -DPASS=kBiasForward \
//       bench/kernel_alone.cpp -o /tmp/kernel_alone && /tmp/kernel_alone
//
// PASS: kBiasForward or kBiasBackward; VARIANT: kNone (default), kTanh or kSigmoid; SIGMA (2);
// COLUMN_SUMS=1 also adds the backward's rows to the bias gradient's column sums, two at a time, as
// ops.cpp does.
// AVX2 kernels: the instruction count of their inner loop is in `objdump -d` of the binary.
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
#pragma GCC target("avx2,fma,f16c")
#define GELU_ISA avx2
#include "cpu/simd_avx2.h"
#include "cpu/loops.h"
#pragma GCC pop_options

#ifndef PASS
#define PASS kBiasForward
#endif
#ifndef VARIANT
#define VARIANT kNone
#endif
#ifndef SIGMA
#define SIGMA 2.0f
#endif
#ifndef COLUMN_SUMS
#define COLUMN_SUMS 0
#endif

using namespace gelu_ext;
using namespace gelu_ext::cpu;

static uint16_t to_bfloat16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  return static_cast<uint16_t>((u + 0x7FFF + ((u >> 16) & 1)) >> 16);
}

int main() {
  constexpr bool kForward = Pass::PASS == Pass::kBiasForward;
  constexpr int64_t kColumns = 2048, kRows = 16, kElements = kColumns * kRows;
  constexpr int kRounds = 15, kCalls = 100;
  std::mt19937 generator(1);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> x(kElements), grad(kElements), bias(kColumns), out(kElements);
  for (auto& v : x) v = to_bfloat16(SIGMA * normal(generator));
  for (auto& v : grad) v = to_bfloat16(normal(generator));
  for (auto& v : bias) v = to_bfloat16(SIGMA * normal(generator));
  std::vector<double> hi(kColumns), lo(kColumns);
  using Kernel = avx2::Kernel<avx2::Lanes, Pass::PASS, Approximate::VARIANT, BFloat16>;
  std::vector<double> ns;
  for (int round = 0; round < kRounds; ++round) {
    const auto start = std::chrono::steady_clock::now();
    for (int call = 0; call < kCalls; ++call) {
      for (int64_t r = 0; r < kRows; ++r) {
        char* row_out = reinterpret_cast<char*>(out.data() + r * kColumns);
        char* row_x = reinterpret_cast<char*>(x.data() + r * kColumns);
        char* row_grad = reinterpret_cast<char*>(grad.data() + r * kColumns);
        char* b = reinterpret_cast<char*>(bias.data());
        if constexpr (kForward) {
          char* p[3] = {row_out, row_x, b};
          Kernel::contiguous(p, kColumns);
        } else {
          char* p[4] = {row_out, row_grad, row_x, b};
          Kernel::contiguous(p, kColumns);
          // Two rows at a time, as ops.cpp adds each run of 4096 elements.
          if (COLUMN_SUMS && r % 2 == 1)
            avx2::ColumnSums<avx2::Lanes, BFloat16>::run(row_out - 2 * kColumns, 2, kColumns, 2,
                                                         2 * kColumns, 1, hi.data(), lo.data());
        }
      }
    }
    const std::chrono::duration<double, std::nano> took = std::chrono::steady_clock::now() - start;
    ns.push_back(took.count() / (double(kCalls) * kElements));
  }
  std::sort(ns.begin(), ns.end());
  uint64_t hash = 0;
  for (uint16_t v : out) hash = hash * 1000003 + v;
  printf("min %.3f median %.3f ns/el  hash %016llx\n", ns[0], ns[ns.size() / 2],
         static_cast<unsigned long long>(hash));
}
