// What: the runner's reads of a model's gradients and its reference gradients (LibTorch):
//   flat copies in float64 (parameter order, undefined gradients as zeros), squared norms,
//   the exact-zero scan, FNV-1a hashes of tensors, and the two references correct accumulation
//   is compared with:
//     one pass   grad of loss_sum(samples [first, first+count)) / their loss terms, one batch;
//     micro      for a model with batch statistics or dropout: every micro-batch of window w of
//                every rank, one after another in this process, each loss sum divided by the
//                window's loss terms, summed in float64 (docs/DESIGN.md, "Batch-dependent layers").
//   check_window: rank 0's comparisons of one window (step 0 or the partial window): the synced
//   gradient vs the reference, the negative control (rank 0's gradient before its last
//   micro-step) and, for token workloads at step 0, the gradient that dividing each
//   micro-batch's mean loss by accum_steps would give (vs the reference: can the check tell the
//   two normalisations apart on this input? and vs the synced gradient: did the run make that
//   mistake?).
// Why: the checks of runner/record_checks.hpp need numbers; computing them apart from the loop
//      keeps the loop readable and the references in one place.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "runner/checks.hpp"
#include "runner/run_spec.hpp"
#include "workloads/workload.hpp"

namespace gaccum::runner {

// Tensors shaped as `params` (undefined ones as zeros) flattened to float64, parameter order.
std::vector<double> flat_double(const std::vector<torch::Tensor>& ts, const std::vector<torch::Tensor>& params);
std::vector<torch::Tensor> grads_of(const std::vector<torch::Tensor>& params);
// Elements that are not exactly zero (-0.0 counts as zero; undefined tensors hold none); no
// allocation on CPU.
Count nonzero_elements(const std::vector<torch::Tensor>& tensors);
std::string hash_tensors(const std::vector<torch::Tensor>& ts);

struct WindowChecks {
  bool micro_reference = false;  // the reference is the window's micro-batches, one by one
  GradComparison equivalence, negative;
  std::optional<GradComparison> by_k;         // token workloads, step 0: the alternative vs the reference
  std::optional<GradComparison> got_vs_by_k;  // the synced gradient vs the alternative
  Count window = 0, samples = 0, terms = 0;
  Count last_micro_samples = 0;                 // samples of the window's last micro-step, all ranks
  std::vector<std::vector<Count>> micro_terms;  // [rank][micro] loss terms (by_k only)
};

// `got`: the synced gradient; `before_last`: the gradient as the plan held it before the last
// micro-step (comm::WindowSync::full_gradients);
// `progress` is called between the reference's passes (the watchdog's beat).
WindowChecks check_window(workloads::Workload& wl, const std::vector<torch::Tensor>& params, const RunSpec& spec,
                          std::uint64_t seed, Count w, const std::vector<double>& got,
                          const std::vector<double>& before_last, bool with_by_k,
                          const std::function<void()>& progress);

}  // namespace gaccum::runner
