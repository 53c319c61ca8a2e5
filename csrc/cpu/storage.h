// The element types of CPU tensors, as the kernels see them: float, double, and the two 16-bit
// float formats as their bits (layout-compatible with c10::Half and c10::BFloat16).
#pragma once

#include <cstdint>

namespace gelu_ext {
namespace cpu {

struct Float16 {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

}  // namespace cpu
}  // namespace gelu_ext
