// What/why: see grad_sync.hpp. Buckets launch strictly in bucket order on every rank (a bucket
// whose gradients are all final waits for the buckets before it), as DDP's Reducer does, so the
// collectives match across ranks even if hooks fire in a different order.
#include "comm/grad_sync.hpp"

#include <torch/torch.h>

#include <algorithm>

#include <fmt/format.h>

#include "comm/grad_hooks.hpp"
#include "core/error.hpp"
#include "workloads/optimizer.hpp"

namespace gaccum::comm {

Seconds union_length(std::vector<std::pair<std::chrono::steady_clock::time_point,
                                           std::chrono::steady_clock::time_point>> intervals) {
  std::sort(intervals.begin(), intervals.end());
  Seconds total = 0;
  bool open = false;
  std::chrono::steady_clock::time_point s{}, e{};
  for (const auto& [a, b] : intervals) {
    if (!open || a > e) {
      if (open) total += std::chrono::duration<double>(e - s).count();
      s = a;
      e = b;
      open = true;
    } else if (b > e) {
      e = b;
    }
  }
  if (open) total += std::chrono::duration<double>(e - s).count();
  return total;
}

GradSync::GradSync(Communicator* comm, std::vector<torch::Tensor> params, Strategy strategy, Bytes first_bucket_cap,
                   Bytes bucket_cap)
    : comm_(comm), timer_(comm ? comm->device() : torch::Device(torch::kCPU)), params_(std::move(params)),
      strategy_(strategy) {
  world_size_ = comm_ ? comm_->world_size() : 1;
  if (params_.empty()) throw InputError("gradient sync: the workload has no trainable parameters");
  const auto dtype = params_.front().scalar_type();
  const auto device = params_.front().device();
  for (const auto& p : params_)
    if (p.scalar_type() != dtype || p.device() != device)
      throw InputError("gradient sync: all parameters must share one dtype and device");
  if (world_size_ == 1) return;

  const Bytes elem = static_cast<Bytes>(c10::elementSize(dtype));
  std::vector<Bytes> sizes;
  for (const auto& p : params_) sizes.push_back(static_cast<Bytes>(p.numel()) * elem);
  if (!traits(strategy_).bucketed) {
    Bucket all;
    for (std::size_t i = 0; i < params_.size(); ++i) {
      all.params.push_back(i);
      all.bytes += sizes[i];
    }
    buckets_.push_back(std::move(all));
  } else {
    buckets_ = assign_buckets(sizes, first_bucket_cap, bucket_cap);
  }

  views_.resize(params_.size());
  bucket_of_.resize(params_.size());
  auto opts = torch::TensorOptions().dtype(dtype).device(device);
  torch::NoGradGuard no_grad;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    const auto numel = static_cast<std::int64_t>(buckets_[b].bytes / elem);
    buffers_.push_back(torch::zeros({numel}, opts));
    buffer_bytes_ += buckets_[b].bytes;
    std::int64_t off = 0;
    for (auto i : buckets_[b].params) {
      const auto n = params_[i].numel();
      views_[i] = buffers_[b].narrow(0, off, n).view(params_[i].sizes());
      bucket_of_[i] = b;
      off += n;
    }
  }
  pending_.assign(buckets_.size(), 0);
  copied_.assign(params_.size(), false);
  if (traits(strategy_).bucketed)
    hooks_ = std::make_unique<GradReadyHooks>(params_, [this](std::size_t i) { on_grad_ready(i); });
}

GradSync::~GradSync() {
  hooks_.reset();
  // Collectives still in flight (a failed step) must not outlive their buffers.
  for (auto& f : flights_) {
    try {
      f.work->wait();
    } catch (const std::exception&) {
    }
  }
}

Count WindowSync::expected_collectives(Count accum_steps) const {
  Count n = 0;
  for (Count c : expected_per_micro(accum_steps)) n += c;
  return n;
}

std::vector<Count> GradSync::expected_per_micro(Count accum_steps) const {
  std::vector<Count> per(static_cast<std::size_t>(std::max<Count>(1, accum_steps)), 0);
  if (world_size_ < 2) return per;
  for (Count m = 0; m < accum_steps; ++m)
    if (syncs_in_micro_step(strategy_, m, accum_steps))
      per[static_cast<std::size_t>(m)] = static_cast<Count>(buckets_.size());
  return per;
}

void GradSync::zero_grad() { workloads::zero_grad(params_); }

std::vector<torch::Tensor> GradSync::full_gradients() { return held_gradients(); }  // DDP holds them whole

std::vector<torch::Tensor> GradSync::held_gradients() const {
  std::vector<torch::Tensor> g;
  for (const auto& p : params_) g.push_back(p.grad());
  return g;
}

