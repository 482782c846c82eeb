// What/why: see canary.hpp. The canary's matrices are 128x128 (64 KiB each, 192 KiB in all: each
// product streams b from L2, as a micro-step's kernels do); busy_for keeps 64x64 products (48 KiB,
// about 33 us each) so its time is met finely. Each result feeds the next product so the compiler
// cannot drop or hoist the work, and a volatile sink keeps it.
#include "core/canary.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/format.h>

namespace gaccum {
namespace {

constexpr int kBusyN = 64;

volatile float g_sink = 0;

// c = a * b for n x n row-major matrices, then a takes a scaled copy of c (bounded values: the
// scale keeps them near 1).
void product_chain(int n, std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c) {
  const auto N = static_cast<std::size_t>(n);
  for (std::size_t r = 0; r < N; ++r) {
    float* row = &c[r * N];
    std::fill(row, row + N, 0.0f);
    for (std::size_t k = 0; k < N; ++k) {
      const float x = a[r * N + k];
      const float* brow = &b[k * N];
      for (std::size_t j = 0; j < N; ++j) row[j] += x * brow[j];
    }
  }
  float m = 0;
  for (float v : c) m = std::max(m, v < 0 ? -v : v);
  const float scale = m > 0 ? 1.0f / m : 1.0f;
  for (std::size_t i = 0; i < N * N; ++i) a[i] = c[i] * scale;
}

struct Matrices {
  std::vector<float> a, b, c;
  explicit Matrices(int n) {
    const auto size = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
    a.resize(size);
    b.resize(size);
    c.resize(size);
    for (std::size_t i = 0; i < size; ++i) {
      a[i] = 1.0f + 0.001f * static_cast<float>(i % 97);
      b[i] = 0.5f + 0.002f * static_cast<float>(i % 89);
    }
  }
};

Seconds one_rep(Matrices& m) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCanaryMatmuls; ++i) product_chain(kCanaryN, m.a, m.b, m.c);
  const auto t1 = std::chrono::steady_clock::now();
  g_sink = g_sink + m.c[static_cast<std::size_t>(kCanaryN + 1)];
  return std::chrono::duration<double>(t1 - t0).count();
}

}  // namespace

const std::string& canary_kernel() {
#if defined(__clang__)
  static const std::string compiler = fmt::format("clang {}.{}", __clang_major__, __clang_minor__);
#elif defined(__GNUC__)
  static const std::string compiler = fmt::format("gcc {}.{}", __GNUC__, __GNUC_MINOR__);
#else
  static const std::string compiler = "unknown compiler";
#endif
  static const std::string kernel =
      fmt::format("matmul {}x{} fp32 x{}, 1 thread, {}", kCanaryN, kCanaryN, kCanaryMatmuls, compiler);
  return kernel;
}

CanaryReading run_canary() {
  Matrices m(kCanaryN);
  one_rep(m);  // untimed: caches and the branch predictors warm
  std::vector<Seconds> t;
  for (int r = 0; r < kCanaryReps; ++r) t.push_back(one_rep(m));
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

void busy_for(Seconds s) {
  if (!(s > 0)) return;
  Matrices m(kBusyN);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
  do product_chain(kBusyN, m.a, m.b, m.c);
  while (std::chrono::steady_clock::now() < end);
  g_sink = g_sink + m.c[0];
}

double canary_ratio(Seconds a, Seconds b) {
  return a > 0 && b > 0 ? b / a : 0.0;
}

}  // namespace gaccum
