// What: the text output of NVIDIA's nccl-tests (all_reduce_perf, reduce_scatter_perf,
//       all_gather_perf) read into value types: which collective, the ranks and the hosts they
//       ran on ("# Using devices" lines), and every row of the results table.
//   Header   "# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 ..."
//            "# Collective test starting: all_reduce_perf"       (nccl-tests >= 2.14; names the op)
//   Ranks    "#  Rank  0 Group  0 Pid  1887 on   worker-1 device  0 [0x8d] NVIDIA H100 80GB HBM3"
//            ("Group N" is absent in older versions)
//   Columns  "#       size         count      type   redop    root     time   algbw   busbw #wrong ..."
//            read by name, so versions without `root` or with `error` instead of `#wrong` parse
//            the same; the first time/algbw/busbw/#wrong are out-of-place, the second in-place.
//   Rows     "   8388608       2097152     float     sum      -1   4521.7   185.6   348.5      0 ..."
//            time in microseconds, algbw/busbw in GB/s (1e9 bytes/s).
//   Units as nccl-tests documents them (doc/PERFORMANCE.md of nccl-tests): `size` is S, the whole
//   array: count x sizeof(type) for allreduce, count x sizeof(type) x n for reduce-scatter and
//   all-gather (count is per rank there); busbw = algbw x 2(n-1)/n (allreduce) or (n-1)/n.
//   Lines prefixed by mpirun ("[1,0]<stdout>:") are read without the prefix; NCCL INFO/WARN lines
//   and anything else that is neither a '#' line nor a table row are skipped.
// Why: `gaccum-tune cluster fit --nccl-tests LOG` turns a run the user already has into the
//      cluster description's per-level latency and bandwidth (model/cluster_fit.hpp).
// Errors: InputError "<file>:<line>: <what>; <fix>" for a row that does not parse, a row with
//         wrong elements, a rank listed twice (a second test header: nccl-tests built without
//         MPI=1 and started by mpirun, every process ran its own 1-rank test), a log without
//         "Rank" lines or without rows, or an op that cannot be told.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/units.hpp"

namespace gaccum::model {

enum class NcclTestsOp { all_reduce, reduce_scatter, all_gather };
const char* to_string(NcclTestsOp op);                                 // "all_reduce", ...
std::optional<NcclTestsOp> parse_nccl_tests_op(const std::string& s);  // also "all_reduce_perf", "allreduce"
// busbw / algbw of the op at n ranks: 2(n-1)/n or (n-1)/n.
double busbw_factor(NcclTestsOp op, Count n);

struct NcclTestsRank {
  int rank = 0;
  std::string host;
  int device = 0;
  std::string device_name;  // e.g. "NVIDIA H100 80GB HBM3"
  int line = 0;
};

struct NcclTestsRow {
  int line = 0;       // 1-based line in the log
  Bytes size = 0;     // S, bytes (the whole array)
  Count count = 0;    // elements as printed (per rank for reduce-scatter / all-gather)
  std::string type;   // float, half, bfloat16, ...
  std::string redop;  // sum, none, ... ("" in versions without the column)
  Seconds time = 0;   // out-of-place
  double algbw_GBps = 0, busbw_GBps = 0;
  Seconds time_in_place = 0;  // 0 when the log has no in-place columns
};

struct NcclTestsLog {
  std::string path;
  NcclTestsOp op = NcclTestsOp::all_reduce;
  std::string op_from;               // how the op was told: "--op", "header", "count = size / 4 / n", ...
  std::vector<NcclTestsRank> ranks;  // by rank
  std::vector<NcclTestsRow> rows;    // size > 0, in log order
  Count world_size() const { return static_cast<Count>(ranks.size()); }
  std::vector<std::string> hosts() const;  // distinct, in rank order
  Count nodes() const { return static_cast<Count>(hosts().size()); }
  // Ranks per host; InputError when hosts hold different numbers of ranks.
  Count ranks_per_node() const;
  std::string device_name() const { return ranks.empty() ? "" : ranks.front().device_name; }
};

// `op`: from the command line ("all_reduce:LOG"), else from the log (header, or the count/size
// relation and the redop column).
NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& path,
                                  std::optional<NcclTestsOp> op = std::nullopt);
NcclTestsLog load_nccl_tests_log(const std::string& path, std::optional<NcclTestsOp> op = std::nullopt);

}  // namespace gaccum::model
