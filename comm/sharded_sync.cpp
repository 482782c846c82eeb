// What/why: see sharded_sync.hpp. A unit is reduced only after every earlier unit (fill buffer
// order = bucket order), so the collectives match across ranks even when hooks fire out of
// order; a gradient that arrives for a later unit stays in .grad until its unit is filled.
#include "comm/sharded_sync.hpp"

#include <torch/torch.h>

#include <algorithm>

#include <fmt/format.h>

#include "comm/grad_hooks.hpp"
#include "core/error.hpp"

namespace gaccum::comm {
namespace {

// A flat buffer's storage dropped (the parameters viewing it keep their shapes) and brought
// back, as FSDP frees and re-allocates a FlatParameter's storage between uses.
void free_storage(const torch::Tensor& t) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  s->set_data_ptr_noswap(c10::DataPtr(nullptr, t.device()));
  s->set_nbytes(0);
}

void alloc_storage(const torch::Tensor& t) {
  c10::StorageImpl* s = t.storage().unsafeGetStorageImpl();
  const std::size_t bytes = static_cast<std::size_t>(t.numel()) * t.element_size();
  s->set_data_ptr_noswap(s->allocator()->allocate(bytes));
  s->set_nbytes(bytes);
}

// The wall time of a sync call, added to the step's exposed communication (DeviceTimer: on a
// GPU the compute queued before the call is not counted and the copies queued inside it are).
struct Exposed {
  Seconds& total;
  const DeviceTimer& timer;
  DeviceTimer::Clock::time_point t0;
  Exposed(Seconds& t, const DeviceTimer& d) : total(t), timer(d), t0(d.start()) {}
  Exposed(const Exposed&) = delete;
  Exposed& operator=(const Exposed&) = delete;
  ~Exposed() { total += timer.seconds_since(t0); }
};

}  // namespace