double sq_norm(const std::vector<torch::Tensor>& ts) {
  double s = 0;
  for (const auto& t : ts)
    if (t.defined()) {
      const double n = t.norm().item<double>();
      s += n * n;
    }
  return s;
}

double GradSync::gradient_sq_norm() { return sq_norm(full_gradients()); }

void GradSync::begin_step(Count accum_steps) {
  if (accum_steps < 1) throw InputError("gradient sync: accum_steps must be at least 1");
  accum_steps_ = accum_steps;
  stats_ = GradSyncStats{};
  stats_.collectives_per_micro.assign(static_cast<std::size_t>(accum_steps), 0);
  intervals_.clear();
}

void GradSync::before_backward(Count micro) {
  if (micro < 0 || micro >= accum_steps_) throw InputError("gradient sync: micro-step out of range");
  current_micro_ = micro;
  if (world_size_ == 1) return;
  if (!traits(strategy_).bucketed || !syncs_in_micro_step(strategy_, micro, accum_steps_)) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (std::size_t b = 0; b < buckets_.size(); ++b) pending_[b] = buckets_[b].params.size();
  std::fill(copied_.begin(), copied_.end(), false);
  next_launch_ = 0;
  flights_.clear();
  armed_ = true;
}

void GradSync::copy_in(std::size_t i) {
  torch::NoGradGuard no_grad;
  const auto& g = params_[i].grad();
  if (g.defined()) {
    views_[i].copy_(g);
  } else {
    views_[i].zero_();  // a parameter this backward did not reach
  }
  copied_[i] = true;
}

void GradSync::launch_bucket_locked(std::size_t b, bool in_backward) {
  Flight f;
  f.launched = Clock::now();
  f.work = comm_->allreduce_sum_async(buffers_[b]);
  flights_.push_back(std::move(f));
  stats_.collectives += 1;
  stats_.launched_in_backward += in_backward ? 1 : 0;
  stats_.collectives_per_micro[static_cast<std::size_t>(current_micro_)] += 1;
  stats_.bytes_reduced += buckets_[b].bytes;
}

void GradSync::launch_ready_locked(bool force_all) {
  while (next_launch_ < buckets_.size() && (force_all || pending_[next_launch_] == 0)) {
    if (force_all)
      for (auto i : buckets_[next_launch_].params)
        if (!copied_[i]) copy_in(i);
    launch_bucket_locked(next_launch_, !force_all);
    ++next_launch_;
  }
}

void GradSync::on_grad_ready(std::size_t i) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!armed_) return;
  const auto b = bucket_of_[i];
  if (copied_[i]) {
    if (b < next_launch_)
      throw RuntimeFailure(fmt::format("gradient sync: parameter {} became ready twice in one backward, after its "
                                       "bucket was launched (is it used by two graphs?)",
                                       i));
    copy_in(i);
    return;
  }
  copy_in(i);
  pending_[b] -= 1;
  launch_ready_locked(false);
}

void GradSync::after_backward(Count micro) {
  if (micro != current_micro_) throw InputError("gradient sync: after_backward without before_backward");
  if (world_size_ == 1) return;
  // On a GPU backward() returns once its kernels are queued: the timer waits for them, so that
  // the exposed time starts when the compute ends (host clocks stand for the device's from here on).
  const auto backward_end = timer_.start();
  if (!traits(strategy_).bucketed) {
    if (!syncs_in_micro_step(strategy_, micro, accum_steps_)) return;
    std::lock_guard<std::mutex> lock(mu_);
    flights_.clear();
    for (std::size_t i = 0; i < params_.size(); ++i) copy_in(i);
    next_launch_ = 0;
    launch_ready_locked(true);
  } else {
    std::lock_guard<std::mutex> lock(mu_);
    if (!armed_) return;
    armed_ = false;
    launch_ready_locked(true);  // buckets whose hooks did not all fire (unused parameters, no samples)
  }
  finish_sync(backward_end);
}

void GradSync::finish_sync(Clock::time_point backward_end) {
  // NCCL: wait() blocks the host until the collective completes (TORCH_NCCL_BLOCKING_WAIT, set by
  // comm::connect), so its return time is the completion time; Gloo works report their own.
  for (auto& f : flights_) {
    f.work->wait();
    auto done = f.work->completed_at().value_or(Clock::now());
    intervals_.emplace_back(f.launched, std::max(done, f.launched));
  }
  flights_.clear();
  torch::NoGradGuard no_grad;
  for (auto& buf : buffers_) buf.div_(world_size_);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto& g = params_[i].mutable_grad();
    if (g.defined()) {
      g.copy_(views_[i]);
    } else {
      g = views_[i].clone();
    }
  }
  stats_.exposed += timer_.seconds_since(backward_end);  // counts the averaging and copies queued above
  stats_.comm_total = union_length(intervals_);
}

}  // namespace gaccum::comm
