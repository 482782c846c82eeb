// What/why: see phase_clock.hpp. The CPU clock lives here; the CUDA one in cuda_support.cpp.
#include "engine/phase_clock.hpp"

#include <chrono>

#include "engine/cuda_support.hpp"

namespace gaccum::engine {
namespace {

class SteadyClock final : public PhaseClock {
 public:
  void begin() override {
    marks_.clear();
    marks_.push_back(std::chrono::steady_clock::now());
  }
  void mark() override { marks_.push_back(std::chrono::steady_clock::now()); }
  std::vector<Seconds> intervals() override {
    std::vector<Seconds> out;
    for (size_t i = 1; i < marks_.size(); ++i)
      out.push_back(std::chrono::duration<double>(marks_[i] - marks_[i - 1]).count());
    return out;
  }

 private:
  std::vector<std::chrono::steady_clock::time_point> marks_;
};

}  // namespace

std::unique_ptr<PhaseClock> clock_for(const torch::Device& device) {
  if (device.is_cuda()) return cuda_clock(device);
  return std::make_unique<SteadyClock>();
}

}  // namespace gaccum::engine
