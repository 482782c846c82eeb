// What/why: see nccl_allreduce.hpp. nccl-tests style: the buffer is filled by a kernel with a
// pattern whose sum is exact in float32, reduced in place, and checked by a kernel that counts
// mismatches; timing uses a cudaEvent pair per iteration on the probe's own stream.
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "gpu/nccl_allreduce.hpp"

namespace gaccum::gpu {
namespace {

std::string where(const char* file, int line) { return std::string(file) + ":" + std::to_string(line); }

#define GACCUM_CUDA_CHECK(call)                                                                   \
  do {                                                                                            \
    cudaError_t e_ = (call);                                                                      \
    if (e_ != cudaSuccess)                                                                        \
      throw RuntimeFailure(std::string("CUDA ") + #call + " failed (" + where(__FILE__, __LINE__) + \
                           "): " + cudaGetErrorString(e_));                                       \
  } while (0)

#define GACCUM_NCCL_CHECK(call)                                                                   \
  do {                                                                                            \
    ncclResult_t r_ = (call);                                                                     \
    if (r_ != ncclSuccess)                                                                        \
      throw RuntimeFailure(std::string("NCCL ") + #call + " failed (" + where(__FILE__, __LINE__) + \
                           "): " + ncclGetErrorString(r_));                                       \
  } while (0)

// element i of rank r: (r + 1) + i % 13; the sum over p ranks: p(p+1)/2 + p * (i % 13).
__global__ void fill_pattern(float* x, size_t n, int rank) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = float(rank + 1) + float(i % 13);
}

__global__ void count_wrong(const float* x, size_t n, int world, unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    float expect = float(world * (world + 1) / 2) + float(world) * float(i % 13);
    if (x[i] != expect) ++mine;
  }
  if (mine) atomicAdd(wrong, mine);
}

std::string to_hex(const ncclUniqueId& id) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < sizeof(id.internal); ++i) {
    auto c = static_cast<unsigned char>(id.internal[i]);
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

ncclUniqueId from_hex(const std::string& s) {
  ncclUniqueId id{};
  if (s.size() != 2 * sizeof(id.internal)) throw RuntimeFailure("nccl probe: malformed ncclUniqueId from the store");
  auto nib = [](char c) -> int { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i < sizeof(id.internal); ++i)
    id.internal[i] = static_cast<char>(nib(s[2 * i]) * 16 + nib(s[2 * i + 1]));
  return id;
}

}  // namespace

struct NcclAllreduceProbe::Impl {
  int rank = 0, world = 1, device = 0;
  Seconds timeout = 300;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  unsigned long long* wrong = nullptr;

  // Releases what exists, ignoring errors (called from the destructor and a failed constructor).
  void release() noexcept {
    if (comm) (void)ncclCommDestroy(comm);
    if (wrong) (void)cudaFree(wrong);
    if (stream) (void)cudaStreamDestroy(stream);
    comm = nullptr;
    wrong = nullptr;
    stream = nullptr;
  }

