// Unit tests for the nccl-tests log parser and the cluster fit (model/nccl_tests_log.hpp,
// model/cluster_fit.hpp): the fixtures in tests/data/nccl-tests (nccl-tests' layout; times
// generated from a known latency and bandwidth with a +-2.5% ripple, see make_fixtures.py) are
// read, the links recovered within 5% of a fit done by hand from two rows, every malformed log
// refused with its line number, and the cluster file keeps where each number came from.
#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>
#include <string>

#include "core/error.hpp"
#include "core/utc_time.hpp"
#include "model/allreduce.hpp"
#include "model/cluster.hpp"
#include "model/cluster_fit.hpp"
#include "model/nccl_tests_log.hpp"

using namespace gaccum;
using namespace gaccum::model;

namespace {

const std::string kDir = std::string(GACCUM_SOURCE_DIR) + "/tests/data/nccl-tests/";

std::string slurp(const std::string& name) {
  std::ifstream in(kDir + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string error_of(const std::string& text, std::optional<NcclTestsOp> op = std::nullopt) {
  try {
    parse_nccl_tests_log(text, "log.txt", op);
  } catch (const InputError& e) {
    const std::string msg = e.what();
    CHECK(msg.find('\n') == std::string::npos);
    return msg;
  }
  FAIL("no InputError");
  return "";
}

const NcclTestsRow& smallest(const NcclTestsLog& l) {
  return l.rows.front();
}
const NcclTestsRow& largest(const NcclTestsLog& l) {
  return l.rows.back();
}

ClusterFitRequest request(std::vector<NcclTestsLog> logs) {
  ClusterFitRequest r;
  r.logs = std::move(logs);
  r.device_memory = 80 * GiB;
  r.now_utc = "2026-12-02T09:00:00Z";
  return r;
}

}  // namespace

TEST_CASE("nccl-tests log: ranks, hosts, rows and the op", "[model][nccl-tests]") {
  const auto one = parse_nccl_tests_log(slurp("h100-1node-all_reduce.txt"), "one.txt");
  CHECK(one.op == NcclTestsOp::all_reduce);
  CHECK(one.op_from.find("Collective test starting") != std::string::npos);
  CHECK(one.world_size() == 8);
  CHECK(one.nodes() == 1);
  CHECK(one.ranks_per_node() == 8);
  CHECK(one.device_name() == "NVIDIA H100 80GB HBM3");
  REQUIRE(one.rows.size() == 15);
  CHECK(smallest(one).size == 8);
  CHECK(smallest(one).count == 2);
  CHECK(largest(one).size == 2147483648ULL);
  CHECK(largest(one).time == Approx(10237e-6));  // "10237" us
  CHECK(largest(one).busbw_GBps == Approx(367.11));
  CHECK(largest(one).time_in_place == Approx(9983.2e-6));

  // mpirun's "[1,0]<stdout>:" prefix and NCCL INFO lines in between; no header op: count x 4 = size.
  const auto two = parse_nccl_tests_log(slurp("h100-2node-all_reduce.txt"), "two.txt");
  CHECK(two.op == NcclTestsOp::all_reduce);
  CHECK(two.op_from == "count x 4 = size");
  CHECK(two.world_size() == 16);
  CHECK(two.nodes() == 2);
  CHECK(two.ranks_per_node() == 8);
  CHECK(two.hosts() == std::vector<std::string>{"dgx-a01", "dgx-a02"});
  CHECK(two.rows.size() == 15);

  // Reduce-scatter told by count x 4 x 8 = size and redop sum.
  const auto rs = parse_nccl_tests_log(slurp("h100-1node-reduce_scatter.txt"), "rs.txt");
  CHECK(rs.op == NcclTestsOp::reduce_scatter);
  CHECK(rs.rows.front().count * 4 * 8 == static_cast<Count>(rs.rows.front().size));
  // The same rows named all_gather on the command line contradict nothing about rank scaling
  // (both are per-rank counts), but named all_reduce they do.
  CHECK(error_of(slurp("h100-1node-reduce_scatter.txt"), NcclTestsOp::all_reduce).find("contradict") !=
        std::string::npos);

  CHECK(busbw_factor(NcclTestsOp::all_reduce, 8) == Approx(1.75));
  CHECK(busbw_factor(NcclTestsOp::all_gather, 8) == Approx(0.875));
  CHECK(parse_nccl_tests_op("all_reduce_perf") == NcclTestsOp::all_reduce);
  CHECK(parse_nccl_tests_op("reduce-scatter") == NcclTestsOp::reduce_scatter);
  CHECK(parse_nccl_tests_op("allgather") == NcclTestsOp::all_gather);
  CHECK_FALSE(parse_nccl_tests_op("broadcast"));
}

TEST_CASE("nccl-tests log: the older layout without root and with an error column", "[model][nccl-tests]") {
  const std::string old =
      R"(# nThread 1 nGpus 2 minBytes 8 maxBytes 1048576 step: 4(factor) warmup iters: 5 iters: 20 validation: 1
#
# Using devices
#   Rank  0 Pid   1320 on   hostA device  0 [0x00] Tesla V100-SXM2-16GB
#   Rank  1 Pid   1320 on   hostA device  1 [0x00] Tesla V100-SXM2-16GB
#
#                                                       out-of-place                       in-place
#       size         count      type   redop     time   algbw   busbw  error     time   algbw   busbw  error
#        (B)    (elements)                       (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024           256     float     sum    10.00    0.10    0.10  0e+00    10.00    0.10    0.10  0e+00
     1048576        262144     float     sum    60.00   17.48   17.48  0e+00    60.00   17.48   17.48  0e+00
# Out of bounds values : 0 OK
)";
  const auto l = parse_nccl_tests_log(old, "old.txt");
  CHECK(l.world_size() == 2);
  CHECK(l.op == NcclTestsOp::all_reduce);
  REQUIRE(l.rows.size() == 2);
  CHECK(l.rows[1].time == Approx(60e-6));
  CHECK(l.rows[1].redop == "sum");
}

TEST_CASE("nccl-tests log: malformed logs are refused with the line", "[model][nccl-tests]") {
  const std::string good = slurp("h100-1node-all_reduce.txt");
  // A row cut short (a wrapped terminal): line of the 4th row.
  std::string cut = good;
  const auto at = cut.find("         512");
  REQUIRE(at != std::string::npos);
  cut.replace(at, cut.find('\n', at) - at, "         512           128     float     sum");
  const auto e1 = error_of(cut);
  CHECK(e1.find("log.txt:22:") != std::string::npos);
  CHECK(e1.find("columns") != std::string::npos);
  // A number that is not one.
  std::string bad = good;
  bad.replace(bad.find("22.57"), 5, "2x.57");
  CHECK(error_of(bad).find("not a non-negative number") != std::string::npos);
  // Wrong elements.
  std::string wrong = good;
  const auto row = wrong.find("         128            32");
  const auto nl = wrong.find('\n', row);
  wrong.replace(nl - 1, 1, "7");
  const auto e3 = error_of(wrong);
  CHECK(e3.find("log.txt:21:") != std::string::npos);
  CHECK(e3.find("7 wrong elements") != std::string::npos);
  // Two test headers: nccl-tests without MPI=1 under mpirun.
  const auto e4 = error_of(good + good);
  CHECK(e4.find("a second test header") != std::string::npos);
  CHECK(e4.find("MPI=1") != std::string::npos);
  // No "# Rank" lines.
  std::string norank;
  std::istringstream in(good);
  for (std::string line; std::getline(in, line);)
    if (line.find("Rank") == std::string::npos) norank += line + "\n";
  CHECK(error_of(norank).find("Using devices") != std::string::npos);
  // No rows at all.
  CHECK(error_of(good.substr(0, good.find("           8"))).find("no result rows") != std::string::npos);
  // An op nothing tells: count matches neither relation.
  const std::string unknown = R"(#  Rank  0 Group  0 Pid 1 on h device  0 [0x1] G
#  Rank  1 Group  0 Pid 2 on h device  1 [0x2] G
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
        1000             7     float     sum      -1    10.00    0.10    0.10      0    10.00    0.10    0.10      0
)";
  CHECK(error_of(unknown).find("--nccl-tests all_reduce:log.txt") != std::string::npos);
}

