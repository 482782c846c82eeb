// What: facts about this host that the profiler and the runner must agree on, and a monitor of
//       what the rest of the machine did while something was being timed.
//   usable_cores()              CPUs this process may run on (sched_getaffinity)
//   usable_core_ids()           their ids (what a survey pins itself to in turn)
//   default_threads_per_rank()  the one threads-per-rank rule: max(1, cores / most ranks on
//                               the host); `profile` applies it to its largest rank count, the
//                               runner (validate without --profile) to the same rank counts, so
//                               a profile and a run are comparable
//   MachineActivity             /proc/stat and getrusage around a phase: how many cores other
//                               processes kept busy (others_cores), the hypervisor's steal share,
//                               and the 1-minute load average before and after
// Why: timings taken beside other work measure that work, not the model (issue 16). The numbers
//      a profile or a run records about its machine are what lets a reader, the cost model and
//      the accuracy benchmark tell a disturbed measurement from a model error.
// Units: others_cores is CPU seconds of processes outside this one and its reaped children per
//        wall second (1.0 = one core kept busy); steal is a share of all CPU time (0..1).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.hpp"

namespace gaccum {

int usable_cores();
// The ids of the CPUs this process may run on, ascending (empty when sched_getaffinity fails).
std::vector<int> usable_core_ids();
// CPU: the largest rank count `profile` measures by default, min(cores, 4) rounded down to a
// power of two (one compute rank per core).
Count default_cpu_max_ranks(int cpu_cores);
int default_threads_per_rank(int cpu_cores, Count most_ranks_on_host);
// The most torch threads a rank may ask for (--threads-per-rank of profile and validate): far
// above any core count a host has, small enough that every rank's thread pool can be created
// (99999 threads per rank made `profile` spin instead of measuring).
inline constexpr Count kMaxThreadsPerRank = 1024;
inline constexpr const char* kMaxThreadsPerRankText = "1024";

// What the machine did during one measured phase.
struct PhaseConditions {
  std::string phase;  // e.g. "world_size 2 group", "validate"
  int attempt = 1;    // 2: the phase was measured again after a disturbance
  Seconds wall = 0;
  double load_before = 0, load_after = 0;  // 1-minute load average
  double others_cores = 0;                 // cores other processes kept busy on average
  double steal = 0;                        // share of CPU time stolen by the hypervisor
  // The reference kernel (core/canary.hpp) just before and just after the phase, seconds per
  // repetition (0: not measured), and the kernel's identity; readings of another kernel do not compare.
  Seconds canary_before = 0, canary_after = 0;
  std::string canary_kernel;
  // This phase's canary over a reference reading of the same machine (the profile's first phase;
  // for a validate run, the profile it is compared with): 1.3 = one core ran 30% slower. 0: not compared.
  double canary_vs_reference = 0;
  bool disturbed = false;  // others_cores, steal or the canary beyond the thresholds below
};

// A phase counts as disturbed when other processes kept more than a quarter of a core busy on
// average, or the hypervisor stole more than 5% of the CPU time. Measured on this 2-core VM at
// rest: others_cores 0.00-0.03, steal < 0.5%.
inline constexpr double kDisturbedOthersCores = 0.25;
inline constexpr double kDisturbedSteal = 0.05;
// ...or the canary moved by more than this: after vs before the phase, or the phase vs the
// reference reading. Above what this 2-core VM does at rest (readings up to 1.42x the fastest,
// core/canary.hpp): a core running half as fast, as once moved a stretch of a profile, is caught;
// the machine's own mode switches are recorded but are not a disturbance.
inline constexpr double kDisturbedCanary = 0.5;

// max(after/before, before/after) of the phase's canary (1: unchanged), 0 when not measured.
double canary_drift(const PhaseConditions& c);
// The phase's canary, the mean of before and after (0: not measured).
Seconds canary_reading(const PhaseConditions& c);
// Sets canary_vs_reference = canary_reading(c) / reference and recomputes disturbed.
void compare_canary(PhaseConditions& c, Seconds reference);
// The reference reading of a set of phases (a profile's conditions): the fastest canary reading
// among the undisturbed phases measured with `kernel`, else among all of them (every phase was
// disturbed); 0 when no phase has a reading of `kernel`.
Seconds canary_reference(const std::vector<PhaseConditions>& phases, const std::string& kernel);
// The disturbance rule above, applied to c's numbers.
bool is_disturbed(const PhaseConditions& c);

// One line: "other processes kept 0.82 cores busy, load 1.9 -> 2.4" (what disturbed a phase).
std::string describe_disturbance(const PhaseConditions& c);

nlohmann::json to_json(const PhaseConditions& c);
PhaseConditions phase_conditions_from_json(const nlohmann::json& j, const std::string& path);

// Start at construction (after a canary reading), stop() once (then a second reading). The caller's children must have been reaped before stop()
// (their CPU time is counted as this job's through RUSAGE_CHILDREN). Where /proc/stat is missing
// (not Linux) others_cores and steal read 0.
class MachineActivity {
 public:
  MachineActivity();
  PhaseConditions stop(const std::string& phase) const;

 private:
  struct Sample {
    double busy = 0, steal = 0, total = 0;  // /proc/stat "cpu" line, seconds summed over CPUs
    double own = 0;                         // this process + reaped children, CPU seconds
    double wall = 0;                        // steady clock, seconds
    double load = 0;
  };
  static Sample sample();
  Seconds canary_before_;  // read first: the kernel's own time is not part of the phase
  Sample start_;
};

}  // namespace gaccum
