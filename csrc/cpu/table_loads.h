// Entries of the tables indexed by 16-bit inputs' bits (narrow16_result_table,
// narrow16_term_tables), read with one load per lane, for cpu/simd_avx2.h and cpu/simd_avx512.h.
// On Zen 3 and Zen 4 these loads take half to two thirds of the time of the gathers they replace
// (bench/kernel_alone.cpp, docs/performance.md). Internal linkage: each ISA's translation unit
// compiles its own copy under its own target pragma, so the linker never mixes them.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace gelu_ext {
namespace cpu {
namespace {

// table[index[j]] for j < 8.
inline __attribute__((always_inline)) __m128i eight_entries(const uint16_t* table,
                                                            const uint16_t* index) {
  __m128i entries = _mm_cvtsi32_si128(table[index[0]]);
  entries = _mm_insert_epi16(entries, table[index[1]], 1);
  entries = _mm_insert_epi16(entries, table[index[2]], 2);
  entries = _mm_insert_epi16(entries, table[index[3]], 3);
  entries = _mm_insert_epi16(entries, table[index[4]], 4);
  entries = _mm_insert_epi16(entries, table[index[5]], 5);
  entries = _mm_insert_epi16(entries, table[index[6]], 6);
  return _mm_insert_epi16(entries, table[index[7]], 7);
}

// The float pairs {a, b} = pairs[index[j]] for j < 8, as 8 a's and 8 b's in lane order. Pairs 0,
// 1, 4, 5 go in one register and 2, 3, 6, 7 in the other: one shuffle within each half then gives
// the a's, another the b's.
inline __attribute__((always_inline)) void eight_pairs(const double* pairs, const uint16_t* index,
                                                       __m256& a, __m256& b) {
  const auto two = [&](int i, int j) {
    return _mm_castpd_ps(_mm_loadh_pd(_mm_load_sd(pairs + index[i]), pairs + index[j]));
  };
  const __m256 first = _mm256_insertf128_ps(_mm256_castps128_ps256(two(0, 1)), two(4, 5), 1);
  const __m256 second = _mm256_insertf128_ps(_mm256_castps128_ps256(two(2, 3)), two(6, 7), 1);
  a = _mm256_shuffle_ps(first, second, _MM_SHUFFLE(2, 0, 2, 0));
  b = _mm256_shuffle_ps(first, second, _MM_SHUFFLE(3, 1, 3, 1));
}

}  // namespace
}  // namespace cpu
}  // namespace gelu_ext
