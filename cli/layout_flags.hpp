// What: the tensor/pipeline/context-parallel flags that predict, tune and check share:
//   --tp N, --pp N, --cp N, --virtual-stages V, --schedule gpipe|1f1b|interleaved-1f1b|zb-h1,
//   --sequence-parallel, --stage-layers A,B,...,Z (layers per pipeline rank: only the first and
//   last may differ from the rest, as Megatron-LM's --decoder-first/last-pipeline-num-layers), or
//   FIRST,...,LAST (the middle ranks even).
//   --virtual-stages above 1 without --schedule means interleaved-1f1b; --pp without it 1f1b.
//   tune also takes --tp auto and --pp auto (searched over the model's candidate layouts).
// Why: one spelling and one parser for the layout on every subcommand.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/plan.hpp"

namespace gaccum::cli {

struct LayoutFlags {
  std::string tp, pp, cp, virtual_stages, schedule, stage_layers;
  bool sequence_parallel = false;
  // Any layout flag given.
  bool given() const {
    return !tp.empty() || !pp.empty() || !cp.empty() || !virtual_stages.empty() || !schedule.empty() ||
           !stage_layers.empty() || sequence_parallel;
  }
};

void add_layout_flags(CLI::App* sub, LayoutFlags& f);

// --megatron-args, --nemo-config, --torchtitan-config (check/framework_configs.hpp); `what` says
// what the subcommand does with the file.
// check also reads the trainers' files (--hf-args, --accelerate-config, --lightning-config:
// what tune --emit writes), with `trainer_files`.
struct FrameworkConfigFlags {
  std::string megatron_args, nemo_config, torchtitan_config;
  std::string hf_args, accelerate_config, lightning_config;
};
void add_framework_config_flags(CLI::App* sub, FrameworkConfigFlags& f, const std::string& what,
                                bool trainer_files = false);
// InputError naming the flag for a bad value (and for `auto`, which only tune searches).
ParallelLayout layout_from_flags(const LayoutFlags& f);
// tune: `--tp auto` / `--pp auto` search those dimensions over the model's candidates (the
// given flags fix the rest; --schedule and --virtual-stages narrow a searched pp); otherwise the
// one layout of the flags. Empty when no layout flag is given (data parallel only).
std::vector<ParallelLayout> layouts_from_flags(const LayoutFlags& f, const std::vector<ParallelLayout>& candidates);

}  // namespace gaccum::cli
