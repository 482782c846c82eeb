// What/why: see rank_run.hpp.
#include "runner/rank_run.hpp"

#include <torch/torch.h>
#include <torch/version.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <map>
#include <new>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/communicator.hpp"
#include "comm/grad_sync.hpp"
#include "comm/launcher.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/json_fields.hpp"
#include "core/profile.hpp"
#include "core/version.hpp"
#include "profiler/memory_tracker.hpp"
#include "runner/checks.hpp"
#include "runner/faults.hpp"
#include "workloads/optimizer.hpp"

namespace gaccum::runner {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double secs(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

// Where this rank is (for the watchdog and for error messages).
std::atomic<Count> g_step{-1}, g_micro{-1};

std::string where() {
  if (g_step.load() < 0) {
    // Before step 0 a rank waits for its peers through MASTER_ADDR:MASTER_PORT: name them, a
    // port that accepts but never answers is the usual cause.
    const char* addr = std::getenv("MASTER_ADDR");
    const char* port = std::getenv("MASTER_PORT");
    return fmt::format("before step 0 (connecting through MASTER_ADDR={} MASTER_PORT={}: is the address right and the "
                       "port free, and was every rank started?)",
                       addr && *addr ? addr : "<unset>", port && *port ? port : "<unset>");
  }
  return fmt::format("in step {} micro-step {}", g_step.load(), g_micro.load());
}

// Ends the rank with kExitHung when it makes no progress for `limit` (a hang in compute, or a
// wait no timeout covers). Collectives time out first (their timeout is `limit` - 2 s), so a
// rank blocked on a hung peer reports a failed collective, and the hung rank names itself.
class Watchdog {
 public:
  Watchdog(int rank, Seconds limit) : rank_(rank), limit_(limit) {
    beat();
    thread_ = std::thread([this] { loop(); });
  }
  ~Watchdog() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void beat() { last_.store(Clock::now().time_since_epoch().count()); }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!stop_) {
      cv_.wait_for(lock, std::chrono::milliseconds(100));
      if (stop_) break;
      const auto last = Clock::time_point(Clock::duration(last_.load()));
      const double idle = secs(last, Clock::now());
      if (idle > limit_) {
        report_rank_error(rank_, fmt::format("no progress for {} {} (hung?); stopping this rank",
                                             format_seconds(idle), where()));
        std::_Exit(kExitHung);
      }
    }
  }
  int rank_;
  Seconds limit_;
  std::atomic<Clock::rep> last_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

std::vector<double> flat_double(const std::vector<torch::Tensor>& ts, const std::vector<torch::Tensor>& shapes) {
  std::vector<double> out;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const auto n = shapes[i].numel();
    if (!ts[i].defined()) {
      out.insert(out.end(), static_cast<std::size_t>(n), 0.0);
      continue;
    }
    auto c = ts[i].detach().to(torch::kCPU, torch::kFloat64).contiguous();
    const double* p = c.data_ptr<double>();
    out.insert(out.end(), p, p + n);
  }
  return out;
}

std::vector<double> flat_grads(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> g;
  for (const auto& p : params) g.push_back(p.grad());
  return flat_double(g, params);
}

double grad_sq_norm(const std::vector<torch::Tensor>& params) {
  double s = 0;
  for (const auto& p : params)
    if (p.grad().defined()) {
      const double n = p.grad().norm().item<double>();
      s += n * n;
    }
  return s;
}

// Elements of the gradients that are not exactly zero (-0.0 counts as zero). Read-only, no
// allocation on CPU.
Count nonzero_grad_elements(const std::vector<torch::Tensor>& params) {
  Count n = 0;
  for (const auto& p : params) {
    const auto& g = p.grad();
    if (!g.defined()) continue;
    if (g.is_cpu() && g.is_contiguous() && g.scalar_type() == torch::kFloat32) {
      const float* d = g.data_ptr<float>();
      for (std::int64_t i = 0; i < g.numel(); ++i) n += d[i] != 0.0f;
    } else if (g.is_cpu() && g.is_contiguous() && g.scalar_type() == torch::kFloat64) {
      const double* d = g.data_ptr<double>();
      for (std::int64_t i = 0; i < g.numel(); ++i) n += d[i] != 0.0;
    } else {
      n += (g != 0).sum().item<std::int64_t>();
    }
  }
  return n;
}

std::string hash_tensors(const std::vector<torch::Tensor>& ts) {
  std::uint64_t h = fnv1a64("");
  for (const auto& t : ts) {
    if (!t.defined()) {
      h = fnv1a64("undefined", h);
      continue;
    }
    auto c = t.detach().to(torch::kCPU).contiguous();
    h = fnv1a64(std::string_view(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size()), h);
  }
  return hex64(h);
}

std::vector<torch::Tensor> grads_of(const std::vector<torch::Tensor>& params) {
  std::vector<torch::Tensor> g;
  for (const auto& p : params) g.push_back(p.grad());
  return g;
}

// Gradient of loss_sum(samples [first, first+count)) / their loss terms, in one pass, without
// touching .grad.
std::vector<double> one_pass_gradient(workloads::Workload& wl, const std::vector<torch::Tensor>& params,
                                      std::uint64_t seed, Count first, Count count, Count* terms = nullptr) {
  auto batch = wl.make_batch(seed, first, count);
  if (terms) *terms = batch.loss_terms;
  auto loss = wl.loss_sum(wl.forward(batch), batch) / static_cast<double>(batch.loss_terms);
  auto g = torch::autograd::grad({loss}, params, {}, false, false, true);
  return flat_double(g, params);
}

