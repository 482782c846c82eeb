// What: the c10d seam (see communicator.hpp). The only file that includes c10d headers; every
//       difference between LibTorch 1.13 and 2.x is handled here.
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO 1
#endif
#if defined(GACCUM_WITH_C10D_NCCL) && !defined(USE_C10D_NCCL)
#define USE_C10D_NCCL 1
#endif

#include "comm/communicator.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef USE_C10D_NCCL
#include <c10/cuda/CUDAFunctions.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif
#include <torch/torch.h>
#if __has_include(<gloo/config.h>)
#include <gloo/config.h>
#endif

#include <algorithm>
#include <chrono>
#include <thread>
#include <type_traits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/text_lines.hpp"

namespace gaccum::comm {
namespace {

#define GACCUM_C10D(op, expr)                                                                  \
  [&]() -> decltype(auto) {                                                                    \
    try {                                                                                      \
      return expr;                                                                             \
    } catch (const std::exception& e) {                                                        \
      throw CollectiveFailure(fmt::format("c10d {} failed ({}:{}): {}", op, __FILE__, __LINE__,\
                                       first_line(e.what())));                                 \
    }                                                                                          \
  }()

std::chrono::milliseconds to_ms(Seconds s) {
  return std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000.0));
}

using StorePtr = c10::intrusive_ptr<c10d::Store>;

class C10dStore final : public KeyValueStore {
 public:
  explicit C10dStore(StorePtr s) : s_(std::move(s)) {}
  void set(const std::string& key, const std::string& value) override {
    std::vector<std::uint8_t> v(value.begin(), value.end());
    GACCUM_C10D("store.set", s_->set(key, v));
  }
  std::string get(const std::string& key) override {
    auto v = GACCUM_C10D("store.get", s_->get(key));
    return std::string(v.begin(), v.end());
  }
  std::int64_t add(const std::string& key, std::int64_t delta) override {
    return GACCUM_C10D("store.add", s_->add(key, delta));
  }
  StorePtr raw() const { return s_; }

 private:
  StorePtr s_;
};

class C10dServer final : public StoreServer {
 public:
  C10dServer(int port, int world_size, Seconds timeout) {
    c10d::TCPStoreOptions o;
    o.port = static_cast<std::uint16_t>(port);
    o.isServer = true;
    o.numWorkers = c10::nullopt;
    o.waitWorkers = false;
    o.timeout = to_ms(timeout);
    (void)world_size;
    store_ = GACCUM_C10D("TCPStore(server)", c10::make_intrusive<c10d::TCPStore>("0.0.0.0", o));
  }
  int port() const override { return static_cast<int>(store_->getPort()); }

 private:
  c10::intrusive_ptr<c10d::TCPStore> store_;
};

