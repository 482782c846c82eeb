// What/why: see rank_agreement.hpp.
#include "check/rank_agreement.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/json_fields.hpp"

namespace gaccum::check {
namespace {

using oj = nlohmann::ordered_json;

std::string lr_text(const std::optional<double>& lr) { return lr ? fmt::format("{:.17g}", *lr) : "none"; }

// Distinct values of one field, each with its ranks (in rank order of first appearance).
std::vector<std::pair<std::string, std::vector<int>>> groups(const std::vector<RankSettings>& all,
                                                             std::string (*get)(const RankSettings&)) {
  std::vector<std::pair<std::string, std::vector<int>>> out;
  for (const auto& s : all) {
    if (!s.error.empty()) continue;
    const std::string v = get(s);
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& g) { return g.first == v; });
    if (it == out.end()) out.push_back({v, {s.rank}});
    else it->second.push_back(s.rank);
  }
  return out;
}

std::string groups_text(const std::vector<std::pair<std::string, std::vector<int>>>& g) {
  std::vector<std::string> parts;
  for (const auto& [v, ranks] : g)
    parts.push_back(fmt::format("{} on rank{} {}", v, ranks.size() == 1 ? "" : "s", rank_list(ranks)));
  return fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

std::string rank_list(const std::vector<int>& ranks_in) {
  std::vector<int> r = ranks_in;
  std::sort(r.begin(), r.end());
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < r.size();) {
    std::size_t j = i;
    while (j + 1 < r.size() && r[j + 1] == r[j] + 1) ++j;
    parts.push_back(j == i ? std::to_string(r[i]) : fmt::format("{}-{}", r[i], r[j]));
    i = j + 1;
  }
  return fmt::format("{}", fmt::join(parts, ", "));
}

