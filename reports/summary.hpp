// What: the human sentences every report shares: the headline (what was searched) and the
//       one-paragraph recommendation (the pick, its numbers, why, what it would cost to do
//       otherwise, the learning rate and the critical-batch verdict).
// Why: the terminal, Markdown, JSON and HTML reports say the same thing in the same words.
#pragma once

#include <string>

#include "reports/report_context.hpp"
#include "tuner/tuner.hpp"

namespace gaccum::reports {

// "gpt-tiny on cpu (Intel ...): global_batch 512, world_size 1..2, memory limit 1.08 GiB (cap
//  1.20 GiB minus 10% margin), accum_steps <= 64, objective throughput; 60 configs evaluated,
//  24 feasible."
std::string headline(const tuner::TuneResult& result);
std::string recommendation(const tuner::TuneResult& result);
// The units LLM users read: "640065 tokens/s, 10001 tokens/s/GPU, 405 TFLOP/s/GPU, MFU 41%" (the
// FLOP figures with the GPU compute model only); "" for a model without tokens.
std::string llm_units_text(const model::Prediction& p);
// "world_size 1, 2, 4, 8" or "world_size 1..8" for a contiguous list.
std::string world_sizes_text(const std::vector<Count>& ps);
std::string objective_value_text(const tuner::TuneResult& result, const tuner::Candidate& c);

// True when the search covered more than DDP in the model's own precision without
// checkpointing: the printers then show the plan beside each config.
bool plans_searched(const tuner::TuneResult& r);
// "zero3 bf16 full" / "none fp32 none": sharding, precision, checkpointing.
std::string plan_cell(const model::Config& c);

// "DeepSpeed config completed with the pick: <path> (train_batch_size 512 = ... x world_size 2;
//  launch on 2 ranks)"; "" when ctx.deepspeed_config is empty.
std::string deepspeed_config_line(const tuner::TuneResult& r, const ReportContext& ctx);

}  // namespace gaccum::reports
