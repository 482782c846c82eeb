// What: where a command's cost model comes from, shared by `tune` and `check`:
//   - a measured profile.json (optionally scaled to a --cluster),
//   - an analytic transformer spec with a --cluster and an MFU,
//   - a profile already in memory (the profile-first path, cli/profile_cache.hpp),
//   plus the "source" JSON block the reports and the check verdict print.
// Why: one implementation of "profile or spec (+ cluster)" instead of one per command. No
//      LibTorch here, so the light binary (predict / tune / check / report) can link it; the
//      workload-profiling cache (LibTorch) is cli/profile_cache.hpp.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/profile.hpp"
#include "core/units.hpp"
#include "model/cluster.hpp"
#include "model/cost_model.hpp"
#include "model/spec_model.hpp"

namespace gaccum::cli {


struct LoadedModel {
  std::unique_ptr<model::CostModel> model;
  std::optional<Profile> profile;
  std::optional<model::Cluster> cluster;
  nlohmann::json source = nlohmann::json::object();  // {"kind", "path", ...}
};

// From a spec (model/spec_model.hpp load_spec: a spec file or a HuggingFace config.json, or a
// framework config's model); `label` names it in the source. Needs a cluster (InputError naming
// the label otherwise); mfu overrides the GPU compute model. framework_named false: the job's
// framework is not known, each plan priced as the frameworks that run it
// (model/spec_model.hpp make_spec_model_any_framework).
LoadedModel load_spec_model(const model::TransformerSpec& spec, const std::string& label,
                            const std::string& cluster_path, std::optional<double> mfu, bool framework_named = true);
// From a profile file (ProfileError for a malformed file, another schema version, or, when
// expected_workload_hash is given, another workload).
LoadedModel load_profile_model(const std::string& profile_path, const std::string& cluster_path,
                               const std::string& expected_workload_hash = "");
// From a profile in memory; `source` is kept and completed with the profile's identity.
LoadedModel model_from_profile(Profile profile, nlohmann::json source, const std::string& cluster_path);

// World sizes worth searching by default: the cluster's size; a CPU profile: cores / threads
// per rank (a rank stands for a GPU); a GPU profile: the largest rank count it measured; else 8.
Count default_max_world_size(const LoadedModel& l);

}  // namespace gaccum::cli
