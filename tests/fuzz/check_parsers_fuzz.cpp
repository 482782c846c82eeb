// What: libFuzzer target for the parsers `gaccum-tune check` reads untrusted files with: every
//       input is read as a JSON job, a YAML job, a DeepSpeed config (then DeepSpeed's batch rule
//       at three world sizes and the merge/resolution of the inputs), a profile.json (then the
//       profile cost model and a prediction), a transformer spec and a cluster (then the spec
//       model and a prediction), a TorchScript input/target text and a rank-settings line. InputError (bad input, exit 2) is the expected outcome of most
//       inputs; anything else escaping (another exception, a crash, an ASan/UBSan report) fails.
// Why: the gate runs in CI on files from pull requests; no byte sequence may crash it.
// Built with clang++ -fsanitize=fuzzer,address,undefined from the torch-free sources only
// (tests/fuzz/CMakeLists.txt), run by CTest with a bounded -runs (tests/check.cmake).
#include <cstddef>
#include <cstdint>
#include <string>

#include "check/check_inputs.hpp"
#include "check/deepspeed_config.hpp"
#include "check/job.hpp"
#include "check/rank_agreement.hpp"
#include "check/structured_text.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/model_inputs.hpp"
#include "core/profile.hpp"
#include "model/cluster.hpp"
#include "model/profile_model.hpp"
#include "model/spec_model.hpp"

using namespace gaccum;
using namespace gaccum::check;

namespace {

template <class F>
void expect_input_errors_only(F&& f) {
  try {
    f();
  } catch (const InputError&) {
    // bad input: a one-line error and exit 2 in the CLI
  }
}

void job_path(const std::string& text, TextFormat format) {
  const auto doc = parse_structured_text(text, format, "fuzz-job");
  const JobFile job = job_from_json(doc, "fuzz-job", "base");
  CheckInputs merged = default_inputs();
  overlay(merged, inputs_from_job(job));
  const ResolvedJob r = resolve(merged);
  (void)inputs_json(r.inputs).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);  // as print_json
  (void)encode(rank_settings(r, 0, config_hash(r, job.hash)));
}

void deepspeed_path(const std::string& text) {
  const DeepSpeedConfig ds = deepspeed_from_json(parse_structured_text(text, TextFormat::json, "fuzz-ds"), "fuzz-ds");
  (void)implied_world_size(ds);
  for (Count p : {Count(1), Count(3), Count(8)}) {
    expect_input_errors_only([&] {
      const DeepSpeedBatch b = derive_deepspeed_batch(ds, p, "fuzz");
      CheckInputs merged = default_inputs();
      overlay(merged, inputs_from_deepspeed(ds, b));
      CheckInputs world;
      world.world_size.set(p, "fuzz");
      overlay(merged, world);
      (void)resolve(merged);
    });
  }
}

// A valid cluster for the spec path (examples/clusters/h100-8node-ib400.json without its notes).
const model::Cluster& fixed_cluster() {
  static const model::Cluster c = model::cluster_from_json(
      nlohmann::json::parse(R"({"schema": "gaccum-tune/cluster", "name": "fuzz", "nodes": 8, "gpus_per_node": 8,
        "device": {"name": "H100", "memory": "81559MiB", "peak_tflops": 989.4, "peak_tflops_fp32": 494.7,
                   "memory_bandwidth_GBps": 3350, "cost_per_hour_usd": 12.29},
        "intra_node": {"bandwidth_GBps": 370, "latency_us": 1.0},
        "inter_node": {"bandwidth_GBps": 46, "latency_us": 5.0}})"),
      "fuzz-cluster");
  return c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  expect_input_errors_only([&] { job_path(text, TextFormat::json); });
  expect_input_errors_only([&] { job_path(text, TextFormat::yaml); });
  expect_input_errors_only([&] { deepspeed_path(text); });
  expect_input_errors_only([&] {
    const Profile prof = profile_from_json(parse_json_text(text, "fuzz-profile"), "fuzz-profile");
    (void)model::make_profile_model(prof)->predict(model::Config(2, 4, 1, Strategy::overlap));
  });
  expect_input_errors_only([&] {
    const auto spec = model::spec_from_json(parse_json_text(text, "fuzz-spec"), "fuzz-spec");
    (void)model::make_spec_model(spec, fixed_cluster(), 0.4)->predict(model::Config(1, 8, 2, Strategy::overlap));
  });
  expect_input_errors_only([&] { (void)model::cluster_from_json(parse_json_text(text, "fuzz-cluster"), "fuzz-cluster"); });
  expect_input_errors_only([&] { (void)parse_model_input(text, "--input"); });
  expect_input_errors_only([&] { (void)parse_model_target(text, "--target"); });
  (void)decode_rank_settings(text, 0);
  return 0;
}
