// csrc/cpu/kernels_avx512.cpp built for a CPU without AVX-512 (its intrinsics from
// avx512_stand_in.h, given with g++ -include), with a C interface for
// tests/test_cpu_avx512_emulated.py. GELU_AVX512_SOURCE names the copy of kernels_avx512.cpp
// whose target pragma the test rewrote for AVX2.
#include GELU_AVX512_SOURCE

extern "C" void emulated_run_loop(int pass, int approximate, int dtype, char** data,
                                  const int64_t* strides, int64_t size0, int64_t size1) {
  gelu_ext::cpu::avx512::run_loop(static_cast<gelu_ext::Pass>(pass),
                                  static_cast<gelu_ext::Approximate>(approximate),
                                  static_cast<gelu_ext::DType>(dtype), data, strides, size0, size1);
}

extern "C" void emulated_add_to_column_sums(int dtype, const char* values, int64_t stride,
                                            int64_t n, int64_t rows, int64_t row_stride,
                                            int64_t column_step, double* hi, double* lo) {
  gelu_ext::cpu::avx512::add_to_column_sums(static_cast<gelu_ext::DType>(dtype), values, stride, n,
                                            rows, row_stride, column_step, hi, lo);
}
