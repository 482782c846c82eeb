// What: the one seam between gaccum-tune and LibTorch's c10d: a rendezvous store (TCPStore)
//       and a process group (ProcessGroupGloo on CPU, ProcessGroupNCCL on GPU) behind a small
//       interface of the collectives we use.
// Why: c10d's C++ API moves between LibTorch 1.13 and 2.x (Work vs ProcessGroup::Work,
//      ProcessGroup vs Backend, USE_C10D_* guards, TCPStore options); every version difference
//      lives in communicator.cpp and nothing else includes c10d headers.
// Errors: every c10d failure is rethrown as CollectiveFailure (core/error.hpp, a RuntimeFailure)
//         "c10d <op> failed (<file>:<line>): ...".
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <utility>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/types.h>

#include "comm/rank_env.hpp"
#include "core/backend.hpp"
#include "core/units.hpp"

namespace gaccum::comm {

// A collective in flight.
class PendingCollective {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~PendingCollective() = default;
  virtual void wait() = 0;
  // When the backend finished the collective, where it reports that (Gloo, through the work's
  // future); nullopt otherwise (NCCL: completion is a stream event), then the caller takes
  // the time wait() returned as an upper bound.
  virtual std::optional<Clock::time_point> completed_at() const { return std::nullopt; }
};

// Key/value rendezvous store shared by all ranks of one job.
class KeyValueStore {
 public:
  virtual ~KeyValueStore() = default;
  virtual void set(const std::string& key, const std::string& value) = 0;
  virtual std::string get(const std::string& key) = 0;  // blocks until set or timeout
  virtual std::int64_t add(const std::string& key, std::int64_t delta) = 0;
};

// A store server hosted by the launcher process (children connect as clients), so the port is
// bound before any rank starts and the store outlives a crashed rank 0.
class StoreServer {
 public:
  virtual ~StoreServer() = default;
  virtual int port() const = 0;
};
// Binds 0.0.0.0:port (port 0: the kernel picks a free one).
std::unique_ptr<StoreServer> host_store(int port, int world_size, Seconds timeout);

class Communicator {
 public:
  virtual ~Communicator() = default;
  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  Backend backend() const { return backend_; }
  torch::Device device() const { return device_; }
  // How this rank's thread waits for its collectives (core/backend.hpp; ConnectOptions::wait).
  CollectiveWait wait_mode() const { return wait_; }

  // In-place sum over ranks. The tensor must be contiguous and stay alive until wait().
  virtual std::unique_ptr<PendingCollective> allreduce_sum_async(torch::Tensor& t) = 0;
  void allreduce_sum(torch::Tensor& t) { allreduce_sum_async(t)->wait(); }
  // The sum over ranks of one number. On CPU the message lives in this object, not in the
  // allocator: the backend's worker thread may drop its reference to a finished collective's
  // tensor late, which would move a tracked 8-byte allocation into the next phase's peak.
  double allreduce_sum_scalar(double v);
  virtual void broadcast(torch::Tensor& t, int root) = 0;
  // Point-to-point, for pipeline stages: `t` (contiguous, alive until wait()) to rank `dst` of
  // this communicator, or received into `t` from rank `src`. `tag` pairs a send with its recv on
  // Gloo (NCCL matches by order, so both sides must issue them in the same order). Gloo's send
  // completes only once the peer has posted the matching recv: a rank that must not block posts
  // its sends and waits for them later.
  virtual std::unique_ptr<PendingCollective> send_async(torch::Tensor& t, int dst, int tag) = 0;
  virtual std::unique_ptr<PendingCollective> recv_async(torch::Tensor& t, int src, int tag) = 0;
  // Reduce-scatter (sum): `input` holds world_size equal chunks (contiguous, numel a multiple of
  // world_size); rank r receives the sum over ranks of chunk r in `output` (numel / world_size).
  // Gloo runs it as an all-to-all of the chunks followed by a local sum over the received
  // chunks: each rank sends and receives (p-1)/p of the message, the bytes of a ring
  // reduce-scatter (ProcessGroupGloo of LibTorch 1.13 has no reduce_scatter); NCCL runs its own
  // (ncclReduceScatter through ProcessGroupNCCL::_reduce_scatter_base). The method's name is
  // reduce_scatter_method(), recorded with every measurement.
  void reduce_scatter_sum(const torch::Tensor& input, torch::Tensor& output) {
    reduce_scatter_sum_into(input, output, nullptr, false);
  }
  // The same with the all-to-all's receive buffer given (`scratch`: contiguous, at least
  // input.numel() elements of its dtype, so nothing is allocated per call; NCCL: the reduced
  // chunk's staging when accumulating) and, with `accumulate`, the chunk sum added to `output`
  // instead of written.
  virtual void reduce_scatter_sum_into(const torch::Tensor& input, torch::Tensor& output, torch::Tensor* scratch,
                                       bool accumulate) = 0;
  virtual const char* reduce_scatter_method() const = 0;
  // All-gather: every rank's `input` (equal numel) into `output` in rank order (numel x p).
  void all_gather(const torch::Tensor& input, torch::Tensor& output) { all_gather_into(input, output, nullptr); }
  // The same without a temporary: with `scratch` (contiguous, at least p x input.numel()
  // elements of its dtype) Gloo runs it as an all-to-all of `input` repeated p times into
  // `output` (each rank sends and receives (p-1)/p of the output, a ring all-gather's bytes);
  // without, as Gloo's allgather (which stages the output in a flat temporary). NCCL gathers into
  // `output` directly either way (ncclAllGather through ProcessGroupNCCL::_allgather_base).
  virtual void all_gather_into(const torch::Tensor& input, torch::Tensor& output, torch::Tensor* scratch) = 0;
  // How all_gather_into with a scratch buffer runs (recorded with every measurement).
  virtual const char* all_gather_method() const = 0;
  // A communicator over `members` (ranks of this one, in the order that gives their new ranks),
  // on its own process group and store prefix `tag`; every member calls it with the same
  // arguments (c10d's new_group). This rank must be a member.
  virtual std::unique_ptr<Communicator> split(const std::vector<int>& members, const std::string& tag) = 0;
  // The dtype in which a synthetic timing message standing for `buffers`-typed gradients is
  // summed on this backend: Gloo has no bf16 sum ("Invalid scalar type"), so bf16 messages are
  // timed as fp16 messages of the same bytes (Gloo sums fp16); otherwise `buffers` itself.
  torch::Dtype timing_dtype(torch::Dtype buffers) const {
    return backend_ == Backend::gloo && buffers == torch::kBFloat16 ? torch::kHalf : buffers;
  }
  void barrier();
  // Every rank's string, indexed by rank (through the store; for small metadata).
  std::vector<std::string> allgather_strings(const std::string& mine);
  KeyValueStore& store() { return *store_; }

