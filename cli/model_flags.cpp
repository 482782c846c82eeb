// What/why: see model_flags.hpp.
#include "cli/model_flags.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/model_inputs.hpp"
#include "core/parse.hpp"

namespace gaccum::cli {

std::vector<std::string> TorchScriptFlags::input_texts() const {
  if (!input_shape.empty() && !inputs.empty())
    throw InputError("--input-shape: give the model's inputs either as --input-shape DIMS (one float input) or as "
                     "--input SPEC (repeatable), not both");
  if (!input_shape.empty()) {
    (void)parse_count_list(input_shape, "--input-shape");
    return {"float:" + input_shape};
  }
  return inputs;
}

void TorchScriptFlags::require_file_for_options() const {
  if (!given() && model_options_given())
    throw InputError("--input-shape, --input and --target apply to --torchscript only");
}

void TorchScriptFlags::apply(workloads::WorkloadConfig& cfg) const {
  cfg.name = "torchscript";
  cfg.overrides = nlohmann::json::object();
  cfg.torchscript_path = std::filesystem::absolute(file).string();
  const auto texts = input_texts();
  if (texts.empty())
    throw InputError("--input-shape: required with --torchscript, e.g. --input-shape 3,32,32 (or --input "
                     "tokens:VOCAB:SEQ for a token model)");
  cfg.inputs = parse_model_inputs(texts, input_shape.empty() ? "--input" : "--input-shape");
  cfg.target = target.empty() ? ModelTarget{} : parse_model_target(target, "--target");
  check_target_fits_inputs(cfg.target, cfg.inputs, "--target");
}

void add_torchscript_flags(CLI::App* sub, TorchScriptFlags& f) {
  sub->add_option("--torchscript", f.file,
                  "Your TorchScript model file (torch.jit.script(model).save(FILE)); profiled first and cached where "
                  "a profile is needed");
  sub->add_option("--input-shape", f.input_shape,
                  "TorchScript: one float input of this per-sample shape, e.g. 3,32,32 (= --input float:3,32,32)");
  sub->add_option("--input", f.inputs,
                  "TorchScript: one of forward()'s inputs, in order; repeat for several: float:D1,D2,.. | "
                  "tokens:VOCAB:SEQ (int64 ids) | mask:SEQ (int64, 1 = real token) | pad-mask:SEQ (bool, true = "
                  "padding)")
      ->allow_extra_args(false);
  sub->add_option("--target", f.target,
                  "TorchScript: classes:N (output [b, N]) | regression:D ([b, D]) | tokens:VOCAB (per-token "
                  "cross-entropy on [b, SEQ, VOCAB], padding ignored) [default: classes:10]");
}

workloads::WorkloadConfig workload_from_flags(const std::string& workload, const TorchScriptFlags& ts,
                                              const std::string& fallback) {
  workloads::WorkloadConfig cfg;
  if (ts.given()) {
    if (!workload.empty() && workload != "torchscript")
      throw InputError(fmt::format("--torchscript: use it with --workload torchscript (or without --workload), not "
                                   "with --workload {}",
                                   workload));
    ts.apply(cfg);
    return cfg;
  }
  ts.require_file_for_options();
  cfg = workloads::parse_workload_arg(workload.empty() ? fallback : workload);
  if (cfg.name == "torchscript") throw InputError("--torchscript: a TorchScript file is required for workload 'torchscript'");
  return cfg;
}

}  // namespace gaccum::cli
