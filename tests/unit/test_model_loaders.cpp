// Unit tests for the cluster and spec loaders: the shipped examples load, and every bad input
// is an InputError of one line that names the file and the field.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "model/cluster.hpp"
#include "model/spec_model.hpp"

using namespace gaccum;
using namespace gaccum::model;
using nlohmann::json;

namespace {

const std::string kSource = GACCUM_SOURCE_DIR;

json good_cluster() {
  return json::parse(R"({"schema": "gaccum-tune/cluster", "name": "c", "nodes": 2, "gpus_per_node": 4,
    "device": {"name": "X", "memory": "16GiB", "peak_tflops": 100},
    "intra_node": {"bandwidth_GBps": 100, "latency_us": 2},
    "inter_node": {"bandwidth_GBps": 10, "latency_us": 8}, "_source": "test"})");
}

json good_spec() {
  return json::parse(R"({"name": "s", "layers": 2, "hidden": 64, "heads": 4, "seq_len": 32, "vocab": 100})");
}

// The error of loading `j`, which must be one line mentioning every `needle`.
template <class Load>
std::string error_of(Load&& load, const json& j) {
  try {
    load(j, "file.json");
  } catch (const InputError& e) {
    std::string msg = e.what();
    CHECK(msg.find('\n') == std::string::npos);
    CHECK(msg.find("file.json") != std::string::npos);
    return msg;
  }
  FAIL("no InputError for " << j.dump());
  return "";
}

}  // namespace

TEST_CASE("shipped cluster examples load", "[model][cluster]") {
  auto one = load_cluster(kSource + "/examples/clusters/dgx-h100-1node.json");
  CHECK(one.max_world_size() == 8);
  CHECK(one.device_memory == 81559 * MiB);
  CHECK(one.intra_node.bandwidth == Approx(370e9));
  REQUIRE(one.device_peak_flops);
  CHECK(*one.device_peak_flops == Approx(989.4e12));
  CHECK_FALSE(one.source.empty());
  auto ib = load_cluster(kSource + "/examples/clusters/ib-cluster-16node.json");
  CHECK(ib.max_world_size() == 128);
  CHECK(ib.inter_node.bandwidth == Approx(46e9));
  CHECK(ib.inter_node.latency == Approx(5e-6));
  // Round trip through to_json.
  auto again = cluster_from_json(to_json(ib), "again");
  CHECK(again.max_world_size() == 128);
  CHECK(again.inter_node.bandwidth == Approx(46e9));
}

TEST_CASE("cluster loader: errors name the field", "[model][cluster]") {
  auto load = [](const json& j, const std::string& w) { return cluster_from_json(j, w); };
  CHECK_NOTHROW(load(good_cluster(), "ok"));
  json j = good_cluster();
  j.erase("nodes");
  CHECK_THAT(error_of(load, j), Catch::Contains("'nodes'"));
  j = good_cluster();
  j["gpus_per_node"] = 0;
  CHECK_THAT(error_of(load, j), Catch::Contains("gpus_per_node"));
  j = good_cluster();
  j["intra_node"]["bandwidth_GBps"] = -5;
  CHECK_THAT(error_of(load, j), Catch::Contains("intra_node.bandwidth_GBps"));
  j = good_cluster();
  j["inter_node"]["latency_us"] = "fast";
  CHECK_THAT(error_of(load, j), Catch::Contains("inter_node.latency_us"));
  j = good_cluster();
  j["gpu_per_node"] = 8;
  CHECK_THAT(error_of(load, j), Catch::Contains("'gpu_per_node'"));
  j = good_cluster();
  j["device"]["memory"] = "lots";
  CHECK_THAT(error_of(load, j), Catch::Contains("device.memory"));
  j = good_cluster();
  j.erase("inter_node");
  CHECK_THAT(error_of(load, j), Catch::Contains("inter_node"));
  j = good_cluster();
  j["schema"] = "gaccum-tune/profile";
  CHECK_THAT(error_of(load, j), Catch::Contains("schema"));
  CHECK_THAT(error_of(load, json::array()), Catch::Contains("object"));
  // A single node needs no inter-node link.
  j = good_cluster();
  j.erase("inter_node");
  j["nodes"] = 1;
  CHECK(load(j, "ok").max_world_size() == 4);
}

TEST_CASE("cluster files: unreadable and malformed files are InputErrors", "[model][cluster]") {
  CHECK_THROWS_AS(load_cluster("/nonexistent/cluster.json"), InputError);
  auto path = std::filesystem::temp_directory_path() / "gaccum-model-bad-cluster.json";
  { std::ofstream(path) << "{\"name\": "; }
  CHECK_THROWS_WITH(load_cluster(path.string()), Catch::Contains("not valid JSON"));
  std::filesystem::remove(path);
}

TEST_CASE("shipped spec examples load", "[model][spec]") {
  auto g2 = load_spec(kSource + "/examples/specs/gpt2-small.json");
  CHECK(g2.layers == 12);
  CHECK(g2.optimizer == Optimizer::adamw);
  CHECK(transformer_params(g2.shape()) == 124439808);
  auto big = load_spec(kSource + "/examples/specs/gpt-1.3b.json");
  CHECK(big.activation_checkpointing == Checkpointing::selective);
  // ~1.3B parameters.
  CHECK(transformer_params(big.shape()) > 1300000000);
  CHECK(transformer_params(big.shape()) < 1400000000);
}

TEST_CASE("spec loader: defaults and errors naming the field", "[model][spec]") {
  auto load = [](const json& j, const std::string& w) { return spec_from_json(j, w); };
  auto s = load(good_spec(), "ok");
  CHECK(s.dtype == Precision::bf16);
  CHECK(s.optimizer == Optimizer::adam);
  CHECK(s.activation_checkpointing == Checkpointing::none);
  CHECK(s.mean_tokens_per_sample == 32);
  json j = good_spec();
  j["activation_checkpointing"] = true;
  CHECK(load(j, "ok").activation_checkpointing == Checkpointing::full);
  j = good_spec();
  j["heads"] = 5;
  CHECK_THAT(error_of(load, j), Catch::Contains("heads"));
  j = good_spec();
  j["dtype"] = "int8";
  CHECK_THAT(error_of(load, j), Catch::Contains("dtype"));
  j = good_spec();
  j["optimizer"] = "lamb";
  CHECK_THAT(error_of(load, j), Catch::Contains("optimizer"));
  j = good_spec();
  j["layers"] = 0;
  CHECK_THAT(error_of(load, j), Catch::Contains("layers"));
  j = good_spec();
  j["hidden"] = 2.5;
  CHECK_THAT(error_of(load, j), Catch::Contains("hidden"));
  j = good_spec();
  j.erase("vocab");
  CHECK_THAT(error_of(load, j), Catch::Contains("'vocab'"));
  j = good_spec();
  j["activation_checkpointing"] = "sometimes";
  CHECK_THAT(error_of(load, j), Catch::Contains("activation_checkpointing"));
  j = good_spec();
  j["layer"] = 3;
  CHECK_THAT(error_of(load, j), Catch::Contains("'layer'"));
  j = good_spec();
  j["mean_tokens_per_sample"] = 64;
  CHECK_THAT(error_of(load, j), Catch::Contains("mean_tokens_per_sample"));
  j = good_spec();
  j["schema"] = "gaccum-tune/cluster";
  CHECK_THAT(error_of(load, j), Catch::Contains("schema"));
}