ShardedSync::ShardedSync(Communicator* comm, std::vector<torch::Tensor> params, ShardingChoice choice,
                         Strategy strategy, Count accum_steps, ShardFault fault,
                         const std::vector<Count>& unit_tensors)
    : comm_(comm),
      timer_(comm ? comm->device() : torch::Device(torch::kCPU)),
      params_(std::move(params)),
      sharding_(choice.sharding), strategy_(strategy), fault_(fault) {
  const Sharding sharding = choice.sharding;
  if (!comm_ || comm_->world_size() < 2)
    throw InputError(fmt::format("--sharding {}: needs world_size >= 2 (nothing to shard across)", to_string(choice)));
  if (sharding == Sharding::none)
    throw InputError("--sharding none: DDP synchronises with comm::GradSync, not a sharded plan");
  group_ = comm_;
  if (sharding == Sharding::hsdp) {
    // Shard groups of G consecutive ranks; replica groups of the ranks G apart (same position).
    const int p = comm_->world_size(), g = static_cast<int>(choice.group), me = comm_->rank();
    if (g < 2 || g >= p || p % g != 0)
      throw InputError(fmt::format("--sharding {}: G must be at least 2, below world_size {} and divide it",
                                   to_string(choice), p));
    std::vector<int> shard, replica;
    for (int r = me / g * g; r < me / g * g + g; ++r) shard.push_back(r);
    for (int r = me % g; r < p; r += g) replica.push_back(r);
    shard_comm_ = comm_->split(shard, fmt::format("hsdp-shard-{}", me / g));
    replica_comm_ = comm_->split(replica, fmt::format("hsdp-replica-{}", me % g));
    group_ = shard_comm_.get();
  }
  if (sharding == Sharding::zero1 && traits(strategy).every_micro_step)
    throw InputError(
        "--sharding zero1 with --strategy every-step: zero1 keeps full gradients (use overlap or fused, or "
        "zero2)");
  if (params_.empty()) throw InputError("sharded sync: the workload has no trainable parameters");
  rank_ = group_->rank();
  world_ = group_->world_size();
  divisor_ = comm_->world_size();
  shards_params_ = traits(sharding).shards_parameters;
  if (accum_steps < 1) throw InputError("sharded sync: accum_steps must be at least 1");
  accum_steps_ = accum_steps;
  keep_full_grad_ = holds_whole_gradient(strategy, accum_steps);
  const auto dtype = params_.front().scalar_type();
  const auto device = params_.front().device();
  for (const auto& p : params_)
    if (p.scalar_type() != dtype || p.device() != device)
      throw InputError("sharded sync: all parameters must share one dtype and device");

  const Bytes elem = static_cast<Bytes>(c10::elementSize(dtype));
  std::vector<Bytes> sizes;
  for (const auto& p : params_) sizes.push_back(static_cast<Bytes>(p.numel()) * elem);
  unit_of_.resize(params_.size());
  offset_of_.resize(params_.size());
  std::int64_t p_max = 0;
  // The units: a staged model's (backward order) under zero3/hsdp, else the DDP buckets.
  std::vector<std::vector<std::size_t>> groups;
  per_unit_ = shards_params_ && !unit_tensors.empty();
  if (per_unit_) {
    std::size_t next = 0;
    for (Count t : unit_tensors) {
      if (t < 1 || next + static_cast<std::size_t>(t) > params_.size())
        throw InputError("sharded sync: the model's units do not cover its parameters");
      std::vector<std::size_t> g;
      for (Count j = 0; j < t; ++j) g.push_back(next++);
      groups.push_back(std::move(g));
    }
    if (next != params_.size()) throw InputError("sharded sync: the model's units do not cover its parameters");
    std::reverse(groups.begin(), groups.end());
  } else {
    for (const Bucket& b : assign_buckets(sizes)) groups.push_back(b.params);
  }
  for (const auto& group : groups) {
    Unit u;
    u.params = group;
    for (auto i : group) {
      u.offsets.push_back(u.numel);
      unit_of_[i] = units_.size();
      offset_of_[i] = u.numel;
      u.numel += params_[i].numel();
    }
    u.shard = (u.numel + world_ - 1) / world_;
    u.padded = u.shard * world_;
    p_max = std::max(p_max, u.padded);
    units_.push_back(std::move(u));
  }

  auto opts = torch::TensorOptions().dtype(dtype).device(device);
  torch::NoGradGuard no_grad;
  for (const Unit& u : units_) {
    // The flat buffer, the parameters as views into it, this rank's shard of it.
    auto flat = torch::zeros({u.padded}, opts);
    for (std::size_t j = 0; j < u.params.size(); ++j) {
      auto& p = params_[u.params[j]];
      auto view = flat.narrow(0, u.offsets[j], p.numel());
      view.copy_(p.reshape({-1}));
      p.set_data(view.view(p.sizes()));
    }
    auto own = flat.narrow(0, rank_ * u.shard, u.shard);
    torch::Tensor shard = shards_params_ ? own.clone() : own.detach();
    shard.set_requires_grad(true);
    auto grad_shard = torch::zeros({u.shard}, opts);
    shard.mutable_grad() = grad_shard;
    shards_.push_back(shard);
    grad_shards_.push_back(grad_shard);
    flat_.push_back(flat);
  }
  gathered_.assign(units_.size(), true);
  if (shards_params_) free_all();
  fill_ = torch::zeros({p_max}, opts);
  recv_ = torch::zeros({p_max}, opts);
  buffer_bytes_ = 2 * static_cast<Bytes>(p_max) * elem;
  ready_.assign(params_.size(), false);
  pending_.assign(units_.size(), 0);
  if (traits(strategy_).bucketed)
    hooks_ = std::make_unique<GradReadyHooks>(params_, [this](std::size_t i) { on_grad_ready(i); });
}

ShardedSync::~ShardedSync() {
  hooks_.reset();
}

bool ShardedSync::reduces_in(Count micro) const {
  return syncs_in_micro_step(strategy_, micro, accum_steps_);
}

