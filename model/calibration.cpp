// What/why: see calibration.hpp.
#include "model/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/framework.hpp"
#include "core/json_fields.hpp"
#include "core/parse.hpp"
#include "model/hf_config.hpp"

namespace gaccum::model {

namespace {

// The links a run's cluster gets when its file does not describe them (see calibration.hpp).
void default_links(Cluster& c, GpuGeneration g) {
  const bool ampere = g == GpuGeneration::ampere;
  c.intra_node = {5e-6, (ampere ? 230.0 : 370.0) * 1e9};
  c.inter_node = {10e-6, (ampere ? 23.0 : 46.0) * 1e9};
  c.intra_source.from = ampere ? "A100 NVLink 3 ring busbw, typical nccl-tests" : "H100 NVLink 4 ring busbw, typical nccl-tests";
  c.inter_source.from = ampere ? "1600 Gb/s RoCE per node of 8 (llm-foundry's A100 sections)"
                               : "one 400 Gb/s NIC per GPU (assumed: llm-foundry's H100 sections do not say)";
}

Cluster run_cluster(const GpuDevice& d, Count gpus, Count per_node, const std::string& id) {
  Cluster c;
  c.name = id;
  c.device_name = d.name;
  c.gpu_id = d.id;
  c.gpu_named = true;
  c.device_memory = d.memory;
  c.device_peak_flops = d.bf16_flops;
  c.device_peak_flops_fp32 = d.tf32_flops;
  c.device_memory_bandwidth = d.hbm_bandwidth;
  c.gpus_per_node = std::min(per_node, gpus);
  c.nodes = (gpus + c.gpus_per_node - 1) / c.gpus_per_node;
  default_links(c, d.generation);
  return c;
}

// Marks a run not priced when the default plan is refused (e.g. a world size the cluster lacks).
void try_price(CalibrationRun& r) {
  if (!r.not_priced.empty()) return;
  try {
    (void)predict_run(r, shipped_calibration(r.generation).efficiency);
  } catch (const InputError& e) {
    r.not_priced = e.what();
  }
}

CalibrationRun foundry_row(const nlohmann::json& row, const std::string& what, const std::string& path) {
  JsonFields f(row, what);
  CalibrationRun r;
  r.file = path;
  r.id = f.str("id");
  JsonFields m(f.object("model"), f.child("model"));
  JsonFields hw(f.object("hardware"), f.child("hardware"));
  JsonFields plan(f.object("plan"), f.child("plan"));
  JsonFields meas(f.object("measured"), f.child("measured"));
  r.model = m.str("name");
  TransformerSpec& s = r.spec;
  s.name = r.model;
  s.layers = m.positive("n_layers");
  s.hidden = m.positive("d_model");
  s.heads = m.positive("n_heads");
  s.seq_len = m.positive("seq_len");
  s.vocab = m.positive("vocab_size");
  s.ffn_hidden = m.positive("expansion_ratio") * s.hidden;
  // MPT (llm-foundry README, and bench/data/published/README.md): plain GELU MLP, tied
  // embeddings, learned positions, biases and LayerNorm, FlashAttention/Triton attention, no
  // dropout, flash-attn's fused cross-entropy (llm-foundry's default loss_fn).
  s.tied_embeddings = true;
  s.learned_positions = true;
  s.bias = true;
  s.dropout = false;
  s.flash_attention = true;
  s.loss = LossKind::fused;
  s.optimizer = Optimizer::adamw;
  s.mean_tokens_per_sample = double(s.seq_len);
  const std::string prec = plan.str("precision");
  s.dtype = prec.find("fp8") != std::string::npos ? Precision::fp8 : Precision::bf16;
  s.activation_checkpointing = plan.boolean("activation_checkpointing") ? Checkpointing::full : Checkpointing::none;
  const std::string gpu = hw.str("gpu");
  const GpuDevice* d = find_gpu(gpu);
  const Count gpus = hw.positive("num_gpus");
  r.config.micro_batch = plan.positive("micro_batch");
  r.config.accum_steps = plan.positive("grad_accum");
  r.config.world_size = gpus;
  r.config.strategy = Strategy::every_step;  // Composer's FSDP reduce-scatters every micro-batch
  std::string sh = plan.str("sharding");  // llm-foundry writes FSDP names in upper case
  std::transform(sh.begin(), sh.end(), sh.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  r.config.sharding = parse_sharding(sh, f.child("plan.sharding"));
  r.config.precision = s.dtype;
  r.config.checkpointing = s.activation_checkpointing;
  const double tokens = meas.num("tokens_per_s");
  r.published = tokens / double(gpus);
  // Rows in one group differ only in micro_batch and accum_steps (so in the global batch too).
  r.group = fmt::format("{} {} s{} n{} {} {} ac{}", gpu, r.model, s.seq_len, gpus, sh, prec,
                        s.activation_checkpointing == Checkpointing::full ? 1 : 0);
  plan.positive("global_batch");  // read (and checked) for the record; tokens/s do not depend on it
  if (!d) {
    r.not_priced = fmt::format("GPU '{}' is not in the catalogue", gpu);
    return r;
  }
  r.gpu_id = d->id;
  r.generation = d->generation;
  r.cluster = run_cluster(*d, gpus, 8, r.id);
  if (plan.positive("global_batch") != r.config.global_batch())
    r.not_priced = fmt::format("global_batch {} is not micro_batch x grad_accum x num_gpus = {}",
                               plan.positive("global_batch"), r.config.global_batch());
  return r;
}

// Rows with a "parallelism" object (Megatron-LM's Table 1: GPT on A100 with tp, pp and dp).
// Priced, never fitted (held_out): the fit learns kernels from data-parallel rows, and these
// test what it predicts for tensor/pipeline plans. The table gives no micro_batch and no
// virtual stage count, so predict_run searches them (choose_layout).
CalibrationRun parallel_row(const nlohmann::json& row, const std::string& what, const std::string& path) {
  CalibrationRun r;
  r.file = path;
  r.id = row.value("id", what);
  r.held_out = true;
  JsonFields f(row, what);
  JsonFields par(f.object("parallelism"), f.child("parallelism"));
  JsonFields m(f.object("model"), f.child("model"));
  JsonFields hw(f.object("hardware"), f.child("hardware"));
  JsonFields meas(f.object("measured"), f.child("measured"));
  r.model = m.str("name");
  if (!par.opt_positive("micro_batch") && !par.has("global_batch_seqs")) {
    r.not_priced = "neither micro_batch nor global_batch_seqs published";
    return r;
  }
  TransformerSpec& s = r.spec;
  s.name = r.model;
  s.layers = m.positive("layers");
  s.hidden = m.positive("hidden");
  s.heads = m.positive("heads");
  s.kv_heads = m.opt_positive("kv_heads").value_or(0);
  s.seq_len = m.positive("seq_len");
  s.vocab = m.positive("vocab");
  s.ffn_hidden = m.opt_positive("ffn_hidden").value_or(4 * s.hidden);
  // Megatron-LM's GPT of 2021: LayerNorm and biases, learned positions, tied embeddings, dropout
  // 0.1, standard (not Flash) attention, Adam; mixed precision fp16 or bf16.
  s.tied_embeddings = true;
  s.learned_positions = true;
  s.bias = true;
  s.dropout = true;
  s.flash_attention = false;
  s.loss = LossKind::vocab_parallel;  // its own cross-entropy over the tp-split vocabulary
  s.grad_dtype = GradDtype::fp32_for_bf16;  // its fp32 main_grad buffers under bf16
  s.grad_source = "Megatron-LM";
  s.contiguous_grad_buffer = true;
  s.optimizer = Optimizer::adam;
  s.mean_tokens_per_sample = double(s.seq_len);
  const std::string prec = f.opt_str("precision").value_or("bf16");
  s.dtype = prec.find("fp16") != std::string::npos ? Precision::fp16 : Precision::bf16;
  const std::string ac = f.opt_str("activation_checkpointing").value_or("none");
  s.activation_checkpointing = ac.find("full") != std::string::npos        ? Checkpointing::full
                               : ac.find("selective") != std::string::npos ? Checkpointing::selective
                                                                           : Checkpointing::none;
  const Count gpus = hw.positive("num_gpus");
  const Count per_node = hw.opt_positive("gpus_per_node").value_or(8);
  ParallelLayout& l = r.config.layout;
  l.tp = par.opt_positive("tp").value_or(1);
  l.pp = par.opt_positive("pp").value_or(1);
  l.cp = par.opt_positive("cp").value_or(1);
  l.sequence_parallel = par.has("sequence_parallel") && par.any("sequence_parallel").is_boolean() &&
                        par.any("sequence_parallel").get<bool>();
  r.config.world_size = gpus;
  r.config.strategy = Strategy::fused;  // Megatron-LM 2021 reduces gradients after the last microbatch
  r.config.precision = s.dtype;
  r.config.checkpointing = s.activation_checkpointing;
  const Count dp = gpus / std::max<Count>(1, l.model_parallel());
  const Count batch = par.opt_positive("global_batch_seqs").value_or(0);
  if (auto b = par.opt_positive("micro_batch")) {
    r.config.micro_batch = *b;
    r.config.accum_steps = batch > 0 ? batch / (*b * dp) : par.opt_positive("grad_accum_or_num_microbatches").value_or(1);
  } else {
    r.choose_layout = true;  // micro_batch (and v with a pipeline) searched by predict_run
    r.config.micro_batch = 1;
    r.config.accum_steps = batch / dp;
  }
  if (l.pp > 1) l.schedule = Schedule::one_f_one_b;
  r.interleaved = l.pp > 1 && par.has("vpp") && !par.any("vpp").is_null();
  r.published = meas.num("tokens_per_s_per_gpu");
  r.group = fmt::format("{} {} n{} tp{} pp{}", hw.str("gpu"), r.model, gpus, l.tp, l.pp);
  std::string gpu_name = hw.str("gpu");  // "A100 SXM4 80GB (Selene, DGX A100)": the part before " ("
  if (const auto paren = gpu_name.find(" ("); paren != std::string::npos) gpu_name.resize(paren);
  const GpuDevice* d = find_gpu(gpu_name);
  if (!d) {
    r.not_priced = fmt::format("GPU '{}' is not in the catalogue", hw.str("gpu"));
    return r;
  }
  if (gpus % l.model_parallel() != 0 || (batch > 0 && batch % dp != 0)) {
    r.not_priced = fmt::format("{} GPUs, tp {} x pp {} and global batch {} do not make whole data-parallel replicas",
                               gpus, l.tp, l.pp, batch);
    return r;
  }
  r.gpu_id = d->id;
  r.generation = d->generation;
  r.cluster = run_cluster(*d, gpus, per_node, r.id);
  return r;
}

// A run's model: a gaccum-tune spec or a HuggingFace config.json, inline or as a path (relative
// to the runs file's folder); a config.json needs the run's seq_len (its max_position_embeddings
// is what the model can take, not what the run trained at).
TransformerSpec run_model(JsonFields& f, const std::string& runs_path) {
  const std::optional<Count> seq = f.opt_positive("seq_len");
  const nlohmann::json& m = f.any("model");
  std::string what = f.child("model");
  nlohmann::json loaded;
  std::string stem;
  if (m.is_string()) {
    std::filesystem::path file = m.get<std::string>();
    if (file.empty())
      throw InputError(fmt::format("{}: an empty path: give a spec or config.json file, or the object inline", what));
    if (file.is_relative()) file = std::filesystem::path(runs_path).parent_path() / file;
    loaded = parse_json_text(read_text_file(file, what), file.string());
    what = fmt::format("{} ({})", what, file.string());
    stem = file.stem().string();
  } else if (!m.is_object()) {
    throw InputError(fmt::format("{}: expected a gaccum-tune spec object, a HuggingFace config.json object, or a "
                                 "path to either",
                                 what));
  }
  const nlohmann::json& j = m.is_string() ? loaded : m;
  if (is_hf_config(j)) {
    if (!seq)
      throw InputError(fmt::format("{}: a HuggingFace config.json needs the run's sequence length: add \"seq_len\": N "
                                   "to the run",
                                   f.child("seq_len")));
    return spec_from_hf_config(j, what, *seq, stem);
  }
  if (seq)
    throw InputError(fmt::format("{}: applies to a HuggingFace config.json; a gaccum-tune spec sets its own seq_len "
                                 "(remove it here)",
                                 f.child("seq_len")));
  return spec_from_json(j, what);
}

CalibrationRun own_run(const nlohmann::json& row, const std::string& what, const std::string& path) {
  JsonFields f(row, what);
  static const std::set<std::string> kFields{"id",   "model",    "seq_len",  "device", "gpus", "gpus_per_node",
                                             "plan", "measured", "framework"};
  if (row.is_object())
    for (auto it = row.begin(); it != row.end(); ++it)
      if (!kFields.count(it.key()) && it.key().rfind('_', 0) != 0)  // "_source", "_note": comments
        throw InputError(fmt::format("{}: unknown field '{}' (id, model, seq_len, device, gpus, gpus_per_node, plan, "
                                     "measured, framework; a leading _ marks a comment)",
                                     what, it.key()));
  CalibrationRun r;
  r.file = path;
  r.id = f.str("id");
  r.spec = run_model(f, path);
  // The framework the run trained with: what it sets that the model does not say (its loss,
  // the gradients' dtype: model/spec_model.hpp apply_framework_defaults).
  if (auto fw = f.opt_str("framework"))
    apply_framework_defaults(r.spec, parse_framework(*fw, f.child("framework")), f.child("framework"));
  r.model = r.spec.name;
  const std::string dev = f.str("device");
  const GpuDevice* d = find_gpu(dev);
  if (!d) throw InputError(fmt::format("{}: '{}' is not in the GPU catalogue (gaccum-tune devices)", f.child("device"), dev));
  r.gpu_id = d->id;
  r.generation = d->generation;
  const Count gpus = f.positive("gpus");
  const Count per_node = f.opt_positive("gpus_per_node").value_or(std::min<Count>(8, gpus));
  r.cluster = run_cluster(*d, gpus, per_node, r.id);
  JsonFields plan(f.object("plan"), f.child("plan"));
  r.config.micro_batch = plan.positive("micro_batch");
  r.config.accum_steps = plan.opt_positive("accum_steps").value_or(1);
  r.config.world_size = gpus;
  r.config.strategy = parse_strategy(plan.opt_str("strategy").value_or("overlap"), plan.child("strategy"));
  r.config.sharding = parse_sharding(plan.opt_str("sharding").value_or("none"), plan.child("sharding"));
  r.config.precision = parse_precision(plan.opt_str("precision").value_or(std::string(to_string(r.spec.dtype))),
                                       plan.child("precision"));
  r.config.checkpointing = parse_checkpointing(
      plan.opt_str("checkpointing").value_or(std::string(to_string(r.spec.activation_checkpointing))),
      plan.child("checkpointing"));
  // A tensor/pipeline/context-parallel run: priced with its layout, never fitted (as Megatron-LM's
  // rows: the fit learns kernels from data-parallel runs, these test it); accum_steps is then the
  // pipeline's microbatch count per step.
  ParallelLayout& l = r.config.layout;
  l.tp = plan.opt_positive("tp").value_or(1);
  l.pp = plan.opt_positive("pp").value_or(1);
  l.cp = plan.opt_positive("cp").value_or(1);
  l.virtual_stages = plan.opt_positive("virtual_stages").value_or(1);
  l.sequence_parallel = plan.opt_boolean("sequence_parallel").value_or(false);
  if (auto sched = plan.opt_str("schedule")) {
    if (l.pp < 2)
      throw InputError(fmt::format("{}: a schedule needs \"pp\": 2 or more (one stage has nothing to schedule)",
                                   plan.child("schedule")));
    l.schedule = parse_schedule(*sched, plan.child("schedule"));
  } else {
    l.schedule = default_schedule(l.virtual_stages);
  }
  if (auto split = plan.opt_str("stage_layers")) {
    if (l.pp < 2)
      throw InputError(fmt::format("{}: an uneven split needs \"pp\": 2 or more", plan.child("stage_layers")));
    set_stage_layers(l, *split, plan.child("stage_layers"));
  }
  if (gpus % l.model_parallel() != 0)
    throw InputError(fmt::format("{}: {} GPUs are not whole replicas of tp {} x pp {} x cp {} = {}: make gpus a "
                                 "multiple of it",
                                 f.child("gpus"), gpus, l.tp, l.pp, l.cp, l.model_parallel()));
  r.held_out = !l.data_parallel_only();
  for (const auto& k : plan.unknown_keys())
    throw InputError(fmt::format("{}: unknown field '{}' (micro_batch, accum_steps, sharding, precision, checkpointing, "
                                 "strategy, tp, pp, cp, virtual_stages, schedule, stage_layers, sequence_parallel)",
                                 plan.path(), k));
  JsonFields meas(f.object("measured"), f.child("measured"));
  // Tokens one data-parallel replica trains per step, over the model_parallel GPUs it spans.
  const double tokens_per_step = double(r.config.micro_batch * r.config.accum_steps) * r.spec.mean_tokens_per_sample /
                                 double(l.model_parallel());
  const auto tokens_s = meas.opt_num("tokens_per_s_per_gpu");
  const auto step_s = meas.opt_num("step_time_s");
  if (tokens_s && step_s)
    throw InputError(fmt::format("{}: give tokens_per_s_per_gpu or step_time_s, not both", meas.path()));
  if (tokens_s) r.published = *tokens_s;
  else if (step_s) r.published = *step_s > 0 ? tokens_per_step / *step_s : 0;
  else
    throw InputError(fmt::format("{}: give tokens_per_s_per_gpu or step_time_s", meas.path()));
  if (!(r.published > 0)) throw InputError(fmt::format("{}: must be positive", meas.path()));
  if (auto m = meas.opt_str("peak_memory")) r.published_memory = parse_bytes(*m, meas.child("peak_memory"));
  for (const auto& k : meas.unknown_keys())
    throw InputError(fmt::format("{}: unknown field '{}' (tokens_per_s_per_gpu, step_time_s, peak_memory)", meas.path(), k));
  r.group = fmt::format("{} {} n{} {} {} {}{}", r.gpu_id, r.model, gpus, to_string(r.config.sharding),
                        to_string(*r.config.precision), to_string(*r.config.checkpointing),
                        l.data_parallel_only() ? std::string() : " " + to_string(l));
  return r;
}

// Soft-L1 loss of log errors over the runs.
double loss(const std::vector<const CalibrationRun*>& runs, const GpuEfficiency& e, double scale) {
  double sum = 0;
  for (const auto* r : runs) {
    double pred = 0;
    try {
      pred = predicted_tokens_per_gpu(predict_run(*r, e), *r);
    } catch (const InputError&) {
      return 1e30;
    }
    if (!(pred > 0)) return 1e30;
    const double x = std::log(pred / r->published) / scale;
    sum += 2 * (std::sqrt(1 + x * x) - 1);
  }
  return sum;
}

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// Nelder-Mead on f over R^n; returns the best point.
std::vector<double> nelder_mead(const std::function<double(const std::vector<double>&)>& f, std::vector<double> x0,
                                double step, int max_evals) {
  const std::size_t n = x0.size();
  std::vector<std::vector<double>> p(n + 1, x0);
  std::vector<double> fx(n + 1);
  for (std::size_t i = 0; i < n; ++i) p[i + 1][i] += step;
  int evals = 0;
  for (std::size_t i = 0; i <= n; ++i) fx[i] = f(p[i]), ++evals;
  while (evals < max_evals) {
    std::vector<std::size_t> o(n + 1);
    for (std::size_t i = 0; i <= n; ++i) o[i] = i;
    std::sort(o.begin(), o.end(), [&](auto a, auto b) { return fx[a] < fx[b]; });
    const std::size_t best = o[0], worst = o[n], second = o[n - 1];
    if (std::abs(fx[worst] - fx[best]) <= 1e-9 * (1 + std::abs(fx[best]))) break;
    std::vector<double> c(n, 0.0);
    for (std::size_t i = 0; i <= n; ++i)
      if (i != worst)
        for (std::size_t d = 0; d < n; ++d) c[d] += p[i][d] / double(n);
    auto along = [&](double t) {
      std::vector<double> x(n);
      for (std::size_t d = 0; d < n; ++d) x[d] = c[d] + t * (p[worst][d] - c[d]);
      return x;
    };
    const auto xr = along(-1);
    const double fr = f(xr);
    ++evals;
    if (fr < fx[best]) {
      const auto xe = along(-2);
      const double fe = f(xe);
      ++evals;
      if (fe < fr) p[worst] = xe, fx[worst] = fe;
      else p[worst] = xr, fx[worst] = fr;
    } else if (fr < fx[second]) {
      p[worst] = xr, fx[worst] = fr;
    } else {
      const auto xc = fr < fx[worst] ? along(-0.5) : along(0.5);
      const double fc = f(xc);
      ++evals;
      if (fc < std::min(fr, fx[worst])) {
        p[worst] = xc, fx[worst] = fc;
      } else {
        for (std::size_t i = 0; i <= n; ++i) {
          if (i == best) continue;
          for (std::size_t d = 0; d < n; ++d) p[i][d] = p[best][d] + 0.5 * (p[i][d] - p[best][d]);
          fx[i] = f(p[i]);
          ++evals;
        }
      }
    }
  }
  std::size_t best = 0;
  for (std::size_t i = 1; i <= n; ++i)
    if (fx[i] < fx[best]) best = i;
  return p[best];
}

}  // namespace

std::vector<CalibrationRun> read_runs(const std::string& path) {
  const nlohmann::json j = parse_json_text(read_text_file(path, "--runs"), path);
  std::vector<CalibrationRun> out;
  if (j.is_object()) {
    JsonFields f(j, path);
    if (f.str("schema") != "gaccum-tune/runs")
      throw InputError(fmt::format("{}.schema: expected \"gaccum-tune/runs\" (or an array of published rows)", path));
    const auto& runs = f.array("runs");
    for (std::size_t i = 0; i < runs.size(); ++i) out.push_back(own_run(runs[i], fmt::format("{}.runs[{}]", path, i), path));
  } else if (j.is_array()) {
    for (std::size_t i = 0; i < j.size(); ++i) {
      const std::string what = fmt::format("{}[{}]", path, i);
      if (!j[i].is_object()) throw InputError(fmt::format("{}: expected an object (a run)", what));
      if (j[i].contains("parallelism")) out.push_back(parallel_row(j[i], what, path));
      else out.push_back(foundry_row(j[i], what, path));
    }
  } else {
    throw InputError(fmt::format("{}: expected {{\"schema\": \"gaccum-tune/runs\", ...}} or an array of published rows", path));
  }
  if (out.empty()) throw InputError(fmt::format("{}: no runs", path));
  for (auto& r : out) try_price(r);
  return out;
}

Prediction predict_run(const CalibrationRun& run, const GpuEfficiency& efficiency) {
  Cluster c = run.cluster;
  GpuCalibration cal = shipped_calibration(run.generation);
  cal.efficiency = efficiency;
  c.gpu_calibration = cal;
  const auto model = make_spec_model(run.spec, c);
  if (!run.choose_layout) return model->predict(run.config);
  // The run's micro_batch (and, interleaved, its virtual stages) are not published: the best
  // predicted throughput among micro_batch 1, 2, 4, 8, 16 (dividing the samples per replica) and
  // v dividing the layers per stage, whose peak fits the device: what a tuned run would use.
  const Count local = run.config.micro_batch * run.config.accum_steps;
  const Count per_stage = run.spec.layers / std::max<Count>(1, run.config.layout.pp);
  std::optional<Prediction> best;
  std::string last_error = "no micro_batch divides the samples per replica";
  for (Count b = 1; b <= 16 && b <= local; b *= 2) {
    if (local % b != 0) continue;
    for (Count v = 1; v <= per_stage; ++v) {
      if (v > 1 && (!run.interleaved || per_stage % v != 0)) continue;
      Config cfg = run.config;
      cfg.micro_batch = b;
      cfg.accum_steps = local / b;
      cfg.layout.virtual_stages = v;
      if (v > 1) cfg.layout.schedule = Schedule::interleaved_1f1b;
      try {
        Prediction p = model->predict(cfg);
        if (p.memory.peak > c.device_memory) continue;
        if (!best || p.throughput > best->throughput) best = p;
      } catch (const InputError& e) {
        last_error = e.what();
      }
    }
  }
  if (!best) throw InputError(fmt::format("{}: no micro_batch up to 16 fits the device or runs: {}", run.id, last_error));
  return *best;
}

double predicted_tokens_per_gpu(const Prediction& p, const CalibrationRun& run) {
  return p.tokens_per_s / double(run.config.world_size);
}

GpuCalibration fit_generation(const std::vector<const CalibrationRun*>& runs, GpuGeneration g, const std::string& from,
                              const FitOptions& options) {
  if (runs.empty()) throw InputError(fmt::format("calibrate: no priced runs on {} to fit", to_string(g)));
  const bool any_fp8 = std::any_of(runs.begin(), runs.end(),
                                   [](const auto* r) { return r->config.precision == Precision::fp8; });
  // Runs on one GPU communicate nothing: overlap is not identified by them (nor fp8 without fp8
  // runs); such a parameter keeps the shipped value, and the provenance says so.
  const bool any_comm = std::any_of(runs.begin(), runs.end(), [](const auto* r) { return r->config.world_size > 1; });
  const GpuEfficiency base = shipped_calibration(g).efficiency;
  constexpr int kFp8 = 1, kOverlap = 5;  // to_array's order: gemm, fp8, attention, memory, overhead, overlap
  std::vector<int> free;
  for (int i = 0; i < kGpuEfficiencyParams; ++i)
    if ((i != kFp8 || any_fp8) && (i != kOverlap || any_comm)) free.push_back(i);
  const auto& bounds = efficiency_bounds();
  auto to_eff = [&](const std::vector<double>& x) {
    auto a = to_array(base);
    for (std::size_t k = 0; k < free.size(); ++k) {
      const auto [lo, hi] = bounds[free[k]];
      a[free[k]] = lo + (hi - lo) * sigmoid(x[k]);
    }
    return from_array(a);
  };
  auto to_x = [&](const GpuEfficiency& e) {
    const auto a = to_array(e);
    std::vector<double> x;
    for (int i : free) {
      const auto [lo, hi] = bounds[i];
      const double u = std::clamp((a[i] - lo) / (hi - lo), 1e-4, 1 - 1e-4);
      x.push_back(std::log(u / (1 - u)));
    }
    return x;
  };
  auto f = [&](const std::vector<double>& x) { return loss(runs, to_eff(x), options.loss_scale); };
  // Starts: the shipped parameters and three spread points (deterministic).
  std::vector<GpuEfficiency> starts = {base, {0.85, 0.8, 0.3, 0.6, 20e-6, 0.5}, {0.7, 0.9, 0.5, 0.8, 5e-6, 0.9},
                                       {0.95, 0.7, 0.2, 0.4, 60e-6, 0.2}};
  starts.resize(std::min<std::size_t>(starts.size(), std::max(1, options.starts)));
  std::vector<double> best;
  double best_f = 1e300;
  for (const auto& s : starts) {
    auto x = nelder_mead(f, to_x(s), 1.0, options.max_evaluations / 2);
    x = nelder_mead(f, x, 0.3, options.max_evaluations / 2);  // restart: escapes a collapsed simplex
    const double fx = f(x);
    if (fx < best_f) best_f = fx, best = x;
  }
  GpuCalibration c;
  c.generation = g;
  c.efficiency = to_eff(best);
  c.fitted = true;
  c.from = from;
  std::vector<std::string> kept;
  if (!any_fp8) kept.push_back("fp8 (no fp8 run)");
  if (!any_comm) kept.push_back("overlap (no run on more than one GPU)");
  if (!kept.empty()) c.kept = fmt::format("kept from the shipped calibration: {}", fmt::join(kept, ", "));
  if (!from.empty() && !kept.empty()) c.from += "; " + c.kept;
  std::vector<double> errors;
  for (const auto* r : runs) errors.push_back(predicted_tokens_per_gpu(predict_run(*r, c.efficiency), *r) / r->published - 1);
  c.in_sample = summarise_errors(errors);
  return c;
}

namespace {

std::string fit_label(const std::vector<const CalibrationRun*>& runs, GpuGeneration g) {
  std::set<std::string> files, gpus;
  for (const auto* r : runs) files.insert(r->file), gpus.insert(r->gpu_id);
  std::string f, d;
  for (const auto& x : files) f += (f.empty() ? "" : ", ") + x;
  for (const auto& x : gpus) d += (d.empty() ? "" : ", ") + x;
  return fmt::format("fitted to {} {} runs ({}) of {}", runs.size(), to_string(g), d, f);
}

}  // namespace

CalibrationReport calibrate(const std::vector<CalibrationRun>& runs, HoldOut hold_out, const FitOptions& options,
                            const std::function<void(const std::string&)>& progress) {
  CalibrationReport rep;
  rep.hold_out = hold_out;
  std::map<GpuGeneration, std::vector<const CalibrationRun*>> by_gen;
  for (const auto& r : runs)
    if (r.not_priced.empty() && !r.held_out) by_gen[r.generation].push_back(&r);
  if (by_gen.empty()) throw InputError("calibrate: none of the runs can be priced (see their reasons with --rows)");
  std::map<GpuGeneration, GpuCalibration> full;
  for (const auto& [g, rs] : by_gen) {
    if (progress) progress(fmt::format("fit {} ({} runs)", to_string(g), rs.size()));
    full[g] = fit_generation(rs, g, fit_label(rs, g), options);
    rep.calibrations.push_back(full[g]);
  }
  for (const auto& r : runs) {
    if (!r.not_priced.empty() || !full.count(r.generation)) continue;
    RunResult x;
    x.run = &r;
    const Prediction p = predict_run(r, full[r.generation].efficiency);
    x.predicted = predicted_tokens_per_gpu(p, r);
    x.gemm_efficiency = p.compute.gemm_efficiency;
    x.mfu = p.compute.mfu;
    x.peak_memory = p.memory.peak;
    x.config = p.config;
    x.bubble_fraction = p.parallel.bubble_fraction;
    rep.results.push_back(x);
  }
  if (hold_out == HoldOut::none) return rep;
  auto key = [&](const CalibrationRun& r) { return hold_out == HoldOut::model ? r.model : r.gpu_id; };
  std::set<std::string> keys;
  for (const auto& x : rep.results) keys.insert(key(*x.run));
  for (const auto& k : keys) {
    // Rows that are never fitted (held out) need no refit: the full fit never saw them.
    bool only_held_out = true;
    for (const auto& x : rep.results)
      if (key(*x.run) == k && !x.run->held_out) only_held_out = false;
    if (only_held_out) {
      for (auto& x : rep.results)
        if (key(*x.run) == k) {
          x.cross_validated = x.predicted;
          x.note = "held out: never fitted, predicted by the full fit";
        }
      continue;
    }
    std::map<GpuGeneration, std::vector<const CalibrationRun*>> train;
    for (const auto& [g, rs] : by_gen)
      for (const auto* r : rs)
        if (key(*r) != k) train[g].push_back(r);
    std::map<GpuGeneration, GpuCalibration> fits;
    std::set<GpuGeneration> needed;
    for (const auto& x : rep.results)
      if (key(*x.run) == k) needed.insert(x.run->generation);
    for (GpuGeneration g : needed) {
      if (progress) progress(fmt::format("cross-validation: {} held out, fit {}", k, to_string(g)));
      if (!train[g].empty()) {
        fits[g] = fit_generation(train[g], g, "", options);
      } else {
        std::vector<const CalibrationRun*> others;
        for (const auto& [g2, rs] : train)
          if (g2 != g) others.insert(others.end(), rs.begin(), rs.end());
        if (others.empty()) continue;
        fits[g] = fit_generation(others, others.front()->generation, "", options);
        fits[g].from = fmt::format("no other {} runs: another generation's fit borrowed", to_string(g));
      }
    }
    for (auto& x : rep.results) {
      if (key(*x.run) != k || !fits.count(x.run->generation)) continue;
      const auto& fit = fits[x.run->generation];
      x.cross_validated = predicted_tokens_per_gpu(predict_run(*x.run, fit.efficiency), *x.run);
      x.note = fit.from;
    }
  }
  for (auto& c : rep.calibrations) {
    std::vector<double> e;
    for (const auto& x : rep.results)
      if (x.run->generation == c.generation && x.cross_validated > 0 && !x.run->held_out)
        e.push_back(x.cross_validated / x.run->published - 1);
    c.cross_validated = summarise_errors(e);
  }
  return rep;
}

std::vector<std::string> fit_warnings(const GpuCalibration& c) {
  std::vector<std::string> out;
  if (!c.fitted) return out;
  const std::string g(to_string(c.generation));
  if (c.in_sample.rows < 2 * kGpuEfficiencyParams)
    out.push_back(fmt::format("{}: {} runs for {} parameters: the fit is under-determined; add runs that differ in "
                              "micro_batch, model size and sequence length",
                              g, c.in_sample.rows, kGpuEfficiencyParams));
  const auto v = to_array(c.efficiency);
  std::vector<std::string> at;
  for (int i = 0; i < kGpuEfficiencyParams; ++i) {
    const auto [lo, hi] = efficiency_bounds()[i];
    const double tol = 1e-3 * (hi - lo);
    if (v[i] <= lo + tol || v[i] >= hi - tol)
      at.push_back(fmt::format("{} {:.3g} (range {:.3g}..{:.3g})", efficiency_names()[i], v[i], lo, hi));
  }
  if (!at.empty())
    out.push_back(fmt::format("{}: fitted onto a bound: {}: the runs push it outside what the model allows",
                              g, fmt::join(at, ", ")));
  return out;
}

CalibrationReport evaluate(const std::vector<CalibrationRun>& runs, const std::vector<GpuCalibration>& calibrations) {
  CalibrationReport rep;
  rep.calibrations = calibrations;
  for (const auto& r : runs) {
    if (!r.not_priced.empty()) continue;
    const GpuCalibration* cal = nullptr;
    for (const auto& c : calibrations)
      if (c.generation == r.generation) cal = &c;
    const GpuEfficiency e = cal ? cal->efficiency : shipped_calibration(r.generation).efficiency;
    RunResult x;
    x.run = &r;
    const Prediction p = predict_run(r, e);
    x.predicted = predicted_tokens_per_gpu(p, r);
    x.gemm_efficiency = p.compute.gemm_efficiency;
    x.mfu = p.compute.mfu;
    x.peak_memory = p.memory.peak;
    x.config = p.config;
    x.bubble_fraction = p.parallel.bubble_fraction;
    rep.results.push_back(x);
  }
  return rep;
}

}  // namespace gaccum::model
