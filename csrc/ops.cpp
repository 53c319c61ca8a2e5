// Op schemas (TORCH_LIBRARY gelu_ext), input checks, and the CPU implementations.
#include "ops.h"

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/zeros.h>
#include <Python.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "gelu_math.h"

namespace gelu_ext {

Approximate parse_approximate(c10::string_view approximate) {
  if (approximate == "none") return Approximate::kNone;
  if (approximate == "tanh") return Approximate::kTanh;
  if (approximate == "sigmoid") return Approximate::kSigmoid;
  TORCH_CHECK_VALUE(false, "gelu_ext: approximate must be one of 'none', 'tanh' or 'sigmoid', "
                    "but got '", approximate, "'");
}

namespace {

// "torch.float32", as Python users know the dtypes.
std::string dtype_name(at::ScalarType t) {
  return "torch." + std::string(c10::getDtypeNames(t).first);
}

bool is_supported(at::ScalarType t) {
  return t == at::kFloat || t == at::kDouble || t == at::kHalf || t == at::kBFloat16;
}

void check_floating(const at::Tensor& t, const char* op, const char* name) {
  TORCH_CHECK(t.defined(), op, ": '", name, "' is an undefined tensor");
  TORCH_CHECK_TYPE(is_supported(t.scalar_type()), op, ": expected '", name,
                   "' to be a floating-point tensor (float16, bfloat16, float32 or float64), "
                   "but got ", dtype_name(t.scalar_type()));
}

void check_same_dtype_and_device(const at::Tensor& t, const char* name, const at::Tensor& input,
                                 const char* input_name, const char* op) {
  check_floating(t, op, name);
  TORCH_CHECK_TYPE(t.scalar_type() == input.scalar_type(), op, ": '", name, "' and '", input_name,
                   "' must have the same dtype, but got ", dtype_name(t.scalar_type()), " and ",
                   dtype_name(input.scalar_type()));
  TORCH_CHECK(t.device() == input.device(), op, ": '", name, "' and '", input_name, "' must be on "
              "the same device, but got ", t.device(), " and ", input.device());
}

// Every other operand of a pass must match `input` exactly: no broadcasting, no type promotion.
void check_matches_input(const at::Tensor& t, const char* name, const at::Tensor& input,
                         const char* op, const char* input_name = "input") {
  check_floating(t, op, name);
  TORCH_CHECK(t.sizes() == input.sizes(), op, ": '", name, "' and '", input_name, "' must have "
              "the same shape, but got ", t.sizes(), " and ", input.sizes());
  check_same_dtype_and_device(t, name, input, input_name, op);
}

// bias: 1-D, as long as input's last dimension, same dtype and device.
void check_bias(const at::Tensor& bias, const at::Tensor& input, const char* op) {
  check_same_dtype_and_device(bias, "bias", input, "input", op);
  TORCH_CHECK(bias.dim() == 1, op, ": 'bias' must be 1-D, but got ", bias.dim(),
              " dimensions (shape ", bias.sizes(), ")");
  TORCH_CHECK(input.dim() >= 1 && bias.size(0) == input.size(-1), op, ": 'bias' must have as many "
              "elements as the last dimension of 'input', but got ", bias.size(0), " and input "
              "shape ", input.sizes());
}

at::TensorIteratorConfig elementwise_config() {
  at::TensorIteratorConfig config;
  config.check_all_same_dtype(true).check_all_same_device(true);
  return config;
}

}  // namespace

DType kernel_dtype(const at::TensorIteratorBase& iter) {
  switch (iter.common_dtype()) {
    case at::kFloat: return DType::kFloat32;
    case at::kDouble: return DType::kFloat64;
    case at::kHalf: return DType::kFloat16;
    case at::kBFloat16: return DType::kBFloat16;
    default: TORCH_INTERNAL_ASSERT(false, "gelu_ext: unsupported dtype ", iter.common_dtype());
  }
}

at::TensorIterator forward_iter(const at::Tensor& input) {
  check_floating(input, "gelu_ext.gelu", "input");
  return elementwise_config().add_owned_output(at::Tensor()).add_const_input(input).build();
}

at::TensorIterator backward_iter(const at::Tensor& grad_output, const at::Tensor& input) {
  const char* op = "gelu_ext.gelu_backward";
  check_floating(input, op, "input");
  check_matches_input(grad_output, "grad_output", input, op);
  return elementwise_config()
      .add_owned_output(at::Tensor())
      .add_const_input(grad_output)
      .add_const_input(input)
      .build();
}

at::TensorIterator double_backward_iter(const at::Tensor& grad_grad_input,
                                        const at::Tensor& grad_output, const at::Tensor& input) {
  const char* op = "gelu_ext.gelu_double_backward";
  check_floating(input, op, "input");
  check_matches_input(grad_grad_input, "grad_grad_input", input, op);
  check_matches_input(grad_output, "grad_output", input, op);
  return elementwise_config()
      .add_owned_output(at::Tensor())
      .add_owned_output(at::Tensor())
      .add_const_input(grad_grad_input)
      .add_const_input(grad_output)
      .add_const_input(input)
      .build();
}

at::TensorIterator bias_iter(const at::Tensor& input, const at::Tensor& bias) {
  const char* op = "gelu_ext.bias_gelu";
  check_floating(input, op, "input");
  check_bias(bias, input, op);
  return elementwise_config()
      .add_owned_output(at::Tensor())
      .add_const_input(input)
      .add_const_input(bias)  // broadcast over the leading dimensions (stride 0)
      .build();
}

at::TensorIterator bias_backward_iter(const at::Tensor& grad_output, const at::Tensor& input,
                                      const at::Tensor& bias) {
  const char* op = "gelu_ext.bias_gelu_backward";
  check_floating(input, op, "input");
  check_matches_input(grad_output, "grad_output", input, op);
  check_bias(bias, input, op);
  return elementwise_config()
      .add_owned_output(at::Tensor())
      .add_const_input(grad_output)
      .add_const_input(input)
      // Packed, so that the CPU backward can tell a row's columns by their bias addresses.
      .add_owned_const_input(bias.contiguous())
      .build();
}

at::TensorIterator geglu_iter(const at::Tensor& gate, const at::Tensor& up) {
  const char* op = "gelu_ext.geglu";
  check_floating(gate, op, "gate");
  check_matches_input(up, "up", gate, op, "gate");
  return elementwise_config().add_owned_output(at::Tensor()).add_const_input(gate)
      .add_const_input(up).build();
}

at::TensorIterator geglu_backward_iter(const at::Tensor& grad_output, const at::Tensor& gate,
                                       const at::Tensor& up) {
  const char* op = "gelu_ext.geglu_backward";
  check_floating(gate, op, "gate");
  check_matches_input(up, "up", gate, op, "gate");
  check_matches_input(grad_output, "grad_output", gate, op, "gate");
  return elementwise_config()
      .add_owned_output(at::Tensor())
      .add_owned_output(at::Tensor())
      .add_const_input(grad_output)
      .add_const_input(gate)
      .add_const_input(up)
      .build();
}

std::pair<at::Tensor, at::Tensor> packed_halves(const at::Tensor& h, const char* op) {
  check_floating(h, op, "h");
  TORCH_CHECK(h.dim() >= 1 && h.size(-1) % 2 == 0, op, ": the last dimension of 'h' (gate and "
              "up side by side) must be even, but got shape ", h.sizes());
  const int64_t half = h.size(-1) / 2;
  return {h.narrow(-1, 0, half), h.narrow(-1, half, half)};
}

at::TensorIterator geglu_packed_backward_iter(const at::Tensor& grad_output, const at::Tensor& h,
                                              at::Tensor& grad_h) {
  const char* op = "gelu_ext.geglu_packed_backward";
  const auto halves = packed_halves(h, op);
  check_floating(grad_output, op, "grad_output");
  TORCH_CHECK(grad_output.sizes() == halves.first.sizes(), op, ": 'grad_output' must have the "
              "shape of half of 'h', ", halves.first.sizes(), ", but got ", grad_output.sizes());
  check_same_dtype_and_device(grad_output, "grad_output", h, "h", op);
  grad_h = at::empty(h.sizes(), h.options());
  const auto grad_halves = packed_halves(grad_h, op);
  return elementwise_config()
      .add_owned_output(grad_halves.first)
      .add_owned_output(grad_halves.second)
      .add_const_input(grad_output)
      .add_owned_const_input(halves.first)
      .add_owned_const_input(halves.second)
      .build();
}

at::Tensor sum_to_bias(const at::Tensor& grad_input) {
  std::vector<int64_t> leading(grad_input.dim() - 1);
  for (size_t d = 0; d < leading.size(); ++d) leading[d] = static_cast<int64_t>(d);
  // ATen accumulates 16-bit sums in float and rounds once; asking for a float result instead
  // would first copy the whole gradient to float (three times slower on the CPU).
  return at::sum(grad_input, leading, /*keepdim=*/false);
}

namespace {

// Below this many elements per thread, the parallel split costs more than it saves. ATen's
// 32768 suits its cheap loops; these take 1.5-12 ns per element, so that at 4096 a thread's share
// (6-50 us) already outweighs waking a second thread (tensors of 2^14-2^15 elements: up to 1.6x
// faster than with 32768, which ran them on one thread).
constexpr int64_t kCpuGrainSize = 4096;

// The iterator's outputs, allocated for this call and not yet written (see
// cpu::advise_huge_pages).
void advise_huge_pages(const at::TensorIteratorBase& iter) {
  for (int k = 0; k < iter.noutputs(); ++k) {
    const c10::Storage& storage = iter.output_base(k).storage();
    cpu::advise_huge_pages(storage.data(), static_cast<int64_t>(storage.nbytes()));
  }
}

void run_cpu(at::TensorIteratorBase& iter, Pass pass, Approximate approximate) {
  const DType dtype = kernel_dtype(iter);
  advise_huge_pages(iter);
  iter.for_each(
      [&](char** data, const int64_t* strides, int64_t size0, int64_t size1) {
        cpu::run_loop(pass, approximate, dtype, data, strides, size0, size1);
      },
      kCpuGrainSize);
}

// Elements per run of the bias backward before its rows are added to the column sums: few enough
// that the rows are still in the L1 cache.
constexpr int64_t kColumnSumChunk = 4096;

// The bias gradient in `dtype`, from per-thread column sums [threads, 2 (hi, lo), columns] added
// in thread order with compensation, then rounded once.
at::Tensor round_column_sums(const at::Tensor& sums, at::ScalarType dtype) {
  const int64_t threads = sums.size(0), columns = sums.size(2);
  const double* data = sums.const_data_ptr<double>();
  const bool is_double = dtype == at::kDouble;
  at::Tensor total =
      at::empty({columns}, sums.options().dtype(is_double ? at::kDouble : at::kFloat));
  double* as_double = is_double ? total.data_ptr<double>() : nullptr;
  float* as_float = is_double ? nullptr : total.data_ptr<float>();
  for (int64_t c = 0; c < columns; ++c) {
    double sum = 0.0, error = 0.0, plain = 0.0;
    for (int64_t part = 0; part < 2 * threads; ++part) {
      const math::DD<double> s = math::two_sum(sum, data[part * columns + c]);
      sum = s.hi;
      error += s.lo;
      if (part % 2 == 0) plain += data[part * columns + c];
    }
    // An infinite or NaN gradient (or an overflow) leaves hi infinite or NaN and its errors NaN:
    // the plain sum of the hi parts is then the IEEE sum (inf, -inf or NaN).
    const double value = std::isfinite(plain) ? sum + error : plain;
    if (is_double) {
      as_double[c] = value;
    } else {
      // float32: rounded to nearest here; 16-bit: rounded to odd here, so that the conversion
      // below rounds the double sum once.
      as_float[c] =
          dtype == at::kFloat ? static_cast<float>(value) : math::round_to_odd_float(value);
    }
  }
  return total.to(dtype);
}

// grad_input and grad_bias in one pass: each thread adds the rows it writes to its own column
// sums while they are in cache, where summing grad_input afterwards would read it all again.
std::tuple<at::Tensor, at::Tensor> bias_gelu_backward_cpu(const at::Tensor& grad_output,
                                                          const at::Tensor& input,
                                                          const at::Tensor& bias,
                                                          c10::string_view approximate) {
  const Approximate a = parse_approximate(approximate);
  auto iter = bias_backward_iter(grad_output, input, bias);
  const DType dtype = kernel_dtype(iter);
  constexpr int kOperands = num_operands(Pass::kBiasBackward);  // grad_input, grad, input, bias
  constexpr int kBias = kOperands - 1;
  const int64_t element_size = iter.element_size(0), columns = bias.numel();
  const char* bias_data = static_cast<const char*>(iter.data_ptr(kBias));  // packed
  const int threads = at::get_num_threads();
  at::Tensor sums = at::zeros({threads, 2, columns}, bias.options().dtype(at::kDouble));
  double* sums_data = sums.data_ptr<double>();
  advise_huge_pages(iter);
  iter.for_each(
      [&](char** data, const int64_t* strides, int64_t size0, int64_t size1) {
        const int thread = at::get_thread_num();
        TORCH_INTERNAL_ASSERT(thread < threads, "gelu_ext.bias_gelu_backward: thread ", thread,
                              " of ", threads);
        double* hi = sums_data + thread * 2 * columns;
        double* lo = hi + columns;
        const int64_t* outer = strides + kOperands;
        const int64_t column_step = strides[kBias] / element_size;  // 1, or 0 down a column
        const int64_t rows_per_chunk =
            std::max<int64_t>(1, kColumnSumChunk / std::max<int64_t>(size0, 1));
        char* chunk[kOperands];
        for (int64_t j = 0; j < size1; j += rows_per_chunk) {
          const int64_t rows = std::min(rows_per_chunk, size1 - j);
          for (int k = 0; k < kOperands; ++k) chunk[k] = data[k] + j * outer[k];
          cpu::run_loop(Pass::kBiasBackward, a, dtype, chunk, strides, size0, rows);
          // Rows that start at the same column (the bias does not move between them) in one call.
          const int64_t group = outer[kBias] == 0 ? rows : 1;
          for (int64_t r = 0; r < rows; r += group) {
            const int64_t first = (chunk[kBias] + r * outer[kBias] - bias_data) / element_size;
            cpu::add_to_column_sums(dtype, chunk[0] + r * outer[0], strides[0], size0, group,
                                    outer[0], column_step, hi + first, lo + first);
          }
        }
      },
      kCpuGrainSize);
  return {iter.output(), round_column_sums(sums, bias.scalar_type())};
}

}  // namespace

TORCH_LIBRARY(gelu_ext, m) {
  m.def("gelu(Tensor input, str approximate=\"none\") -> Tensor");
  // d/d input of gelu: grad_output * gelu'(input).
  m.def("gelu_backward(Tensor grad_output, Tensor input, str approximate=\"none\") -> Tensor");
  // The backward of gelu_backward: (grad_grad_input * gelu'(input),
  //                                 grad_grad_input * grad_output * gelu''(input)).
  m.def("gelu_double_backward(Tensor grad_grad_input, Tensor grad_output, Tensor input, "
        "str approximate=\"none\") -> (Tensor, Tensor)");
  // gelu(input + bias), bias 1-D over the last dimension; the sum is not rounded before the GELU
  // (float64: rounded once, to double).
  m.def("bias_gelu(Tensor input, Tensor bias, str approximate=\"none\") -> Tensor");
  // (grad_input, grad_bias): grad_output * gelu'(input + bias), and that summed over all but the
  // last dimension (on the CPU in double, compensated for float64, and rounded once).
  m.def("bias_gelu_backward(Tensor grad_output, Tensor input, Tensor bias, "
        "str approximate=\"none\") -> (Tensor, Tensor)");
  // gelu(gate) * up, for same-shape gate and up (views such as h.chunk(2, -1) need no copy).
  m.def("geglu(Tensor gate, Tensor up, str approximate=\"none\") -> Tensor");
  // (grad_gate, grad_up) = (grad_output * up * gelu'(gate), grad_output * gelu(gate)), in one pass.
  m.def("geglu_backward(Tensor grad_output, Tensor gate, Tensor up, str approximate=\"none\") "
        "-> (Tensor, Tensor)");
  // geglu of h = [gate, up] (its last dimension split in halves, as h.chunk(2, -1)), and its
  // backward, which writes grad_h = [grad_gate, grad_up] in one pass with no concatenation.
  m.def("geglu_packed(Tensor h, str approximate=\"none\") -> Tensor");
  m.def("geglu_packed_backward(Tensor grad_output, Tensor h, str approximate=\"none\") -> Tensor");
  // The instruction set of the CPU kernels chosen for this machine, for reports.
  m.def("_cpu_isa() -> str", []() { return std::string(cpu::isa()); });
}

TORCH_LIBRARY_IMPL(gelu_ext, CPU, m) {
  m.impl("gelu", &gelu_op<run_cpu>);
  m.impl("gelu_backward", &gelu_backward_op<run_cpu>);
  m.impl("gelu_double_backward", &gelu_double_backward_op<run_cpu>);
  m.impl("bias_gelu", &bias_gelu_op<run_cpu>);
  m.impl("bias_gelu_backward", &bias_gelu_backward_cpu);
  m.impl("geglu", &geglu_op<run_cpu>);
  m.impl("geglu_backward", &geglu_backward_op<run_cpu>);
  m.impl("geglu_packed", &geglu_packed_op<run_cpu>);
  m.impl("geglu_packed_backward", &geglu_packed_backward_op<run_cpu>);
}

}  // namespace gelu_ext

// Importing gelu_ext._C from Python loads this library and so registers the ops above. The module
// itself is empty: the ops are reached through torch.ops.gelu_ext.
extern "C" PyObject* PyInit__C(void) {
  static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr, -1, nullptr};
  return PyModule_Create(&module_def);
}
