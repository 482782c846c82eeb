// What/why: see pick_cache.hpp.
#include "cli/pick_cache.hpp"

#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/profile_cache.hpp"
#include "core/atomic_file.hpp"
#include "core/utc_time.hpp"

namespace gaccum::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kPickSchema = "gaccum-tune/tune-pick";

fs::path pick_path(const std::string& workload_hash) {
  return profile_cache_directory() / fmt::format("pick-{}.json", workload_hash);
}

}  // namespace

void record_tune_pick(const std::string& workload_hash, const fs::path& result_json) {
  if (workload_hash.empty()) return;
  try {
    const fs::path path = pick_path(workload_hash);
    fs::create_directories(path.parent_path());
    const nlohmann::json j{{"schema", kPickSchema},
                           {"workload_hash", workload_hash},
                           {"result", fs::absolute(result_json).lexically_normal().string()},
                           {"created_utc", utc_now()}};
    write_file_atomic(path, j.dump(2) + "\n");
  } catch (const std::exception& e) {
    std::cerr << fmt::format("gaccum-tune: warning: the pick was not recorded for validate ({})\n", e.what());
  }
}

std::optional<fs::path> find_tune_pick(const std::string& workload_hash) {
  try {
    const std::string text = read_file_if_present(pick_path(workload_hash));
    if (text.empty()) return std::nullopt;
    const auto j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object() || j.value("schema", "") != kPickSchema || j.value("workload_hash", "") != workload_hash ||
        !j.contains("result") || !j["result"].is_string())
      return std::nullopt;
    const fs::path result = j["result"].get<std::string>();
    std::error_code ec;
    if (!fs::is_regular_file(result, ec)) return std::nullopt;
    return result;
  } catch (const std::exception&) {  // no cache directory, unreadable record: no pick
    return std::nullopt;
  }
}

}  // namespace gaccum::cli
