// What: the reference kernel ("canary"): a fixed single-threaded fp32 loop in plain C++ (no
//       LibTorch, no threads), timed before and after every measured phase (MachineActivity in
//       core/host.hpp: each profile rank group, each validate run). Its median time is the speed
//       of one core of this machine at that moment.
// Why: other processes and the hypervisor's steal are visible in /proc/stat, but a core that runs
//      slower for reasons the counters do not show (a busy hyperthread sibling, a noisy neighbour
//      VM, frequency or thermal limits) is not: it moved a whole stretch of a profile by 2x once
//      (docs/DESIGN.md, "Measurement quality"). The same kernel, timed in the profile and in
//      the run, says whether the machine ran at the same speed in both; before vs after a phase,
//      whether it changed during it.
// Units: seconds per repetition (one repetition = kCanaryMatmuls products of 128x128 fp32
//        matrices, about 0.5 ms each on this project's 2-core VM; 192 KiB of operands, so each
//        product streams one from L2). A reading is the fastest of kCanaryReps repetitions (about
//        30 ms): the speed the core reached in that window. Readings are comparable only between
//        builds with the same kernel string (the size and the compiler are part of it).
// Measured (2026-12-03, this VM at rest, bench/vcpu_survey pinning itself to each core in turn):
//        a core runs up to 2.2x slower for about a second at a time, one core at a time, in 15 of
//        60 core-seconds, with no steal; the earlier 64x64 kernel (48 KiB, L1/L2-resident) read
//        within 1.2x in the same seconds (0 of 60 slower), so it missed what slows a micro-step.
#pragma once

#include <string>

#include "core/units.hpp"

namespace gaccum {

inline constexpr int kCanaryN = 128;
inline constexpr int kCanaryMatmuls = 2;
inline constexpr int kCanaryReps = 31;

struct CanaryReading {
  Seconds min = 0;     // the reading: the fastest of kCanaryReps repetitions (0: not measured)
  Seconds median = 0;  // of the repetitions: how much of the window ran slower
};

// The kernel's identity: "matmul 128x128 fp32 x2, 1 thread, <compiler>".
const std::string& canary_kernel();

// Times the kernel kCanaryReps times on the calling thread (about 30 ms) after one untimed
// repetition.
CanaryReading run_canary();

// Keeps the calling thread busy for at least `s` seconds (whole 64x64 products,
// about 33 us each; nothing when s <= 0): the compute a collective follows in a training step,
// without LibTorch or threads (profiler/probe.hpp kCommGap).
void busy_for(Seconds s);

// b / a, the slowdown from reading a to reading b (1.0: the same speed); 0 when either is missing.
double canary_ratio(Seconds a, Seconds b);

}  // namespace gaccum
