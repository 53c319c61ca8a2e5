// Which numeric path serves which case: one table for the CPU loops and the CUDA kernels alike
// (DEVELOPERS.md mirrors it).
#pragma once

#include "passes.h"

namespace gelu_ext {

enum class Device : int { kCpu, kCuda };

// The CPU's instruction sets (the `arch` of a CPU route).
enum CpuIsa : int { kIsaPortable = 0, kIsaAvx2 = 1, kIsaAvx512 = 2 };

enum class NumericPath : int {
  kF32ViaF64,           // math/f32_via_f64.h: double, rounded once to the output type
  kF32ViaF32,           // math/f32_via_f32.h: float32 in float and float pairs, rounded once
  kF32ViaMixed,         // math/f32_via_f64.h's mixed form: double, with the small high-order
                        //   terms of its polynomials in float, rounded once
  kF64DoubleDouble,     // math/f64_double_double.h: double-double, rounded once
  kF64Pair,             // math/f64_pair.h: double pairs; elements it cannot settle are redone
                        //   by kF64DoubleDouble
  kNarrow16,            // math/narrow16.h: float with an error bound and a rounding test;
                        //   elements that fail it are redone by kF32ViaF64
  kNarrow16ResultTable, // kNarrow16's results for every 16-bit input, built once and looked up
  kNarrow16TermTables,  // f and f' of every 16-bit input by kF32ViaF64, rounded to float with
                        //   their bound, looked up, then kNarrow16's products and rounding test
  kNarrow16Cubic,       // kNarrow16's rounding test on the cubic cells' f or f' (narrow16.h)
  kNarrow16Relative,    // kNarrow16's GPU forms (GpuNarrowPass): one relative bound for every
                        //   output, tested on the value alone; redone by kF32ViaF64
};

// CUDA architectures whose FP64 runs at 1/32 (7.5) or 1/64 (8.6, 8.7, 8.9, 12.x) of FP32: there
// float32 computes in float (bench/gpu_model.py predicts the double path 3-10 times slower than
// F.gelu on them). Elsewhere FP64 has half of FP32's rate and the double path, with fewer
// instructions than the float path, is the faster.
constexpr bool has_slow_fp64(int arch) {
  return arch == 750 || arch == 860 || arch == 870 || arch == 890 || arch >= 1200;
}

// Of those, the architecture whose float32 kernels FP64 paces on the double path while its FP32
// pipe has room: A100 (8.0), where the mixed form, which moves the polynomials' small terms to
// the FP32 pipe, is predicted at the memory's pace, from 1.22-1.46 times F.gelu's time in the
// forward. On 9.0 and 10.x, whose kernels the instruction issue paces (H200, B200), its extra
// instructions cost more than the FP64 operations saved (bench/gpu_model.py).
constexpr bool prefers_mixed(int arch) { return arch == 800; }

constexpr bool is_16_bit(DType dtype) {
  return dtype == DType::kFloat16 || dtype == DType::kBFloat16;
}

// Builds that measure what a CPU mechanism earns (bench/, never the default) may turn one off:
// -DGELU_ROUTE_NO_TABLES (16-bit inputs computed by narrow16, not looked up), -DGELU_ROUTE_NO_CUBIC
// (the 16-bit bias passes by narrow16), -DGELU_ROUTE_NO_RELATIVE (the AVX-512 16-bit bias passes by
// narrow16), -DGELU_ROUTE_NO_F64_PAIR (float64 by double-double).
#if defined(GELU_ROUTE_NO_TABLES)
constexpr bool kRouteTables = false;
#else
constexpr bool kRouteTables = true;
#endif
#if defined(GELU_ROUTE_NO_CUBIC)
constexpr bool kRouteCubic = false;
#else
constexpr bool kRouteCubic = true;
#endif
#if defined(GELU_ROUTE_NO_RELATIVE)
constexpr bool kRouteRelative = false;
#else
constexpr bool kRouteRelative = true;
#endif
#if defined(GELU_ROUTE_NO_F64_PAIR)
constexpr bool kRouteF64Pair = false;
#else
constexpr bool kRouteF64Pair = true;
#endif
// And builds that predict what another float32 path would give on the GPU where the route takes
// its own (bench/gpu_model.py --define): -DGELU_ROUTE_CUDA_F32_VIA_F32 (the float path) or
// -DGELU_ROUTE_CUDA_F32_VIA_MIXED (the mixed form) on every CUDA architecture.
#if defined(GELU_ROUTE_CUDA_F32_VIA_F32)
constexpr NumericPath kRouteCudaFloat32 = NumericPath::kF32ViaF32;
#elif defined(GELU_ROUTE_CUDA_F32_VIA_MIXED)
constexpr NumericPath kRouteCudaFloat32 = NumericPath::kF32ViaMixed;
#else
constexpr NumericPath kRouteCudaFloat32 = NumericPath::kF32ViaF64;  // by architecture, below
#endif

// The path of (device, dtype, pass, form). arch: the CPU's instruction set (CpuIsa), or the CUDA
// architecture as __CUDA_ARCH__ gives it (860 for compute capability 8.6; 0 in host code).
constexpr NumericPath route(Device device, DType dtype, Pass pass, Approximate form, int arch) {
  const PassRule rule = pass_rule(pass);
  const bool second_derivative = (needs(pass) & math::kNeedD2) != 0;
  if (dtype == DType::kFloat32) {
    if (device != Device::kCuda) return NumericPath::kF32ViaF64;
    if (kRouteCudaFloat32 != NumericPath::kF32ViaF64) return kRouteCudaFloat32;
    return has_slow_fp64(arch)   ? NumericPath::kF32ViaF32
           : prefers_mixed(arch) ? NumericPath::kF32ViaMixed
                                 : NumericPath::kF32ViaF64;
  }
  if (dtype == DType::kFloat64)
    return second_derivative || !kRouteF64Pair ? NumericPath::kF64DoubleDouble
                                               : NumericPath::kF64Pair;
  // 16-bit data: the narrow path on the GPU (the double backward too); on the CPU its tables.
  if (device == Device::kCuda) return NumericPath::kNarrow16;
  if (second_derivative) return NumericPath::kF32ViaF64;
  // The bias passes' argument x + b is a float: no table of 16-bit inputs serves it. Cubic cells
  // beat computing on AVX2, whose 8 lanes make the narrow functions dear; with 16 lanes AVX-512
  // computes faster (bench/kernel_alone.cpp on one Zen 4 host: 0.77-1.08 ns per element against
  // the AVX2 cubic cells' 1.12-1.41; the cells on 16 lanes, each row loaded, win only the tanh
  // form there and lose every form on a Xeon), and there the GPU's forms, whose test reads the
  // value alone, beat narrow16's two roundings for bfloat16 and for float16's exact form (Zen 4
  // and a Xeon); float16's logistic forms, whose test is cheap and whose GPU forms are dearer,
  // stay narrow16 (docs/performance.md).
  if (rule.argument_is_sum) {
    if (arch == kIsaAvx512)
      return kRouteRelative && (dtype == DType::kBFloat16 || form == Approximate::kNone)
                 ? NumericPath::kNarrow16Relative
                 : NumericPath::kNarrow16;
    return kRouteCubic ? NumericPath::kNarrow16Cubic : NumericPath::kNarrow16;
  }
  if (!kRouteTables) return NumericPath::kNarrow16;
  return pass == Pass::kForward ? NumericPath::kNarrow16ResultTable
                                : NumericPath::kNarrow16TermTables;
}

// The path that redoes the elements a path leaves unsettled (itself where it settles all).
constexpr NumericPath fallback(NumericPath path) {
  switch (path) {
    case NumericPath::kF64Pair: return NumericPath::kF64DoubleDouble;
    case NumericPath::kNarrow16:
    case NumericPath::kNarrow16ResultTable:
    case NumericPath::kNarrow16TermTables:
    case NumericPath::kNarrow16Cubic:
    case NumericPath::kNarrow16Relative: return NumericPath::kF32ViaF64;
    default: return path;
  }
}

// Where FP64 is slow, the 16-bit CUDA forward's elements that narrow16 leaves unsettled go to
// f32_via_f32 first: its float result, within 0.6 ulp of f over every float input
// (docs/accuracy.md), settles them unless a 16-bit rounding boundary lies within one unit in its
// last place (math/narrow16.h's float_rounds_surely), and only the rest to fallback(narrow16).
// The other passes' f' and products have no bound proven over every input there.
constexpr bool float_path_first(Device device, DType dtype, Pass pass, int arch) {
  return device == Device::kCuda && is_16_bit(dtype) && pass == Pass::kForward &&
         has_slow_fp64(arch);
}

constexpr const char* path_name(NumericPath path) {
  switch (path) {
    case NumericPath::kF32ViaF64: return "f32_via_f64";
    case NumericPath::kF32ViaF32: return "f32_via_f32";
    case NumericPath::kF32ViaMixed: return "f32_via_mixed";
    case NumericPath::kF64DoubleDouble: return "f64_double_double";
    case NumericPath::kF64Pair: return "f64_pair";
    case NumericPath::kNarrow16: return "narrow16";
    case NumericPath::kNarrow16ResultTable: return "narrow16_result_table";
    case NumericPath::kNarrow16TermTables: return "narrow16_term_tables";
    case NumericPath::kNarrow16Cubic: return "narrow16_cubic";
    case NumericPath::kNarrow16Relative: return "narrow16_relative";
  }
  return "?";
}

}  // namespace gelu_ext
