// CPU kernels: the inner loops that TensorIterator::for_each runs in parallel (see ops.cpp).
// Each element calls the math in gelu_math.h; this file only loads, stores and loops.
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <type_traits>

#include "../gelu_math.h"
#include "../kernels.h"

namespace gelu_ext {
namespace cpu {
namespace {

template <class T>
inline double load(const char* p) {
  return static_cast<double>(*reinterpret_cast<const T*>(p));
}

// Rounds once from double: 16-bit types through a round-to-odd float (see gelu_math.h).
template <class T>
inline void store(char* p, double v) {
  *reinterpret_cast<T*>(p) = static_cast<T>(math::round_to_odd_float(v));
}
template <>
inline void store<double>(char* p, double v) {
  *reinterpret_cast<double*>(p) = v;
}
template <>
inline void store<float>(char* p, double v) {
  *reinterpret_cast<float*>(p) = static_cast<float>(v);
}

// Runs pass P over one 2-D TensorIterator block. The inner dimension has constant byte strides
// (sizeof(T) on contiguous data); operands are outputs first, then inputs.
template <Pass P, Approximate A, class T>
void run_block(char** data, const int64_t* strides, int64_t size0, int64_t size1) {
  using M = math::PassMath<P, A, std::is_same<T, double>::value>;
  constexpr int N = M::kOutputs + M::kInputs;
  char* ptr[N];
  double in[M::kInputs], out[M::kOutputs];
  for (int64_t j = 0; j < size1; ++j) {
    for (int k = 0; k < N; ++k) ptr[k] = data[k] + j * strides[N + k];
    for (int64_t i = 0; i < size0; ++i) {
      for (int k = 0; k < M::kInputs; ++k) in[k] = load<T>(ptr[M::kOutputs + k]);
      M::apply(in, out);
      for (int k = 0; k < M::kOutputs; ++k) store<T>(ptr[k], out[k]);
      for (int k = 0; k < N; ++k) ptr[k] += strides[k];
    }
  }
}

template <Approximate A, class T>
void run_typed(Pass pass, char** data, const int64_t* strides, int64_t size0, int64_t size1) {
  switch (pass) {
    case Pass::kForward: return run_block<Pass::kForward, A, T>(data, strides, size0, size1);
    case Pass::kBackward: return run_block<Pass::kBackward, A, T>(data, strides, size0, size1);
    case Pass::kDoubleBackward:
      return run_block<Pass::kDoubleBackward, A, T>(data, strides, size0, size1);
  }
}

template <Approximate A>
void run_variant(Pass pass, DType dtype, char** data, const int64_t* strides, int64_t size0,
                 int64_t size1) {
  switch (dtype) {
    case DType::kFloat32: return run_typed<A, float>(pass, data, strides, size0, size1);
    case DType::kFloat64: return run_typed<A, double>(pass, data, strides, size0, size1);
    case DType::kFloat16: return run_typed<A, c10::Half>(pass, data, strides, size0, size1);
    case DType::kBFloat16: return run_typed<A, c10::BFloat16>(pass, data, strides, size0, size1);
  }
}

}  // namespace

void run_loop(Pass pass, Approximate approximate, DType dtype, char** data,
              const int64_t* strides, int64_t size0, int64_t size1) {
  switch (approximate) {
    case Approximate::kNone:
      return run_variant<Approximate::kNone>(pass, dtype, data, strides, size0, size1);
    case Approximate::kTanh:
      return run_variant<Approximate::kTanh>(pass, dtype, data, strides, size0, size1);
    case Approximate::kSigmoid:
      return run_variant<Approximate::kSigmoid>(pass, dtype, data, strides, size0, size1);
  }
}

}  // namespace cpu
}  // namespace gelu_ext
