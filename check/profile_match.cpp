// What/why: see profile_match.hpp.
#include "check/profile_match.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum::check {
namespace {

// The profile's hyper-parameter as the workload syntax writes it: 4, or 512x512 for lists.
std::string hyper_text(const nlohmann::json& v) {
  if (v.is_array()) {
    std::string out;
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "x" : "") + hyper_text(v[i]);
    return out;
  }
  if (v.is_string()) return v.get<std::string>();
  return v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

void require_profile_of(const Profile& p, const std::string& path, const std::optional<std::string>& workload,
                        const std::optional<std::string>& workload_hash, const std::string& where) {
  const auto& w = p.workload;
  auto mismatch = [&](const std::string& what) {
    throw ProfileError(fmt::format("{}: profile is for workload '{}' (hash {}), not {} from {}; re-run `gaccum-tune "
                                   "profile` for this workload or pass its profile",
                                   path, w.name, w.hash, what, where));
  };
  if (workload_hash && *workload_hash != w.hash) mismatch(fmt::format("workload_hash {}", *workload_hash));
  if (!workload) return;
  // The job's workload: "name" or "name:key=value,...".
  const std::string& text = *workload;
  const auto colon = text.find(':');
  const std::string name = text.substr(0, colon);
  std::vector<std::pair<std::string, std::string>> overrides;
  if (colon != std::string::npos) {
    const std::string rest = text.substr(colon + 1);
    std::size_t pos = 0;
    while (pos <= rest.size()) {
      const auto comma = rest.find(',', pos);
      const std::string kv = rest.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0)
        throw InputError(
            fmt::format("workload: invalid override '{}' in '{}': expected key=value (from {})", kv, text, where));
      overrides.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
      if (comma == std::string::npos) break;
      pos = comma + 1;
    }
  }
  // The profile's workload name is the preset, plus its overrides as JSON when it had any
  // (workloads/workload.cpp: "gpt-tiny:{\"layers\":4}").
  const auto pcolon = w.name.find(':');
  if (name != w.name.substr(0, pcolon)) mismatch(fmt::format("'{}'", text));
  if (pcolon != std::string::npos) {
    nlohmann::json pov = nlohmann::json::parse(w.name.substr(pcolon + 1), nullptr, false);
    if (pov.is_object())
      for (auto it = pov.begin(); it != pov.end(); ++it) {
        const bool given = std::any_of(overrides.begin(), overrides.end(), [&](const auto& kv) { return kv.first == it.key(); });
        if (!given) mismatch(fmt::format("'{}' (the profile overrides {} = {})", text, it.key(), hyper_text(it.value())));
      }
  }
  for (const auto& [key, value] : overrides)
    if (!w.hyper.is_object() || !w.hyper.contains(key) || hyper_text(w.hyper.at(key)) != value)
      mismatch(fmt::format("'{}' ({} = {} in the profile)", text, key,
                           w.hyper.is_object() && w.hyper.contains(key) ? hyper_text(w.hyper.at(key)) : "unset"));
}

}  // namespace gaccum::check
