// What: who this process is in a distributed job (rank, world_size, launcher): re-exports
//       core/rank_env.hpp into gaccum::comm, where the runner, profiler and communicator use it.
// Why: rank detection has no LibTorch dependency, so it lives in core/ (the light `gaccum-tune`
//      binary's `check` reads WORLD_SIZE / SLURM_NTASKS without linking comm/); this header keeps
//      the comm:: spelling every existing caller uses.
#pragma once

#include "core/rank_env.hpp"

namespace gaccum::comm {

using gaccum::RankContext;
using gaccum::detect_rank_context;

}  // namespace gaccum::comm
