// AVX2 + FMA lanes (cpu/lanes.h): 4 doubles, and conversions from and to the storage types.
// Included only by kernels_avx2.cpp, under its AVX2 target pragma.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "lanes.h"
#include "table_loads.h"

#define GELU_SIMD inline __attribute__((always_inline))

namespace gelu_ext {
namespace cpu {
namespace avx2 {

constexpr CpuIsa kIsa = kIsaAvx2;

struct Mask {
  __m256d m;  // all ones where true
};

struct Vec {
  __m256d v;
  Vec() = default;
  Vec(double d) : v(_mm256_set1_pd(d)) {}  // NOLINT: constants broadcast implicitly
  explicit Vec(__m256d x) : v(x) {}
};

GELU_SIMD Vec operator+(Vec a, Vec b) { return Vec(_mm256_add_pd(a.v, b.v)); }
GELU_SIMD Vec operator-(Vec a, Vec b) { return Vec(_mm256_sub_pd(a.v, b.v)); }
GELU_SIMD Vec operator*(Vec a, Vec b) { return Vec(_mm256_mul_pd(a.v, b.v)); }
GELU_SIMD Vec operator/(Vec a, Vec b) { return Vec(_mm256_div_pd(a.v, b.v)); }
GELU_SIMD Vec operator-(Vec a) { return Vec(_mm256_xor_pd(a.v, _mm256_set1_pd(-0.0))); }
GELU_SIMD Vec fma(Vec a, Vec b, Vec c) { return Vec(_mm256_fmadd_pd(a.v, b.v, c.v)); }
// |v| with the sign of x.
GELU_SIMD Vec with_sign_of(Vec v, Vec x) {
  const __m256d sign = _mm256_set1_pd(-0.0);
  return Vec(_mm256_or_pd(_mm256_and_pd(sign, x.v), _mm256_andnot_pd(sign, v.v)));
}
GELU_SIMD Vec fabs(Vec a) { return Vec(_mm256_andnot_pd(_mm256_set1_pd(-0.0), a.v)); }
// Ordered comparisons: false where either side is NaN, like the scalar operators.
GELU_SIMD Mask operator<(Vec a, Vec b) { return Mask{_mm256_cmp_pd(a.v, b.v, _CMP_LT_OQ)}; }
GELU_SIMD Mask operator>(Vec a, Vec b) { return Mask{_mm256_cmp_pd(a.v, b.v, _CMP_GT_OQ)}; }
GELU_SIMD Mask operator>=(Vec a, Vec b) { return Mask{_mm256_cmp_pd(a.v, b.v, _CMP_GE_OQ)}; }
GELU_SIMD Mask operator==(Vec a, Vec b) { return Mask{_mm256_cmp_pd(a.v, b.v, _CMP_EQ_OQ)}; }
// Unordered: true where either side is NaN, like the scalar operator.
GELU_SIMD Mask operator!=(Vec a, Vec b) { return Mask{_mm256_cmp_pd(a.v, b.v, _CMP_NEQ_UQ)}; }
GELU_SIMD Mask operator&(Mask a, Mask b) { return Mask{_mm256_and_pd(a.m, b.m)}; }
GELU_SIMD Vec select(Mask c, Vec a, Vec b) { return Vec(_mm256_blendv_pd(b.v, a.v, c.m)); }

// the math's at_least and at_most: max and min return their second operand where either is
// NaN, so x goes second.
GELU_SIMD Vec at_least(Vec x, double floor) {
  return Vec(_mm256_max_pd(_mm256_set1_pd(floor), x.v));
}
GELU_SIMD Vec at_most(Vec x, double ceiling) {
  return Vec(_mm256_min_pd(_mm256_set1_pd(ceiling), x.v));
}
GELU_SIMD Vec at_most_each(Vec x, Vec ceiling) { return Vec(_mm256_min_pd(ceiling.v, x.v)); }

// value * 2^k, k in the low bits of shifted = k + 1.5 * 2^52 (see math/common.h).
GELU_SIMD Vec times_pow2(Vec value, Vec shifted) {
  const __m256i k = _mm256_sub_epi64(_mm256_castpd_si256(shifted.v),
                                     _mm256_set1_epi64x(0x4338000000000000 - 1023));
  return Vec(_mm256_mul_pd(value.v, _mm256_castsi256_pd(_mm256_slli_epi64(k, 52))));
}

// the math's times_pow2_normal: the low 12 bits of shifted's significand are k modulo 2^12,
// and adding them to value's exponent field (modulo 2^12, into the bits above it) adds k, the
// product being normal.
GELU_SIMD Vec times_pow2_normal(Vec value, Vec shifted, Vec /*k*/) {
  const __m256i k = _mm256_slli_epi64(_mm256_castpd_si256(shifted.v), 52);
  return Vec(_mm256_castsi256_pd(_mm256_add_epi64(_mm256_castpd_si256(value.v), k)));
}

// floor(log2 x) for normal positive x (the double-double path's interval index): the exponent
// field, turned into a double through the bits of 2^52 + field.
GELU_SIMD Vec binary_exponent(Vec x) {
  const __m256i field = _mm256_srli_epi64(_mm256_castpd_si256(x.v), 52);
  const __m256d two52 = _mm256_set1_pd(4503599627370496.0);
  const __m256d biased = _mm256_sub_pd(
      _mm256_castsi256_pd(_mm256_or_si256(field, _mm256_castpd_si256(two52))), two52);
  return Vec(_mm256_sub_pd(biased, _mm256_set1_pd(1023.0)));
}
// the math's table_row and table_entry: each lane's row (a small non-negative integer) as
// 4 int32s, then the column's entry for each lane (a gather).
struct TableRow {
  __m128i v;
};
GELU_SIMD TableRow table_row(Vec row) { return TableRow{_mm256_cvttpd_epi32(row.v)}; }
GELU_SIMD Vec table_entry(const double (&column)[16], TableRow row) {
  return Vec(_mm256_i32gather_pd(column, row.v, 8));
}
// low[0..1] in the lower half, high[0..1] in the upper half.
GELU_SIMD __m256d halves(const double* low, const double* high) {
  return _mm256_insertf128_pd(_mm256_castpd128_pd256(_mm_loadu_pd(low)), _mm_loadu_pd(high), 1);
}
// Each lane's row, as the table_row_entries and table_pair_entries below index their tables.
GELU_SIMD void lane_rows(TableRow row, int32_t (&index)[4]) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(index), row.v);
}
// the math's table_row_entries: all 16 numbers of each lane's row. Gathers are slow on some
// CPUs (about 14 cycles each on AMD Zen 3, where these 16 per 4 lanes made the exact form 1.6
// times slower than F.gelu), so each lane's row is loaded whole and the 4 x 16 block
// transposed: per 2 columns, 4 loads of 2 numbers, 2 of them into upper halves, and 2 unpacks.
GELU_SIMD void table_row_entries(const double (&rows)[16][16],
                                 const double (&)[16][16] /* columns */, TableRow row,
                                 Vec (&entries)[16]) {
  int32_t index[4];
  lane_rows(row, index);
  const double *a = rows[index[0]], *b = rows[index[1]], *c = rows[index[2]], *d = rows[index[3]];
  for (int j = 0; j < 16; j += 2) {
    const __m256d ac = halves(a + j, c + j), bd = halves(b + j, d + j);
    entries[j] = Vec(_mm256_unpacklo_pd(ac, bd));      // a[j] b[j] c[j] d[j]
    entries[j + 1] = Vec(_mm256_unpackhi_pd(ac, bd));
  }
}
// the math's table_pair_entries: each lane's pair read at once, in place of two gathers.
GELU_SIMD void table_pair_entries(const double (&pairs)[16][2], const double (&)[16],
                                  const double (&)[16], TableRow row, Vec& a, Vec& b) {
  int32_t index[4];
  lane_rows(row, index);
  const __m256d ac = halves(pairs[index[0]], pairs[index[2]]);
  const __m256d bd = halves(pairs[index[1]], pairs[index[3]]);
  a = Vec(_mm256_unpacklo_pd(ac, bd));
  b = Vec(_mm256_unpackhi_pd(ac, bd));
}

// ---------------------------------------------------------------------------------------------
// 8 floats, for the narrow path of float16 and bfloat16 data.

struct MaskF {
  __m256 m;  // all ones where true
};

struct VecF {
  __m256 v;
  VecF() = default;
  VecF(float f) : v(_mm256_set1_ps(f)) {}  // NOLINT: constants broadcast implicitly
  explicit VecF(__m256 x) : v(x) {}
};

GELU_SIMD VecF operator+(VecF a, VecF b) { return VecF(_mm256_add_ps(a.v, b.v)); }
GELU_SIMD VecF operator-(VecF a, VecF b) { return VecF(_mm256_sub_ps(a.v, b.v)); }
GELU_SIMD VecF operator*(VecF a, VecF b) { return VecF(_mm256_mul_ps(a.v, b.v)); }
GELU_SIMD VecF operator/(VecF a, VecF b) { return VecF(_mm256_div_ps(a.v, b.v)); }
GELU_SIMD VecF operator-(VecF a) { return VecF(_mm256_xor_ps(a.v, _mm256_set1_ps(-0.0f))); }
GELU_SIMD VecF fma(VecF a, VecF b, VecF c) { return VecF(_mm256_fmadd_ps(a.v, b.v, c.v)); }
GELU_SIMD VecF fabs(VecF a) { return VecF(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), a.v)); }
GELU_SIMD MaskF operator<(VecF a, VecF b) { return MaskF{_mm256_cmp_ps(a.v, b.v, _CMP_LT_OQ)}; }
GELU_SIMD MaskF operator>(VecF a, VecF b) { return MaskF{_mm256_cmp_ps(a.v, b.v, _CMP_GT_OQ)}; }
GELU_SIMD MaskF operator>=(VecF a, VecF b) { return MaskF{_mm256_cmp_ps(a.v, b.v, _CMP_GE_OQ)}; }
// Unordered: true where either side is NaN, like the scalar operator.
GELU_SIMD MaskF operator!=(VecF a, VecF b) { return MaskF{_mm256_cmp_ps(a.v, b.v, _CMP_NEQ_UQ)}; }
GELU_SIMD MaskF operator==(VecF a, VecF b) { return MaskF{_mm256_cmp_ps(a.v, b.v, _CMP_EQ_OQ)}; }
GELU_SIMD MaskF operator&(MaskF a, MaskF b) { return MaskF{_mm256_and_ps(a.m, b.m)}; }
GELU_SIMD VecF select(MaskF c, VecF a, VecF b) { return VecF(_mm256_blendv_ps(b.v, a.v, c.m)); }
GELU_SIMD VecF at_most_each(VecF x, VecF ceiling) { return VecF(_mm256_min_ps(ceiling.v, x.v)); }

