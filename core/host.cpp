// What/why: see host.hpp.
#include "core/host.hpp"

#include <sched.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/canary.hpp"
#include "core/json_fields.hpp"

namespace gaccum {

std::vector<int> usable_core_ids() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> ids;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return ids;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) ids.push_back(c);
  return ids;
}

int usable_cores() {
  const auto ids = usable_core_ids();
  if (!ids.empty()) return static_cast<int>(ids.size());
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

Count default_cpu_max_ranks(int cpu_cores) {
  const Count limit = std::clamp(cpu_cores, 1, 4);
  Count p = 1;
  while (p * 2 <= limit) p *= 2;
  return p;
}

int default_threads_per_rank(int cpu_cores, Count most_ranks_on_host) {
  const Count most = std::max<Count>(1, most_ranks_on_host);
  return std::max(1, static_cast<int>(static_cast<Count>(std::max(1, cpu_cores)) / most));
}

namespace {

double seconds(const timeval& t) {
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) * 1e-6;
}

double own_cpu() {
  double s = 0;
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) == 0) s += seconds(u.ru_utime) + seconds(u.ru_stime);
  if (getrusage(RUSAGE_CHILDREN, &u) == 0) s += seconds(u.ru_utime) + seconds(u.ru_stime);
  return s;
}

}  // namespace

MachineActivity::MachineActivity() : canary_before_(run_canary().min), start_(sample()) {}

MachineActivity::Sample MachineActivity::sample() {
  Sample s;
  s.own = own_cpu();
  s.wall = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  double load[1] = {0};
  if (getloadavg(load, 1) == 1) s.load = load[0];
  std::ifstream in("/proc/stat");
  std::string line;
  if (in && std::getline(in, line) && line.rfind("cpu ", 0) == 0) {
    // cpu user nice system idle iowait irq softirq steal guest guest_nice (clock ticks; guest
    // time is already inside user).
    std::istringstream fields(line.substr(4));
    double v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (double& x : v) fields >> x;
    const double tick = static_cast<double>(std::max(1L, sysconf(_SC_CLK_TCK)));
    s.busy = (v[0] + v[1] + v[2] + v[5] + v[6]) / tick;
    s.steal = v[7] / tick;
    s.total = (v[0] + v[1] + v[2] + v[3] + v[4] + v[5] + v[6] + v[7]) / tick;
  }
  return s;
}

PhaseConditions MachineActivity::stop(const std::string& phase) const {
  const Sample end = sample();
  PhaseConditions c;
  c.phase = phase;
  c.wall = std::max(0.0, end.wall - start_.wall);
  c.load_before = start_.load;
  c.load_after = end.load;
  if (c.wall > 0 && end.total > start_.total) {
    // /proc/stat counts in 10 ms ticks: a phase of a few seconds reads busy to within ~1%.
    const double others = (end.busy - start_.busy) - (end.own - start_.own);
    c.others_cores = std::max(0.0, others / c.wall);
    c.steal = std::max(0.0, (end.steal - start_.steal) / (end.total - start_.total));
  }
  const CanaryReading after = run_canary();
  c.canary_before = canary_before_;
  c.canary_after = after.min;
  c.canary_kernel = canary_kernel();
  c.disturbed = is_disturbed(c);
  return c;
}

double canary_drift(const PhaseConditions& c) {
  if (c.canary_before <= 0 || c.canary_after <= 0) return 0;
  return std::max(c.canary_after / c.canary_before, c.canary_before / c.canary_after);
}

Seconds canary_reading(const PhaseConditions& c) {
  if (c.canary_before <= 0 || c.canary_after <= 0) return 0;
  return 0.5 * (c.canary_before + c.canary_after);
}

void compare_canary(PhaseConditions& c, Seconds reference) {
  const Seconds mine = canary_reading(c);
  c.canary_vs_reference = reference > 0 && mine > 0 ? mine / reference : 0;
  c.disturbed = is_disturbed(c);
}

