// What: the TorchScript model flags every subcommand that builds a model takes (profile, tune,
//       predict, check, validate), registered and read in one place:
//         --torchscript FILE   the model (torch.jit.script(model).save(FILE))
//         --input-shape DIMS   one float input [b, DIMS] (the same as --input float:DIMS)
//         --input SPEC         one of forward()'s inputs, in order, repeatable (core/model_inputs.hpp)
//         --target SPEC        classes:N | regression:D | tokens:VOCAB [default: classes:10]
// Why: the same flags, help and errors on every subcommand (one CLI); the parsing is
//      core/model_inputs.hpp's.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "workloads/workload.hpp"

namespace gaccum::cli {

struct TorchScriptFlags {
  std::string file;
  std::string input_shape;
  std::vector<std::string> inputs;
  std::string target;

  bool given() const { return !file.empty(); }
  // --input-shape, --input or --target given (they need --torchscript).
  bool model_options_given() const { return !input_shape.empty() || !inputs.empty() || !target.empty(); }
  // The inputs as typed: --input-shape first (as float:DIMS), then each --input. InputError when
  // both forms are given.
  std::vector<std::string> input_texts() const;
  // Makes `cfg` the TorchScript workload of these flags (name, absolute path, inputs, target);
  // InputError naming the flag for bad values. Needs given().
  void apply(workloads::WorkloadConfig& cfg) const;
  // InputError "--input-shape, --input and --target apply to --torchscript only" when model
  // options come without a file.
  void require_file_for_options() const;
};

void add_torchscript_flags(CLI::App* sub, TorchScriptFlags& f);

// The workload the model flags name, on every subcommand alike: `--torchscript FILE` with its
// input options (the TorchScript workload), or `--workload NAME[:k=v,...]` (a preset; `workload`
// empty means not given: `fallback`). InputError when both are given, or the TorchScript options
// come without a file. The device is left to the caller (cfg.device is "cpu").
workloads::WorkloadConfig workload_from_flags(const std::string& workload, const TorchScriptFlags& ts,
                                              const std::string& fallback);

}  // namespace gaccum::cli
