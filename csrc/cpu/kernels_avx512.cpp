// CPU kernels for AVX-512 (F, DQ, BW, VL): 8 doubles per vector. gelu_cpu.cpp calls them only on CPUs that
// have these instructions. Everything compiled under the target pragma lives in the
// namespaces gelu_ext::math::avx512 and gelu_ext::cpu::avx512, so that the linker never mixes it
// with code built for other CPUs; system headers are included before the pragma for the same reason.
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512dq,avx512bw,avx512vl,avx2,fma,f16c")

#define GELU_ISA avx512
#include "simd_avx512.h"
#include "loops.h"

namespace gelu_ext {
namespace cpu {
namespace avx512 {

void run_loop(Pass pass, Approximate approximate, DType dtype, char** data,
              const int64_t* strides, int64_t size0, int64_t size1) {
  run<Lanes>(pass, approximate, dtype, data, strides, size0, size1);
}

void add_to_column_sums(DType dtype, const char* values, int64_t stride, int64_t n, int64_t rows,
                        int64_t row_stride, int64_t column_step, double* hi, double* lo) {
  column_sums<Lanes>(dtype, values, stride, n, rows, row_stride, column_step, hi, lo);
}

}  // namespace avx512
}  // namespace cpu
}  // namespace gelu_ext

#pragma GCC pop_options
#endif
