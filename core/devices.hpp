// What: the one rule for placing ranks on GPUs, shared by `profile` (its rank plan and the
//       launched profile) and `validate` (local launch and under torchrun/Slurm): one process per
//       GPU, so `ranks_on_host` ranks need that many visible devices.
// Why: without it a second rank on one H200 asks for cuda:1 and waits for the timeout, or NCCL
//      refuses two ranks on one device with an error far from the cause.
// Errors: InputError "<field>: N ranks on this host need N GPUs (one process per GPU); G visible:
//         <fix>".
#pragma once

#include <string_view>

#include "core/units.hpp"

namespace gaccum {

void require_gpu_per_rank(Count ranks_on_host, int visible_gpus, std::string_view field, std::string_view fix);

}  // namespace gaccum