Seconds canary_reference(const std::vector<PhaseConditions>& phases, const std::string& kernel) {
  Seconds quiet = 0, any = 0;
  for (const auto& c : phases) {
    const Seconds r = canary_reading(c);
    if (r <= 0 || c.canary_kernel != kernel) continue;
    if (any <= 0 || r < any) any = r;
    if (!c.disturbed && (quiet <= 0 || r < quiet)) quiet = r;
  }
  return quiet > 0 ? quiet : any;
}

namespace {

// The canary's two disturbance rules (kDisturbedCanary), shared by the verdict and its description.
bool canary_drifted(const PhaseConditions& c) {
  return canary_drift(c) > 1 + kDisturbedCanary;
}
bool canary_moved(const PhaseConditions& c) {
  const double vs = c.canary_vs_reference;
  return vs > 0 && (vs > 1 + kDisturbedCanary || vs < 1 / (1 + kDisturbedCanary));
}

}  // namespace

bool is_disturbed(const PhaseConditions& c) {
  return c.others_cores > kDisturbedOthersCores || c.steal > kDisturbedSteal || canary_drifted(c) || canary_moved(c);
}

std::string describe_disturbance(const PhaseConditions& c) {
  // The reasons that apply, else the activity seen (a caller may describe a phase that passed).
  const bool others = c.others_cores > kDisturbedOthersCores, steal = c.steal > kDisturbedSteal;
  const bool drift = canary_drifted(c), moved = canary_moved(c);
  const double vs = c.canary_vs_reference;
  std::vector<std::string> parts;
  if (others || !(steal || drift || moved))
    parts.push_back(fmt::format("other processes kept {:.2f} cores busy", c.others_cores));
  if (steal || c.steal > 0.005)
    parts.push_back(fmt::format("the hypervisor stole {:.1f}% of the CPU time", 100 * c.steal));
  if (drift)
    parts.push_back(fmt::format("the reference kernel took {:.2f}x as long after the phase as before ({} -> {})",
                                c.canary_after / c.canary_before, format_seconds(c.canary_before),
                                format_seconds(c.canary_after)));
  if (moved)
    parts.push_back(fmt::format("the reference kernel took {:.2f}x its reference time ({} vs {}: one core ran {})", vs,
                                format_seconds(canary_reading(c)), format_seconds(canary_reading(c) / vs),
                                vs > 1 ? "slower" : "faster"));
  std::string s;
  for (std::size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
  return s + fmt::format(" (load average {:.2f} -> {:.2f})", c.load_before, c.load_after);
}

nlohmann::json to_json(const PhaseConditions& c) {
  nlohmann::json j = {{"phase", c.phase},           {"attempt", c.attempt},
                      {"wall_s", c.wall},           {"load_before", c.load_before},
                      {"load_after", c.load_after}, {"others_cores", c.others_cores},
                      {"steal", c.steal},           {"disturbed", c.disturbed}};
  if (c.canary_before > 0 || c.canary_after > 0) {
    j["canary"] = {{"kernel", c.canary_kernel}, {"before_s", c.canary_before}, {"after_s", c.canary_after}};
    if (c.canary_vs_reference > 0) j["canary"]["vs_reference"] = c.canary_vs_reference;
  }
  return j;
}

PhaseConditions phase_conditions_from_json(const nlohmann::json& j, const std::string& path) {
  JsonFields f(j, path);
  PhaseConditions c;
  c.phase = f.str("phase");
  c.attempt = static_cast<int>(f.has("attempt") ? f.positive("attempt") : 1);
  c.wall = f.num("wall_s");
  c.load_before = f.num("load_before");
  c.load_after = f.num("load_after");
  c.others_cores = f.num("others_cores");
  c.steal = f.num("steal");
  c.disturbed = f.boolean("disturbed");
  if (const nlohmann::json* k = f.opt_object("canary")) {
    JsonFields cf(*k, f.child("canary"));
    c.canary_kernel = cf.str("kernel");
    c.canary_before = cf.num("before_s");
    c.canary_after = cf.num("after_s");
    c.canary_vs_reference = cf.has("vs_reference") ? cf.num("vs_reference") : 0;
  }
  return c;
}

}  // namespace gaccum