 protected:
  Communicator(int rank, int world_size, Backend backend, torch::Device device,
               std::unique_ptr<KeyValueStore> store, CollectiveWait wait)
      : rank_(rank), world_size_(world_size), backend_(backend), device_(device), store_(std::move(store)),
        wait_(wait) {}
  int rank_, world_size_;
  Backend backend_;
  torch::Device device_;
  std::unique_ptr<KeyValueStore> store_;
  CollectiveWait wait_ = CollectiveWait::block;
  std::int64_t gather_seq_ = 0;
  double scalar_ = 0;  // allreduce_sum_scalar's message on CPU
};

struct ConnectOptions {
  Backend backend = Backend::gloo;
  std::string device = "cpu";            // the device tensors live on (nccl: cuda:<local_rank>)
  Seconds timeout = 60;                  // rendezvous and collective timeout
  // How every wait on this communicator (and the ones split() makes) waits: poll only for Gloo
  // (core/backend.hpp collective_wait_for gives the timed ranks' rule); NCCL always blocks.
  CollectiveWait wait = CollectiveWait::block;
  std::string key_prefix = "gaccum";     // namespaces keys of concurrent jobs on one store
  std::string gloo_interface_host = "";  // hostname/IP Gloo binds to; default: 127.0.0.1 when
                                         // master_addr is loopback, else this host's name
  // Called once the store is connected and before the process group is created (whose
  // construction blocks until every rank joined): e.g. a rendezvous that names missing ranks.
  std::function<void(KeyValueStore&)> after_store;
};

// Every rank announces itself under "<tag>/joined/<rank>", then waits until all have;
// RuntimeFailure naming the ranks that never came (and MASTER_ADDR/MASTER_PORT) after `timeout`.
// For ConnectOptions::after_store, so a missing rank is named instead of "Socket Timeout".
void rendezvous(KeyValueStore& store, const std::string& tag, int rank, int world, Seconds timeout);

// A rank-0-hosted store (torchrun without the agent store, Slurm, mpirun) whose MASTER_PORT is
// already taken throws InputError naming MASTER_PORT.
std::unique_ptr<Communicator> connect(const RankContext& ctx, const ConnectOptions& opts);

// NCCL's failure semantics, chosen deliberately: a lost peer or a timeout must end a rank with an
// exception from wait() that names the collective (and lets the rank job name the rank), not a
// process abort by the watchdog that the launcher blames on whichever rank died first:
//   TORCH_NCCL_BLOCKING_WAIT=1         wait() blocks the host until the collective completes, and
//                                      throws on timeout or error (NCCL_BLOCKING_WAIT before 2.2)
//   TORCH_NCCL_ASYNC_ERROR_HANDLING=2  "clean up only": the watchdog aborts the communicators and
//                                      does not kill the process (NCCL_ASYNC_ERROR_HANDLING)
// A setting the user gave under either name is kept (nothing is returned for it). connect() sets
// what this returns before it creates a ProcessGroupNCCL; the process group is shut down
// (ProcessGroupNCCL::shutdown, LibTorch >= 2.2) before it is destroyed.
std::vector<std::pair<std::string, std::string>> nccl_env_defaults(
    const std::function<const char*(const char*)>& getenv);

// Waits for the work queued on a CUDA device (torch::cuda::synchronize); nothing on the CPU. Host
// clocks around a collective or a compute phase are only true after it: the one helper for
// DeviceTimer (GradSync, ShardedSync) and the memory sweep.
void sync_device(const torch::Device& device);

// Host-clock time of a section (a collective, an exposed stretch of communication) on a device
// that queues its work: start() synchronises the device before it reads the clock, so compute
// queued before the section is not counted; seconds_since() synchronises before it reads the
// clock again, so work queued inside the section (averaging, copies) is. On CPU the syncs do
// nothing. The timer of GradSync's and ShardedSync's exposed and collective times; a test gives
// fakes for the sync and the clock (tests/unit/test_grad_sync.cpp).
class DeviceTimer {
 public:
  using Clock = std::chrono::steady_clock;
  explicit DeviceTimer(const torch::Device& device);
  DeviceTimer(std::function<void()> sync, std::function<Clock::time_point()> now);
  Clock::time_point start() const;
  Seconds seconds_since(Clock::time_point start) const;

 private:
  std::function<void()> sync_;
  std::function<Clock::time_point()> now_;
};

// Which c10d backends this LibTorch build offers (gloo; nccl with CUDA).
std::vector<Backend> available_backends();
// Gloo's version as compiled in ("0.5.0"), empty if unknown.
std::string gloo_version();

}  // namespace gaccum::comm
