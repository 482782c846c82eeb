// What/why: see rank_env.hpp.
#include "core/rank_env.hpp"

#include <cstdlib>
#include <optional>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/parse.hpp"

namespace gaccum {
namespace {

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

int env_int(const char* name, int min_value) {
  auto v = env(name);
  if (!v) throw InputError(fmt::format("environment: {} is not set", name));
  if (*v == "0" && min_value == 0) return 0;
  Count c;
  try {
    c = parse_positive_count(*v, fmt::format("environment {}", name));
  } catch (const InputError&) {
    throw InputError(fmt::format("environment: {}='{}' is not a valid integer (>= {})", name, *v, min_value));
  }
  if (c > (1 << 24)) throw InputError(fmt::format("environment: {}='{}' is out of range", name, *v));
  return static_cast<int>(c);
}

// An optional variable (LOCAL_RANK, SLURM_LOCALID, ...): min_value when unset.
int env_int_or_min(const char* name, int min_value) { return env(name) ? env_int(name, min_value) : min_value; }

}  // namespace

RankContext detect_rank_context(bool need_rendezvous) {
  RankContext ctx;
  if (env("RANK") || env("WORLD_SIZE")) {
    ctx.rank = env_int("RANK", 0);
    ctx.world_size = env_int("WORLD_SIZE", 1);
    ctx.local_rank = env_int_or_min("LOCAL_RANK", 0);
    ctx.local_world_size = env_int_or_min("LOCAL_WORLD_SIZE", 1);
    if (env("GROUP_RANK")) ctx.node_rank = env_int("GROUP_RANK", 0);
    else if (env("NODE_RANK")) ctx.node_rank = env_int("NODE_RANK", 0);
    auto store = env("GACCUM_STORE");
    if (store && *store == "launcher") {
      ctx.launcher = "local";
      ctx.store_hosted_externally = true;
    } else {
      ctx.launcher = env("TORCHELASTIC_RUN_ID") ? "torchrun" : "env";
      auto agent = env("TORCHELASTIC_USE_AGENT_STORE");
      ctx.store_hosted_externally = agent && (*agent == "True" || *agent == "true" || *agent == "1");
    }
  } else if (env("SLURM_PROCID") && env("SLURM_NTASKS")) {
    ctx.launcher = "slurm";
    ctx.rank = env_int("SLURM_PROCID", 0);
    ctx.world_size = env_int("SLURM_NTASKS", 1);
    ctx.local_rank = env_int_or_min("SLURM_LOCALID", 0);
    ctx.local_world_size = env_int_or_min("SLURM_NTASKS_PER_NODE", 1);
    if (env("SLURM_NODEID")) ctx.node_rank = env_int("SLURM_NODEID", 0);
  } else if (env("OMPI_COMM_WORLD_RANK")) {
    ctx.launcher = "mpirun";
    ctx.rank = env_int("OMPI_COMM_WORLD_RANK", 0);
    ctx.world_size = env_int("OMPI_COMM_WORLD_SIZE", 1);
    ctx.local_rank = env_int_or_min("OMPI_COMM_WORLD_LOCAL_RANK", 0);
    ctx.local_world_size = env_int_or_min("OMPI_COMM_WORLD_LOCAL_SIZE", 1);
  } else if (env("PMI_RANK")) {
    ctx.launcher = "mpirun";
    ctx.rank = env_int("PMI_RANK", 0);
    ctx.world_size = env_int("PMI_SIZE", 1);
  } else {
    return ctx;  // not distributed
  }
  if (ctx.rank >= ctx.world_size)
    throw InputError(fmt::format("environment: rank {} is not below world size {} ({} launcher)", ctx.rank,
                                 ctx.world_size, ctx.launcher));
  if (auto addr = env("MASTER_ADDR")) ctx.master_addr = *addr;
  if (env("MASTER_PORT")) {
    ctx.master_port = env_int("MASTER_PORT", 1);
    if (ctx.master_port > 65535) throw InputError("environment: MASTER_PORT must be a TCP port (1-65535)");
  } else if (ctx.world_size > 1 && need_rendezvous) {
    throw InputError(fmt::format("environment: MASTER_PORT is not set; the {} launcher must export MASTER_ADDR and "
                                 "MASTER_PORT (see runner/MULTINODE.md)",
                                 ctx.launcher));
  }
  return ctx;
}

}  // namespace gaccum