TEST_CASE("cluster fit: one node recovers the intra-node link within 5% of a hand fit", "[model][cluster-fit]") {
  const auto log = load_nccl_tests_log(kDir + "h100-1node-all_reduce.txt");
  const auto fit = fit_cluster(request({log}));
  const auto& c = fit.cluster;
  // By hand: bandwidth is the busbw of the largest message (latency is 0.001% of it), latency
  // the smallest message's time over its 2(n-1) = 14 ring steps (its bytes are 0.0002% of it).
  const double beta_hand = largest(log).busbw_GBps * 1e9;
  const double alpha_hand = smallest(log).time / 14.0;
  CHECK(c.intra_node.bandwidth == Approx(beta_hand).epsilon(0.05));
  CHECK(c.intra_node.latency == Approx(alpha_hand).epsilon(0.05));
  // And the truth the fixture was generated from (make_fixtures.py: 1.6 us, 360 GB/s).
  CHECK(c.intra_node.bandwidth == Approx(360e9).epsilon(0.05));
  CHECK(c.intra_node.latency == Approx(1.6e-6).epsilon(0.05));
  CHECK(c.nodes == 1);
  CHECK(c.gpus_per_node == 8);
  CHECK(c.device_name == "NVIDIA H100 80GB HBM3");
  CHECK(c.device_memory == 80 * GiB);
  CHECK(c.intra_source.origin == LinkOrigin::measured);
  CHECK(c.intra_source.points == 15);
  CHECK(c.intra_source.max_rel_residual < 0.06);
  CHECK(c.intra_source.from.find("8 ranks on 1 node") != std::string::npos);
  CHECK(fit.residuals.size() == 15);
  CHECK(c.created_utc == "2026-12-02T09:00:00Z");
}