// value * 2^k, k in the low bits of shifted = k + 1.5 * 2^23 (see math/common.h).
GELU_SIMD VecF times_pow2(VecF value, VecF shifted) {
  const __m256i k = _mm256_sub_epi32(_mm256_castps_si256(shifted.v),
                                     _mm256_set1_epi32(0x4B400000 - 127));
  return VecF(_mm256_mul_ps(value.v, _mm256_castsi256_ps(_mm256_slli_epi32(k, 23))));
}

// 1/d to 2^-22: the 12-bit estimate refined by one Newton step.
GELU_SIMD VecF approximate_reciprocal(VecF d) {
  const __m256 y = _mm256_rcp_ps(d.v);
  return VecF(_mm256_fmadd_ps(y, _mm256_fnmadd_ps(d.v, y, _mm256_set1_ps(1.0f)), y));
}

// append_lanes (loops.h's redo queue): first + j for each lane j set in mask, written to
// out[0, popcount) with one permute of 8 int32s by the mask's row of set lanes (out has room for
// 8); returns their count.
struct SetLanes {
  int32_t lane[256][8];
};
constexpr SetLanes set_lanes() {
  SetLanes table{};
  for (int mask = 0; mask < 256; ++mask) {
    int count = 0;
    for (int j = 0; j < 8; ++j)
      if (mask >> j & 1) table.lane[mask][count++] = j;
  }
  return table;
}
inline constexpr SetLanes kSetLanes = set_lanes();
GELU_SIMD int append_lanes(int32_t* out, int32_t first, uint32_t mask) {
  const __m256i lanes = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kSetLanes.lane[mask]));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      _mm256_add_epi32(lanes, _mm256_set1_epi32(first)));
  return __builtin_popcount(mask);
}