json check_json(const std::string& name, const std::string& status, const std::string& detail,
                json numbers = json::object()) {
  return json{{"name", name}, {"status", status}, {"detail", detail}, {"numbers", std::move(numbers)}};
}

std::string fmt_g(double v) { return fmt::format("{:.3g}", v); }

// Below this many samples per forward, BatchNorm statistics are noisy (a warning, not a failure).
constexpr Count kSmallBatchNormMicroBatch = 16;

struct StepRecord {
  std::vector<double> step_time, compute, arrival, exposed, comm_total, optimizer, instrumentation;
  std::vector<Count> collectives, launched_in_backward, nonzero_at_start, local_terms, local_samples, global_terms;
  std::vector<std::vector<Count>> collectives_per_micro;
  std::vector<double> g_small_sq, g_big_sq;  // < 0: not measured in that step
  std::vector<double> loss_sum;               // this rank's unnormalised loss sum per window
  json to_json() const {
    return json{{"step_time", step_time},
                {"compute", compute},
                {"arrival", arrival},
                {"exposed", exposed},
                {"comm_total", comm_total},
                {"optimizer", optimizer},
                {"instrumentation", instrumentation},
                {"collectives", collectives},
                {"launched_in_backward", launched_in_backward},
                {"collectives_per_micro", collectives_per_micro},
                {"nonzero_at_start", nonzero_at_start},
                {"local_terms", local_terms},
                {"local_samples", local_samples},
                {"global_terms", global_terms},
                {"g_small_sq", g_small_sq},
                {"g_big_sq", g_big_sq},
                {"loss_sum", loss_sum}};
  }
};

std::string host_name() {
  char name[256] = {0};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

// Rank 0: the gradient checks of one window (step 0 or the partial window). `got` is the
// synced gradient, `before_last` rank 0's gradient before its last micro-step.
struct WindowChecks {
  bool micro_reference = false;  // the reference is the window's micro-batches, one by one
  GradComparison equivalence, negative;
  std::optional<GradComparison> by_k;  // token workloads, step 0
  Count window = 0, samples = 0, terms = 0;
  std::vector<std::vector<Count>> micro_terms;  // [rank][micro] loss terms (by_k only)
};

// The gradient correct accumulation must produce for a model with batch statistics or dropout
// (docs/DESIGN.md, "Batch-dependent layers"): every micro-batch of window w, of every rank, in this
// one process, each with its own statistics and dropout masks (workloads seed them from the
// micro-batch), each loss sum divided by the window's loss terms, summed in float64.
std::vector<double> micro_batch_gradient(workloads::Workload& wl, const std::vector<torch::Tensor>& params,
                                         const RunSpec& spec, std::uint64_t seed, Count w, Count* terms,
                                         Watchdog& wd) {
  Count total = 0;
  for (Count r = 0; r < spec.world_size; ++r)
    for (Count m = 0; m < spec.accum_steps; ++m) {
      auto [first, count] = spec.micro_range(w, r, m);
      if (count > 0) total += wl.loss_terms(seed, first, count);
    }
  std::vector<double> sum;
  for (Count r = 0; r < spec.world_size; ++r)
    for (Count m = 0; m < spec.accum_steps; ++m) {
      auto [first, count] = spec.micro_range(w, r, m);
      if (count == 0) continue;
      auto batch = wl.make_batch(seed, first, count);
      auto loss = wl.loss_sum(wl.forward(batch), batch) / static_cast<double>(total);
      auto g = flat_double(torch::autograd::grad({loss}, params, {}, false, false, true), params);
      if (sum.empty()) sum.assign(g.size(), 0.0);
      for (std::size_t i = 0; i < g.size(); ++i) sum[i] += g[i];
      wd.beat();
    }
  *terms = total;
  return sum;
}

WindowChecks check_window(workloads::Workload& wl, const std::vector<torch::Tensor>& params, const RunSpec& spec,
                          std::uint64_t seed, Count w, const std::vector<double>& got,
                          const std::vector<double>& before_last, bool with_by_k, Watchdog& wd) {
  WindowChecks c;
  c.window = w;
  c.samples = spec.window_samples(w);
  c.micro_reference = wl.batch_dependence().any();
  wd.beat();
  auto ref = c.micro_reference ? micro_batch_gradient(wl, params, spec, seed, w, &c.terms, wd)
                               : one_pass_gradient(wl, params, seed, w * spec.global_batch(), c.samples, &c.terms);
  wd.beat();
  c.equivalence = compare_gradients(got, ref, spec.rtol, spec.atol);
  c.negative = compare_gradients(before_last, ref, spec.rtol, spec.atol);
  if (with_by_k) {
    // The common mistake: each micro-batch's mean loss divided by accum_steps (then DDP's
    // average over ranks): sum over r, m of grad(mean_rm) / (k p).
    std::vector<double> alt(ref.size(), 0.0);
    const double div = static_cast<double>(spec.accum_steps * spec.world_size);
    for (Count r = 0; r < spec.world_size; ++r) {
      c.micro_terms.emplace_back();
      for (Count m = 0; m < spec.accum_steps; ++m) {
        auto [first, count] = spec.micro_range(w, r, m);
        if (count == 0) continue;
        Count terms = 0;
        auto g = one_pass_gradient(wl, params, seed, first, count, &terms);
        c.micro_terms.back().push_back(terms);
        for (std::size_t i = 0; i < g.size(); ++i) alt[i] += g[i] / div;
        wd.beat();
      }
    }
    c.by_k = compare_gradients(alt, ref, spec.rtol, spec.atol);
  }
  return c;
}

}  // namespace