// Every wait of this file: with CollectiveWait::poll the thread asks the work whether it finished
// and yields its core in between (the backend's threads, woken by the network, get the core at
// once and the core never idles), then wait() returns or throws the collective's error. The
// backend's own timeout (ProcessGroupGloo options) ends a collective whose peer is gone, so the
// loop ends as the blocking wait would; a rank stuck anyway is ended by its watchdog.
//
// `released` (Gloo): after wait() the thread also waits until the backend's worker thread has
// dropped its references to the work (it does so just after marking it complete). Until then the
// work keeps the collective's tensors alive, and a caller's temporary would be freed on that
// thread at a moment of its choosing: inside the next micro-batch's forward, where it moves a
// measured peak (seen as a 7.5 MB drop in a stage's activation bytes). Bounded: past 5 s the
// thread goes on without it.
void await_work(const c10::intrusive_ptr<c10d::Work>& w, CollectiveWait mode, bool released) {
  if (mode == CollectiveWait::poll)
    while (!w->isCompleted()) std::this_thread::yield();
  w->wait();
  if (!released) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (w.use_count() > 1 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
}

class WorkHandle final : public PendingCollective {
 public:
  // track_completion: record the completion time from the work's future (Gloo only: an NCCL
  // future completes when the kernel is enqueued, not when it ends).
  WorkHandle(c10::intrusive_ptr<c10d::Work> w, bool track_completion, CollectiveWait mode, bool released,
             const char* op = "allreduce.wait")
      : w_(std::move(w)), mode_(mode), released_(released), op_(op) {
    if (!track_completion) return;
    done_ = std::make_shared<std::atomic<std::int64_t>>(-1);
    try {
      auto fut = w_->getFuture();
      if (!fut) {
        done_.reset();
        return;
      }
      auto done = done_;
      fut->addCallback([done](c10::ivalue::Future&) {
        done->store(Clock::now().time_since_epoch().count(), std::memory_order_release);
      });
    } catch (const std::exception&) {
      done_.reset();  // this backend's work has no future: wait()'s return time is used
    }
  }
  void wait() override {
    if (!w_) return;
    GACCUM_C10D(op_, await_work(w_, mode_, released_));
    w_.reset();
  }
  std::optional<Clock::time_point> completed_at() const override {
    if (!done_) return std::nullopt;
    auto t = done_->load(std::memory_order_acquire);
    if (t < 0) return std::nullopt;
    return Clock::time_point(Clock::duration(t));
  }

 private:
  c10::intrusive_ptr<c10d::Work> w_;
  CollectiveWait mode_;
  bool released_;
  const char* op_;
  std::shared_ptr<std::atomic<std::int64_t>> done_;
};

// Whether this LibTorch's process group has shutdown() (2.2 and later).
template <class T, class = void>
struct has_shutdown : std::false_type {};
template <class T>
struct has_shutdown<T, std::void_t<decltype(std::declval<T&>().shutdown())>> : std::true_type {};

template <class PG>
class C10dCommunicator final : public Communicator {
 public:
  // Makes a process group of `size` ranks over a store (the job's options: devices, timeout).
  using Factory = std::function<c10::intrusive_ptr<PG>(const StorePtr&, int rank, int size)>;
  C10dCommunicator(int rank, int world, Backend backend, torch::Device dev, StorePtr store, Factory factory,
                   CollectiveWait wait)
      : Communicator(rank, world, backend, dev, std::make_unique<C10dStore>(store), wait),
        raw_store_(store),
        factory_(std::move(factory)) {
    auto pg_store = c10::make_intrusive<c10d::PrefixStore>("pg", raw_store_);
    pg_ = GACCUM_C10D("process group", factory_(pg_store, rank, world));
  }
  ~C10dCommunicator() override {
#ifdef USE_C10D_NCCL
    // NCCL communicators are shut down, not left to the destructor (LibTorch >= 2.2 warns and
    // may hang there); a failure here is past reporting.
    if constexpr (std::is_same_v<PG, c10d::ProcessGroupNCCL> && has_shutdown<PG>::value) {
      try {
        if (pg_) pg_->shutdown();
      } catch (const std::exception&) {
      }
    }
#endif
  }

  const char* reduce_scatter_method() const override {
#ifdef USE_C10D_NCCL
    if constexpr (std::is_same_v<PG, c10d::ProcessGroupNCCL>) return "nccl-reduce-scatter";
#endif
    return "alltoall+local-sum";
  }
  const char* all_gather_method() const override {
#ifdef USE_C10D_NCCL
    if constexpr (std::is_same_v<PG, c10d::ProcessGroupNCCL>) return "nccl-all-gather";
#endif
    return "alltoall-staged";
  }

  std::unique_ptr<Communicator> split(const std::vector<int>& members, const std::string& tag) override {
    const auto at = std::find(members.begin(), members.end(), rank_);
    if (at == members.end() || members.empty())
      throw Error(fmt::format("split {}: rank {} is not a member", tag, rank_));
    StorePtr sub = c10::make_intrusive<c10d::PrefixStore>(fmt::format("group/{}", tag), raw_store_);
    return std::make_unique<C10dCommunicator<PG>>(static_cast<int>(at - members.begin()),
                                                  static_cast<int>(members.size()), backend_, device_, sub, factory_, wait_);
  }

  std::unique_ptr<PendingCollective> allreduce_sum_async(torch::Tensor& t) override {
    std::vector<at::Tensor> v{t};
    c10d::AllreduceOptions o;
    o.reduceOp = c10d::ReduceOp::SUM;
    auto work = GACCUM_C10D("allreduce", pg_->allreduce(v, o));
    return std::make_unique<WorkHandle>(std::move(work), backend_ == Backend::gloo, wait_, released());
  }

  std::unique_ptr<PendingCollective> send_async(torch::Tensor& t, int dst, int tag) override {
    std::vector<at::Tensor> v{t};
    auto work = GACCUM_C10D(fmt::format("send to rank {} tag {}", dst, tag), pg_->send(v, dst, tag));
    // Gloo's send/recv works complete inside wait() only (isCompleted() stays false): never polled.
    return std::make_unique<WorkHandle>(std::move(work), false, CollectiveWait::block, released(), "send.wait");
  }
  std::unique_ptr<PendingCollective> recv_async(torch::Tensor& t, int src, int tag) override {
    std::vector<at::Tensor> v{t};
    auto work = GACCUM_C10D(fmt::format("recv from rank {} tag {}", src, tag), pg_->recv(v, src, tag));
    return std::make_unique<WorkHandle>(std::move(work), false, CollectiveWait::block, released(), "recv.wait");
  }

  void broadcast(torch::Tensor& t, int root) override {
    std::vector<at::Tensor> v{t};
    c10d::BroadcastOptions o;
    o.rootRank = root;
    auto work = GACCUM_C10D("broadcast", pg_->broadcast(v, o));
    GACCUM_C10D("broadcast.wait", await_work(work, wait_, released()));
  }

  void reduce_scatter_sum_into(const torch::Tensor& input, torch::Tensor& output, torch::Tensor* scratch,
                               bool accumulate) override {
    const std::int64_t p = world_size_;
    if (input.numel() % p != 0 || output.numel() * p != input.numel())
      throw Error(fmt::format("reduce_scatter_sum: input of {} elements does not split into {} chunks of {}",
                              input.numel(), p, output.numel()));
    if (scratch && (scratch->numel() < input.numel() || !scratch->is_contiguous() ||
                    scratch->scalar_type() != input.scalar_type()))
      throw Error(fmt::format("reduce_scatter_sum: scratch of {} elements cannot receive {}", scratch->numel(),
                              input.numel()));
    at::Tensor in = input.contiguous();
#ifdef USE_C10D_NCCL
    if constexpr (std::is_same_v<PG, c10d::ProcessGroupNCCL>) {
      at::Tensor out = output.view({output.numel()});
      at::Tensor reduced = !accumulate ? out : scratch ? scratch->narrow(0, 0, out.numel()) : at::empty_like(out);
      c10d::ReduceScatterOptions o;
      o.reduceOp = c10d::ReduceOp::SUM;
      auto work = GACCUM_C10D("reduce_scatter", pg_->_reduce_scatter_base(reduced, in, o));
      GACCUM_C10D("reduce_scatter.wait", await_work(work, wait_, released()));
      if (accumulate) out.add_(reduced);
      return;
    }
#endif
    at::Tensor recv = scratch ? scratch->narrow(0, 0, in.numel()) : at::empty_like(in);
    std::vector<std::int64_t> splits;  // empty: equal splits
    std::vector<std::int64_t> splits_in;
    c10d::AllToAllOptions o;
    auto work = GACCUM_C10D("reduce_scatter (alltoall)", pg_->alltoall_base(recv, in, splits, splits_in, o));
    GACCUM_C10D("reduce_scatter.wait", await_work(work, wait_, released()));
    // The local sum over the p received chunks, in rank order, without temporaries.
    auto chunks = recv.view({p, output.numel()});
    auto out = output.view({output.numel()});
    if (!accumulate) out.copy_(chunks[0]);
    for (std::int64_t r = accumulate ? 0 : 1; r < p; ++r) out.add_(chunks[r]);
  }

  void all_gather_into(const torch::Tensor& input, torch::Tensor& output, torch::Tensor* scratch) override {
    const std::int64_t p = world_size_;
    if (output.numel() != input.numel() * p)
      throw Error(fmt::format("all_gather: output of {} elements is not {} x {}", output.numel(), p, input.numel()));
#ifdef USE_C10D_NCCL
    if constexpr (std::is_same_v<PG, c10d::ProcessGroupNCCL>) {
      if (!output.is_contiguous()) throw Error("all_gather: the output must be contiguous");
      at::Tensor in = input.contiguous();
      at::Tensor out = output.view({output.numel()});
      c10d::AllgatherOptions o;
      auto work = GACCUM_C10D("all_gather", pg_->_allgather_base(out, in, o));
      GACCUM_C10D("all_gather.wait", await_work(work, wait_, released()));
      return;
    }
#endif
    if (scratch) {
      if (scratch->numel() < output.numel() || !scratch->is_contiguous() || !output.is_contiguous() ||
          scratch->scalar_type() != input.scalar_type())
        throw Error(fmt::format("all_gather: scratch of {} elements cannot stage {}", scratch->numel(), output.numel()));
      at::Tensor staged = scratch->narrow(0, 0, output.numel());
      for (std::int64_t r = 0; r < p; ++r) staged.narrow(0, r * input.numel(), input.numel()).copy_(input.reshape({-1}));
      at::Tensor out = output.view({output.numel()});
      std::vector<std::int64_t> splits;  // empty: equal splits
      c10d::AllToAllOptions o;
      auto work = GACCUM_C10D("all_gather (alltoall)", pg_->alltoall_base(out, staged, splits, splits, o));
      GACCUM_C10D("all_gather.wait", await_work(work, wait_, released()));
      return;
    }
    std::vector<at::Tensor> in{input.contiguous()};
    std::vector<std::vector<at::Tensor>> outs(1);
    for (std::int64_t r = 0; r < p; ++r) outs[0].push_back(output.view({p, input.numel()})[r]);
    c10d::AllgatherOptions o;
    auto work = GACCUM_C10D("all_gather", pg_->allgather(outs, in, o));
    GACCUM_C10D("all_gather.wait", await_work(work, wait_, released()));
  }

 private:
  // Gloo's worker threads hold a finished work a moment longer (await_work).
  bool released() const { return backend_ == Backend::gloo; }
  StorePtr raw_store_;
  Factory factory_;
  c10::intrusive_ptr<PG> pg_;
};

bool is_loopback(const std::string& addr) {
  return addr == "127.0.0.1" || addr == "localhost" || addr == "::1" || addr.rfind("127.", 0) == 0;
}

}  // namespace