// 8 lanes of the narrow path (float16, bfloat16).
struct NarrowLanes {
  using F = VecF;
  using Bits = __m128i;  // 8 x 16-bit
  static constexpr int kWidth = 8;
  GELU_SIMD static int append_lanes(int32_t* out, int32_t first, uint32_t mask) {
    return avx2::append_lanes(out, first, mask);
  }

  GELU_SIMD static VecF load(const Float16* p) {
    return VecF(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))));
  }
  GELU_SIMD static VecF load(const BFloat16* p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return VecF(_mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
  }
  // Rounded to nearest even in the 16-bit type (NaN: 0x7FC0 for bfloat16).
  GELU_SIMD static Bits round(As<Float16>, VecF v) {
    return _mm256_cvtps_ph(v.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  }
  GELU_SIMD static Bits round(As<BFloat16>, VecF v) {
    const __m256i u = _mm256_castps_si256(v.v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, lsb), _mm256_set1_epi32(0x7FFF)), 16);
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v.v, v.v, _CMP_UNORD_Q));
    r = _mm256_blendv_epi8(r, _mm256_set1_epi32(0x7FC0), nan);
    return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
  }
  // Bit j set where [lo, hi] may contain a rounding boundary of the 16-bit type (see
  // simd_avx512.h). float16: where lo and hi round apart.
  GELU_SIMD static uint32_t may_round_apart(As<Float16> type, VecF lo, VecF hi) {
    // 0xFFFF or 0 per lane, packed to one byte each.
    const __m128i equal = _mm_cmpeq_epi16(round(type, lo), round(type, hi));
    return ~static_cast<uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(equal, equal))) & 0xFFu;
  }
  GELU_SIMD static uint32_t may_round_apart(As<BFloat16> type, VecF lo, VecF hi) {
    Bits unused;
    return round_interval(type, lo, hi, MaskF{_mm256_castsi256_ps(_mm256_set1_epi32(-1))}, unused);
  }
  // That, or not `qualified`; and hi rounded to the 16-bit type, which in the lanes that pass
  // the test is also the rounding of every value in [lo, hi] (NaN aside: not for lanes that may
  // pass with NaN ends). lo and hi may come in either order.
  GELU_SIMD static uint32_t round_interval(As<Float16> type, VecF lo, VecF hi, MaskF qualified,
                                           Bits& rounded) {
    rounded = round(type, hi);
    return (may_round_apart(type, lo, hi) | ~static_cast<uint32_t>(_mm256_movemask_ps(qualified.m))) & 0xFFu;
  }
  // bfloat16: (u + 0x8000) >> 16 rounds pattern u half away from zero, which is to nearest
  // where no boundary (no half-way pattern) lies between the ends.
  GELU_SIMD static uint32_t round_interval(As<BFloat16>, VecF lo, VecF hi, MaskF qualified,
                                           Bits& rounded) {
    __m256i wide;
    const __m256 sure = bfloat16_interval(lo, hi, qualified, wide);
    rounded = _mm_packus_epi32(_mm256_castsi256_si128(wide), _mm256_extracti128_si256(wide, 1));
    return ~static_cast<uint32_t>(_mm256_movemask_ps(sure)) & 0xFFu;
  }
  // All-ones in the lanes that pass the test, and the rounding in the low 16 bits of each lane.
  GELU_SIMD static __m256 bfloat16_interval(VecF lo, VecF hi, MaskF qualified, __m256i& rounded) {
    const __m256i a = _mm256_castps_si256(lo.v), b = _mm256_castps_si256(hi.v);
    const __m256i smaller = _mm256_min_epu32(a, b), larger = _mm256_max_epu32(a, b);
    const __m256i below_smaller = _mm256_srli_epi32(_mm256_add_epi32(smaller, _mm256_set1_epi32(0x7FFF)), 16);
    rounded = _mm256_srli_epi32(_mm256_add_epi32(larger, _mm256_set1_epi32(0x8000)), 16);
    return _mm256_and_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(below_smaller, rounded)), qualified.m);
  }
  // Two vectors of bfloat16 (loops.h's TwoVectors) from one 32-byte load: unpacking with zeros puts
  // each element in the high half of a 32-bit lane, which makes it a float without a shift.
  // `first` holds elements 0-3 and 8-11, `second` 4-7 and 12-15: the order in which a pack of
  // the two (round_interval_pair) puts them back.
  GELU_SIMD static void load_two(const BFloat16* p, VecF& first, VecF& second) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    first = VecF(_mm256_castsi256_ps(_mm256_unpacklo_epi16(_mm256_setzero_si256(), v)));
    second = VecF(_mm256_castsi256_ps(_mm256_unpackhi_epi16(_mm256_setzero_si256(), v)));
  }
  // round_interval of both, stored to out[0, 16) with one pack and one store; bit j of the result
  // set where element j fails.
  GELU_SIMD static uint32_t round_interval_two(BFloat16* out, const VecF (&lo)[2],
                                                const VecF (&hi)[2], const MaskF (&qualified)[2]) {
    __m256i rounded[2];
    const __m256 sure0 = bfloat16_interval(lo[0], hi[0], qualified[0], rounded[0]);
    const __m256 sure1 = bfloat16_interval(lo[1], hi[1], qualified[1], rounded[1]);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_packus_epi32(rounded[0], rounded[1]));
    // The masks packed the same way: 2 bits per element, in element order.
    const uint32_t failing = ~static_cast<uint32_t>(_mm256_movemask_epi8(
        _mm256_packs_epi32(_mm256_castps_si256(sure0), _mm256_castps_si256(sure1))));
    if (__builtin_expect(failing == 0, 1)) return 0;
    uint32_t failed = 0;
    for (int j = 0; j < 16; ++j) failed |= (failing >> (2 * j) & 1u) << j;
    return failed;
  }
  template <class T>
  GELU_SIMD static void store(T* p, Bits bits) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), bits);
  }

  // Each lane's cell index within its sign's cells (math::cell_of), and the lanes where x lies in
  // a cell: below the first cell the unclamped index wraps around to a large unsigned number.
  GELU_SIMD static __m256i cell_index(__m256i bits, __m256& inside) {
    const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7FFFFFFF));
    const __m256i offset = _mm256_sub_epi32(_mm256_srli_epi32(magnitude, math::kCellLowBits),
                                            _mm256_set1_epi32(math::kCellFirstExponent << math::kCellBits));
    const __m256i clamped = _mm256_min_epu32(offset, _mm256_set1_epi32(math::kCellsPerSign - 1));
    inside = _mm256_castsi256_ps(_mm256_cmpeq_epi32(clamped, offset));
    return clamped;
  }
  // Each lane's row of the cells as a byte offset, stored for cell_at, which loads them one per
  // lane, where extracting them from the register took 3 instructions each.
  GELU_SIMD static void cell_offsets(VecF x, int32_t* offset_bytes) {
    const __m256i bits = _mm256_castps_si256(x.v);
    __m256 inside;
    const __m256i index = cell_index(bits, inside);
    const __m256i negative = _mm256_srai_epi32(bits, 31);
    _mm256_store_si256(reinterpret_cast<__m256i*>(offset_bytes),
                       _mm256_slli_epi32(_mm256_add_epi32(index, _mm256_and_si256(negative, _mm256_set1_epi32(math::kCellsPerSign))), 4));
  }
  // the math's cells: each lane's row of `rows` (math::CubicRow, 16 bytes) as c,
  // d = x - the cell's midpoint, and the lanes where x lies in a cell (elsewhere c is the last
  // cell's of its sign, and the cubic is to be ignored), from x's offsets (cell_offsets). Rows
  // are loaded whole and transposed (gathers are slow).
  template <class Row>
  GELU_SIMD static MaskF cell_at(const Row* rows, VecF x, const int32_t* offset_bytes,
                                 VecF (&c)[4], VecF& d) {
    static_assert(sizeof(Row) == 16, "a row of 4 floats");
    const __m256i bits = _mm256_castps_si256(x.v);
    __m256 inside;
    cell_index(bits, inside);
    const __m256i midpoint = _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(-(1 << math::kCellLowBits))),
                                             _mm256_set1_epi32(1 << (math::kCellLowBits - 1)));
    d = VecF(_mm256_sub_ps(x.v, _mm256_castsi256_ps(midpoint)));
    // Rows j and j + 4 side by side, then a 4 x 4 transpose in each half.
    const char* base = reinterpret_cast<const char*>(rows);
    __m256 r[4];
    for (int j = 0; j < 4; ++j)
      r[j] = _mm256_insertf128_ps(
          _mm256_castps128_ps256(_mm_load_ps(reinterpret_cast<const float*>(base + offset_bytes[j]))),
          _mm_load_ps(reinterpret_cast<const float*>(base + offset_bytes[j + 4])), 1);
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    c[0] = VecF(_mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0)));
    c[1] = VecF(_mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2)));
    c[2] = VecF(_mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0)));
    c[3] = VecF(_mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2)));
    return MaskF{inside};
  }

  // The entries of a table indexed by 16-bit inputs' bits, one load per lane (table_loads.h).
  template <class T>
  GELU_SIMD static Bits lookup(const uint16_t* table, const T* p) {
    uint16_t index[8];
    std::memcpy(index, p, sizeof index);
    return eight_entries(table, index);
  }
  // Tables of float pairs {a, b}: the pairs of 8 inputs loaded.
  template <class Pair, class T>
  GELU_SIMD static void lookup_bounded(const Pair* table, const T* p, VecF& a, VecF& b) {
    static_assert(sizeof(Pair) == 8, "a pair of floats");
    uint16_t index[8];
    std::memcpy(index, p, sizeof index);
    eight_pairs(reinterpret_cast<const double*>(table), index, a.v, b.v);
  }
};

