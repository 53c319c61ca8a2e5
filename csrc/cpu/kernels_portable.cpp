// CPU kernels for any CPU: one double at a time, in the same arithmetic as the vector kernels
// and the GPU, so all of them give bit-identical results.
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#define GELU_ISA portable
#include "lanes.h"

namespace gelu_ext {
namespace cpu {
namespace portable {
constexpr CpuIsa kIsa = kIsaPortable;
}  // namespace portable
}  // namespace cpu
}  // namespace gelu_ext

#include "loops.h"

namespace gelu_ext {
namespace cpu {
namespace portable {

// loops.h's redo queue: one lane, queued (counted) where its mask bit is set.
inline int append_lanes(int32_t* out, int32_t first, uint32_t mask) {
  *out = first;
  return static_cast<int>(mask & 1);
}

struct NarrowLanes {
  using F = float;
  using Bits = uint16_t;
  static constexpr int kWidth = 1;
  static int append_lanes(int32_t* out, int32_t first, uint32_t mask) {
    return portable::append_lanes(out, first, mask);
  }

  static float load(const Float16* p) { return c10::detail::fp16_ieee_to_fp32_value(p->bits); }
  static float load(const BFloat16* p) { return c10::detail::f32_from_bits(p->bits); }
  static Bits round(As<Float16>, float v) { return c10::detail::fp16_ieee_from_fp32_value(v); }
  static Bits round(As<BFloat16>, float v) { return c10::detail::round_to_nearest_even(v); }
  // Whether [lo, hi] may contain a rounding boundary of the 16-bit type.
  template <class T>
  static uint32_t may_round_apart(As<T> type, float lo, float hi) {
    return round(type, lo) != round(type, hi);
  }
  // The same, or not `qualified`; and hi rounded to the 16-bit type (where the test passes, the
  // rounding of [lo, hi]).
  template <class T>
  static uint32_t round_interval(As<T> type, float lo, float hi, bool qualified, Bits& rounded) {
    rounded = round(type, hi);
    return !qualified || round(type, lo) != rounded;
  }
  template <class T>
  static void store(T* p, Bits bits) {
    p->bits = bits;
  }

  // math/narrow16.h's cells: x's row, then (cell_at) that row of `rows` (math::CubicRow) as c,
  // d = x - the cell's midpoint, and whether x lies in a cell (where not, the cubic is to be
  // ignored).
  static void cell_offsets(float x, int32_t* offsets) {
    uint32_t row;
    float d;
    math::cell_of(x, row, d);
    offsets[0] = static_cast<int32_t>(row);
  }
  template <class Row>
  static bool cell_at(const Row* rows, float x, const int32_t* offsets, float (&c)[4], float& d) {
    uint32_t row;
    const bool inside = math::cell_of(x, row, d);
    for (int k = 0; k < 4; ++k) c[k] = inside ? rows[offsets[0]].c[k] : 0.0f;
    if (!inside) d = 0.0f;
    return inside;
  }

  // Entries of tables indexed by the 16-bit input's bits: one value, or a pair of floats {a, b}.
  template <class T>
  static Bits lookup(const uint16_t* table, const T* p) {
    return table[p->bits];
  }
  template <class Pair, class T>
  static void lookup_bounded(const Pair* table, const T* p, float& a, float& b) {
    const float* pair = reinterpret_cast<const float*>(table + p->bits);
    a = pair[0];
    b = pair[1];
  }
};

struct Lanes {
  using V = double;
  using Narrow = NarrowLanes;
  static constexpr int kWidth = 1;
  static int append_lanes(int32_t* out, int32_t first, uint32_t mask) {
    return portable::append_lanes(out, first, mask);
  }

  // float64 pair path (math/f64_pair.h): the value is the result; its error is 0 or inf.
  using F = double;
  static double round(As<double>, double v) { return v; }
  static uint32_t may_round_apart(As<double>, double a, double b) { return a != b; }

  static double load(const double* p) { return *p; }
  static double load(const float* p) { return *p; }
  static double load(const Float16* p) { return c10::detail::fp16_ieee_to_fp32_value(p->bits); }
  static double load(const BFloat16* p) { return c10::detail::f32_from_bits(p->bits); }

  static void store(double* p, double v) { *p = v; }
  static void store(float* p, double v) { *p = static_cast<float>(v); }
  static void store(Float16* p, double v) {
    p->bits = c10::detail::fp16_ieee_from_fp32_value(math::round_to_odd_float(v));
  }
  static void store(BFloat16* p, double v) {
    p->bits = c10::detail::round_to_nearest_even(math::round_to_odd_float(v));
  }
};

void run_loop(Pass pass, Approximate approximate, DType dtype, char** data,
              const int64_t* strides, int64_t size0, int64_t size1) {
  run<Lanes>(pass, approximate, dtype, data, strides, size0, size1);
}

void add_to_column_sums(DType dtype, const char* values, int64_t stride, int64_t n, int64_t rows,
                        int64_t row_stride, int64_t column_step, double* hi, double* lo) {
  column_sums<Lanes>(dtype, values, stride, n, rows, row_stride, column_step, hi, lo);
}

}  // namespace portable
}  // namespace cpu
}  // namespace gelu_ext
