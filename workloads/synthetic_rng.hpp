// What: a counter-based random stream: value(seed, sample, j) from splitmix64, no state.
// Why: sample i of a workload's data must be identical on every rank, LibTorch version and
//      device, and cheap to produce at any offset; torch's generators guarantee none of that.
#pragma once

#include <cmath>
#include <cstdint>

namespace gaccum::workloads {

inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A stream keyed by (seed, sample, purpose); draw k gives the k-th independent value.
class SampleRng {
 public:
  SampleRng(std::uint64_t seed, std::uint64_t sample, std::uint64_t purpose)
      : key_(splitmix64(splitmix64(splitmix64(seed) ^ sample) ^ (purpose * 0x632be59bd9b4e019ull))) {}
  std::uint64_t bits(std::uint64_t k) const { return splitmix64(key_ ^ (k * 0xd1b54a32d192ed03ull)); }
  // Uniform in [0, 1).
  double uniform(std::uint64_t k) const { return double(bits(k) >> 11) * 0x1.0p-53; }
  // Uniform integer in [0, n).
  std::uint64_t below(std::uint64_t k, std::uint64_t n) const { return bits(k) % n; }
  // Standard normal (Box-Muller on two uniforms).
  double normal(std::uint64_t k) const {
    double u1 = uniform(2 * k) + 0x1.0p-54;
    double u2 = uniform(2 * k + 1);
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  std::uint64_t key_;
};

}  // namespace gaccum::workloads