// ---------------------------------------------------------------------------------------------
// 4 doubles, for everything else.

struct Lanes {
  using V = Vec;
  using Narrow = NarrowLanes;
  static constexpr int kWidth = 4;
  GELU_SIMD static int append_lanes(int32_t* out, int32_t first, uint32_t mask) {
    return avx2::append_lanes(out, first, mask);
  }

  // float64 pair path (math/f64_pair.h): the value is the result; its error is 0 or inf.
  using F = Vec;
  GELU_SIMD static Vec round(As<double>, Vec v) { return v; }
  GELU_SIMD static uint32_t may_round_apart(As<double>, Vec a, Vec b) {
    return static_cast<uint32_t>(_mm256_movemask_pd(_mm256_cmp_pd(a.v, b.v, _CMP_NEQ_UQ)));
  }

  GELU_SIMD static Vec load(const double* p) { return Vec(_mm256_loadu_pd(p)); }
  GELU_SIMD static Vec load(const float* p) { return Vec(_mm256_cvtps_pd(_mm_loadu_ps(p))); }
  GELU_SIMD static Vec load(const Float16* p) {
    return Vec(_mm256_cvtps_pd(_mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)))));
  }
  GELU_SIMD static Vec load(const BFloat16* p) {
    const __m128i wide = _mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
    return Vec(_mm256_cvtps_pd(_mm_castsi128_ps(_mm_slli_epi32(wide, 16))));
  }

  GELU_SIMD static void store(double* p, Vec v) { _mm256_storeu_pd(p, v.v); }
  GELU_SIMD static void store(float* p, Vec v) { _mm_storeu_ps(p, _mm256_cvtpd_ps(v.v)); }
  GELU_SIMD static void store(Float16* p, Vec v) {
    const __m128i h = _mm_cvtps_ph(round_to_odd(v), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), h);
  }
  GELU_SIMD static void store(BFloat16* p, Vec v) {
    // Round to nearest even in the top 16 bits of the float; NaN becomes 0x7FC0.
    const __m128 f = round_to_odd(v);
    const __m128i u = _mm_castps_si128(f);
    const __m128i lsb = _mm_and_si128(_mm_srli_epi32(u, 16), _mm_set1_epi32(1));
    __m128i r = _mm_srli_epi32(_mm_add_epi32(_mm_add_epi32(u, lsb), _mm_set1_epi32(0x7FFF)), 16);
    const __m128i nan = _mm_castps_si128(_mm_cmpunord_ps(f, f));
    r = _mm_blendv_epi8(r, _mm_set1_epi32(0x7FC0), nan);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(p), _mm_packus_epi32(r, r));
  }

  // the math's round_to_odd_float, 4 at a time: the nearest float, one step toward zero if it
  // rounded away from zero, then the last bit set if inexact.
  GELU_SIMD static __m128 round_to_odd(Vec v) {
    const __m128 nearest = _mm256_cvtpd_ps(v.v);
    const __m256d back = _mm256_cvtps_pd(nearest);
    const __m256d sign = _mm256_set1_pd(-0.0);
    const __m128i away = down(_mm256_cmp_pd(_mm256_andnot_pd(sign, back), _mm256_andnot_pd(sign, v.v), _CMP_GT_OQ));
    const __m128i inexact = down(_mm256_cmp_pd(back, v.v, _CMP_NEQ_OQ));
    __m128i bits = _mm_add_epi32(_mm_castps_si128(nearest), away);  // away is -1 where set
    bits = _mm_or_si128(bits, _mm_and_si128(inexact, _mm_set1_epi32(1)));
    return _mm_castsi128_ps(bits);
  }
  // 4 x 64-bit all-ones/zero masks to 4 x 32-bit ones: the low half of each lane.
  GELU_SIMD static __m128i down(__m256d mask) {
    const __m256 m = _mm256_castpd_ps(mask);
    return _mm_castps_si128(_mm_shuffle_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1),
                                           _MM_SHUFFLE(2, 0, 2, 0)));
  }
};

}  // namespace avx2
}  // namespace cpu
}  // namespace gelu_ext