std::string config_hash(const ResolvedJob& j, const std::string& extra) {
  nlohmann::json v = {{"micro_batch", j.micro_batch}, {"accum_steps", j.accum_steps},  {"world_size", j.world_size},
                      {"global_batch", j.global_batch}, {"strategy", std::string(to_string(j.strategy))},
                      {"optimizer", j.optimizer},      {"lr", lr_text(j.lr)},          {"drop_last", j.drop_last},
                      {"dataset_size", j.dataset_size ? *j.dataset_size : 0},
                      {"lr_ref", j.lr_ref ? fmt::format("{:.17g}@{}", j.lr_ref->lr, j.lr_ref->global_batch) : ""},
                      {"extra", extra}};
  return hex64(fnv1a64(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
}

RankSettings rank_settings(const ResolvedJob& j, int rank, const std::string& hash) {
  RankSettings s;
  s.rank = rank;
  s.micro_batch = j.micro_batch;
  s.accum_steps = j.accum_steps;
  s.world_size = j.world_size;
  s.global_batch = j.global_batch;
  s.strategy = std::string(to_string(j.strategy));
  s.lr = j.lr;
  s.config_hash = hash;
  return s;
}

RankSettings failed_rank_settings(int rank, const std::string& error) {
  RankSettings s;
  s.rank = rank;
  s.error = error.empty() ? std::string("unknown error") : error;
  return s;
}

std::string encode(const RankSettings& s) {
  nlohmann::json j = {{"rank", s.rank},
                      {"micro_batch", s.micro_batch},
                      {"accum_steps", s.accum_steps},
                      {"world_size", s.world_size},
                      {"global_batch", s.global_batch},
                      {"strategy", s.strategy},
                      {"lr", s.lr ? nlohmann::json(*s.lr) : nlohmann::json(nullptr)},
                      {"config_hash", s.config_hash},
                      {"error", s.error}};
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

RankSettings decode_rank_settings(const std::string& line, int rank) {
  // Strict (core/json_fields.hpp): a peer's line is untrusted input like any file.
  try {
    JsonFields f(parse_json_text(line, "rank settings"), fmt::format("rank {} settings", rank));
    RankSettings s;
    s.rank = rank;
    s.micro_batch = f.count("micro_batch");
    s.accum_steps = f.count("accum_steps");
    s.world_size = f.count("world_size");
    s.global_batch = f.count("global_batch");
    s.strategy = f.str("strategy");
    s.lr = f.opt_num("lr");
    s.config_hash = f.str("config_hash");
    s.error = f.str("error");
    return s;
  } catch (const InputError& e) {
    return failed_rank_settings(rank, fmt::format("sent unreadable settings ({})", e.what()));
  }
}

CheckResult rank_agreement_skipped() {
  CheckResult r;
  r.number = 3;
  r.id = "rank_agreement";
  r.title = "same settings on every rank";
  r.status = Status::skip;
  r.reason =
      "not run with --distributed: run `gaccum-tune check --distributed` on every rank (torchrun / srun) to compare "
      "settings across ranks";
  return r;
}

CheckResult check_rank_agreement(const std::vector<RankSettings>& all, Count launcher_world_size,
                                 const std::string& launcher) {
  CheckResult r = rank_agreement_skipped();
  if (all.empty()) {
    r.status = Status::fail;
    r.reason = "no rank sent its settings";
    return r;
  }
  oj ranks = oj::array();
  for (const auto& s : all)
    ranks.push_back(oj{{"rank", s.rank},
                       {"micro_batch", s.micro_batch},
                       {"accum_steps", s.accum_steps},
                       {"world_size", s.world_size},
                       {"global_batch", s.global_batch},
                       {"strategy", s.strategy},
                       {"lr", s.lr ? oj(*s.lr) : oj(nullptr)},
                       {"config_hash", s.config_hash},
                       {"error", s.error}});
  r.data = oj{{"launcher", launcher}, {"launcher_world_size", launcher_world_size}, {"ranks", ranks}};

  std::vector<std::string> problems;
  oj mismatches = oj::array();
  for (const auto& s : all)
    if (!s.error.empty()) problems.push_back(fmt::format("rank {} could not check its job: {}", s.rank, s.error));

  struct Field {
    const char* name;
    std::string (*get)(const RankSettings&);
  };
  static const Field kFields[] = {
      {"micro_batch", [](const RankSettings& s) { return std::to_string(s.micro_batch); }},
      {"accum_steps", [](const RankSettings& s) { return std::to_string(s.accum_steps); }},
      {"world_size", [](const RankSettings& s) { return std::to_string(s.world_size); }},
      {"global_batch", [](const RankSettings& s) { return std::to_string(s.global_batch); }},
      {"strategy", [](const RankSettings& s) { return s.strategy; }},
      {"lr", [](const RankSettings& s) { return s.lr ? fmt::format("{:.6g}", *s.lr) : std::string("none"); }},
  };
  for (const auto& f : kFields) {
    auto g = groups(all, f.get);
    if (g.size() <= 1) continue;
    problems.push_back(fmt::format("{} differs: {}", f.name, groups_text(g)));
    oj vals = oj::array();
    for (const auto& [v, rs] : g) vals.push_back(oj{{"value", v}, {"ranks", rs}});
    mismatches.push_back(oj{{"field", f.name}, {"values", vals}});
  }
  // The job's world_size against the processes the launcher really started.
  std::vector<int> wrong_p;
  Count declared = 0;
  for (const auto& s : all)
    if (s.error.empty() && s.world_size != launcher_world_size) wrong_p.push_back(s.rank), declared = s.world_size;
  if (!wrong_p.empty())
    problems.push_back(fmt::format("world_size {} on rank{} {} but {} started {} ranks", declared,
                                   wrong_p.size() == 1 ? "" : "s", rank_list(wrong_p), launcher, launcher_world_size));
  r.data["mismatches"] = mismatches;

  if (!problems.empty()) {
    r.status = Status::fail;
    r.reason = fmt::format("{}", fmt::join(problems, "; "));
    r.fix = "give every rank the same job file, DeepSpeed config and flags (and a world_size equal to the ranks "
            "launched), then check again";
    return r;
  }
  auto hashes = groups(all, [](const RankSettings& s) { return s.config_hash; });
  if (hashes.size() > 1) {
    r.status = Status::warn;
    r.reason = fmt::format(
        "{} ranks agree on micro_batch, accum_steps, world_size, global_batch, strategy and lr, but their "
        "configurations differ (hash {})",
        all.size(), groups_text(hashes));
    r.fix = "compare the job / DeepSpeed files and flags of these ranks (e.g. dataset_size, lr_ref, optimizer)";
    return r;
  }
  r.status = Status::pass;
  const auto& s = all.front();
  r.reason = fmt::format(
      "all {} ranks agree: micro_batch {}, accum_steps {}, world_size {}, global_batch {}, strategy {}, lr {} (config {})",
      all.size(), s.micro_batch, s.accum_steps, s.world_size, s.global_batch, s.strategy,
      s.lr ? fmt::format("{:.3g}", *s.lr) : std::string("none"), s.config_hash);
  return r;
}

}  // namespace gaccum::check
