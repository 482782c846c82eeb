// What: the whole tune result as one schema-versioned JSON document:
//   {"schema": "gaccum-tune/tune-result", "schema_version": 1, "tool_version", "generated_utc",
//    "command", "source" (profile/spec identity), "inputs" (the request and resolved limits),
//    "model" (ModelInfo: workload, device, ranges, noise scale, notes, fit), "columns" (name +
//    description), "predictions" (one object per evaluated config, keys = column names),
//    "picks" (top N with binding constraint, breakdown, headroom, runner-up, every-step price),
//    "recommendation", "headline", "lr", "critical_batch", "pareto", "memory_curve", "notes"}
// Why: the machine-readable record of a run (check and report read it later); keys keep
//      insertion order; reals are rounded to 10 significant digits so output is stable.
// Contract: add keys freely; renaming or re-purposing one needs a schema_version bump.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "reports/report_context.hpp"
#include "tuner/tuner.hpp"

namespace gaccum::reports {

inline constexpr const char* kTuneResultSchema = "gaccum-tune/tune-result";
inline constexpr int kTuneResultSchemaVersion = 3;  // 2: plans (sharding, precision, checkpointing); 3: layouts (tp, pp, cp, schedule)

nlohmann::ordered_json to_json(const tuner::TuneResult& result, const ReportContext& ctx);
std::string print_json(const tuner::TuneResult& result, const ReportContext& ctx);  // indented, ends with '\n'

// v rounded to 10 significant digits (finite), so printed JSON does not depend on last-bit noise.
double round_sig(double v);

}  // namespace gaccum::reports