std::vector<Count> ShardedSync::expected_per_micro(Count accum_steps) const {
  const Count n = units();
  std::vector<Count> per(static_cast<std::size_t>(std::max<Count>(1, accum_steps)), 0);
  for (Count m = 0; m < accum_steps; ++m) {
    Count& c = per[static_cast<std::size_t>(m)];
    if (shards_params_) c += 2 * n;  // the forward's and the backward's all-gathers
    if (syncs_in_micro_step(strategy_, m, accum_steps)) c += n;
  }
  if (replica_comm_) per.back() += n;  // hsdp: each unit's shard allreduced across the replicas
  if (!shards_params_) per.back() += n;  // zero1/2: the parameters all-gathered after the step
  return per;
}

ShardedSync::Clock::time_point ShardedSync::start_clock() const {
  return timer_.start();  // GPU: the work queued before the collective is not its time
}

void ShardedSync::count(Count collectives, Clock::time_point start) {
  stats_.comm_total += timer_.seconds_since(start);
  stats_.collectives += collectives;
  stats_.collectives_per_micro[static_cast<std::size_t>(current_micro_)] += collectives;
}

void ShardedSync::zero_grad() {
  torch::NoGradGuard no_grad;
  for (auto& g : grad_shards_) g.zero_();
  for (const auto& p : params_) {
    auto& g = p.mutable_grad();
    if (!keep_full_grad_) {
      g = torch::Tensor();  // every-step: the hooks move each gradient into its unit at once
    } else if (g.defined()) {
      g.zero_();
    } else {
      g = torch::zeros_like(p);
    }
  }
  synced_ = false;
}

void ShardedSync::begin_step(Count accum_steps) {
  if (accum_steps < 1) throw InputError("sharded sync: accum_steps must be at least 1");
  if (holds_whole_gradient(strategy_, accum_steps) != keep_full_grad_)
    throw InputError(fmt::format("sharded sync: built for windows of {} micro-step(s), stepped with {}: whether the "
                                 "whole gradient is held differs (construct one per accum_steps)",
                                 accum_steps_, accum_steps));
  accum_steps_ = accum_steps;
  stats_ = GradSyncStats{};
  stats_.collectives_per_micro.assign(static_cast<std::size_t>(accum_steps), 0);
  current_micro_ = 0;
}

void ShardedSync::gather_unit(std::size_t k, bool counted) {
  if (!shards_params_ || gathered_[k]) return;
  torch::NoGradGuard no_grad;
  const auto t0 = start_clock();
  alloc_storage(flat_[k]);
  group_->all_gather_into(shards_[k].detach(), flat_[k], &recv_);
  if (counted) count(1, t0);
  gathered_[k] = true;
}

void ShardedSync::free_unit(std::size_t k) {
  if (!gathered_[k]) return;
  free_storage(flat_[k]);
  gathered_[k] = false;
}

void ShardedSync::gather_all(bool counted) {
  for (std::size_t u = 0; u < units_.size(); ++u) gather_unit(u, counted);
}

void ShardedSync::free_all() {
  for (std::size_t u = 0; u < units_.size(); ++u) free_unit(u);
}

void ShardedSync::forward_gathers(Count u) {
  gather_unit(unit_index(u), true);
  if (static_cast<std::size_t>(u) + 1 < units_.size()) gather_unit(unit_index(u + 1), true);
}

void ShardedSync::backward_gathers(Count u) {
  if (static_cast<std::size_t>(u) + 1 < units_.size()) free_unit(unit_index(u + 1));
  gather_unit(unit_index(u), true);
  if (u >= 1) gather_unit(unit_index(u - 1), true);
}

void ShardedSync::before_unit_forward(Count u) {
  if (!per_unit_ || held_) return;
  Exposed e{stats_.exposed, timer_};
  forwarded_ = true;
  forward_gathers(u);
}

void ShardedSync::after_unit_forward(Count u, const torch::Tensor& out) {
  if (!per_unit_ || held_) return;
  {
    Exposed e{stats_.exposed, timer_};
    free_unit(unit_index(u));
  }
  if (out.defined() && out.requires_grad())
    out.register_hook([this, u](const torch::Tensor&) { before_unit_backward(u); });
}

