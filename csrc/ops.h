// Shared by the backend registrations (ops.cpp for CPU, cuda/ops_cuda.cpp for CUDA): argument
// checks and the TensorIterators that give every pass F.gelu's output layout.
#pragma once

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <c10/util/string_view.h>

#include <tuple>
#include <utility>

#include "kernels.h"

namespace gelu_ext {

// "none" | "tanh" | "sigmoid"; anything else raises ValueError naming the three.
Approximate parse_approximate(c10::string_view approximate);

DType kernel_dtype(const at::TensorIteratorBase& iter);

// Each checks its arguments (raising before anything is allocated or written) and returns an
// iterator whose outputs are allocated like those of an ATen elementwise op.
at::TensorIterator forward_iter(const at::Tensor& input);
at::TensorIterator backward_iter(const at::Tensor& grad_output, const at::Tensor& input);
at::TensorIterator double_backward_iter(const at::Tensor& grad_grad_input,
                                        const at::Tensor& grad_output, const at::Tensor& input);
at::TensorIterator bias_iter(const at::Tensor& input, const at::Tensor& bias);
at::TensorIterator bias_backward_iter(const at::Tensor& grad_output, const at::Tensor& input,
                                      const at::Tensor& bias);
at::TensorIterator geglu_iter(const at::Tensor& gate, const at::Tensor& up);
at::TensorIterator geglu_backward_iter(const at::Tensor& grad_output, const at::Tensor& gate,
                                       const at::Tensor& up);
// gate and up: the halves of h's last dimension, as views.
std::pair<at::Tensor, at::Tensor> packed_halves(const at::Tensor& h, const char* op);
// Also allocates grad_h, whose halves are the iterator's outputs.
at::TensorIterator geglu_packed_backward_iter(const at::Tensor& grad_output, const at::Tensor& h,
                                              at::Tensor& grad_h);

// grad_input summed over all but the last dimension, accumulated in float (double for float64)
// and returned in grad_input's dtype, which is the bias's (checked with the inputs): the CUDA bias
// gradient. The CPU sums the rows as it writes them (ops.cpp).
at::Tensor sum_to_bias(const at::Tensor& grad_input);

// A backend runs one pass over an iterator built above.
using RunPass = void (*)(at::TensorIteratorBase& iter, Pass pass, Approximate approximate);

// The ops, for the backend that runs passes with `run`.
template <RunPass run>
at::Tensor gelu_op(const at::Tensor& input, c10::string_view approximate) {
  const Approximate a = parse_approximate(approximate);
  auto iter = forward_iter(input);
  run(iter, Pass::kForward, a);
  return iter.output();
}

template <RunPass run>
at::Tensor gelu_backward_op(const at::Tensor& grad_output, const at::Tensor& input,
                            c10::string_view approximate) {
  const Approximate a = parse_approximate(approximate);
  auto iter = backward_iter(grad_output, input);
  run(iter, Pass::kBackward, a);
  return iter.output();
}

template <RunPass run>
std::tuple<at::Tensor, at::Tensor> gelu_double_backward_op(const at::Tensor& grad_grad_input,
                                                           const at::Tensor& grad_output,
                                                           const at::Tensor& input,
                                                           c10::string_view approximate) {
  const Approximate a = parse_approximate(approximate);
  auto iter = double_backward_iter(grad_grad_input, grad_output, input);
  run(iter, Pass::kDoubleBackward, a);
  return {iter.output(0), iter.output(1)};
}

template <RunPass run>
at::Tensor bias_gelu_op(const at::Tensor& input, const at::Tensor& bias,
                        c10::string_view approximate) {
  const Approximate a = parse_approximate(approximate);
  auto iter = bias_iter(input, bias);
  run(iter, Pass::kBiasForward, a);
  return iter.output();
}

template <RunPass run>
std::tuple<at::Tensor, at::Tensor> bias_gelu_backward_op(const at::Tensor& grad_output,
                                                         const at::Tensor& input,
                                                         const at::Tensor& bias,
                                                         c10::string_view approximate) {
  const Approximate a = parse_approximate(approximate);
  auto iter = bias_backward_iter(grad_output, input, bias);
  run(iter, Pass::kBiasBackward, a);
  at::Tensor grad_input = iter.output();
  return {grad_input, sum_to_bias(grad_input)};
}

template <RunPass run>
at::Tensor geglu_op(const at::Tensor& gate, const at::Tensor& up, c10::string_view approximate) {
  const Approximate a = parse_approximate(approximate);
  auto iter = geglu_iter(gate, up);
  run(iter, Pass::kGegluForward, a);
  return iter.output();
}

template <RunPass run>
std::tuple<at::Tensor, at::Tensor> geglu_backward_op(const at::Tensor& grad_output,
                                                     const at::Tensor& gate, const at::Tensor& up,
                                                     c10::string_view approximate) {
  const Approximate a = parse_approximate(approximate);
  auto iter = geglu_backward_iter(grad_output, gate, up);
  run(iter, Pass::kGegluBackward, a);
  return {iter.output(0), iter.output(1)};
}

template <RunPass run>
at::Tensor geglu_packed_op(const at::Tensor& h, c10::string_view approximate) {
  const Approximate a = parse_approximate(approximate);
  const auto halves = packed_halves(h, "gelu_ext.geglu_packed");
  auto iter = geglu_iter(halves.first, halves.second);
  run(iter, Pass::kGegluForward, a);
  return iter.output();
}

template <RunPass run>
at::Tensor geglu_packed_backward_op(const at::Tensor& grad_output, const at::Tensor& h,
                                    c10::string_view approximate) {
  const Approximate a = parse_approximate(approximate);
  at::Tensor grad_h;
  auto iter = geglu_packed_backward_iter(grad_output, h, grad_h);
  run(iter, Pass::kGegluBackward, a);
  return grad_h;
}

}  // namespace gelu_ext
