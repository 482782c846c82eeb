// What/why: see canary.hpp. The matrices live on the stack (48 KiB, in L2), the result feeds the
// next product so the compiler cannot drop or hoist the work, and a volatile sink keeps it.
#include "core/canary.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <vector>

#include <fmt/format.h>

namespace gaccum {
namespace {

constexpr int kN = 64;
using Matrix = std::array<float, kN * kN>;

volatile float g_sink = 0;

// c = a * b, then a takes a scaled copy of c (bounded values: the scale keeps them near 1).
void product_chain(Matrix& a, const Matrix& b, Matrix& c) {
  for (int r = 0; r < kN; ++r) {
    float* row = &c[r * kN];
    std::fill(row, row + kN, 0.0f);
    for (int k = 0; k < kN; ++k) {
      const float x = a[r * kN + k];
      const float* brow = &b[k * kN];
      for (int j = 0; j < kN; ++j) row[j] += x * brow[j];
    }
  }
  float m = 0;
  for (float v : c) m = std::max(m, v < 0 ? -v : v);
  const float scale = m > 0 ? 1.0f / m : 1.0f;
  for (int i = 0; i < kN * kN; ++i) a[i] = c[i] * scale;
}

Seconds one_rep(Matrix& a, const Matrix& b, Matrix& c) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kCanaryMatmuls; ++i) product_chain(a, b, c);
  const auto t1 = std::chrono::steady_clock::now();
  g_sink = g_sink + c[static_cast<std::size_t>(kN + 1)];
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
      fmt::format("matmul {}x{} fp32 x{}, 1 thread, {}", kN, kN, kCanaryMatmuls, compiler);
  return kernel;
}

CanaryReading run_canary() {
  Matrix a{}, b{}, c{};
  for (int i = 0; i < kN * kN; ++i) {
    a[static_cast<std::size_t>(i)] = 1.0f + 0.001f * static_cast<float>(i % 97);
    b[static_cast<std::size_t>(i)] = 0.5f + 0.002f * static_cast<float>(i % 89);
  }
  one_rep(a, b, c);  // untimed: caches and the branch predictors warm
  std::vector<Seconds> t;
  for (int r = 0; r < kCanaryReps; ++r) t.push_back(one_rep(a, b, c));
  std::sort(t.begin(), t.end());
  return {t.front(), t[t.size() / 2]};
}

void busy_for(Seconds s) {
  if (!(s > 0)) return;
  Matrix a{}, b{}, c{};
  for (int i = 0; i < kN * kN; ++i) {
    a[static_cast<std::size_t>(i)] = 1.0f;
    b[static_cast<std::size_t>(i)] = 0.5f;
  }
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(s);
  do product_chain(a, b, c);
  while (std::chrono::steady_clock::now() < end);
  g_sink = g_sink + c[0];
}

double canary_ratio(Seconds a, Seconds b) {
  return a > 0 && b > 0 ? b / a : 0.0;
}

}  // namespace gaccum