std::string rank_position() { return where(); }

void report_rank_error(int rank, const std::string& msg) {
  const std::string line = fmt::format("rank {}: {}", rank, msg);
  std::fprintf(stderr, "%s\n", line.c_str());
  std::fflush(stderr);
  if (const char* path = std::getenv("GACCUM_ERROR_FILE"); path && *path) {
    try {
      write_file_atomic(path, line + "\n");
    } catch (const std::exception&) {
    }
  }
}

int rank_failure_exit_code(int rank, std::exception_ptr e) {
  try {
    std::rethrow_exception(e);
  } catch (const std::bad_alloc&) {
    report_rank_error(rank, fmt::format("out of memory {}: lower --micro-batch", where()));
    return kExitOutOfMemory;
  } catch (const c10::OutOfMemoryError& ex) {
    report_rank_error(rank, fmt::format("out of memory {}: {}: lower --micro-batch", where(),
                                        ex.what_without_backtrace()));
    return kExitOutOfMemory;
  } catch (const InputError& ex) {
    report_rank_error(rank, ex.what());
    return 2;
  } catch (const CollectiveFailure& ex) {
    report_rank_error(rank, fmt::format("{} {}", ex.what(), where()));
    return comm::kExitPeerLost;
  } catch (const RuntimeFailure& ex) {
    const std::string what = ex.what();
    report_rank_error(rank, fmt::format("{} {}", what, where()));
    return 1;
  } catch (const c10::Error& ex) {
    std::string what = ex.what_without_backtrace();
    what = what.substr(0, what.find('\n'));
    report_rank_error(rank, fmt::format("LibTorch: {} {}", what, where()));
    return 1;
  } catch (const std::exception& ex) {
    report_rank_error(rank, fmt::format("internal error: {} {}", ex.what(), where()));
    return 1;
  }
}