void ShardedSync::before_unit_backward(Count u) {
  std::lock_guard<std::mutex> lock(mu_);
  if (held_) return;
  Exposed e{stats_.exposed, timer_};
  backward_gathers(u);
}

void ShardedSync::before_forward(Count micro) {
  if (micro < 0 || micro >= accum_steps_) throw InputError("sharded sync: micro-step out of range");
  current_micro_ = micro;
  forwarded_ = false;
  if (per_unit_) return;  // the model's unit hooks gather
  Exposed e{stats_.exposed, timer_};
  gather_all(true);
}

void ShardedSync::before_backward(Count micro) {
  if (micro != current_micro_) throw InputError("sharded sync: before_backward without before_forward");
  {
    Exposed e{stats_.exposed, timer_};
    if (per_unit_ && !forwarded_) {  // no samples in this micro-step: the forward's gathers all the same
      for (Count u = 0; u < static_cast<Count>(units_.size()); ++u) {
        forward_gathers(u);
        free_unit(unit_index(u));
      }
    } else if (shards_params_ && !per_unit_) {  // resharded after the forward, gathered again for the backward
      free_all();
      gather_all(true);
    }
  }
  if (!reduces_in(micro)) return;
  std::lock_guard<std::mutex> lock(mu_);
  std::fill(ready_.begin(), ready_.end(), false);
  for (std::size_t u = 0; u < units_.size(); ++u) pending_[u] = units_[u].params.size();
  filling_ = 0;
  armed_ = traits(strategy_).bucketed && (forwarded_ || !per_unit_);
}

void ShardedSync::copy_into_fill(std::size_t i) {
  torch::NoGradGuard no_grad;
  auto& g = params_[i].mutable_grad();
  auto view = fill_.narrow(0, offset_of_[i], params_[i].numel());
  if (g.defined())
    view.copy_(g.reshape({-1}));
  else
    view.zero_();  // a parameter this backward did not reach
  if (!keep_full_grad_) g = torch::Tensor();
}

void ShardedSync::reduce_unit(std::size_t u, bool in_backward) {
  const Unit& unit = units_[u];
  torch::NoGradGuard no_grad;
  auto in = fill_.narrow(0, 0, unit.padded);
  if (unit.padded > unit.numel) in.narrow(0, unit.numel, unit.padded - unit.numel).zero_();
  const auto t0 = start_clock();
  if (fault_ == ShardFault::local) {
    grad_shards_[u].add_(in.narrow(0, rank_ * unit.shard, unit.shard));
  } else {
    group_->reduce_scatter_sum_into(in, grad_shards_[u], &recv_, fault_ != ShardFault::overwrite);
  }
  count(1, t0);
  if (replica_comm_ && current_micro_ == accum_steps_ - 1) {  // hsdp: once per window, across the replicas
    const auto t1 = start_clock();
    replica_comm_->allreduce_sum(grad_shards_[u]);
    count(1, t1);
  }
  stats_.launched_in_backward += in_backward ? 1 : 0;
  stats_.bytes_reduced += static_cast<Bytes>(unit.padded) * static_cast<Bytes>(in.element_size());
  synced_ = true;
}

// Fills and reduces units in order while the unit being filled has all its gradients.
void ShardedSync::fill_ready_locked(bool in_backward) {
  while (filling_ < units_.size() && pending_[filling_] == 0) {
    reduce_unit(filling_, in_backward);
    ++filling_;
    if (filling_ == units_.size()) break;
    for (auto i : units_[filling_].params)
      if (ready_[i]) copy_into_fill(i);
  }
}

void ShardedSync::on_grad_ready(std::size_t i) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!armed_) return;
  Exposed e{stats_.exposed, timer_};
  const auto u = unit_of_[i];
  if (ready_[i]) {
    if (u < filling_)
      throw RuntimeFailure(
          fmt::format("sharded sync: parameter {} became ready twice in one backward, after its "
                      "unit was reduced (is it used by two graphs?)",
                      i));
    if (u == filling_) copy_into_fill(i);
    return;
  }
  ready_[i] = true;
  pending_[u] -= 1;
  if (u == filling_) copy_into_fill(i);
  fill_ready_locked(true);
}

