// What/why: the scaling rules of lr_advice.hpp, one formula each.
#include "tuner/lr_advice.hpp"

#include <cmath>

#include <fmt/format.h>

namespace gaccum::tuner {

LrAdvice recommend_lr(const std::optional<LrReference>& ref, Optimizer optimizer, Count global_batch,
                      std::optional<Count> dataset_size) {
  LrAdvice a;
  a.optimizer = optimizer;
  a.global_batch = global_batch;
  if (!ref) {
    a.text = fmt::format(
        "no learning-rate reference: pass --lr-ref LR@BATCH (e.g. 3e-4@256) to get the learning rate "
        "for global_batch {}",
        global_batch);
    return a;
  }
  a.available = true;
  a.lr_ref = ref->lr;
  a.batch_ref = ref->global_batch;
  const double growth = double(global_batch) / double(ref->global_batch);
  a.rule = std::string(to_string(traits(optimizer).lr_rule));
  if (traits(optimizer).lr_rule == LrRule::linear) {
    a.rule_source = "Goyal et al. 2017";
    a.scale = growth;
  } else {
    a.rule_source = "Hoffer et al. 2017; Malladi et al. 2022";
    a.scale = std::sqrt(growth);
  }
  a.lr = ref->lr * a.scale;
  a.warmup = growth > kWarmupGrowth;
  a.text = fmt::format(
      "lr {:.3g} for global_batch {} ({} scaling for {}, {}: {:.3g} x {}{}/{}{} = "
      "{:.3g} x {:.3g})",
      a.lr, global_batch, a.rule, to_string(optimizer), a.rule_source, a.lr_ref, a.rule == "linear" ? "" : "sqrt(", global_batch,
      a.batch_ref, a.rule == "linear" ? "" : ")", a.lr_ref, a.scale);
  if (a.warmup) {
    a.warmup_epochs = kWarmupEpochs;
    if (dataset_size) {
      a.warmup_steps = static_cast<Count>(std::ceil(kWarmupEpochs * double(*dataset_size) / double(global_batch)));
      a.text += fmt::format(
          "; B grows {:.3g}x over {}: warm up linearly from {:.3g} to {:.3g} over ~{:g} epochs = {} "
          "steps (Goyal et al. 2017)",
          growth, a.batch_ref, a.lr_ref, a.lr, kWarmupEpochs, *a.warmup_steps);
    } else {
      a.text += fmt::format(
          "; B grows {:.3g}x over {}: warm up linearly from {:.3g} to {:.3g} over ~{:g} epochs "
          "(Goyal et al. 2017; --dataset-size gives it in steps)",
          growth, a.batch_ref, a.lr_ref, a.lr, kWarmupEpochs);
    }
  }
  return a;
}

}  // namespace gaccum::tuner
