// What: all checks of one job as a verdict, printed as a terminal table or as one JSON object:
//   {"schema": "gaccum-tune/check", "schema_version": 2 (2: the plan: sharding, precision, checkpointing), "tool_version", "verdict": "pass" |
//    "warn" | "fail", "exit_code", "strict", "summary": {pass, warn, fail, skip},
//    "job": {micro_batch, accum_steps, world_size, global_batch, strategy},
//    "inputs": {name: {value, source}}, "model": {source, workload, device, ...} | null,
//    "prediction": model/prediction_json.hpp form | null,
//    "checks": [{number, id, title, status, reason, fix, data}], "warnings": [...],
//    "rank": {rank, world_size, launcher} | null,
//    "link_probe": {cluster, tolerance, nodes, ranks_per_node, drifted: [level], points: [{level,
//                   ranks, bytes, measured_s, predicted_s, ratio, drifted}]}  (only with --probe-links)}
//   No timestamps or host names: the same inputs print the same bytes (golden-tested).
// Exit code: 1 when a check FAILs (or WARNs with --strict), else 0; a link probe that drifted from
//   the cluster description makes the verdict "warn" (so --strict fails it); bad input never gets here
//   (InputError, exit 2, in cli/).
// Why: CI reads the exit code and the JSON, people read the table; both come from one value.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "check/check_inputs.hpp"
#include "check/checks.hpp"
#include "model/cluster_fit.hpp"
#include "model/cost_model.hpp"

namespace gaccum::check {

inline constexpr const char* kCheckSchema = "gaccum-tune/check";
inline constexpr int kCheckSchemaVersion = 2;

struct VerdictContext {
  std::string tool_version;
  nlohmann::ordered_json model_source = nullptr;  // {kind, path, ...}: where the cost model came from
  std::vector<std::string> warnings;             // unknown keys, "auto" fields, notes
  nlohmann::ordered_json rank = nullptr;          // {rank, world_size, launcher} with --distributed
  std::optional<model::LinkDrift> link_probe;     // --probe-links: the job's allreduce vs the cluster
  bool strict = false;
};

struct Verdict {
  ResolvedJob job;
  std::vector<CheckResult> checks;  // numbers 1..8 in order
  std::optional<model::ModelInfo> model_info;
  std::optional<model::Prediction> prediction;
  VerdictContext ctx;

  int count(Status s) const;
  Status overall() const;  // fail > warn (or a drifted link probe) > pass (skips do not count)
  int exit_code() const;   // 1 on fail, or on warn with strict; else 0
};

// Runs checks 1, 2, 4-8 and places `rank_agreement` (check 3) between them. `model` may be null
// (model checks SKIP).
Verdict run_checks(const ResolvedJob& job, const model::CostModel* model, CheckResult rank_agreement,
                   VerdictContext ctx);

nlohmann::ordered_json to_json(const Verdict& v);
std::string print_json(const Verdict& v);
// The verdict of a check that could not run (bad input: exit 2): {"schema", "schema_version",
// "tool_version", "verdict": "error", "exit_code": 2, "error": message}, so `--json` consumers
// always get an object.
std::string print_error_json(const std::string& error, int exit_code, const std::string& tool_version);    // indented, ends with '\n'
std::string print_table(const Verdict& v);   // the terminal form, ends with '\n'

}  // namespace gaccum::check
