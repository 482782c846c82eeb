// What/why: see run_record.hpp (RankRecord: what each rank sends rank 0 after the last window).
#include "runner/record_reader.hpp"
#include "runner/run_record.hpp"

namespace gaccum::runner {

using nlohmann::json;
using record::Reader;

namespace {

RankSteps rank_steps_from(const Reader& r) {
  RankSteps s;
  s.step_time = r.get<std::vector<double>>("step_time");
  s.compute = r.get<std::vector<double>>("compute");
  s.arrival = r.get<std::vector<double>>("arrival");
  s.exposed = r.get<std::vector<double>>("exposed");
  s.comm_total = r.get<std::vector<double>>("comm_total");
  s.optimizer = r.get<std::vector<double>>("optimizer");
  s.instrumentation = r.get<std::vector<double>>("instrumentation");
  s.collectives = r.get<std::vector<Count>>("collectives");
  s.launched_in_backward = r.get<std::vector<Count>>("launched_in_backward");
  s.collectives_per_micro = r.get<std::vector<std::vector<Count>>>("collectives_per_micro");
  s.nonzero_at_start = r.get<std::vector<Count>>("nonzero_at_start");
  s.local_terms = r.get<std::vector<Count>>("local_terms");
  s.local_samples = r.get<std::vector<Count>>("local_samples");
  s.global_terms = r.get<std::vector<Count>>("global_terms");
  s.g_small_sq = r.get<std::vector<double>>("g_small_sq");
  s.g_big_sq = r.get<std::vector<double>>("g_big_sq");
  s.loss_sum = r.get<std::vector<double>>("loss_sum");
  return s;
}

}  // namespace

json to_json(const RankRecord& r) {
  const auto& s = r.steps;
  json steps{{"step_time", s.step_time},
             {"compute", s.compute},
             {"arrival", s.arrival},
             {"exposed", s.exposed},
             {"comm_total", s.comm_total},
             {"optimizer", s.optimizer},
             {"instrumentation", s.instrumentation},
             {"collectives", s.collectives},
             {"launched_in_backward", s.launched_in_backward},
             {"collectives_per_micro", s.collectives_per_micro},
             {"nonzero_at_start", s.nonzero_at_start},
             {"local_terms", s.local_terms},
             {"local_samples", s.local_samples},
             {"global_terms", s.global_terms},
             {"g_small_sq", s.g_small_sq},
             {"g_big_sq", s.g_big_sq},
             {"loss_sum", s.loss_sum}};
  return json{{"rank", r.rank},
              {"local_rank", r.local_rank},
              {"host", r.host},
              {"pid", r.pid},
              {"threads", r.threads},
              {"interop_threads", r.interop_threads},
              {"cores", r.cores},
              {"collective_wait", std::string(to_string(r.collective_wait))},
              {"peak_memory", r.peak_memory},
              {"memory_at_reset", r.memory_at_reset},
              {"comm_buffer_bytes", r.comm_buffer_bytes},
              {"grads_hash_step0", r.grads_hash_step0},
              {"params_hash_final", r.params_hash_final},
              {"steps", steps}};
}

RankRecord rank_record_from_json(const json& j, const std::string& what) {
  const Reader r{j, what};
  RankRecord x;
  x.rank = r.get<int>("rank");
  x.local_rank = r.get<int>("local_rank");
  x.host = r.get<std::string>("host");
  x.pid = r.get<long>("pid");
  x.threads = r.get<int>("threads");
  x.interop_threads = r.get<int>("interop_threads");
  x.cores = r.get<int>("cores");
  x.collective_wait =
      parse_collective_wait(r.get_or<std::string>("collective_wait", "block"), what + ".collective_wait");
  x.peak_memory = r.get<Bytes>("peak_memory");
  x.memory_at_reset = r.get<Bytes>("memory_at_reset");
  x.comm_buffer_bytes = r.get<Bytes>("comm_buffer_bytes");
  x.grads_hash_step0 = r.get<std::string>("grads_hash_step0");
  x.params_hash_final = r.get<std::string>("params_hash_final");
  x.steps = rank_steps_from(r.child("steps"));
  return x;
}

}  // namespace gaccum::runner
