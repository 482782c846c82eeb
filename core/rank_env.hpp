// What: who this process is in a distributed job: rank, world_size, local rank, rendezvous
//       address, and which launcher started it (our own `--nproc` launcher, torchrun, Slurm,
//       mpirun, or none).
// Why: `validate` and `check --distributed` run unchanged under the cluster's own launcher
//      (docs/DESIGN.md, Runner: launch); the variables each launcher sets are read in one place.
//      In core/ (no LibTorch) so the light binary's `check` reads WORLD_SIZE / SLURM_NTASKS too;
//      comm/rank_env.hpp re-exports it as gaccum::comm::RankContext / detect_rank_context.
//   torchrun : RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT, GROUP_RANK
//              (the node's rank; NODE_RANK is read too, as launch scripts set it)
//   Slurm    : SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, SLURM_NTASKS_PER_NODE, SLURM_NODEID; MASTER_ADDR/PORT
//              from the environment (runner/MULTINODE.md's sbatch script exports them)
//   mpirun   : OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK (Open MPI) or PMI_RANK/PMI_SIZE (MPICH)
//   local    : our launcher sets RANK/WORLD_SIZE/... and GACCUM_STORE=launcher
#pragma once

#include <string>

namespace gaccum {

struct RankContext {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int local_world_size = 1;
  int node_rank = -1;              // GROUP_RANK (torchrun), NODE_RANK, SLURM_NODEID; -1 unknown
  std::string master_addr = "127.0.0.1";
  int master_port = 0;
  std::string launcher = "none";   // none | local | torchrun | slurm | mpirun
  // True when the TCPStore server runs outside the ranks (our launcher, or torchrun's agent
  // with TORCHELASTIC_USE_AGENT_STORE=True); otherwise rank 0 hosts it.
  bool store_hosted_externally = false;
  bool distributed() const { return launcher != "none"; }
};

// Reads the environment. InputError naming the variable when one is present but malformed
// (e.g. RANK without WORLD_SIZE, RANK >= WORLD_SIZE, MASTER_PORT not a port).
// need_rendezvous = false: a missing MASTER_PORT is not an error (master_port stays 0), for
// callers that only want the rank and world size (e.g. `check` without --distributed under a
// Slurm allocation that exports no MASTER_PORT).
RankContext detect_rank_context(bool need_rendezvous = true);

}  // namespace gaccum