TEST_CASE("cluster fit: two nodes recover the inter-node link through the hierarchical model", "[model][cluster-fit]") {
  const auto one = load_nccl_tests_log(kDir + "h100-1node-all_reduce.txt");
  const auto two = load_nccl_tests_log(kDir + "h100-2node-all_reduce.txt");
  auto req = request({one, two});
  req.nodes = 16;
  const auto fit = fit_cluster(req);
  const auto& c = fit.cluster;
  CHECK(c.nodes == 16);
  CHECK(c.gpus_per_node == 8);
  // By hand, m = 2 nodes of g = 8: a row's time less its intra-node phases (priced on the intra
  // fit) is 2(m-1) alpha_e + 2(m-1)/m (S/g) / beta_e = 2 alpha_e + S / (8 beta_e).
  auto rest = [&](const NcclTestsRow& r) {
    const double s = double(r.size);
    return r.time - (14 * c.intra_node.latency + 14.0 / 8.0 * s / c.intra_node.bandwidth);
  };
  const double beta_hand = double(largest(two).size) / 8.0 / rest(largest(two));
  const double alpha_hand = rest(smallest(two)) / 2.0;
  CHECK(c.inter_node.bandwidth == Approx(beta_hand).epsilon(0.05));
  CHECK(c.inter_node.latency == Approx(alpha_hand).epsilon(0.05));
  CHECK(c.inter_node.bandwidth == Approx(46e9).epsilon(0.05));
  CHECK(c.inter_node.latency == Approx(6e-6).epsilon(0.05));
  CHECK(c.inter_source.origin == LinkOrigin::measured);
  CHECK(c.inter_source.from.find("16 ranks, 2 nodes x 8") != std::string::npos);
  // The fitted cluster reproduces the logged times through the model's own formula.
  const auto cost = hierarchical_allreduce(16, 8, c.intra_node, c.inter_node);
  CHECK(cost.at(largest(two).size) == Approx(largest(two).time).epsilon(0.05));

  // One GPU per node: a plain ring across nodes, no intra-node measurement needed.
  const auto ring = fit_cluster(request({load_nccl_tests_log(kDir + "h100-2node-1gpu-all_reduce.txt")}));
  CHECK(ring.cluster.gpus_per_node == 1);
  CHECK(ring.cluster.inter_node.bandwidth == Approx(46e9).epsilon(0.05));
  CHECK(ring.cluster.inter_node.latency == Approx(6e-6).epsilon(0.05));

  // Reduce-scatter of one node fits the same intra link (its (n-1) steps and (n-1)/n bytes).
  const auto rs = fit_cluster(request({load_nccl_tests_log(kDir + "h100-1node-reduce_scatter.txt")}));
  CHECK(rs.cluster.intra_node.bandwidth == Approx(360e9).epsilon(0.05));
  CHECK(rs.cluster.intra_node.latency == Approx(1.6e-6).epsilon(0.05));
}

