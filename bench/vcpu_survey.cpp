// What: a survey of this machine's cores over time. For `seconds` seconds the process pins itself
//       to each usable core in turn and takes readings of the reference kernel (core/canary.hpp:
//       128x128 fp32 products; here the median repetition of each reading, so a slow stretch
//       shows even when one repetition ran fast), then reports each core-second's median against
//       the fastest core-second: the share of core-seconds that ran more than 1.2x and 1.5x
//       slower, and the slowest. Nothing else should run meanwhile (it measures the machine, not
//       a load).
// Why: on this project's reference VM a core runs at half speed for about a second at a time, one
//      core at a time, several times a minute, with no steal in /proc/stat (docs/DESIGN.md,
//      "Measurement quality"). A profile point or a short run that falls into such a second is
//      off by up to 2x; the accuracy and sharded benchmarks record this survey beside their
//      numbers, so a reader sees how steady the machine was.
// Usage: vcpu_survey [seconds=20] [--json FILE]. Prints a summary line and one line per second;
//        the JSON (written atomically) holds both. Exit 0, or 2 on bad arguments.
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/atomic_file.hpp"
#include "core/canary.hpp"
#include "core/host.hpp"
#include "core/profile.hpp"

namespace {

bool pin(int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  return sched_setaffinity(0, sizeof(set), &set) == 0;
}

}  // namespace

int main(int argc, char** argv) {
  int seconds = 20;
  std::string json_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--json" && i + 1 < argc) {
      json_path = argv[++i];
    } else if (!a.empty() && a.find_first_not_of("0123456789") == std::string::npos && std::atoi(a.c_str()) > 0) {
      seconds = std::atoi(a.c_str());
    } else {
      std::fprintf(stderr, "error: vcpu_survey: unknown argument '%s' (usage: vcpu_survey [seconds] [--json FILE])\n",
                   a.c_str());
      return 2;
    }
  }
  const std::vector<int> cores = gaccum::usable_core_ids();
  if (cores.empty()) {
    std::fprintf(stderr, "error: vcpu_survey: no usable cores (sched_getaffinity failed)\n");
    return 2;
  }
  // table[s][c]: the median of core c's readings in second s, seconds per repetition.
  std::vector<std::vector<double>> table;
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  for (int s = 0; s < seconds; ++s) {
    std::vector<std::vector<double>> readings(cores.size());
    while (elapsed() < s + 1)
      for (std::size_t c = 0; c < cores.size(); ++c)
        if (pin(cores[c])) readings[c].push_back(gaccum::run_canary().median);
    std::vector<double> row;
    for (auto& r : readings) row.push_back(gaccum::TimingStats::from_samples(r).median);
    table.push_back(row);
  }
  cpu_set_t all;
  CPU_ZERO(&all);
  for (int c : cores) CPU_SET(c, &all);
  sched_setaffinity(0, sizeof(all), &all);

  double fastest = 0;
  for (const auto& row : table)
    for (double v : row)
      if (v > 0 && (fastest == 0 || v < fastest)) fastest = v;
  int over12 = 0, over15 = 0, total = 0;
  double worst = 1;
  nlohmann::json rows = nlohmann::json::array();
  std::string lines;
  for (std::size_t s = 0; s < table.size(); ++s) {
    lines += std::to_string(s) + " s:";
    nlohmann::json jr = nlohmann::json::array();
    for (std::size_t c = 0; c < table[s].size(); ++c) {
      const double ratio = fastest > 0 ? table[s][c] / fastest : 0;
      ++total;
      over12 += ratio > 1.2;
      over15 += ratio > 1.5;
      worst = std::max(worst, ratio);
      char buf[48];
      std::snprintf(buf, sizeof(buf), "  core %d %.2fx", cores[c], ratio);
      lines += buf;
      jr.push_back(ratio);
    }
    lines += "\n";
    rows.push_back(jr);
  }
  std::printf("vcpu survey: %d s, %zu cores (%s): %d of %d core-seconds > 1.2x slower than the fastest, %d > 1.5x; "
              "slowest %.2fx\n%s",
              seconds, cores.size(), gaccum::canary_kernel().c_str(), over12, total, over15, worst, lines.c_str());
  if (!json_path.empty()) {
    const nlohmann::json j = {{"seconds", seconds},     {"cores", cores},           {"kernel", gaccum::canary_kernel()},
                              {"fastest_s", fastest},   {"core_seconds", total},    {"over_1_2x", over12},
                              {"over_1_5x", over15},    {"slowest_ratio", worst},   {"ratios", rows}};
    gaccum::write_file_atomic(json_path, j.dump(1) + "\n");
  }
  return 0;
}
