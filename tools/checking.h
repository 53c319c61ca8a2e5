// What the checking tools share: form names, float bits, and sweeps over float bit patterns split
// among kThreads threads (thread id takes first + id step, then every kThreads-th of those).
#pragma once

#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "kernels.h"

namespace gelu_ext {
namespace tools {

constexpr int kThreads = 2;

inline const char* variant_name(Approximate a) {
  return a == Approximate::kNone ? "none" : a == Approximate::kTanh ? "tanh" : "sigmoid";
}

inline float from_bits(uint32_t u) {
  float x;
  memcpy(&x, &u, 4);
  return x;
}

inline uint32_t bits_of(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  return u;
}

// Calls visit(bits, thread) for bits = first, first + step, ... below end.
template <class Visit>
void sweep(uint64_t first, uint64_t end, uint64_t step, Visit visit) {
  std::vector<std::thread> pool;
  for (int id = 0; id < kThreads; ++id) {
    pool.emplace_back([&, id] {
      for (uint64_t b = first + id * step; b < end; b += kThreads * step) visit(b, id);
    });
  }
  for (auto& t : pool) t.join();
}

// Calls visit(x, thread) for the floats of both signs whose magnitude bits are first,
// first + step, ... below end.
template <class Visit>
void for_each_float(uint64_t first, uint64_t end, uint64_t step, Visit visit) {
  sweep(first, end, step, [&](uint64_t b, int id) {
    for (int sign = 0; sign < 2; ++sign)
      visit(from_bits(static_cast<uint32_t>(b) | (sign ? 0x80000000u : 0u)), id);
  });
}

}  // namespace tools
}  // namespace gelu_ext
