// What: `gaccum-tune workloads`: the built-in workload presets with their parameter counts.
// Why: tells users what `--workload` accepts and how big each model is before they profile it.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "core/units.hpp"
#include "workloads/workload.hpp"

namespace gaccum::cli {
namespace {

struct WorkloadsOptions {
  bool json = false;
};

int run_workloads(const WorkloadsOptions& o) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& p : workloads::presets()) {
    workloads::WorkloadConfig cfg;
    cfg.name = p.name;
    auto w = workloads::make_workload(cfg);
    const auto& id = w->identity();
    out.push_back({{"name", p.name},
                   {"kind", p.kind},
                   {"description", p.description},
                   {"hyper", p.hyper},
                   {"param_count", id.param_count},
                   {"param_bytes", id.param_bytes},
                   {"hash", id.hash}});
  }
  if (o.json) {
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  fmt::print("{:<10} {:<5} {:>11} {:>10}  {}\n", "workload", "kind", "parameters", "fp32", "description");
  for (const auto& w : out)
    fmt::print("{:<10} {:<5} {:>11} {:>10}  {}\n", w["name"].get<std::string>(), w["kind"].get<std::string>(),
               w["param_count"].get<Count>(), format_bytes(w["param_bytes"].get<Bytes>()),
               w["description"].get<std::string>());
  fmt::print("\nAlso: a kind with overrides (--workload gpt:layers=4,d_model=256,heads=8,seq_len=128,vocab=1024;\n"
             "list values as 512x512), or your own model: --workload torchscript --torchscript model.pt\n"
             "--input-shape 3,32,32 --target classes:10.\n");
  return kExitOk;
}

}  // namespace

void add_workloads_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<WorkloadsOptions>();
  auto* sub = app.add_subcommand("workloads", "List the built-in workloads (presets) and their parameter counts");
  sub->add_flag("--json", o->json, "Print JSON");
  sub->callback([o, &action] { action = [o] { return run_workloads(*o); }; });
}

}  // namespace gaccum::cli