int run_validation_rank(const RunSpec& spec, const comm::RankContext& ctx, const RankRunOptions& opts) {
  spec.validate();
  if (ctx.world_size != spec.world_size)
    throw InputError(fmt::format("--world-size: {} but the launcher started {} ranks", spec.world_size,
                                 ctx.world_size));
  const int rank = ctx.rank, world = ctx.world_size;
  const Faults faults = Faults::from_env(rank);
  if (faults.never_joins())
    while (true) std::this_thread::sleep_for(std::chrono::hours(1));
  Watchdog wd(rank, spec.timeout + 2.0);

  torch::set_num_threads(spec.threads_per_rank);
  try {
    torch::set_num_interop_threads(1);  // as the profiler's ranks (only possible before any parallel work)
  } catch (const c10::Error&) {
  }
  workloads::WorkloadConfig wcfg = spec.workload;
  if (spec.backend == Backend::nccl) wcfg.device = fmt::format("cuda:{}", ctx.local_rank);
  const torch::Device device(wcfg.device);
  auto memory = profiler::memory_for(device);

  std::unique_ptr<comm::Communicator> comm;
  if (world > 1) {
    comm::ConnectOptions co;
    co.backend = spec.backend;
    co.device = wcfg.device;
    co.timeout = spec.timeout;
    co.key_prefix = opts.key_prefix;
    co.after_store = [&](comm::KeyValueStore& st) { comm::rendezvous(st, "validate", rank, world, spec.timeout); };
    comm = comm::connect(ctx, co);
  }
  wd.beat();

  auto workload = workloads::make_workload(wcfg);
  const auto params = workload->parameters();
  const std::uint64_t seed = spec.seed + (faults.perturb_seed ? 1 : 0);
  const bool token_workload = workload->identity().tokens_per_sample > 0;
  const Count B = spec.global_batch(), k = spec.accum_steps, b = spec.micro_batch;

  // --- rank agreement ------------------------------------------------------------------------
  const json identity{{"workload_hash", workload->identity().hash},
                      {"workload", workload->identity().name},
                      {"micro_batch", b},
                      {"accum_steps", k},
                      {"world_size", world},
                      {"strategy", std::string(to_string(spec.strategy))},
                      {"seed", seed},
                      {"dtype", wcfg.dtype},
                      {"steps", spec.steps},
                      {"warmup", spec.warmup},
                      {"dataset_size", spec.effective_dataset_size()},
                      {"partial_window", spec.partial_window},
                      {"optimizer", spec.optimizer},
                      {"lr", spec.lr},
                      {"initial_parameters_hash", hash_tensors(params)},
                      {"libtorch", TORCH_VERSION}};
  std::vector<json> identities{identity};
  if (comm) {
    identities.clear();
    for (const auto& s : comm->allgather_strings(identity.dump())) identities.push_back(json::parse(s));
  }
  const Agreement agreement = check_agreement(identities);
  json checks = json::array();
  checks.push_back(check_json("rank_agreement", agreement.ok ? "pass" : "fail",
                              agreement.ok ? fmt::format("{} rank(s) agree on workload {} ({}), micro_batch {}, "
                                                         "accum_steps {}, strategy {}, seed {}, {}",
                                                         world, workload->identity().name,
                                                         workload->identity().hash, b, k, to_string(spec.strategy),
                                                         seed, wcfg.dtype)
                                           : agreement.summary() + "; stopped every rank before step 1",
                              json{{"identity", identities.front()}, {"mismatches", agreement.mismatches}}));

  auto finish = [&](json record, bool ok) -> int {
    int code = ok ? 0 : 1;
    if (rank == 0 && opts.deliver) code = opts.deliver(record);
    if (comm) {
      if (rank == 0) {
        comm->store().set("validate/verdict", std::to_string(code));
      } else {
        code = std::atoi(comm->store().get("validate/verdict").c_str());
      }
    }
    return code;
  };

  json config = to_json(spec);
  config["workload"]["hash"] = workload->identity().hash;
  config["workload"]["kind"] = workload->identity().kind;
  config["workload"]["param_count"] = workload->identity().param_count;
  config["workload"]["param_bytes"] = workload->identity().param_bytes;
  config["global_batch"] = B;
  config["dataset_size"] = spec.effective_dataset_size();
  config["full_windows"] = spec.full_windows();
  config["partial_samples"] = spec.partial_samples();
  config["seed"] = seed;

  if (!agreement.ok) {
    json record{{"config", config}, {"checks", checks}, {"ok", false}, {"stopped", "rank agreement failed"}};
    return finish(record, false);
  }

  // --- training --------------------------------------------------------------------------------
  comm::GradSync sync(comm.get(), params, spec.strategy);
  auto optimizer = workloads::make_optimizer(params, spec.optimizer, spec.lr);
  workloads::zero_grad(params);  // gradients allocated once, before the optimizer's state

  StepRecord rec;
  std::optional<WindowChecks> step0_checks, partial_checks;
  std::string grads_hash_step0;
  Bytes peak_memory = 0, memory_at_reset = 0;
  const Count windows = spec.total_windows();
  const auto tensor_opts = torch::TensorOptions().dtype(torch::kFloat64).device(device);

  for (Count w = 0; w < windows; ++w) {
    const bool partial = w >= spec.full_windows();
    const bool check_step = w == 0 || partial;
    if (w == spec.warmup) {
      memory->reset_peak();
      memory_at_reset = memory->snapshot().allocated;
    }
    if (partial) peak_memory = memory->snapshot().peak_allocated;
    g_step = w;
    g_micro = -1;
    wd.beat();

    const auto t0 = Clock::now();
    if (!(faults.skip_zero_grad && w > 0)) workloads::zero_grad(params);
    const auto t_check = Clock::now();
    const Count nonzero = nonzero_grad_elements(params);
    double instrumentation = secs(t_check, Clock::now());

    // The window's loss terms across ranks (a token workload needs them before its first
    // backward; counted without building the batches, so memory does not grow with k).
    Count local_terms = 0, local_samples = 0;
    double global_terms = 0;
    if (token_workload) {
      for (Count m = 0; m < k; ++m) {
        auto [first, count] = spec.micro_range(w, rank, m);
        if (count == 0) continue;
        local_terms += workload->loss_terms(seed, first, count);
        local_samples += count;
      }
      auto t = torch::full({1}, static_cast<double>(local_terms), tensor_opts);
      if (comm) comm->allreduce_sum(t);
      global_terms = t.item<double>();
    } else {
      global_terms = static_cast<double>(spec.window_samples(w));
    }
    if (!(global_terms > 0)) throw RuntimeFailure(fmt::format("window {} has no loss terms across ranks", w));
    const double scale = static_cast<double>(world) / global_terms;

    std::vector<double> before_last;
    // The window's loss sum (reported, not used): on CPU read at once (holding no extra bytes, so
    // the tracker's peak is unchanged); on CUDA kept as detached 0-dim tensors and read after the
    // step's clock stops (no device synchronisation inside the step).
    double window_loss_sum = 0;
    std::vector<torch::Tensor> micro_losses;
    double g_small = -1;
    Clock::time_point last_backward_end;
    sync.begin_step(k);
    for (Count m = 0; m < k; ++m) {
      g_micro = m;
      wd.beat();
      faults.maybe_trigger(w, m);
      if (check_step && rank == 0 && m == k - 1) before_last = flat_grads(params);
      sync.before_backward(m);
      auto [first, count] = spec.micro_range(w, rank, m);
      if (count > 0) {
        auto batch = workload->make_batch(seed, first, count);
        if (!token_workload) {
          local_terms += batch.loss_terms;
          local_samples += count;
        }
        const double s = faults.normalise_by_k ? static_cast<double>(world) / double(k * batch.loss_terms) : scale;
        auto loss_sum = workload->loss_sum(workload->forward(batch), batch);
        if (loss_sum.is_cpu()) {
          window_loss_sum += loss_sum.item<double>();
        } else {
          micro_losses.push_back(loss_sum.detach());
        }
        auto loss = loss_sum * s;
        loss.backward();
        if (m == 0 && !partial && count == b && nonzero == 0) {
          // |G_b|^2 of this micro-batch's mean-loss gradient: .grad holds s * terms_0 * G_b.
          const auto ti = Clock::now();
          const double f = s * static_cast<double>(batch.loss_terms);
          g_small = grad_sq_norm(params) / (f * f);
          instrumentation += secs(ti, Clock::now());
        }
        batch = workloads::Batch{};  // release the micro-batch
      }
      if (m == k - 1) last_backward_end = Clock::now();
      sync.after_backward(m);
    }
    const auto t_synced = Clock::now();
    double g_big = -1;
    if (!partial) {
      g_big = grad_sq_norm(params);
      instrumentation += secs(t_synced, Clock::now());
    }

    if (check_step) {
      // Not timed: step 0 is a warm-up step and the partial window is excluded.
      auto got = flat_grads(params);
      if (w == 0) grads_hash_step0 = hash_tensors(grads_of(params));
      if (rank == 0) {
        auto c = check_window(*workload, params, spec, seed, w, got, before_last,
                              w == 0 && token_workload && k * world > 1, wd);
        (w == 0 ? step0_checks : partial_checks) = std::move(c);
      }
    }

    const auto t_opt = Clock::now();
    optimizer->step();
    if (faults.perturb_param && w == 0) {
      torch::NoGradGuard ng;
      params.front().add_(1e-3);
    }
    const auto t_end = Clock::now();
    for (const auto& l : micro_losses) window_loss_sum += l.item<double>();
    micro_losses.clear();
    rec.loss_sum.push_back(window_loss_sum);

    const auto& st = sync.stats();
    // The training loop's own time: the checks' instrumentation (zero scan, gradient norms) is
    // recorded separately and not part of the step a real job would run.
    const double step_time = secs(t0, t_end) - (check_step ? secs(t_synced, t_opt) : 0.0) - instrumentation;
    rec.step_time.push_back(step_time);
    rec.optimizer.push_back(secs(t_opt, t_end));
    rec.exposed.push_back(st.exposed);
    rec.comm_total.push_back(st.comm_total);
    rec.compute.push_back(step_time - st.exposed - secs(t_opt, t_end));
    rec.arrival.push_back(secs(t0, last_backward_end));
    rec.instrumentation.push_back(instrumentation);
    rec.collectives.push_back(st.collectives);
    rec.launched_in_backward.push_back(st.launched_in_backward);
    rec.collectives_per_micro.push_back(st.collectives_per_micro);
    rec.nonzero_at_start.push_back(nonzero);
    rec.local_terms.push_back(local_terms);
    rec.local_samples.push_back(local_samples);
    rec.global_terms.push_back(static_cast<Count>(std::llround(global_terms)));
    rec.g_small_sq.push_back(g_small);
    rec.g_big_sq.push_back(g_big);
  }
  if (!spec.runs_partial_window()) peak_memory = memory->snapshot().peak_allocated;
  g_step = windows;
  g_micro = -1;
  wd.beat();

  // --- gather every rank's record ------------------------------------------------------------
  const json mine{{"rank", rank},
                  {"local_rank", ctx.local_rank},
                  {"host", host_name()},
                  {"pid", static_cast<long>(::getpid())},
                  {"threads", torch::get_num_threads()},
                  {"interop_threads", torch::get_num_interop_threads()},
                  {"cores", static_cast<int>(std::thread::hardware_concurrency())},
                  {"peak_memory", peak_memory},
                  {"memory_at_reset", memory_at_reset},
                  {"comm_buffer_bytes", sync.buffer_bytes()},
                  {"grads_hash_step0", grads_hash_step0},
                  {"params_hash_final", hash_tensors(params)},
                  {"steps", rec.to_json()}};
  std::vector<json> ranks{mine};
  if (comm) {
    ranks.clear();
    for (const auto& s : comm->allgather_strings(mine.dump())) ranks.push_back(json::parse(s));
  }
  if (rank != 0) return finish(json(), true);

  // --- rank 0: the record ----------------------------------------------------------------------
  const Count timed_first = spec.warmup, timed_end = spec.full_windows();
  auto per_rank = [&](const char* key) {
    std::vector<std::vector<double>> v;
    for (const auto& r : ranks) v.push_back(r.at("steps").at(key).get<std::vector<double>>());
    return v;
  };
  auto timed = [&](const std::vector<double>& v) {
    return std::vector<double>(v.begin() + timed_first, v.begin() + timed_end);
  };
  const auto step_max = max_over_ranks(per_rank("step_time"));
  const auto exposed_max = max_over_ranks(per_rank("exposed"));
  const auto comm_max = max_over_ranks(per_rank("comm_total"));
  const auto compute_max = max_over_ranks(per_rank("compute"));
  const auto opt_max = max_over_ranks(per_rank("optimizer"));
  const auto skew = spread_over_ranks(per_rank("arrival"));
  const auto step_stats = TimingStats::from_samples(timed(step_max));
  auto median_of = [&](const std::vector<double>& v) { return TimingStats::from_samples(timed(v)).median; };

  // The window's mean loss over every real sample/token across ranks (the quantity the
  // gradient is taken of): sum over ranks of their loss sums / the window's loss terms.
  std::vector<double> window_loss(static_cast<std::size_t>(windows), 0.0);
  for (const auto& r : ranks) {
    const auto sums = r.at("steps").at("loss_sum").get<std::vector<double>>();
    for (std::size_t w = 0; w < window_loss.size(); ++w) window_loss[w] += sums[w];
  }
  for (std::size_t w = 0; w < window_loss.size(); ++w)
    window_loss[w] /= std::max(1.0, static_cast<double>(rec.global_terms[w]));

  // Steps, raw.
  json steps = json::array();
  for (Count w = 0; w < windows; ++w) {
    json s{{"window", w},
           {"timed", w >= timed_first && w < timed_end},
           {"partial", w >= spec.full_windows()},
           {"samples", spec.window_samples(w)},
           {"loss_terms", rec.global_terms[static_cast<std::size_t>(w)]},
           {"loss", window_loss[static_cast<std::size_t>(w)]},
           {"step_time", step_max[static_cast<std::size_t>(w)]},
           {"exposed_comm", exposed_max[static_cast<std::size_t>(w)]},
           {"rank_skew", skew[static_cast<std::size_t>(w)]}};
    json pr = json::object();
    for (const char* key : {"step_time", "compute", "arrival", "exposed", "comm_total", "optimizer", "instrumentation",
                            "collectives", "launched_in_backward", "nonzero_at_start", "local_samples",
                            "local_terms"}) {
      json col = json::array();
      for (const auto& r : ranks) col.push_back(r.at("steps").at(key).at(static_cast<std::size_t>(w)));
      pr[key] = col;
    }
    s["per_rank"] = pr;
    steps.push_back(s);
  }

  // Checks.
  const auto& c0 = *step0_checks;
  const std::string reference =
      c0.micro_reference
          ? fmt::format("the same {} micro-batches ({} samples) computed one after another in one process (the model "
                        "has batch statistics or dropout, so they are not slices of one big batch)",
                        spec.accum_steps * spec.world_size, c0.samples)
          : fmt::format("one pass over the same {} samples", c0.samples);
  checks.push_back(check_json(
      "gradient_equivalence", c0.equivalence.within() ? "pass" : "fail",
      fmt::format("step 0: the accumulated, allreduced, averaged gradient vs {}: "
                  "max |diff| {}, rel L2 {}, {} of {} elements outside rtol {} atol {}",
                  reference, fmt_g(c0.equivalence.max_abs_diff), fmt_g(c0.equivalence.rel_l2),
                  c0.equivalence.violations, c0.equivalence.elements, spec.rtol, spec.atol),
      json{{"window", 0},
           {"samples", c0.samples},
           {"loss_terms", c0.terms},
           {"reference", c0.micro_reference ? "micro_batches" : "one_batch"},
           {"comparison", c0.equivalence.to_json()}}));
  checks.push_back(check_json(
      "negative_control", !c0.negative.within() ? "pass" : "fail",
      fmt::format("rank 0's gradient before its last micro-step differs from the reference as it must: "
                  "{} of {} elements outside tolerance, rel L2 {}",
                  c0.negative.violations, c0.negative.elements, fmt_g(c0.negative.rel_l2)),
      json{{"comparison", c0.negative.to_json()}}));

  Count worst_nonzero = 0;
  json nonzero_per_rank = json::array();
  for (const auto& r : ranks) {
    Count mx = 0;
    for (auto v : r.at("steps").at("nonzero_at_start").get<std::vector<Count>>()) mx = std::max(mx, v);
    nonzero_per_rank.push_back(mx);
    worst_nonzero = std::max(worst_nonzero, mx);
  }
  checks.push_back(check_json(
      "zero_grad_at_window_start", worst_nonzero == 0 ? "pass" : "fail",
      worst_nonzero == 0
          ? fmt::format("every gradient element was exactly 0 at the start of all {} windows on all {} ranks", windows,
                        world)
          : fmt::format("gradients were not zero at a window start: up to {} non-zero elements (per rank: {})",
                        worst_nonzero, nonzero_per_rank.dump()),
      json{{"max_nonzero_per_rank", nonzero_per_rank}, {"windows", windows}}));

  std::set<std::string> param_hashes, grad_hashes;
  json hashes = json::array();
  for (const auto& r : ranks) {
    param_hashes.insert(r.at("params_hash_final").get<std::string>());
    grad_hashes.insert(r.at("grads_hash_step0").get<std::string>());
    hashes.push_back({{"rank", r.at("rank")},
                      {"params_hash_final", r.at("params_hash_final")},
                      {"grads_hash_step0", r.at("grads_hash_step0")}});
  }
  const bool params_same = param_hashes.size() == 1 && grad_hashes.size() == 1;
  checks.push_back(check_json(
      "parameters_identical", params_same ? "pass" : "fail",
      params_same ? fmt::format("parameters bitwise identical on all {} ranks after {} steps (FNV-1a {}), synced "
                                "gradients identical at step 0",
                                world, windows, *param_hashes.begin())
                  : fmt::format("ranks diverged: {} distinct parameter hashes, {} distinct step-0 gradient hashes",
                                param_hashes.size(), grad_hashes.size()),
      json{{"per_rank", hashes}}));

  if (c0.by_k) {
    const auto& alt = *c0.by_k;
    const bool distinct = !alt.within();
    const bool ok = c0.equivalence.within() && distinct;
    json terms = c0.micro_terms;
    checks.push_back(check_json(
        "token_normalisation", ok ? "pass" : "fail",
        fmt::format("loss normalised by the window's {} real tokens across ranks (gradient rel L2 error {}); "
                    "dividing each micro-batch's mean by accum_steps would differ: rel L2 {}, {} of {} elements "
                    "outside tolerance",
                    c0.terms, fmt_g(c0.equivalence.rel_l2), fmt_g(alt.rel_l2), alt.violations, alt.elements),
        json{{"window_tokens", c0.terms},
             {"micro_batch_tokens", terms},
             {"runner", c0.equivalence.to_json()},
             {"divide_by_accum_steps", alt.to_json()}}));
  } else if (token_workload) {
    checks.push_back(check_json("token_normalisation", "n/a",
                                "one micro-batch per window (accum_steps 1, world_size 1): normalising by the "
                                "window's tokens and by the micro-batch's tokens coincide"));
  } else {
    checks.push_back(check_json("token_normalisation", "n/a",
                                "the loss terms are samples (a fixed number per micro-batch): normalising by the "
                                "window's samples and dividing by accum_steps coincide"));
  }

  if (spec.partial_samples() == 0) {
    checks.push_back(check_json("partial_window", "n/a",
                                fmt::format("dataset of {} samples is a multiple of global_batch {}: no partial window",
                                            spec.effective_dataset_size(), B)));
  } else if (!spec.runs_partial_window()) {
    checks.push_back(check_json(
        "partial_window", "pass",
        fmt::format("last partial window of {} samples dropped (--partial-window drop, like drop_last)",
                    spec.partial_samples()),
        json{{"policy", "drop"}, {"samples", spec.partial_samples()}}));
  } else {
    const auto& pc = *partial_checks;
    const bool ok = pc.equivalence.within() && !pc.negative.within();
    checks.push_back(check_json(
        "partial_window", ok ? "pass" : "fail",
        fmt::format("last window of {} samples ({} loss terms; ranks/micro-steps past the end skipped compute but "
                    "joined the collectives) equals its {} gradient: max |diff| {}, {} violations; negative "
                    "control {} violations",
                    pc.samples, pc.terms, pc.micro_reference ? "micro-batch-by-micro-batch" : "one-pass",
                    fmt_g(pc.equivalence.max_abs_diff), pc.equivalence.violations, pc.negative.violations),
        json{{"policy", "run"},
             {"window", pc.window},
             {"samples", pc.samples},
             {"loss_terms", pc.terms},
             {"comparison", pc.equivalence.to_json()},
             {"negative_control", pc.negative.to_json()}}));
  }

  // Collectives against the strategy's definition, every rank, every step.
  bool coll_ok = true;
  const Count expected = sync.expected_collectives(k);
  std::vector<Count> per_micro0 = rec.collectives_per_micro.empty() ? std::vector<Count>{}
                                                                    : rec.collectives_per_micro.front();
  for (const auto& r : ranks) {
    const auto colls = r.at("steps").at("collectives").get<std::vector<Count>>();
    const auto micros = r.at("steps").at("collectives_per_micro").get<std::vector<std::vector<Count>>>();
    const auto hooked = r.at("steps").at("launched_in_backward").get<std::vector<Count>>();
    for (std::size_t s = 0; s < colls.size(); ++s) {
      if (colls[s] != expected) coll_ok = false;
      // overlap / every-step: buckets must be launched by the hooks while backward runs.
      const bool full = static_cast<Count>(s) < spec.full_windows();
      if (full && world > 1 && spec.strategy != Strategy::fused && hooked[s] < 1) coll_ok = false;
      if (spec.strategy == Strategy::fused && hooked[s] != 0) coll_ok = false;
      for (std::size_t m = 0; m < micros[s].size(); ++m) {
        const bool syncs = world > 1 && (spec.strategy == Strategy::every_step || m + 1 == micros[s].size());
        if (!syncs && micros[s][m] != 0) coll_ok = false;
      }
    }
  }
  checks.push_back(check_json(
      "collectives_match_strategy", coll_ok ? "pass" : "fail",
      fmt::format("{}: {} gradient allreduce(s) per step on every rank and step (expected {}), per micro-step {}, "
                  "{} launched from autograd hooks during backward",
                  to_string(spec.strategy), rec.collectives.empty() ? 0 : rec.collectives.front(), expected,
                  json(per_micro0).dump(), rec.launched_in_backward.empty() ? 0 : rec.launched_in_backward.front()),
      json{{"expected_per_step", expected},
           {"buckets", static_cast<Count>(sync.buckets().size())},
           {"per_micro_step", per_micro0}}));

  // Noise scale from every rank's micro-step-0 norms and the window norms of the timed steps.
  std::vector<double> small_sq, big_sq;
  for (const auto& r : ranks)
    for (auto v : timed(r.at("steps").at("g_small_sq").get<std::vector<double>>()))
      if (v >= 0) small_sq.push_back(v);
  for (auto v : timed(rec.g_big_sq))
    if (v >= 0) big_sq.push_back(v);
  const auto gns = noise_scale(static_cast<double>(b), small_sq, static_cast<double>(B), big_sq);

  // Measured figures.
  json peaks = json::array();
  Bytes peak_max = 0;
  for (const auto& r : ranks) {
    peaks.push_back(r.at("peak_memory"));
    peak_max = std::max(peak_max, r.at("peak_memory").get<Bytes>());
  }
  double timed_terms = 0;
  for (Count w = timed_first; w < timed_end; ++w) timed_terms += double(rec.global_terms[static_cast<std::size_t>(w)]);
  const double mean_terms = timed_terms / double(timed_end - timed_first);
  json measured{{"step_time", json{{"median", step_stats.median},
                                   {"p10", step_stats.p10},
                                   {"p90", step_stats.p90},
                                   {"mean", step_stats.mean},
                                   {"min", step_stats.min},
                                   {"max", step_stats.max}}},
                {"throughput_samples_per_s", double(B) / step_stats.median},
                {"tokens_per_s", token_workload ? mean_terms / step_stats.median : 0.0},
                {"peak_memory", peak_max},
                {"peak_memory_per_rank", peaks},
                {"comm_exposed", median_of(exposed_max)},
                {"comm_total", median_of(comm_max)},
                {"compute", median_of(compute_max)},
                {"optimizer", median_of(opt_max)},
                {"rank_skew", median_of(skew)},
                {"collectives_per_step", rec.collectives.empty() ? 0 : rec.collectives.front()},
                {"collectives_per_micro_step", per_micro0},
                {"collectives_launched_in_backward",
                 rec.launched_in_backward.size() > static_cast<std::size_t>(timed_first)
                     ? rec.launched_in_backward[static_cast<std::size_t>(timed_first)]
                     : 0},
                {"comm_buffer_bytes", sync.buffer_bytes()},
                {"timed_steps", timed_end - timed_first},
                {"loss", json{{"first_window", window_loss.front()}, {"last_window", window_loss[static_cast<std::size_t>(timed_end - 1)]}}},
                {"noise_scale", gns.to_json()}};

  // Environment.
  std::map<std::string, std::pair<int, int>> per_host;  // host -> (threads used, cores)
  json rank_env = json::array();
  for (const auto& r : ranks) {
    auto& h = per_host[r.at("host").get<std::string>()];
    h.first += r.at("threads").get<int>();
    h.second = r.at("cores").get<int>();
    rank_env.push_back({{"rank", r.at("rank")},
                        {"local_rank", r.at("local_rank")},
                        {"host", r.at("host")},
                        {"pid", r.at("pid")},
                        {"threads", r.at("threads")},
                        {"interop_threads", r.at("interop_threads")},
                        {"cores", r.at("cores")}});
  }
  json warnings = json::array();
  bool oversubscribed = false;
  if (device.is_cpu())
    for (const auto& [host, tc] : per_host)
      if (tc.first > tc.second) {
        oversubscribed = true;
        warnings.push_back(fmt::format("oversubscribed, timings not representative: {} compute threads on {} cores "
                                       "of host {} (world_size x threads_per_rank > cores)",
                                       tc.first, tc.second, host));
      }
  // What accumulation changes for a model with batch-dependent layers (docs/DESIGN.md,
  // "Batch-dependent layers"): said, not failed.
  const auto dependence = workload->batch_dependence();
  json model_notes = json::array();
  if (!dependence.batch_statistics.empty()) {
    model_notes.push_back(fmt::format(
        "BatchNorm ({} layer(s): {}{}): each forward normalises over its micro_batch of {} samples, not the global "
        "batch of {}, and the running statistics are updated {} times per optimizer step (k micro-steps); "
        "SyncBatchNorm pools the statistics across ranks (not across micro-steps), GroupNorm or LayerNorm remove the "
        "dependence on the batch",
        dependence.batch_statistics.size(), dependence.batch_statistics.front(),
        dependence.batch_statistics.size() > 1 ? ", ..." : "", b, B, k));
    if (b < kSmallBatchNormMicroBatch)
      warnings.push_back(fmt::format("micro_batch {} < {}: BatchNorm statistics from {} samples per forward are noisy "
                                     "and differ from training with the global batch of {}; raise micro_batch (fewer "
                                     "accum_steps) or use GroupNorm/SyncBatchNorm",
                                     b, kSmallBatchNormMicroBatch, b, B));
  }
  if (!dependence.dropout.empty())
    model_notes.push_back(fmt::format("dropout ({} layer(s): {}{}): masks are drawn per micro-batch (seeded from its "
                                      "position in the data stream, so the reference draws the same ones)",
                                      dependence.dropout.size(), dependence.dropout.front(),
                                      dependence.dropout.size() > 1 ? ", ..." : ""));
  json environment{{"launcher", ctx.launcher},
                   {"backend", comm ? std::string(to_string(comm->backend())) : std::string("none")},
                   {"device", device.str()},
                   {"world_size", world},
                   {"threads_per_rank", spec.threads_per_rank},
                   {"oversubscribed", oversubscribed},
                   {"ranks", rank_env},
                   {"versions", json{{"tool", GACCUM_VERSION_STRING},
                                     {"libtorch", TORCH_VERSION},
                                     {"gloo", comm::gloo_version()}}}};
  for (auto it = opts.launch.begin(); it != opts.launch.end(); ++it) environment[it.key()] = it.value();

  bool ok = true;
  for (const auto& c : checks) ok = ok && c.at("status") != "fail";
  json record{{"config", config},   {"environment", environment}, {"warnings", warnings}, {"model_notes", model_notes},
              {"checks", checks},
              {"measured", measured}, {"steps", steps},           {"ok", ok}};
  return finish(record, ok);
}

int validate_rank_role(const json& args) {
  int rank = 0;
  try {
    auto ctx = comm::detect_rank_context();
    rank = ctx.rank;
    JsonFields f(args, "validate-rank args");
    const auto spec = run_spec_from_json(f.object("spec"), "validate-rank args: spec");
    const std::string result = f.str("result");
    RankRunOptions o;
    if (const auto* l = f.opt_object("launch")) o.launch = *l;
    o.deliver = [&](const json& record) {
      write_file_atomic(result, record.dump(1) + "\n");
      return record.at("ok").get<bool>() ? 0 : 1;
    };
    return run_validation_rank(spec, ctx, o);
  } catch (...) {
    return rank_failure_exit_code(rank, std::current_exception());
  }
}

}  // namespace gaccum::runner