std::unique_ptr<StoreServer> host_store(int port, int world_size, Seconds timeout) {
  return std::make_unique<C10dServer>(port, world_size, timeout);
}

void Communicator::barrier() {
  auto t = torch::ones({1}, torch::TensorOptions().dtype(torch::kFloat32).device(device_));
  allreduce_sum(t);
}

std::vector<std::string> Communicator::allgather_strings(const std::string& mine) {
  const auto seq = gather_seq_++;
  store_->set(fmt::format("allgather/{}/{}", seq, rank_), mine);
  std::vector<std::string> out;
  for (int r = 0; r < world_size_; ++r) out.push_back(store_->get(fmt::format("allgather/{}/{}", seq, r)));
  return out;
}

double Communicator::allreduce_sum_scalar(double v) {
  if (device_.is_cpu()) {
    scalar_ = v;
    auto t = torch::from_blob(&scalar_, {1}, torch::TensorOptions().dtype(torch::kFloat64));
    allreduce_sum(t);
    return scalar_;
  }
  auto t = torch::full({1}, v, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
  allreduce_sum(t);
  return t.item<double>();
}

void rendezvous(KeyValueStore& st, const std::string& tag, int rank, int world, Seconds timeout) {
  st.add(fmt::format("{}/joined/{}", tag, rank), 1);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<std::int64_t>(timeout * 1000));
  std::vector<int> missing;
  while (true) {
    missing.clear();
    for (int q = 0; q < world; ++q)
      if (st.add(fmt::format("{}/joined/{}", tag, q), 0) == 0) missing.push_back(q);
    if (missing.empty()) return;
    if (std::chrono::steady_clock::now() > deadline)
      throw RuntimeFailure(fmt::format("rendezvous: rank(s) {} of {} did not join within {} (was every rank started, "
                                       "with the same MASTER_ADDR and MASTER_PORT?)",
                                       fmt::join(missing, ","), world, format_seconds(timeout)));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::unique_ptr<Communicator> connect(const RankContext& ctx, const ConnectOptions& opts) {
  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(ctx.master_port);
  so.isServer = !ctx.store_hosted_externally && ctx.rank == 0;
  so.numWorkers = c10::nullopt;
  so.waitWorkers = false;
  so.timeout = to_ms(opts.timeout);
  c10::intrusive_ptr<c10d::TCPStore> tcp;
  try {
    tcp = GACCUM_C10D("TCPStore(connect " + ctx.master_addr + ":" + std::to_string(ctx.master_port) + ")",
                      c10::make_intrusive<c10d::TCPStore>(ctx.master_addr, so));
  } catch (const RuntimeFailure& e) {
    const std::string what = e.what();
    if (so.isServer && (what.find("Address already in use") != std::string::npos ||
                        what.find("errno: 98") != std::string::npos))
      throw InputError(fmt::format("environment: MASTER_PORT={} is already in use on this host (rank 0 hosts the "
                                   "rendezvous store there): choose a free port for MASTER_PORT",
                                   ctx.master_port));
    throw;
  }
  StorePtr store = c10::make_intrusive<c10d::PrefixStore>(opts.key_prefix, tcp);
  auto kv = std::make_unique<C10dStore>(store);
  if (opts.after_store) opts.after_store(*kv);

  if (opts.backend == Backend::gloo) {
    auto go = c10d::ProcessGroupGloo::Options::create();
    go->timeout = to_ms(opts.timeout);
    std::string host = opts.gloo_interface_host;
    if (host.empty()) {
      if (is_loopback(ctx.master_addr)) {
        host = "127.0.0.1";
      } else {
        char name[256] = {0};
        ::gethostname(name, sizeof(name) - 1);
        host = name;
      }
    }
    go->devices.push_back(GACCUM_C10D("Gloo device for " + host, c10d::ProcessGroupGloo::createDeviceForHostname(host)));
    return std::make_unique<C10dCommunicator<c10d::ProcessGroupGloo>>(
        ctx.rank, ctx.world_size, Backend::gloo, torch::Device(opts.device), store,
        [go](const StorePtr& s, int rank, int size) {
          return c10::make_intrusive<c10d::ProcessGroupGloo>(s, rank, size, go);
        },
        opts.wait);
  }
  // Backend::nccl
#ifdef USE_C10D_NCCL
  for (const auto& [k, v] : nccl_env_defaults([](const char* name) { return std::getenv(name); }))
    ::setenv(k.c_str(), v.c_str(), 0);
  // Every rank on its own GPU before NCCL opens a context (else all of them open one on GPU 0).
  const torch::Device dev(opts.device);
  if (!dev.is_cuda())
    throw InputError(fmt::format("--device {}: the NCCL backend needs a CUDA device (cuda:<local rank>)", opts.device));
  GACCUM_C10D("set_device " + opts.device, c10::cuda::set_device(dev.has_index() ? dev.index() : 0));
  auto no = c10d::ProcessGroupNCCL::Options::create();
  no->timeout = to_ms(opts.timeout);
  return std::make_unique<C10dCommunicator<c10d::ProcessGroupNCCL>>(
      ctx.rank, ctx.world_size, Backend::nccl, torch::Device(opts.device), store,
      [no](const StorePtr& s, int rank, int size) {
        return c10::make_intrusive<c10d::ProcessGroupNCCL>(s, rank, size, no);
      },
      CollectiveWait::block);
#else
  throw InputError("--backend: nccl is not available: this LibTorch was built without CUDA/NCCL "
                   "(build against a CUDA LibTorch, e.g. pip torch, via CMAKE_PREFIX_PATH)");
#endif
}

std::vector<std::pair<std::string, std::string>> nccl_env_defaults(
    const std::function<const char*(const char*)>& getenv) {
  std::vector<std::pair<std::string, std::string>> out;
  auto pair = [&](const char* now, const char* before, const char* value) {
    if (getenv(now) || getenv(before)) return;
    out.emplace_back(now, value);
    out.emplace_back(before, value);
  };
  pair("TORCH_NCCL_BLOCKING_WAIT", "NCCL_BLOCKING_WAIT", "1");
  pair("TORCH_NCCL_ASYNC_ERROR_HANDLING", "NCCL_ASYNC_ERROR_HANDLING", "2");
  return out;
}

std::vector<Backend> available_backends() {
  std::vector<Backend> b{Backend::gloo};
#ifdef USE_C10D_NCCL
  b.push_back(Backend::nccl);
#endif
  return b;
}

void sync_device(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.has_index() ? device.index() : -1);
}

DeviceTimer::DeviceTimer(const torch::Device& device)
    : DeviceTimer([device] { sync_device(device); }, [] { return Clock::now(); }) {}

DeviceTimer::DeviceTimer(std::function<void()> sync, std::function<Clock::time_point()> now)
    : sync_(std::move(sync)), now_(std::move(now)) {}

DeviceTimer::Clock::time_point DeviceTimer::start() const {
  sync_();
  return now_();
}

Seconds DeviceTimer::seconds_since(Clock::time_point start) const {
  sync_();
  return std::chrono::duration<double>(now_() - start).count();
}

std::string gloo_version() {
#ifdef GLOO_VERSION_MAJOR
  return fmt::format("{}.{}.{}", GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH);
#else
  return "";
#endif
}

}  // namespace gaccum::comm
