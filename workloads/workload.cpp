// What: the workload registry (presets, name parsing, device/dtype resolution) and the shared
//       ModuleWorkload plumbing. See workload.hpp.
#include "workloads/workload.hpp"

#include <torch/torch.h>

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/parse.hpp"
#include "workloads/module_workload.hpp"

namespace gaccum::workloads {

using nlohmann::json;

const std::vector<PresetInfo>& presets() {
  static const std::vector<PresetInfo> list = {
      {"mlp-small", "mlp", "MLP classifier 256-512-512-10",
       json{{"in", 256}, {"hidden", {512, 512}}, {"classes", 10}}},
      {"gpt-tiny", "gpt", "decoder-only transformer, 2 layers, d_model 128, seq 64 (default)",
       json{{"layers", 2}, {"d_model", 128}, {"heads", 4}, {"seq_len", 64}, {"vocab", 512}}},
      {"gpt-small", "gpt", "decoder-only transformer, 4 layers, d_model 256, seq 128",
       json{{"layers", 4}, {"d_model", 256}, {"heads", 8}, {"seq_len", 128}, {"vocab", 2048}}},
      {"cnn-small", "cnn", "residual CNN, channels 16-32, 32x32 RGB, 10 classes",
       json{{"image", 32}, {"channels", {16, 32}}, {"classes", 10}}},
  };
  return list;
}

namespace {

const json& kind_defaults(const std::string& kind) {
  // A bare kind ("gpt") starts from its smallest preset.
  for (const auto& p : presets())
    if (p.kind == kind) return p.hyper;
  static const json empty = json::object();
  return empty;
}

}  // namespace

torch::Dtype parse_dtype(const std::string& text) {
  if (text == "float32" || text == "fp32" || text == "float") return torch::kFloat32;
  if (text == "float64" || text == "fp64" || text == "double") return torch::kFloat64;
  // bfloat16: the profiler's --precision bf16 (2-byte weights, gradients and activations; the
  // optimizer steps fp32 master copies, workloads/optimizer.hpp).
  if (text == "bfloat16" || text == "bf16") return torch::kBFloat16;
  throw InputError(fmt::format("--dtype: unknown dtype '{}': expected float32 or float64 (bf16: --precision bf16)", text));
}

Bytes dtype_size(torch::Dtype dt) { return static_cast<Bytes>(c10::elementSize(dt)); }

void measure_plan_as(WorkloadConfig& cfg, Precision precision, Checkpointing checkpointing) {
  if (precision == Precision::bf16) cfg.dtype = kBf16Dtype;
  if (checkpointing == Checkpointing::full) cfg.overrides[kCheckpointKey] = 1;
}

bool is_reduced_precision(torch::Dtype dt) { return dt == torch::kBFloat16 || dt == torch::kFloat16; }

torch::Tensor Workload::loss_precision(const torch::Tensor& output) {
  return is_reduced_precision(output.scalar_type()) ? output.to(torch::kFloat32) : output;
}

std::pair<Count, Count> StagedModel::chunk_units(Count chunk, Count chunks) const {
  const Count n = blocks();
  if (chunks < 1 || n % chunks != 0 || chunk < 0 || chunk >= chunks)
    throw InputError(fmt::format("--pp x --virtual-stages: the model's {} blocks do not split into {} equal pipeline "
                                 "chunks: choose pp x v dividing them (a gpt: more layers, e.g. gpt-tiny:layers=8; a "
                                 "TorchScript chain: its blocks are the submodules between the first and the last)",
                                 n, chunks));
  const Count per = n / chunks;
  return {chunk == 0 ? 0 : 1 + chunk * per, chunk == chunks - 1 ? n + 2 : 1 + (chunk + 1) * per};
}

std::string Workload::staging_rejection() const {
  return fmt::format("the built-in {} runs as one module (the built-in gpt, e.g. --workload gpt-small, and a "
                     "TorchScript model whose forward() calls a sequence of submodules, an nn.Sequential or a "
                     "ModuleList looped in forward(), run block by block)",
                     identity_.kind);
}

Count sample_offset(Count step, Count rank, Count micro, Count micro_batch, Count accum_steps, Count world_size) {
  return step * micro_batch * accum_steps * world_size + (rank * accum_steps + micro) * micro_batch;
}

std::string resolve_device(const std::string& requested) {
  if (requested == "cpu") return "cpu";
  bool cuda_ok = torch::cuda::is_available() && torch::cuda::device_count() > 0;
  if (requested == "auto") return cuda_ok ? "cuda:0" : "cpu";
  if (requested == "cuda" || requested.rfind("cuda:", 0) == 0) {
    if (!cuda_ok)
      throw InputError(fmt::format("--device: '{}' requested but no CUDA device answers (LibTorch {} CUDA); "
                                   "use --device cpu",
                                   requested, torch::cuda::is_available() ? "with" : "without"));
    if (requested == "cuda") return "cuda:0";
    const std::string idx_text = requested.substr(5);
    Count idx = idx_text == "0" ? 0 : parse_positive_count(idx_text, "--device");
    if (idx >= static_cast<Count>(torch::cuda::device_count()))
      throw InputError(fmt::format("--device: {} does not exist ({} CUDA devices)", requested, torch::cuda::device_count()));
    return requested;
  }
  throw InputError(fmt::format("--device: invalid value '{}': expected auto, cpu, cuda or cuda:N", requested));
}

WorkloadConfig parse_workload_arg(const std::string& text) {
  WorkloadConfig cfg;
  auto colon = text.find(':');
  cfg.name = text.substr(0, colon);
  if (cfg.name.empty()) throw InputError("--workload: empty name; see `gaccum-tune workloads`");
  if (colon == std::string::npos) return cfg;
  std::string rest = text.substr(colon + 1);
  size_t pos = 0;
  while (pos <= rest.size()) {
    auto comma = rest.find(',', pos);
    std::string kv = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0)
      throw InputError(fmt::format("--workload: invalid override '{}' in '{}': expected key=value, e.g. gpt-tiny:layers=4",
                                   kv, text));
    std::string key = kv.substr(0, eq), value = kv.substr(eq + 1);
    if (value.find('x') != std::string::npos || value.find('/') != std::string::npos) {
      // list values: hidden=512x512 or channels=16/32
      json arr = json::array();
      size_t p = 0;
      while (p <= value.size()) {
        auto sep = value.find_first_of("x/", p);
        arr.push_back(parse_positive_count(value.substr(p, sep == std::string::npos ? std::string::npos : sep - p),
                                           "--workload " + key));
        if (sep == std::string::npos) break;
        p = sep + 1;
      }
      cfg.overrides[key] = arr;
    } else {
      cfg.overrides[key] = parse_positive_count(value, "--workload " + key);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return cfg;
}

std::unique_ptr<Workload> make_workload(const WorkloadConfig& cfg) {
  WorkloadIdentity id;
  id.dtype = cfg.dtype;
  (void)parse_dtype(cfg.dtype);
  std::string kind;
  json hyper;
  for (const auto& p : presets()) {
    if (p.name == cfg.name) {
      kind = p.kind;
      hyper = p.hyper;
    }
  }
  if (kind.empty()) {
    if (cfg.name == "mlp" || cfg.name == "gpt" || cfg.name == "cnn") {
      kind = cfg.name;
      hyper = kind_defaults(kind);
    } else if (cfg.name == "torchscript") {
      kind = "torchscript";
      hyper = json::object();
    } else {
      std::string names;
      for (const auto& p : presets()) names += (names.empty() ? "" : ", ") + p.name;
      throw InputError(fmt::format("--workload: unknown workload '{}': choose one of {}, mlp, gpt, cnn or torchscript "
                                   "(see `gaccum-tune workloads`)",
                                   cfg.name, names));
    }
  }
  for (auto it = cfg.overrides.begin(); it != cfg.overrides.end(); ++it) {
    if (it.key() == kCheckpointKey) {
      // Activation checkpointing: a hyper-parameter only when asked for (identities without it keep
      // their hashes); gpt recomputes each transformer block.
      if (kind != "gpt")
        throw InputError(fmt::format("--checkpointing full: workload '{}' ({}) has no blocks the profiler can recompute; "
                                     "it is built for gpt workloads (each transformer block; TorchScript models cannot "
                                     "be re-entered per block): profile --checkpointing none, or price checkpointing "
                                     "with an analytic --spec",
                                     cfg.name, kind));
      if (it.value() != 1)
        throw InputError(fmt::format("--workload: {}={} : checkpointing is 1 (full) or absent", kCheckpointKey,
                                     it.value().dump()));
      hyper[it.key()] = 1;
      continue;
    }
    if (!hyper.contains(it.key())) {
      std::vector<std::string> keys;
      for (auto h = hyper.begin(); h != hyper.end(); ++h) keys.push_back(h.key());
      throw InputError(fmt::format("--workload: '{}' has no hyper-parameter '{}' (it has: {})", cfg.name, it.key(),
                                   fmt::join(keys, ", ")));
    }
    if (hyper[it.key()].is_array() != it.value().is_array())
      throw InputError(fmt::format("--workload: hyper-parameter '{}' of '{}' takes {}", it.key(), cfg.name,
                                   hyper[it.key()].is_array() ? "a list such as 512x512" : "one integer"));
    hyper[it.key()] = it.value();
  }
  id.name = cfg.name;
  if (!cfg.overrides.empty()) id.name += ":" + cfg.overrides.dump();
  id.kind = kind;
  id.hyper = hyper;
  if (kind == "mlp") return make_mlp(std::move(id), cfg);
  if (kind == "gpt") return make_gpt(std::move(id), cfg);
  if (kind == "cnn") return make_cnn(std::move(id), cfg);
  return make_torchscript(std::move(id), cfg);
}

void Workload::finish_identity(const std::string& extra_identity) {
  identity_.param_count = 0;
  identity_.param_tensor_bytes.clear();
  for (const auto& p : parameters()) {
    identity_.param_count += p.numel();
    identity_.param_tensor_bytes.push_back(static_cast<Bytes>(p.numel()) * dtype_size(dtype_));
  }
  identity_.param_bytes = static_cast<Bytes>(identity_.param_count) * dtype_size(dtype_);
  identity_.unit_tensors.clear();
  if (StagedModel* st = staged())
    for (Count u = 0; u < st->units(); ++u)
      identity_.unit_tensors.push_back(static_cast<Count>(st->unit_parameters(u).size()));
  json hashed = identity_.hyper;
  hashed.erase("file");  // identity is the content, not where it lives
  std::string key = identity_.kind + "|" + hashed.dump() + "|" + identity_.dtype + "|" + extra_identity;
  identity_.hash = hex64(fnv1a64(key));
}

// --- ModuleWorkload ---------------------------------------------------------------------------

ModuleWorkload::ModuleWorkload(WorkloadIdentity id, const WorkloadConfig& cfg)
    : Workload(std::move(id), torch::Device(cfg.device), parse_dtype(cfg.dtype)) {
  // Initialisation is deterministic and identical on every rank.
  torch::manual_seed(cfg.init_seed);
}

void ModuleWorkload::adopt(std::shared_ptr<torch::nn::Module> module) {
  module_ = std::move(module);
  module_->to(device_, dtype_);
  module_->train();
  finish_identity();
}

std::vector<torch::Tensor> ModuleWorkload::parameters() const { return module_->parameters(); }

std::vector<std::string> ModuleWorkload::parameter_names() const {
  std::vector<std::string> out;
  for (const auto& p : module_->named_parameters()) out.push_back(p.key());
  return out;
}

Count hyper_int(const json& hyper, const std::string& workload, const std::string& key) {
  if (!hyper.contains(key)) throw InputError(fmt::format("workload {}: missing hyper-parameter '{}'", workload, key));
  const auto& v = hyper.at(key);
  if (!v.is_number_integer() || v.get<Count>() < 1)
    throw InputError(fmt::format("workload {}: hyper-parameter '{}' must be a positive integer, got {}", workload, key, v.dump()));
  return v.get<Count>();
}

std::vector<Count> hyper_int_list(const json& hyper, const std::string& workload, const std::string& key) {
  if (!hyper.contains(key) || !hyper.at(key).is_array() || hyper.at(key).empty())
    throw InputError(fmt::format("workload {}: hyper-parameter '{}' must be a non-empty list of positive integers", workload, key));
  std::vector<Count> out;
  for (const auto& v : hyper.at(key)) {
    if (!v.is_number_integer() || v.get<Count>() < 1)
      throw InputError(fmt::format("workload {}: hyper-parameter '{}' must hold positive integers, got {}", workload, key, v.dump()));
    out.push_back(v.get<Count>());
  }
  return out;
}

void require_finite(const Workload& workload, double value, const char* what, Count micro_batch) {
  if (std::isfinite(value)) return;
  const auto& id = workload.identity();
  throw InputError(fmt::format("{}: the {} is {} at micro_batch {} (not a finite number), so nothing measured of it "
                               "would mean anything; fix the model's forward or its inputs (--input / --target)",
                               id.kind == "torchscript"
                                   ? fmt::format("--torchscript: the model '{}'", id.hyper.value("file", id.name))
                                   : fmt::format("--workload: '{}'", id.name),
                               what, value, micro_batch));
}

}  // namespace gaccum::workloads
