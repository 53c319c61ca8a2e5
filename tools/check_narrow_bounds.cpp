// Checks the error bounds of the narrow (float) path (math/narrow16.h) against long double, for every
// float x in each variant's core domain (or every `step`-th one): the bound must hold everywhere,
// since the kernels' rounding test relies on it. Prints, per variant and function, the largest
// |value - exact| / error (must stay below 1) and the largest relative error. Then the same for
// the cubics of the CPU's 16-bit bias passes (narrow_cubic), at every float in their cells.
//
//   g++ -O2 -std=c++17 -ffp-contract=off -I csrc tools/check_narrow_bounds.cpp -o /tmp/check \
//       -lpthread && /tmp/check [step [none|tanh|sigmoid|all [cubics]]]
// ("cubics": the cubics alone.)
//
// This checks the portable code (scalar float, IEEE division). The vector kernels use other
// reciprocals; tests/test_cpu_kernels.py checks those exhaustively on 16-bit inputs. Built with
// -DGELU_DEVICE_FORMS it checks the GPU's forms instead (check_gpu below):
//   g++ -O2 -std=c++17 -ffp-contract=off -DGELU_DEVICE_FORMS -I csrc \
//       tools/check_narrow_bounds.cpp -o /tmp/check_gpu -lpthread && /tmp/check_gpu [step [form]]
// (step: every step-th float of the bias sums' arguments; 16-bit arguments are all checked).
#include <math.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "checking.h"
#include "exact_reference.h"
#include "gelu_math.h"

using namespace gelu_ext;
using namespace gelu_ext::tools;

