// What/why: see rank_agreement_c10d.hpp.
#include "check/rank_agreement_c10d.hpp"

#include "comm/communicator.hpp"

namespace gaccum::check {

std::vector<std::string> exchange_settings_c10d(const RankContext& ctx, const std::string& mine, Seconds timeout,
                                                const C10dOptions& with) {
  comm::ConnectOptions opts;
  opts.backend = with.backend;
  opts.device = with.device;
  opts.timeout = timeout;
  opts.key_prefix = "gaccum-check";
  // Names a rank that never joins (instead of Gloo's "Socket Timeout").
  opts.after_store = [&](comm::KeyValueStore& st) { comm::rendezvous(st, "check", ctx.rank, ctx.world_size, timeout); };
  auto c = comm::connect(ctx, opts);
  auto all = c->allgather_strings(mine);
  if (with.with_comm) with.with_comm(*c, all);
  c->barrier();  // rank 0 may host the store: keep it up until every rank has read
  return all;
}

}  // namespace gaccum::check
