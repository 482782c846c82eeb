// What/why: see noise_scale_cache.hpp.
#include "cli/noise_scale_cache.hpp"

#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/profile_cache.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"

namespace gaccum::cli {
namespace {

namespace fs = std::filesystem;

std::vector<tuner::MeasuredNoiseScale> read_record(const fs::path& path, const std::string& hash) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return {};
  try {
    return tuner::read_noise_record(parse_json_text(read_text_file(path, "noise scale record"), path.string()),
                                    path.string(), hash);
  } catch (const InputError& e) {
    std::cerr << fmt::format("gaccum-tune: warning: ignoring the noise scale record {} ({})\n", path.string(), e.what());
    return {};
  }
}

// The validate flags that name the profile's workload: a preset by name, a TorchScript model by
// its file, inputs (hyper.inputs: one --input each; hyper.input_shape: --input-shape) and target
// (core/profile.hpp WorkloadIdentity::hyper).
std::string workload_args_of(const WorkloadIdentity& id) {
  if (id.kind != "torchscript") return "--workload " + id.name;
  std::string args = "--torchscript " + id.hyper.value("file", std::string("MODEL.pt"));
  if (id.hyper.contains("inputs") && id.hyper.at("inputs").is_array()) {
    for (const auto& in : id.hyper.at("inputs"))
      if (in.is_string()) args += " --input " + in.get<std::string>();
  } else if (id.hyper.contains("input_shape") && id.hyper.at("input_shape").is_array()) {
    args += fmt::format(" --input-shape {}", fmt::join(id.hyper.at("input_shape").get<std::vector<Count>>(), ","));
  }
  if (id.hyper.contains("target") && id.hyper.at("target").is_string())
    args += " --target " + id.hyper.at("target").get<std::string>();
  return args;
}

}  // namespace

fs::path noise_scale_record_path(const std::string& workload_hash) {
  return profile_cache_directory() / fmt::format("noise-{}.json", workload_hash);
}

std::optional<fs::path> record_validated_noise_scales(const std::string& workload_hash,
                                                      const std::vector<nlohmann::json>& runs) {
  std::vector<tuner::MeasuredNoiseScale> found;
  for (const auto& run : runs)
    if (auto m = tuner::measurement_from_validation_run(run)) found.push_back(*m);
  if (found.empty()) return std::nullopt;
  try {
    const fs::path path = noise_scale_record_path(workload_hash);
    auto record = read_record(path, workload_hash);
    for (const auto& m : found) record = tuner::merge_measurement(std::move(record), m);
    fs::create_directories(path.parent_path());
    write_file_atomic(path, tuner::noise_record_json(workload_hash, record).dump(2) + "\n");
    return path;
  } catch (const std::exception& e) {  // a cache that cannot be written loses a convenience, not the run
    std::cerr << fmt::format("gaccum-tune: warning: the measured noise scale was not recorded ({})\n", e.what());
    return std::nullopt;
  }
}

NoiseLookup lookup_noise_scale(const LoadedModel& l, const std::string& workload_args) {
  NoiseLookup out;
  if (!l.profile) return out;
  const auto& id = l.profile->workload;
  out.validate_command =
      "gaccum-tune validate " + (workload_args.empty() || id.kind == "torchscript" ? workload_args_of(id) : workload_args);
  fs::path path;
  try {
    path = noise_scale_record_path(id.hash);
  } catch (const InputError&) {
    return out;  // no cache directory (neither XDG_CACHE_HOME nor HOME): nothing recorded
  }
  out.recorded = tuner::choose_recorded_noise_scale(read_record(path, id.hash),
                                                    tuner::profile_noise_strength(l.profile->grad_norms), path.string());
  return out;
}

}  // namespace gaccum::cli