  // cudaStreamSynchronize that a dead peer cannot hang: polls the stream and the communicator's
  // asynchronous error; on an error or after `timeout` the communicator is aborted (NCCL's way
  // out of a collective that will never complete) and RuntimeFailure names the cause.
  void wait_stream(const char* what, Bytes bytes) {
    const auto start = std::chrono::steady_clock::now();
    while (true) {
      const cudaError_t q = cudaStreamQuery(stream);
      if (q == cudaSuccess) return;
      if (q != cudaErrorNotReady)
        throw RuntimeFailure(std::string("CUDA cudaStreamQuery failed (") + where(__FILE__, __LINE__) +
                             "): " + cudaGetErrorString(q));
      ncclResult_t async = ncclSuccess;
      GACCUM_NCCL_CHECK(ncclCommGetAsyncError(comm, &async));
      const double waited =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (async != ncclSuccess || waited > timeout) {
        (void)ncclCommAbort(comm);
        comm = nullptr;
        throw RuntimeFailure(
            async != ncclSuccess
                ? std::string("NCCL ") + what + " of " + std::to_string(bytes) + " bytes failed (" +
                      where(__FILE__, __LINE__) + "): " + ncclGetErrorString(async) + " (a peer lost?)"
                : std::string("NCCL ") + what + " of " + std::to_string(bytes) + " bytes did not complete within " +
                      std::to_string(static_cast<long long>(timeout)) + " s (" + where(__FILE__, __LINE__) +
                      "): a peer stopped or is stuck");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
};

bool nccl_probe_compiled() { return true; }

NcclAllreduceProbe::NcclAllreduceProbe(int rank, int world_size, int device, const IdExchange& exchange,
                                       Seconds timeout)
    : impl_(std::make_unique<Impl>()) {
  impl_->rank = rank;
  impl_->world = world_size;
  impl_->device = device;
  impl_->timeout = timeout;
  try {
    GACCUM_CUDA_CHECK(cudaSetDevice(device));
    ncclUniqueId id{};
    if (rank == 0) {
      GACCUM_NCCL_CHECK(ncclGetUniqueId(&id));
      exchange.publish(to_hex(id));
    } else {
      id = from_hex(exchange.fetch());
    }
    GACCUM_CUDA_CHECK(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking));
    GACCUM_CUDA_CHECK(cudaMalloc(&impl_->wrong, sizeof(unsigned long long)));
    GACCUM_NCCL_CHECK(ncclCommInitRank(&impl_->comm, world_size, id, rank));
  } catch (...) {
    impl_->release();  // the destructor does not run for a constructor that throws
    throw;
  }
}

NcclAllreduceProbe::~NcclAllreduceProbe() { impl_->release(); }

NcclAllreduceSample NcclAllreduceProbe::run(Bytes bytes, int warmup, int iters) {
  auto& m = *impl_;
  const size_t n = bytes / sizeof(float) > 0 ? bytes / sizeof(float) : 1;
  NcclAllreduceSample out;
  out.bytes = n * sizeof(float);
  GACCUM_CUDA_CHECK(cudaSetDevice(m.device));
  float* buf = nullptr;
  GACCUM_CUDA_CHECK(cudaMalloc(&buf, n * sizeof(float)));
  struct Free {
    float* p;
    ~Free() { (void)cudaFree(p); }
  } free_buf{buf};
  const int threads = 256;
  const int blocks = static_cast<int>(std::min<size_t>((n + threads - 1) / threads, 1024));

  // Correctness pass.
  fill_pattern<<<blocks, threads, 0, m.stream>>>(buf, n, m.rank);
  GACCUM_CUDA_CHECK(cudaGetLastError());
  GACCUM_NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, m.comm, m.stream));
  GACCUM_CUDA_CHECK(cudaMemsetAsync(m.wrong, 0, sizeof(unsigned long long), m.stream));
  count_wrong<<<blocks, threads, 0, m.stream>>>(buf, n, m.world, m.wrong);
  GACCUM_CUDA_CHECK(cudaGetLastError());
  unsigned long long wrong = 0;
  GACCUM_CUDA_CHECK(cudaMemcpyAsync(&wrong, m.wrong, sizeof(wrong), cudaMemcpyDeviceToHost, m.stream));
  m.wait_stream("allreduce (correctness pass)", out.bytes);
  out.wrong = static_cast<Count>(wrong);

  // Timing on a zeroed buffer (sums of zeros stay finite however many iterations run).
  GACCUM_CUDA_CHECK(cudaMemsetAsync(buf, 0, n * sizeof(float), m.stream));
  for (int i = 0; i < warmup; ++i)
    GACCUM_NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, m.comm, m.stream));
  std::vector<cudaEvent_t> ev(2 * static_cast<size_t>(iters), nullptr);
  struct Events {
    std::vector<cudaEvent_t>& e;
    ~Events() {
      for (auto x : e)
        if (x) (void)cudaEventDestroy(x);
    }
  } destroy_events{ev};
  for (auto& e : ev) GACCUM_CUDA_CHECK(cudaEventCreate(&e));
  for (int i = 0; i < iters; ++i) {
    GACCUM_CUDA_CHECK(cudaEventRecord(ev[2 * i], m.stream));
    GACCUM_NCCL_CHECK(ncclAllReduce(buf, buf, n, ncclFloat32, ncclSum, m.comm, m.stream));
    GACCUM_CUDA_CHECK(cudaEventRecord(ev[2 * i + 1], m.stream));
  }
  m.wait_stream("allreduce", out.bytes);
  for (int i = 0; i < iters; ++i) {
    float ms = 0;
    GACCUM_CUDA_CHECK(cudaEventElapsedTime(&ms, ev[2 * i], ev[2 * i + 1]));
    out.samples.push_back(static_cast<Seconds>(ms) * 1e-3);
  }
  return out;
}

}  // namespace gaccum::gpu
