// What/why: see prediction_json.hpp.
#include "model/prediction_json.hpp"

#include <string>

namespace gaccum::model {

std::string link_sources_text(LinkSource intra, LinkSource inter) {
  if (intra == LinkSource::none && inter == LinkSource::none) return "none";
  if (inter == LinkSource::none) return std::string("intra ") + to_string(intra);
  if (intra == LinkSource::none) return std::string("inter ") + to_string(inter);
  return std::string("intra ") + to_string(intra) + ", inter " + to_string(inter);
}

namespace {

template <class J>
void add_plan(J& j, const Config& c) {
  j["sharding"] = to_string(c.sharding);
  j["precision"] = c.precision ? J(std::string(to_string(*c.precision))) : J(nullptr);
  j["checkpointing"] = c.checkpointing ? J(std::string(to_string(*c.checkpointing))) : J(nullptr);
  // A tensor/pipeline/context-parallel layout only (data-parallel plans keep their schema).
  const ParallelLayout& l = c.layout;
  if (!l.data_parallel_only()) {
    j["tp"] = l.tp;
    j["pp"] = l.pp;
    j["cp"] = l.cp;
    j["dp"] = c.data_parallel();
    j["virtual_stages"] = l.virtual_stages;
    j["schedule"] = l.pp > 1 ? J(std::string(to_string(l.schedule))) : J(nullptr);
    j["sequence_parallel"] = l.sequence_parallel;
  }
}

nlohmann::json memory_json(const MemoryBreakdown& m) {
  nlohmann::json j{{"weights", m.weights},
                   {"gradients", m.gradients},
                   {"optimizer_state", m.optimizer_state},
                   {"gathered", m.gathered},
                   {"comm_buffers", m.comm_buffers},
                   {"activations", m.activations},
                   {"peak", m.peak}};
  if (m.allocator_reserve > 0) j["allocator_reserve"] = m.allocator_reserve;
  if (m.optimizer_step > 0) j["optimizer_step"] = m.optimizer_step;
  if (!m.peak_phase.empty()) j["peak_phase"] = m.peak_phase;
  return j;
}

// The frameworks that run the plan (core/framework.hpp), by name.
nlohmann::json frameworks_json(const Prediction& p) {
  nlohmann::json a = nlohmann::json::array();
  for (Framework f : frameworks_running(framework_plan(p))) a.push_back(std::string(to_string(f)));
  return a;
}

}  // namespace

nlohmann::ordered_json to_ordered_json(const Config& c) {
  nlohmann::ordered_json j{{"micro_batch", c.micro_batch},
                           {"accum_steps", c.accum_steps},
                           {"world_size", c.world_size},
                           {"global_batch", c.global_batch()},
                           {"strategy", std::string(to_string(c.strategy))}};
  add_plan(j, c);
  return j;
}

nlohmann::json to_json(const Config& c) {
  nlohmann::json j{{"micro_batch", c.micro_batch},
                   {"accum_steps", c.accum_steps},
                   {"world_size", c.world_size},
                   {"strategy", std::string(to_string(c.strategy))},
                   {"global_batch", c.global_batch()}};
  add_plan(j, c);
  return j;
}

nlohmann::json to_json(const Prediction& p) {
  const auto& t = p.time;
  const auto& m = p.memory;
  nlohmann::json j = {{"config", to_json(p.config)},
          {"step_time", t.step_time},
          {"step_time_lo", p.step_time_lo},
          {"step_time_hi", p.step_time_hi},
          {"time",
           {{"compute", t.compute},
            {"comm_total", t.comm_total},
            {"comm_exposed", t.comm_exposed},
            {"optimizer", t.optimizer},
            {"step_time", t.step_time}}},
          {"throughput", p.throughput},
          {"tokens_per_s", p.tokens_per_s},
          {"tokens_per_s_per_gpu", p.config.world_size > 0 ? p.tokens_per_s / double(p.config.world_size) : 0.0},
          {"memory",
           {{"weights", m.weights},
            {"gradients", m.gradients},
            {"optimizer_state", m.optimizer_state},
            {"gathered", m.gathered},
            {"comm_buffers", m.comm_buffers},
            {"activations", m.activations},
            {"peak", m.peak}}},
          {"peak_memory", m.peak},
          {"collectives_per_step", p.collectives_per_step},
          {"gradient_syncs", p.gradient_syncs},
          {"comm_source", to_string(p.comm_source)},
          {"comm_links", {{"intra_node", to_string(p.intra_link)}, {"inter_node", to_string(p.inter_link)}}},
          {"overlap_efficiency", p.overlap_efficiency},
          {"extrapolated", p.extrapolated},
          {"micro_batch_extrapolated", p.micro_batch_extrapolated},
          {"world_size_extrapolated", p.world_size_extrapolated},
          {"frameworks", frameworks_json(p)},
          {"confirmed", p.unconfirmed.empty()},
          {"unconfirmed", p.unconfirmed}};
  if (!m.peak_phase.empty()) j["memory"]["peak_phase"] = m.peak_phase;
  if (p.compute.gpu_model) {
    const auto& c = p.compute;
    j["compute_model"] = {{"kind", "gpu"},
                          {"gemm_efficiency", c.gemm_efficiency},
                          {"mfu", c.mfu},
                          {"model_tflops_per_gpu", c.model_flops_per_s / 1e12},
                          {"flops_per_micro_step", c.flops_per_micro_step},
                          {"micro_step", {{"gemm", c.gemm},
                                          {"attention", c.attention},
                                          {"memory_bound", c.memory_bound},
                                          {"overhead", c.overhead}}}};
    if (m.allocator_reserve > 0) j["memory"]["allocator_reserve"] = m.allocator_reserve;
  }
  if (!p.config.layout.data_parallel_only()) {
    const ParallelDetail& d = p.parallel;
    j["tp"] = p.config.layout.tp;
    j["pp"] = p.config.layout.pp;
    j["cp"] = p.config.layout.cp;
    j["virtual_stages"] = p.config.layout.virtual_stages;
    j["schedule"] = p.config.layout.pp > 1 ? nlohmann::json(std::string(to_string(p.config.layout.schedule)))
                                           : nlohmann::json(nullptr);
    j["bubble_fraction"] = d.bubble_fraction;
    j["peak_stage"] = d.peak_stage;
    j["time"]["bubble"] = t.bubble;
    j["pipeline"] = {{"makespan", d.pipeline}, {"tp_comm", d.tp_comm}, {"cp_comm", d.cp_comm},
                     {"p2p_per_send", d.p2p},  {"dp_comm_exposed", d.dp_comm}};
    nlohmann::json st = nlohmann::json::array();
    for (const auto& s : d.stages)
      st.push_back({{"rank", s.rank},
                    {"layers", s.layers},
                    {"embedding", s.embedding},
                    {"head", s.head},
                    {"busy", s.busy},
                    {"idle", s.idle},
                    {"in_flight", s.in_flight},
                    {"memory", memory_json(s.memory)}});
    j["stages"] = st;
  }
  return j;
}

nlohmann::json to_json(const PlanSupport& p) {
  nlohmann::json pr = nlohmann::json::array(), ap = nlohmann::json::array(), ck = nlohmann::json::array(),
                 ac = nlohmann::json::array(), sh = nlohmann::json::array();
  for (auto x : p.precisions) pr.push_back(std::string(to_string(x)));
  for (auto x : p.auto_precisions) ap.push_back(std::string(to_string(x)));
  for (auto x : p.checkpointings) ck.push_back(std::string(to_string(x)));
  for (auto x : p.auto_checkpointings) ac.push_back(std::string(to_string(x)));
  for (const auto& x : p.auto_shardings) sh.push_back(to_string(x));
  return {{"precisions", pr},           {"auto_precisions", ap}, {"checkpointings", ck},
          {"auto_checkpointings", ac},  {"auto_shardings", sh},  {"gpus_per_node", p.gpus_per_node},
          {"limits", p.limits},         {"sharded_comm", p.sharded_comm}};
}

nlohmann::json to_json(const ModelInfo& i, bool with_fit) {
  nlohmann::json j = {{"source", i.source},
                      {"workload", i.workload_name},
                      {"workload_hash", i.workload_hash},
                      {"device_kind", i.device_kind},
                      {"device_name", i.device_name},
                      {"device_memory", i.device_memory},
                      {"max_world_size", i.max_world_size},
                      {"measured_max_micro_batch", i.measured_max_micro_batch},
                      {"max_micro_batch_fitting", i.max_micro_batch_fitting},
                      {"threads_per_rank", i.threads_per_rank},
                      {"tokens_per_sample", i.tokens_per_sample},
                      {"noise_scale", i.noise_scale ? nlohmann::json(*i.noise_scale) : nlohmann::json(nullptr)},
                      {"plans", to_json(i.plans)},
                      {"notes", i.notes}};
  if (with_fit) j["fit"] = i.fit;
  return j;
}

}  // namespace gaccum::model
