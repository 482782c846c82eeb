// What/why: see profile_source.hpp.
#include "cli/profile_source.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/error.hpp"
#include "model/profile_model.hpp"
#include "model/spec_model.hpp"

namespace gaccum::cli {

LoadedModel load_spec_model(const model::TransformerSpec& spec, const std::string& label,
                            const std::string& cluster_path, std::optional<double> mfu, bool framework_named) {
  if (cluster_path.empty())
    throw InputError(fmt::format("{}: pricing its model needs --cluster cluster.json (device peak FLOP/s, memory and "
                                 "links)",
                                 label));
  LoadedModel l;
  l.cluster = model::load_cluster(cluster_path);
  if (mfu && !(*mfu > 0)) throw InputError("--mfu: must be above 0 (a fraction such as 0.4 or 40%)");
  l.model = framework_named ? model::make_spec_model(spec, *l.cluster, mfu)
                            : model::make_spec_model_any_framework(spec, *l.cluster, mfu);
  l.source = {{"kind", "spec"}, {"path", label}, {"cluster", cluster_path}};
  if (mfu) l.source["mfu"] = *mfu;
  else if (const auto* g = l.cluster->gpu()) l.source["compute_model"] = "gpu:" + g->id;
  else l.source["mfu"] = model::kDefaultMfu;
  return l;
}

LoadedModel model_from_profile(Profile profile, nlohmann::json source, const std::string& cluster_path) {
  LoadedModel l;
  if (!cluster_path.empty()) l.cluster = model::load_cluster(cluster_path);
  l.profile = std::move(profile);
  l.source = std::move(source);
  const auto& p = *l.profile;
  l.source["created_utc"] = p.created_utc;
  l.source["host"] = p.hardware.host;
  l.source["versions"] = {{"tool", p.versions.tool},
                          {"libtorch", p.versions.libtorch},
                          {"gloo", p.versions.gloo},
                          {"cuda", p.versions.cuda},
                          {"nccl", p.versions.nccl}};
  if (l.cluster) l.source["cluster"] = cluster_path;
  l.model = model::make_profile_model(p, l.cluster ? &*l.cluster : nullptr);
  return l;
}

LoadedModel load_profile_model(const std::string& profile_path, const std::string& cluster_path,
                               const std::string& expected_workload_hash) {
  Profile p = load_profile(profile_path, expected_workload_hash);
  return model_from_profile(std::move(p), {{"kind", "profile"}, {"path", profile_path}}, cluster_path);
}

Count default_max_world_size(const LoadedModel& l) {
  if (l.cluster) return l.cluster->max_world_size();
  if (l.profile) {
    const auto& h = l.profile->hardware;
    if (h.device_kind == "cpu") return std::max<Count>(1, Count(h.cpu_cores) / Count(std::max(1, h.threads_per_rank)));
    Count most = 1;
    for (Count r : l.profile->settings.ranks) most = std::max(most, r);
    return most;
  }
  return 8;
}

}  // namespace gaccum::cli
