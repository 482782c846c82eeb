// What: a prediction for recomputing a fraction f of the layers' activations (Megatron-LM/NeMo's
//       block method: N of a chunk's layers; torchtitan's every n-th layer: 1/n), made of the
//       predictions for recomputing every layer (`full`) and none (`none`) of the same config.
//       Activations, per-stage memory and peak, compute, bubble and step time are placed f of the
//       way from none to full (activations and recompute time are sums over layers of each kind;
//       the one layer's recompute buffer, which full holds whole, is under-counted by (1 - f) of
//       it); throughput, tokens/s, model FLOP/s and MFU scale with the step's new length.
// Why: check prices such a job and tune says what it would gain from one; one implementation.
// Units: Bytes, Seconds (as Prediction).
#pragma once

#include "model/prediction.hpp"

namespace gaccum::model {

// f in [0, 1]: 0 is `none`, 1 is `full` (returned as given).
Prediction mix_recompute(Prediction full, const Prediction& none, double f);

}  // namespace gaccum::model
