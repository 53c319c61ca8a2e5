// The part of the CUDA runtime and of cuda_fp16.h / cuda_bf16.h that csrc/cuda/gelu_cuda.cu
// uses, for host C++: so that its kernels and launchers can run on the CPU where no GPU is
// visible (tests/test_cuda_emulated.py). Blocks run one after another, and so do the warps of a
// block; a warp's 32 lanes run as fibers, each until its next warp collective (__ballot_sync,
// __syncwarp), where the warp waits until every lane has come, as on a GPU. Shared memory is a
// static array: one block runs at a time.
#pragma once

#include <immintrin.h>
#include <ucontext.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __noinline__ __attribute__((noinline))
#define __launch_bounds__(threads)
#define __shared__ static

enum cudaError_t { cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorLaunchFailure = 719 };
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16 };
struct CUstream_st;
using cudaStream_t = CUstream_st*;

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline thread_local dim3 blockIdx, threadIdx, gridDim, blockDim;

// Devices of one multiprocessor, so that the grids stay small and the grid-stride loops run
// several rounds on test-sized data. Device 0's SM holds 8 blocks of 256 threads at once (2048
// threads, registers limiting no kernel); device 1's holds 3 (as a kernel of 65 to 80 registers
// would): each launch's grid is what the current device holds at once.
constexpr int kEmulatedMultiprocessors = 1;
inline int emulated_device = 0;
inline cudaError_t cudaGetDevice(int* device) {
  *device = emulated_device;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr, int) {
  *value = kEmulatedMultiprocessors;
  return cudaSuccess;
}
template <class Kernel>
inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, Kernel, int threads,
                                                                 size_t) {
  *blocks = (emulated_device == 0 ? 2048 : 768) / threads;
  return cudaSuccess;
}

namespace gelu_emulation {
// Every launch since the log was last taken: the kernel as the source names it (template
// arguments included), its grid and block sizes, and the stream it was launched on.
struct Launch {
  std::string kernel;
  unsigned grid, block;
  cudaStream_t stream;
};
inline std::vector<Launch> launches;

// What went wrong in a warp since cudaGetLastError last ran ("" if nothing): a collective that
// not every lane of the warp reached, or reached with another mask or at another collective.
inline std::string warp_error;

constexpr int kWarpSize = 32;
enum class Collective { kNone, kBallot, kSyncWarp };

// One warp's lanes as fibers. A lane runs until it arrives at a collective or returns; once
// every lane waits at the same collective, each gets its result and the lanes run on in turn.
class Warp {
 public:
  static constexpr size_t kStackBytes = 256 * 1024;

  explicit Warp(const std::function<void()>* body) : body_(body) {
    for (auto& lane : lanes_) lane.stack.reset(new char[kStackBytes]);
  }

  // Runs the body on lanes [first_thread, first_thread + lanes) of the block; false (with
  // warp_error set) if the lanes fell out of step.
  bool run(unsigned first_thread, int lanes) {
    first_thread_ = first_thread;
    for (int l = 0; l < kWarpSize; ++l) {
      Lane& lane = lanes_[l];
      lane.state = l < lanes ? State::kRunnable : State::kAbsent;
      if (l >= lanes) continue;
      getcontext(&lane.context);
      lane.context.uc_stack.ss_sp = lane.stack.get();
      lane.context.uc_stack.ss_size = kStackBytes;
      lane.context.uc_link = &scheduler_;
      makecontext(&lane.context, &Warp::lane_entry, 0);
    }
    for (;;) {
      for (int l = 0; l < kWarpSize; ++l) {
        if (lanes_[l].state != State::kRunnable) continue;
        current_ = l;
        threadIdx = dim3{first_thread_ + l, 0, 0};
        running() = this;
        swapcontext(&scheduler_, &lanes_[l].context);
      }
      // Each lane that ran now waits at a collective or has returned.
      int waiting = 0;
      for (const Lane& lane : lanes_) waiting += lane.state == State::kWaiting;
      if (waiting == 0) return true;  // every lane returned
      if (waiting != lanes || !gather()) return false;
    }
  }