void ShardedSync::finish_reduction() {
  torch::NoGradGuard no_grad;
  for (auto& g : grad_shards_) g.div_(divisor_);
}

// Fills and reduces units [filling_, end) whether or not their hooks fired (unused parameters,
// no samples; fused: every unit). Call with mu_ held.
void ShardedSync::reduce_through(std::size_t end, bool hooked) {
  while (filling_ < end) {
    for (auto i : units_[filling_].params)
      if (!ready_[i] || !hooked) {
        ready_[i] = true;
        copy_into_fill(i);
      }
    pending_[filling_] = 0;
    reduce_unit(filling_, false);
    ++filling_;
    if (filling_ < units_.size())
      for (auto i : units_[filling_].params)
        if (ready_[i]) copy_into_fill(i);
  }
}

void ShardedSync::after_backward(Count micro) {
  if (micro != current_micro_) throw InputError("sharded sync: after_backward without before_forward");
  Exposed e{stats_.exposed, timer_};
  {
    std::lock_guard<std::mutex> lock(mu_);
    const bool reduces = reduces_in(micro);
    if (per_unit_ && !forwarded_) {
      // No samples: the backward's gathers, and each unit's reduce-scatter where the others'
      // hooks issue it (within its backward), in the same order as the ranks that computed.
      const bool in_backward = reduces && traits(strategy_).bucketed;
      for (Count u = static_cast<Count>(units_.size()) - 1; u >= 0; --u) {
        backward_gathers(u);
        if (in_backward) reduce_through(unit_index(u) + 1, false);
      }
    }
    if (reduces) {
      const bool hooked = armed_;
      armed_ = false;
      reduce_through(units_.size(), hooked);
      if (micro == accum_steps_ - 1) finish_reduction();
    }
  }
  if (shards_params_) free_all();
}

void ShardedSync::after_optimizer_step() {
  if (shards_params_) return;  // zero3: the next forward gathers the stepped shards
  Exposed e{stats_.exposed, timer_};
  torch::NoGradGuard no_grad;
  current_micro_ = accum_steps_ - 1;
  for (std::size_t u = 0; u < units_.size(); ++u) {
    const auto t0 = start_clock();
    group_->all_gather_into(shards_[u].detach(), flat_[u], &recv_);  // staged in recv_: no aliasing
    count(1, t0);
  }
}

std::vector<torch::Tensor> ShardedSync::full_gradients() {
  std::vector<torch::Tensor> out(params_.size());
  if (!synced_) {
    for (std::size_t i = 0; i < params_.size(); ++i) out[i] = params_[i].grad();
    return out;
  }
  torch::NoGradGuard no_grad;
  for (std::size_t u = 0; u < units_.size(); ++u) {
    auto full = torch::empty({units_[u].padded}, grad_shards_[u].options());
    group_->all_gather(grad_shards_[u], full);
    for (std::size_t j = 0; j < units_[u].params.size(); ++j) {
      const auto i = units_[u].params[j];
      out[i] = full.narrow(0, units_[u].offsets[j], params_[i].numel()).view(params_[i].sizes()).clone();
    }
  }
  return out;
}

double ShardedSync::gradient_sq_norm() {
  return group_->allreduce_sum_scalar(sq_norm(grad_shards_));  // a replica's shards make the whole
}

std::vector<torch::Tensor> ShardedSync::held_gradients() const {
  std::vector<torch::Tensor> g = grad_shards_;
  for (const auto& p : params_)
    if (p.grad().defined()) g.push_back(p.grad());
  return g;
}

void ShardedSync::gather_parameters() {
  gather_all(false);
  held_ = true;
}

void ShardedSync::release_parameters() {
  held_ = false;
  if (shards_params_) free_all();
}

}  // namespace gaccum::comm
