// What: allreduce cost formulas and their fit (docs/DESIGN.md, Cost model):
//   ring          t(S, p) = 2(p-1) alpha + 2(p-1)/p * S / beta
//   hierarchical  p = n nodes x g ranks per node (n = ceil(p / g), nodes filled first):
//                   intra-node reduce-scatter  (g-1) alpha_i + (g-1)/g * S / beta_i
//                 + inter-node allreduce of the S/g shard, g rings in parallel (one NIC each)
//                                              2(n-1) alpha_e + 2(n-1)/n * (S/g) / beta_e
//                 + intra-node allgather       (g-1) alpha_i + (g-1)/g * S / beta_i
//   fit           (alpha, 1/beta) per backend and rank count by least squares on relative error
//                 (each measured time weighs as much as any other, small or large message).
// Why: the model prices every bucket of every step with these; for a fixed p both are affine
//      in S, so an AffineCost is computed once per prediction and applied per bucket.
// Units: alpha in Seconds (per ring step), beta in BytesPerSecond (bus bandwidth: what
//        nccl-tests reports as busbw for large messages), S in Bytes.
#pragma once

#include <utility>
#include <vector>

#include "core/units.hpp"

namespace gaccum::model {

struct LinkParams {
  Seconds latency = 0;            // alpha: per ring step
  BytesPerSecond bandwidth = 0;   // beta: bus bandwidth
};

// t(S) = latency + seconds_per_byte * S.
struct AffineCost {
  Seconds latency = 0;
  double seconds_per_byte = 0;
  Seconds at(Bytes s) const { return latency + seconds_per_byte * double(s); }
};

AffineCost ring_allreduce(Count world_size, LinkParams link);
inline Seconds ring_allreduce_time(Bytes size, Count world_size, LinkParams link) {
  return ring_allreduce(world_size, link).at(size);
}

// Ranks placed node by node, `gpus_per_node` per node. p <= gpus_per_node is a ring on `intra`.
AffineCost hierarchical_allreduce(Count world_size, Count gpus_per_node, LinkParams intra, LinkParams inter);

struct RingFit {
  Count world_size = 0;
  LinkParams link;
  int points = 0;
  double max_rel_residual = 0;   // max |measured - fit| / measured
  double rms_rel_residual = 0;
};

// One measured time written in the link's two unknowns:
//   t = offset + steps x alpha + bus_bytes / beta
// (ring allreduce of S at p ranks: steps 2(p-1), bus_bytes 2(p-1)/p S; reduce-scatter or
// all-gather: (p-1) and (p-1)/p S; `offset` the part priced on another, known link, e.g. the
// intra-node phases of a hierarchical allreduce when the inter-node link is fitted).
struct LinkFitRow {
  double steps = 0;
  double bus_bytes = 0;
  Seconds offset = 0;
  Seconds measured = 0;
};
struct LinkFit {
  LinkParams link;
  int points = 0;
  // How the free fit (alpha and 1/beta, two or more rows) came out, before the refits below:
  bool times_fall = false;       // 1/beta <= 0: the times do not grow with the bytes
  bool latency_clamped = false;  // 1/beta > 0 but alpha < 0: refit with alpha = 0
  bool latency_only = false;     // no positive 1/beta even then: bandwidth 1e30, a pure latency model
  double max_rel_residual = 0;   // max |measured - fit| / measured
  double rms_rel_residual = 0;
  std::vector<Seconds> fitted;   // per row, in row order
};
// Least squares on relative error (each row weighs 1/measured), alpha >= 0 (refit with alpha = 0
// when negative), beta > 0 (a pure latency model when every row is latency-bound). At least one
// row; InputError-free (the caller validates its rows).
LinkFit fit_link(const std::vector<LinkFitRow>& rows);

// Least-squares fit of the ring model to (bytes, seconds) measured at `world_size` >= 2 with
// weights 1/t (relative error). alpha is clamped at 0 (refit with alpha = 0 when negative).
// Needs at least one point; with one point alpha = 0.
RingFit fit_ring(Count world_size, const std::vector<std::pair<Bytes, Seconds>>& points);

}  // namespace gaccum::model