TEST_CASE("cluster fit: what it needs, and the base it keeps", "[model][cluster-fit]") {
  const auto one = load_nccl_tests_log(kDir + "h100-1node-all_reduce.txt");
  const auto two = load_nccl_tests_log(kDir + "h100-2node-all_reduce.txt");
  auto msg = [](const ClusterFitRequest& r) {
    try {
      fit_cluster(r);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(msg(request({two})).find("no one-node measurement for intra_node") != std::string::npos);
  auto no_mem = request({one});
  no_mem.device_memory.reset();
  CHECK(msg(no_mem).find("--device-memory") != std::string::npos);
  auto many = request({one});
  many.nodes = 4;
  CHECK(msg(many).find("needs inter_node") != std::string::npos);

  // --base: device and prices kept, the intra level replaced by the measurement, the inter
  // level kept as described.
  Cluster base = load_cluster(std::string(GACCUM_SOURCE_DIR) + "/examples/clusters/ib-cluster-16node.json");
  auto with_base = request({one});
  with_base.device_memory.reset();
  with_base.base = base;
  with_base.base_path = "ib.json";
  const auto f = fit_cluster(with_base);
  CHECK(f.cluster.nodes == 16);
  CHECK(f.cluster.device_memory == base.device_memory);
  CHECK(f.cluster.cost_per_device_hour == base.cost_per_device_hour);
  CHECK(f.cluster.intra_source.origin == LinkOrigin::measured);
  CHECK(f.cluster.inter_source.origin == LinkOrigin::described);
  CHECK(f.cluster.inter_node.bandwidth == base.inter_node.bandwidth);
  CHECK(f.cluster.name == "ib-cluster-16node-fitted");
}

TEST_CASE("cluster fit: a level its measurements cannot determine is refused, a 0 latency never unannounced",
          "[model][cluster-fit]") {
  const auto full = load_nccl_tests_log(kDir + "h100-1node-all_reduce.txt");
  auto msg = [](const NcclTestsLog& log) {
    try {
      fit_cluster(request({log}));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // One row: latency and bandwidth cannot be told apart (the fit used to write latency 0).
  auto one = full;
  one.rows = {full.rows[13]};
  CHECK_THAT(msg(one), Catch::Contains("intra_node: 1 measurement(s), all at one message size (512 MiB)"));
  // Two rows of one size and rank count: the same.
  auto same = full;
  same.rows = {full.rows[13], full.rows[13]};
  same.rows[1].time *= 1.1;
  CHECK_THAT(msg(same), Catch::Contains("2 measurement(s), all at one message size"));
  // Times that fall as the size grows (noise): latency 0 with a warning, and the file says so.
  auto fall = full;
  fall.rows = {full.rows[0], full.rows[14]};
  fall.rows[0].time = 1e-2;
  fall.rows[1].time = 2e-5;
  const auto ff = fit_cluster(request({fall}));
  CHECK(ff.cluster.intra_node.latency == 0);
  REQUIRE(ff.warnings.size() == 1);
  CHECK_THAT(ff.warnings[0], Catch::StartsWith("intra_node latency written as 0 us, a bound, not a measurement: the "
                                               "measured times do not grow with the message size"));
  CHECK_THAT(ff.cluster.intra_source.from, Catch::EndsWith("; latency not resolved by these measurements (written as 0)"));
  // Determined but the intercept is negative: written as 0 with a warning, not silently.
  auto neg = full;
  neg.rows = {full.rows[12], full.rows[14]};
  neg.rows[0].time = 300e-6;  // 128 MiB
  neg.rows[1].time = 9000e-6;  // 2 GiB: the line through both crosses 0 bytes below 0 s
  const auto f = fit_cluster(request({neg}));
  CHECK(f.cluster.intra_node.latency == 0);
  REQUIRE(f.warnings.size() == 1);
  CHECK_THAT(f.warnings[0], Catch::Contains("the fit's latency came out negative over 2 measurements"));
  // The full log: no warning, nothing unresolved.
  const auto good = fit_cluster(request({full}));
  CHECK(good.warnings.empty());
  CHECK(good.cluster.intra_source.from.find("not resolved") == std::string::npos);
}

TEST_CASE("cluster file: provenance and dates round-trip; bad ones are refused", "[model][cluster-fit]") {
  auto req = request({load_nccl_tests_log(kDir + "h100-1node-all_reduce.txt"),
                      load_nccl_tests_log(kDir + "h100-2node-all_reduce.txt")});
  const auto c = fit_cluster(req).cluster;
  const auto back = cluster_from_json(to_json(c), "c.json");
  CHECK(back.intra_source.origin == LinkOrigin::measured);
  CHECK(back.intra_source.from == c.intra_source.from);
  CHECK(back.intra_source.points == c.intra_source.points);
  CHECK(back.inter_source.origin == LinkOrigin::measured);
  CHECK(back.inter_source.measured_utc == c.inter_source.measured_utc);
  CHECK(back.created_utc == "2026-12-02T09:00:00Z");
  CHECK(back.inter_node.bandwidth == Approx(c.inter_node.bandwidth));
  // A described file stays described.
  const auto ib = load_cluster(std::string(GACCUM_SOURCE_DIR) + "/examples/clusters/ib-cluster-16node.json");
  CHECK(ib.inter_source.origin == LinkOrigin::described);
  CHECK(ib.created_utc.empty());
  auto j = to_json(c);
  j["created_utc"] = "yesterday";
  CHECK_THROWS_WITH(cluster_from_json(j, "c.json"),
                    Catch::Contains("c.json.created_utc") && Catch::Contains("ISO-8601"));
  j = to_json(c);
  j["intra_node"]["measured"]["pointz"] = 3;
  CHECK_THROWS_WITH(cluster_from_json(j, "c.json"), Catch::Contains("unknown field 'pointz'"));

  CHECK(parse_utc("1970-01-01T00:00:00Z") == 0);
  CHECK(parse_utc("2026-12-02T09:00:00Z") == 1796202000);
  CHECK(parse_utc("2026-12-02") == 1796169600);
  CHECK_FALSE(parse_utc("2026-02-31"));
  CHECK_FALSE(parse_utc("2026-12-02 09:00:00"));
  CHECK(format_utc(1796202000) == "2026-12-02T09:00:00Z");
}

// The drift check's comparison (check --probe-links), by hand. Cluster: intra 2 us / 100 GB/s,
// inter 10 us / 10 GB/s; the job 2 nodes x 2 ranks; S = 1e6 bytes.
//   intra_node ring of 2: 2(1) 2us + 2(1)/2 1e6/1e11          = 4 + 10      = 14 us
//   inter_node ring of 2: 2(1) 10us + 2(1)/2 1e6/1e10         = 20 + 100    = 120 us
//   job, hierarchical 4 = 2 x 2: RS 1 x 2us + 1/2 1e6/1e11     = 7 us, twice (RS and AG)
//                        + inter 2(1) 10us + 2(1)/2 (1e6/2)/1e10 = 20 + 50 = 70 us  -> 84 us
TEST_CASE("link drift: the probe against the cluster's price per level", "[model][cluster-fit]") {
  Cluster c;
  c.gpus_per_node = 8;  // the job's own placement (2 per node) is what is priced, not the cluster's
  c.nodes = 4;
  c.intra_node = {2e-6, 100e9};
  c.inter_node = {10e-6, 10e9};
  auto point = [](CommLevel level, Count ranks, Seconds t) {
    AllreducePoint a;
    a.level = level;
    a.world_size = ranks;
    a.bytes = 1000000;
    a.time = t;
    return a;
  };
  const std::vector<AllreducePoint> probe = {point(CommLevel::job, 4, 84e-6), point(CommLevel::intra_node, 2, 15e-6),
                                             point(CommLevel::inter_node, 2, 240e-6)};
  const LinkDrift d = compare_links(c, "c.json", probe, 2, 2, 0.25);
  REQUIRE(d.points.size() == 3);
  CHECK(d.points[0].predicted == Approx(84e-6).epsilon(1e-9));
  CHECK(d.points[0].ratio == Approx(1.0).epsilon(1e-9));
  CHECK_FALSE(d.points[0].drifted);
  CHECK(d.points[1].predicted == Approx(14e-6).epsilon(1e-9));
  CHECK(d.points[1].ratio == Approx(15.0 / 14.0).epsilon(1e-9));
  CHECK_FALSE(d.points[1].drifted);
  CHECK(d.points[2].predicted == Approx(120e-6).epsilon(1e-9));
  CHECK(d.points[2].ratio == Approx(2.0).epsilon(1e-9));
  CHECK(d.points[2].drifted);
  REQUIRE(d.drifted_levels == std::vector<std::string>{"inter_node"});
  REQUIRE(d.warnings.size() == 1);
  CHECK_THAT(d.warnings[0], Catch::Contains("inter_node allreduce over 2 ranks") && Catch::Contains("2.00x") &&
                                Catch::Contains("tolerance +-25%") && Catch::Contains("inter_node described"));

  // Within a wider tolerance nothing drifts; 2x fast drifts as far as 2x slow.
  CHECK(compare_links(c, "c.json", probe, 2, 2, 1.0).drifted_levels.empty());
  auto fast = probe;
  fast[1].time = 7e-6;
  CHECK(compare_links(c, "c.json", fast, 2, 2, 0.25).drifted_levels == std::vector<std::string>{"intra_node", "inter_node"});

  // One node: the job level is a ring on intra_node (4 ranks: 6 x 2us + 6/4 x 1e6/1e11 = 27 us).
  const LinkDrift one = compare_links(c, "c.json", {point(CommLevel::job, 4, 27e-6)}, 1, 4, 0.25);
  REQUIRE(one.points.size() == 1);
  CHECK(one.points[0].predicted == Approx(27e-6).epsilon(1e-9));

  // A description without an inter-node link cannot price the levels that cross nodes; a wrong
  // sum is said first.
  Cluster single = c;
  single.inter_node = {};
  auto wrong = probe;
  wrong[1].wrong = 3;
  const LinkDrift s = compare_links(single, "one.json", wrong, 2, 2, 0.25);
  REQUIRE(s.points.size() == 1);
  CHECK(s.points[0].level == CommLevel::intra_node);
  REQUIRE(s.warnings.size() == 3);
  CHECK_THAT(s.warnings[0], Catch::Contains("one.json has no inter_node bandwidth") && Catch::Contains("job allreduce"));
  CHECK_THAT(s.warnings[1], Catch::Contains("summed 3 element(s) wrong"));
  CHECK_THAT(s.warnings[2], Catch::Contains("inter_node allreduce over 2 ranks cannot be compared"));
}

// A launched profile's reduce-scatter / all-gather points at both levels (2 nodes x 2) fit the two
// links as the logs' rows do. Exact times from intra 2 us / 100 GB/s and inter 10 us / 10 GB/s:
//   intra_node RS or AG of 2: (2-1) 2us + (2-1)/2 S/1e11   (S = 1e6: 2 + 5 = 7 us)
//   inter_node RS or AG of 2: (2-1) 10us + (2-1)/2 S/1e10  (S = 1e6: 10 + 50 = 60 us)
// so the least squares recovers them to rounding; the job's own points (hierarchical, 4 ranks)
// are priced on them too: RS = half of 2(7) + 70 ... = 0.5 x (14 + 70) us at S = 1e6.
TEST_CASE("cluster fit: a launched profile's reduce-scatter and all-gather levels", "[model][cluster-fit]") {
  Profile p;
  p.created_utc = "2026-12-02T12:00:00Z";
  p.topology.nodes = 2;
  p.topology.ranks_per_node = 2;
  p.topology.launcher = "torchrun";
  auto coll = [](const char* op, CommLevel level, Count ranks, Bytes s, Seconds t) {
    CollectivePoint c;
    c.op = op;
    c.method = "alltoall+local-sum";
    c.backend = "gloo";
    c.world_size = ranks;
    c.bytes = s;
    c.time = t;
    c.level = level;
    return c;
  };
  for (double s : {1e6, 4e6, 16e6}) {
    const auto b = static_cast<Bytes>(s);
    for (const char* op : {"reduce_scatter", "all_gather"}) {
      p.collectives.push_back(coll(op, CommLevel::intra_node, 2, b, 2e-6 + 0.5 * s / 100e9));
      p.collectives.push_back(coll(op, CommLevel::inter_node, 2, b, 10e-6 + 0.5 * s / 10e9));
      // The job's: half the hierarchical allreduce of 4 = 2 x 2 (the header's table).
      p.collectives.push_back(coll(op, CommLevel::job, 4, b, 0.5 * (2 * (2e-6 + 0.5 * s / 100e9) + 20e-6 + 0.5 * s / 10e9)));
    }
  }
  p.collectives.push_back(coll("reduce_scatter", CommLevel::intra_node, 2, 1 << 20, 1.0));  // wrong: left out
  p.collectives.back().wrong = 5;
  ClusterFitRequest req;
  req.profiles = {{p, "p.json"}};
  req.device_memory = Bytes(1) << 30;
  req.now_utc = "2026-12-02T13:00:00Z";
  const auto fit = fit_cluster(req);
  const auto& c = fit.cluster;
  CHECK(c.gpus_per_node == 2);
  CHECK(c.nodes == 2);
  CHECK(c.intra_node.latency == Approx(2e-6).epsilon(1e-6));
  CHECK(c.intra_node.bandwidth == Approx(100e9).epsilon(1e-6));
  CHECK(c.inter_node.latency == Approx(10e-6).epsilon(1e-6));
  CHECK(c.inter_node.bandwidth == Approx(10e9).epsilon(1e-6));
  CHECK(c.intra_source.points == 6);
  CHECK(c.inter_source.points == 12);  // 6 inter_node rows and 6 of the job's
  CHECK(c.intra_source.from.find("gloo reduce-scatter as alltoall+local-sum, 2 ranks inside a node") != std::string::npos);
  CHECK(c.inter_source.from.find("all-gather as alltoall+local-sum over the job, 2 nodes x 2") != std::string::npos);
  CHECK(c.inter_source.max_rel_residual < 1e-6);
  int rs = 0;
  for (const auto& r : fit.residuals) rs += r.op == "reduce_scatter";
  CHECK(rs == 9);
}
