// What the CPU and CUDA kernels compute, and how ops.cpp asks for it. No torch headers here.
#pragma once

#include <cstdint>

namespace gelu_ext {

// The three GELU variants, in the order of the public `approximate` strings.
enum class Approximate : int32_t {
  kNone = 0,     // x * Phi(x)
  kTanh = 1,     // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
  kSigmoid = 2,  // x * sigmoid(1.702 x)
};

// Storage type of every operand of one call (they always agree).
enum class DType : int32_t { kFloat32, kFloat64, kFloat16, kBFloat16 };

// The elementwise passes. Operands are listed outputs first, as TensorIterator orders them.
enum class Pass : int32_t {
  kForward,          // y = gelu(x)                            operands: y, x
  kBackward,         // dx = grad * gelu'(x)                   operands: dx, grad, x
  kDoubleBackward,   // ggrad = gg * gelu'(x),                 operands: ggrad, gx, gg, grad, x
                     // gx = gg * grad * gelu''(x)
  kBiasForward,      // y = gelu(x + b)                        operands: y, x, b
  kBiasBackward,     // dx = grad * gelu'(x + b)               operands: dx, grad, x, b
  kGegluForward,     // y = gelu(gate) * up                    operands: y, gate, up
  kGegluBackward,    // dgate = grad * up * gelu'(gate),       operands: dgate, dup, grad, gate, up
                     // dup = grad * gelu(gate)
};

// Expands X(pass) for every pass, for dispatch switches.
#define GELU_FOR_EACH_PASS(X)                                                            \
  X(Pass::kForward) X(Pass::kBackward) X(Pass::kDoubleBackward) X(Pass::kBiasForward) \
  X(Pass::kBiasBackward) X(Pass::kGegluForward) X(Pass::kGegluBackward)

// Operands per pass: num_operands(pass) in math/passes.h, at most this many.
constexpr int kMaxOperands = 5;

namespace cpu {
// One TensorIterator 2-D loop: data[i] is operand i; strides holds num_operands(pass) byte strides of
// the inner dimension, then num_operands of the outer one.
void run_loop(Pass pass, Approximate approximate, DType dtype, char** data,
              const int64_t* strides, int64_t size0, int64_t size1);
// Adds `rows` rows of n values of a bias gradient (value i of row r at byte offset
// r * row_stride + i * stride) to per-column double sums, row after row: value i to
// hi[i * column_step] (column_step 1, or 0 where the values run down one column), and for float64
// values the sums' rounding errors to lo[i * column_step]. The same sums as a call per row, with
// fewer loads and stores of them.
void add_to_column_sums(DType dtype, const char* values, int64_t stride, int64_t n, int64_t rows,
                        int64_t row_stride, int64_t column_step, double* hi, double* lo);
// The instruction set of the kernels run_loop uses on this CPU: "avx512", "avx2" or "portable".
const char* isa();
// Asks Linux to back the 2 MB pages wholly inside [data, data + bytes), a new and untouched
// output, with transparent huge pages when first written. Advice only: elsewhere, or where the
// system declines, nothing changes. GELU_EXT_HUGE_PAGES=0 turns it off.
void advise_huge_pages(const void* data, int64_t bytes);
}  // namespace cpu

}  // namespace gelu_ext
