// What: the learning rate for the chosen global batch B from a reference (lr_ref at B_ref):
//         SGD:                 lr = lr_ref x B / B_ref          (linear scaling, Goyal et al. 2017)
//         Adam, AdamW, LAMB:   lr = lr_ref x sqrt(B / B_ref)    (square-root scaling, Hoffer et al.
//                                                               2017; Malladi et al. 2022)
//       with a warm-up suggestion when B grows more than 8x over B_ref: linear warm-up from lr_ref
//       to lr over ~5 epochs (Goyal et al. 2017), in steps when the dataset size is known.
// Why: changing B without changing the learning rate silently changes the training run; the
//      report names the rule so the user can disagree with it.
#pragma once

#include <optional>
#include <string>

#include "core/optimizer.hpp"
#include "core/units.hpp"
#include "tuner/tune_request.hpp"

namespace gaccum::tuner {

struct LrAdvice {
  bool available = false;  // false without --lr-ref
  Optimizer optimizer = Optimizer::adam;
  std::string rule;         // "linear" or "square-root" (to_string of its LrRule)
  std::string rule_source;  // the paper the rule comes from
  double lr_ref = 0;
  Count batch_ref = 0;
  Count global_batch = 0;
  double scale = 1;  // lr / lr_ref
  double lr = 0;
  bool warmup = false;                // B / B_ref > 8
  double warmup_epochs = 0;           // 5 when warmup
  std::optional<Count> warmup_steps;  // ceil(warmup_epochs x dataset_size / B)
  std::string text;                   // one sentence for reports
};

// B > 0; the rule is traits(optimizer).lr_rule (core/optimizer.hpp).
LrAdvice recommend_lr(const std::optional<LrReference>& ref, Optimizer optimizer, Count global_batch,
                      std::optional<Count> dataset_size);

inline constexpr double kWarmupGrowth = 8.0;  // warm up when B / B_ref exceeds this
inline constexpr double kWarmupEpochs = 5.0;

}  // namespace gaccum::tuner
