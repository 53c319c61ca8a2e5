// Checks gelu_math.h's single path (float32) against long double, for every float x in each
// variant's core domain (or every `step`-th one): prints the largest error of the forward, in ulps
// of the exact value, and of the derivative, in ulps of the sum of its terms' magnitudes (as
// tests/test_backward.py measures it), with the worst inputs and the share correctly rounded.
// Exits 1 unless every forward is within 1 ulp and every derivative within 2.
//
//   g++ -O2 -std=c++17 -ffp-contract=off -I csrc tools/check_single_path.cpp -o /tmp/check \
//       -lpthread && /tmp/check [step [none|tanh|sigmoid]]
//
// This checks the portable code. The vector kernels compute the same operations and must give
// the same bits (tests/test_cpu_kernels.py); bench/accuracy.py --exhaustive measures them.
#include <math.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "exact_reference.h"
#include "gelu_math.h"

using namespace gelu_ext;
using ld = long double;

namespace {

// The spacing of floats at |v|, subnormal spacing below the normal range.
ld float_ulp(ld v) {
  v = fabsl(v);
  if (v < 0x1p-126L) return 0x1p-149L;
  int e;
  frexpl(v, &e);
  return ldexpl(1.0L, e - 24);
}

struct Worst {
  ld forward = 0, derivative = 0;
  float forward_at = 0, derivative_at = 0;
  uint64_t checked = 0, correctly_rounded = 0, outside = 0;

  void merge(const Worst& o) {
    if (o.forward > forward) forward = o.forward, forward_at = o.forward_at;
    if (o.derivative > derivative) derivative = o.derivative, derivative_at = o.derivative_at;
    checked += o.checked, correctly_rounded += o.correctly_rounded, outside += o.outside;
  }
};

template <Approximate A>
void check(uint64_t first, uint64_t stride, Worst& w) {
  for (uint64_t bits = first; bits < (uint64_t(1) << 32); bits += stride) {
    const uint32_t u = static_cast<uint32_t>(bits);
    float x;
    std::memcpy(&x, &u, sizeof x);
    const float grad_and_x[2] = {1.0f, x};
    math::Bounded<float> f, d1;
    math::SinglePassMath<Pass::kForward, A>::apply(&x, &f);
    math::SinglePassMath<Pass::kBackward, A>::apply(grad_and_x, &d1);
    if (f.error != 0 || d1.error != 0) {  // the kernels redo these by the double path
      if (f.error == 0) ++w.outside;      // inside the domain, but f' is not taken
      continue;
    }
    const tools::Exact exact = tools::exact(x, A);
    const ld ef = fabsl(f.value - exact.f) / float_ulp(exact.f);
    const ld ed = fabsl(d1.value - exact.d1) / float_ulp(exact.d1_terms);
    if (ef > w.forward) w.forward = ef, w.forward_at = x;
    if (ed > w.derivative) w.derivative = ed, w.derivative_at = x;
    ++w.checked;
    w.correctly_rounded += static_cast<float>(exact.f) == f.value;
  }
}

template <Approximate A>
bool run(const char* name, uint64_t step) {
  const unsigned threads = std::thread::hardware_concurrency() ? std::thread::hardware_concurrency() : 1;
  std::vector<Worst> worst(threads);
  std::vector<std::thread> pool;
  for (unsigned k = 0; k < threads; ++k)
    pool.emplace_back([&, k] { check<A>(k * step, threads * step, worst[k]); });
  for (auto& t : pool) t.join();
  Worst all;
  for (const auto& w : worst) all.merge(w);
  std::printf("%-8s %llu inputs in the domain (%llu of them with f' sent to the double path)\n", name,
              static_cast<unsigned long long>(all.checked), static_cast<unsigned long long>(all.outside));
  std::printf("         forward:    max %.4f ulp at x = %.9g; correctly rounded %.4f%%\n",
              static_cast<double>(all.forward), all.forward_at,
              100.0 * all.correctly_rounded / all.checked);
  std::printf("         derivative: max %.4f ulp at x = %.9g\n", static_cast<double>(all.derivative),
              all.derivative_at);
  return all.forward <= 1 && all.derivative <= 2;
}

}  // namespace

int main(int argc, char** argv) {
  const uint64_t step = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1;
  const char* only = argc > 2 ? argv[2] : nullptr;
  auto wanted = [&](const char* name) { return only == nullptr || std::strcmp(only, name) == 0; };
  bool ok = true;
  if (wanted("none")) ok &= run<Approximate::kNone>("none", step);
  if (wanted("tanh")) ok &= run<Approximate::kTanh>("tanh", step);
  if (wanted("sigmoid")) ok &= run<Approximate::kSigmoid>("sigmoid", step);
  return ok ? 0 : 1;
}