  // Called by a lane: waits until every lane of the warp has arrived at the same collective,
  // then returns that collective's result (the ballot's bits; 0 for __syncwarp).
  static unsigned arrive(Collective collective, unsigned mask, bool predicate) {
    Warp& warp = *running();
    Lane& lane = warp.lanes_[warp.current_];
    lane.state = State::kWaiting;
    lane.collective = collective;
    lane.mask = mask;
    lane.predicate = predicate;
    swapcontext(&lane.context, &warp.scheduler_);
    return lane.result;
  }

 private:
  enum class State { kAbsent, kRunnable, kWaiting, kReturned };
  struct Lane {
    std::unique_ptr<char[]> stack;
    ucontext_t context;
    State state = State::kAbsent;
    Collective collective = Collective::kNone;
    unsigned mask = 0, result = 0;
    bool predicate = false;
  };

  static Warp*& running() {
    static Warp* warp = nullptr;
    return warp;
  }

  static void lane_entry() {
    Warp& warp = *running();
    (*warp.body_)();
    warp.lanes_[warp.current_].state = State::kReturned;
  }  // uc_link: back to the scheduler

  // Every lane waits at a collective: checks that it is one collective of the whole warp, and
  // hands out its result.
  bool gather() {
    const Lane& first = lanes_[0];
    unsigned ballot = 0, present = 0;
    for (int l = 0; l < kWarpSize; ++l) {
      const Lane& lane = lanes_[l];
      if (lane.state == State::kAbsent) continue;
      present |= 1u << l;
      if (lane.collective != first.collective || lane.mask != first.mask) {
        warp_error = "the lanes of a warp met at different collectives or masks";
        return false;
      }
      if (lane.predicate) ballot |= 1u << l;
    }
    if (first.mask != present) {
      warp_error = "a collective's mask names lanes that are not all there";
      return false;
    }
    for (Lane& lane : lanes_) {
      if (lane.state != State::kWaiting) continue;
      lane.result = first.collective == Collective::kBallot ? ballot : 0u;
      lane.state = State::kRunnable;
    }
    return true;
  }

  const std::function<void()>* body_;
  Lane lanes_[kWarpSize];
  ucontext_t scheduler_;
  unsigned first_thread_ = 0;
  int current_ = 0;
};

// kernel<<<grid, block, 0, stream>>>(args) becomes
// launch("kernel", grid, block, stream, [&] { kernel(args); }).
template <class Body>
void launch(const char* kernel, unsigned grid, unsigned block, cudaStream_t stream, Body&& body) {
  launches.push_back(Launch{kernel, grid, block, stream});
  gridDim = dim3{grid, 1, 1};
  blockDim = dim3{block, 1, 1};
  const std::function<void()> run_body = body;
  Warp warp(&run_body);
  for (unsigned b = 0; b < grid; ++b) {
    blockIdx = dim3{b, 0, 0};
    for (unsigned t = 0; t < block; t += kWarpSize) {
      const int lanes = block - t < unsigned(kWarpSize) ? int(block - t) : kWarpSize;
      if (!warp.run(t, lanes)) {
        if (warp_error.empty()) {
          warp_error = "a lane returned while others of its warp waited at a collective";
        }
        std::fprintf(stderr, "%s: block %u, threads %u-%u: %s\n", kernel, b, t,
                     t + lanes - 1, warp_error.c_str());
        return;
      }
    }
  }
}
}  // namespace gelu_emulation

inline cudaError_t cudaGetLastError() {
  if (gelu_emulation::warp_error.empty()) return cudaSuccess;
  gelu_emulation::warp_error.clear();
  return cudaErrorLaunchFailure;
}

inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return gelu_emulation::Warp::arrive(gelu_emulation::Collective::kBallot, mask, predicate != 0);
}
inline void __syncwarp(unsigned mask = 0xFFFFFFFFu) {
  gelu_emulation::Warp::arrive(gelu_emulation::Collective::kSyncWarp, mask, false);
}
inline int __popc(unsigned bits) { return __builtin_popcount(bits); }
inline int __ffs(int bits) { return __builtin_ffs(bits); }

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