namespace {

// The largest error/bound ratio seen, and where; one per thread, then the largest of those.
struct Worst {
  double ratio = 0;
  float x = 0;
  void see(double r, float at) {
    if (r > ratio) ratio = r, x = at;
  }
};
Worst largest(const std::vector<Worst>& per_thread) {
  Worst w;
  for (const Worst& t : per_thread) w.see(t.ratio, t.x);
  return w;
}

template <Approximate A>
void check(uint64_t step) {
  const float core = math::narrow_core<A>();
  const uint32_t top = bits_of(core);
  std::vector<Worst> worst_f(kThreads), worst_d(kThreads);
  std::vector<double> rel_f(kThreads);
  for_each_float(0, uint64_t(top) + 1, step, [&](float x, int id) {
    math::Bounded<float> f, d1;
    math::narrow_value_and_derivative<A>(x, f, d1);
    if (!(f.error < INFINITY)) return;
    const tools::Exact exact = tools::exact(x, A);
    const ld ef = exact.f, ed = exact.d1;
    worst_f[id].see(f.error > 0 ? static_cast<double>(fabsl(f.value - ef) / f.error) : 0, x);
    worst_d[id].see(static_cast<double>(fabsl(d1.value - ed) / d1.error), x);
    if (fabsl(ef) > 1e-30L)  // relative errors of float-normal results
      rel_f[id] = fmax(rel_f[id], static_cast<double>(fabsl(f.value / ef - 1)));
  });
  const Worst wf = largest(worst_f), wd = largest(worst_d);
  double relf = 0;
  for (double r : rel_f) relf = fmax(relf, r);
  printf("%-8s |x| <= %-4g f: max error/bound %.3f (x=%.8g), max relative error 2^%.2f;  "
         "f': max error/bound %.3f (x=%.8g)\n",
         variant_name(A), core, wf.ratio, wf.x, relf > 0 ? log2(relf) : -999.0, wd.ratio, wd.x);
}

// The cubics of the CPU's 16-bit bias passes (math/narrow16.h, narrow_cubic), for f and f', at
// every float x in a cell (or every `step`-th one).
template <Approximate A>
void check_cubics(uint64_t step) {
  std::vector<math::CubicRow> tables[2];
  for (uint32_t row = 0; row < 2 * uint32_t(math::kCellsPerSign); ++row) {
    tables[0].push_back(math::fit_cubic_row<A, false>(row));
    tables[1].push_back(math::fit_cubic_row<A, true>(row));
  }
  std::vector<Worst> worst[2] = {std::vector<Worst>(kThreads), std::vector<Worst>(kThreads)};
  for_each_float(uint64_t(math::kCellFirstExponent) << 23,
                 uint64_t(math::kCellLastExponent + 1) << 23, step, [&](float x, int id) {
    uint32_t row;
    float d;
    if (!math::cell_of(x, row, d)) return;
    const tools::Exact exact = tools::exact(x, A);
    for (int k = 0; k < 2; ++k) {
      const math::Bounded<float> v = k ? math::narrow_cubic<true>(tables[k][row].c, d)
                                       : math::narrow_cubic<false>(tables[k][row].c, d);
      worst[k][id].see(static_cast<double>(fabsl(v.value - (k ? exact.d1 : exact.f)) / v.error), x);
    }
  });
  printf("%-8s cubics, 2^-32 <= |x| < 8:", variant_name(A));
  for (int k = 0; k < 2; ++k) {
    const Worst w = largest(worst[k]);
    printf("  %s: max error/bound %.3f (x=%.8g)", k ? "f'" : "f", w.ratio, w.x);
  }
  printf("\n");
}

#if defined(GELU_DEVICE_FORMS)
// The GPU's forms (math/narrow16.h, gpu_terms): f and f' at every argument of each kind, with the
// stand-ins of the GPU's approximate instructions (math/gpu_approximate.h) erring by their
// documented maximum in each of the four pairs of directions. The kernels' rounding test needs
// |value - exact| <= kGpuNarrowRelativeError |value| for every output (float16's:
// kGpuNarrowRelativeErrorFloat16): each term's relative error (to its value) must stay below the
// term bound, that bound less the rounding of a product of operands. Checked within the forms'
// core domain (where an element is usable; further for float16's sigmoid form, below) where the
// term is a normal float (the kernels take no output from a term below that: narrow16.h) or 0,
// which must then be exact.
float from_float16(uint16_t h) {  // exact, without F16C
  const int exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FF;
  const float magnitude = exponent == 0    ? ldexpf(static_cast<float>(mantissa), -24)
                          : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                           : ldexpf(static_cast<float>(mantissa | 0x400),
                                                    exponent - 25);
  return (h & 0x8000) ? -magnitude : magnitude;
}

template <Approximate A, int kArgBits>
void check_gpu(uint64_t step) {
  const float core = A == Approximate::kNone ? math::kGpuCoreExact : math::kGpuCoreLogistic;
  // Float16 arguments of the sigmoid form: out to 16, as the kernels take them beyond the core
  // (narrow16.h, kBeyondCoreSettles); beyond 16 every backward output lies below float16's least
  // normal or rounds to the gradient, and every forward output below that normal or to x.
  const float checked = A == Approximate::kSigmoid && kArgBits == 11 ? 16.0f : core;
  const char* kind = kArgBits == 8 ? "bfloat16" : kArgBits == 11 ? "float16" : "float";
  // Float arguments (bias sums) serve both types' outputs: the narrower bound, bfloat16's.
  const double term_bound = kArgBits == 11 ? kGpuTermBoundFloat16 : kGpuTermBound;
  std::vector<Worst> worst[2] = {std::vector<Worst>(kThreads), std::vector<Worst>(kThreads)};
  std::vector<double> largest_relative[2] = {std::vector<double>(kThreads),
                                              std::vector<double>(kThreads)};
  auto visit = [&](float x, int id) {
    if (!(fabsf(x) <= checked)) return;
    const tools::Exact exact = tools::exact(x, A);
    for (int direction = 0; direction < 4; ++direction) {
      math::gpu_approximate_direction = {direction & 1 ? 1 : -1, direction & 2 ? 1 : -1};
      const math::GpuTerms t = math::gpu_terms<A, kArgBits, math::kNeedF | math::kNeedD1>(x);
      for (int k = 0; k < 2; ++k) {
        const float value = k ? t.d1 : t.f;
        const ld want = k ? exact.d1 : exact.f;
        const double relative = gpu_term_relative_error(value, want);
        if (relative < 0) continue;
        largest_relative[k][id] = fmax(largest_relative[k][id], relative);
        worst[k][id].see(relative / term_bound, x);
      }
    }
  };
  if (kArgBits == 24) {
    for_each_float(0, uint64_t(bits_of(core)) + 1, step, visit);
  } else {
    // Every 16-bit value: the float16 or bfloat16 bit patterns of one sign (both signs below).
    for_each_float(0, 0x8000, 1, [&](float bits_as_float, int id) {
      const uint32_t b = bits_of(bits_as_float);
      const uint16_t h = static_cast<uint16_t>((b & 0x7FFF) | ((b >> 16) & 0x8000));
      visit(kArgBits == 8 ? from_bits(uint32_t(h) << 16) : from_float16(h), id);
    });
  }
  printf("gpu %-8s %-8s arguments:", variant_name(A), kind);
  for (int k = 0; k < 2; ++k) {
    const Worst w = largest(worst[k]);
    double rel = 0;
    for (double r : largest_relative[k]) rel = fmax(rel, r);
    printf("  %s: max relative error 2^%.2f, error/bound %.3f (x=%.8g)", k ? "f'" : "f",
           rel > 0 ? log2(rel) : -999.0, w.ratio, w.x);
  }
  printf("\n");
}

template <Approximate A>
void check_gpu_all(uint64_t step) {
  check_gpu<A, 8>(step);
  check_gpu<A, 11>(step);
  check_gpu<A, 24>(step);
}
#endif

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);  // each line as it is found
  const uint64_t step = argc > 1 ? strtoull(argv[1], nullptr, 10) : 1;
  const char* only = argc > 2 && strcmp(argv[2], "all") != 0 ? argv[2] : nullptr;
  const bool narrow = !(argc > 3 && strcmp(argv[3], "cubics") == 0);
  auto wanted = [&](const char* name) { return !only || strcmp(only, name) == 0; };
#if defined(GELU_DEVICE_FORMS)
  printf("the GPU's forms (bound 2^%.2f of every bfloat16 output and at float arguments, 2^%.2f "
         "of every float16 output)\n",
         log2(static_cast<double>(math::kGpuNarrowRelativeError)),
         log2(static_cast<double>(math::kGpuNarrowRelativeErrorFloat16)));
  if (wanted("none")) check_gpu_all<Approximate::kNone>(step);
  if (wanted("tanh")) check_gpu_all<Approximate::kTanh>(step);
  if (wanted("sigmoid")) check_gpu_all<Approximate::kSigmoid>(step);
  return 0;
#endif
  if (wanted("none")) {
    if (narrow) check<Approximate::kNone>(step);
    check_cubics<Approximate::kNone>(step);
  }
  if (wanted("tanh")) {
    if (narrow) check<Approximate::kTanh>(step);
    check_cubics<Approximate::kTanh>(step);
  }
  if (wanted("sigmoid")) {
    if (narrow) check<Approximate::kSigmoid>(step);
    check_cubics<Approximate::kSigmoid>(step);
  }
}
