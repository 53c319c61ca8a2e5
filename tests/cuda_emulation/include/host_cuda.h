// The part of the CUDA runtime and of cuda_fp16.h / cuda_bf16.h that csrc/cuda/gelu_cuda.cu
// uses, for host C++: so that its kernels and launchers can run on the CPU, one thread after
// another, where no GPU is visible (tests/test_cuda_emulated.py). The kernels use no shared
// memory or synchronization, so running threads in turn gives the result a GPU gives.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(threads)

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1 };
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16 };
struct CUstream_st;
using cudaStream_t = CUstream_st*;

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline thread_local dim3 blockIdx, threadIdx, gridDim, blockDim;

// A device of one multiprocessor, so that the grids stay small (8 blocks of 256 threads) and the
// grid-stride loops run several rounds on test-sized data.
constexpr int kEmulatedMultiprocessors = 1;
inline cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr, int) {
  *value = kEmulatedMultiprocessors;
  return cudaSuccess;
}
inline cudaError_t cudaGetLastError() { return cudaSuccess; }

namespace gelu_emulation {
// Every launch since the log was last taken: the kernel as the source names it (template
// arguments included), and its grid and block sizes.
struct Launch {
  std::string kernel;
  unsigned grid, block;
};
inline std::vector<Launch> launches;

// kernel<<<grid, block, 0, stream>>>(args) becomes
// launch("kernel", grid, block, [&] { kernel(args); }).
template <class Body>
void launch(const char* kernel, unsigned grid, unsigned block, Body&& body) {
  launches.push_back(Launch{kernel, grid, block});
  gridDim = dim3{grid, 1, 1};
  blockDim = dim3{block, 1, 1};
  for (unsigned b = 0; b < grid; ++b) {
    for (unsigned t = 0; t < block; ++t) {
      blockIdx = dim3{b, 0, 0};
      threadIdx = dim3{t, 0, 0};
      body();
    }
  }
}
}  // namespace gelu_emulation

// 16-bit types: bits only, converted as the CUDA intrinsics convert (round to nearest even).
struct __half {
  uint16_t bits = 0;
};
struct __nv_bfloat16 {
  uint16_t bits = 0;
};
inline float __half2float(__half h) { return _cvtsh_ss(h.bits); }
inline __half __float2half_rn(float f) {
  return __half{static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT))};
}
inline unsigned short __half_as_ushort(__half h) { return h.bits; }
inline float __bfloat162float(__nv_bfloat16 h) {
  const uint32_t bits = static_cast<uint32_t>(h.bits) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline __nv_bfloat16 __float2bfloat16_rn(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  if (f != f) return __nv_bfloat16{0x7FC0};
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return __nv_bfloat16{static_cast<uint16_t>(bits >> 16)};
}
inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 h) { return h.bits; }

// double to 16 bits, rounded once to nearest even (cvt.rn.f16.f64, cvt.rn.bf16.f64): through a
// float rounded to odd, which gives the same result.
inline float round_to_odd_float(double d) {
  const float nearest = static_cast<float>(d);
  if (!(static_cast<double>(nearest) != d) || d != d) return nearest;
  uint32_t bits;
  std::memcpy(&bits, &nearest, sizeof bits);
  if (static_cast<double>(nearest) > d ? nearest > 0 : nearest < 0) bits -= 1;  // toward zero
  bits |= 1u;
  float odd;
  std::memcpy(&odd, &bits, sizeof odd);
  return odd;
}
inline __half __double2half(double d) { return __float2half_rn(round_to_odd_float(d)); }
inline __nv_bfloat16 __double2bfloat16(double d) {
  return __float2bfloat16_rn(round_to_odd_float(d));
}
