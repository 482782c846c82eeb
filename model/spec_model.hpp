// What: the cost model of an analytic transformer spec (spec.json) on a described cluster, for
//       models no local machine can run (DESIGN.md, Workloads; formulas in model/transformer.hpp).
//   memory     weights + gradients (dtype bytes per parameter), optimizer state (fp32 master
//              weights for fp16/bf16 + Adam's two fp32 moments or SGD's momentum), comm buffers
//              (gradient bytes when world_size > 1), activations (Korthikanti et al. 2022 with
//              the spec's dtype and checkpointing mode)
//   compute    t(b) = training FLOPs / (device peak FLOP/s x MFU); backward = all but the forward
//   optimizer  memory traffic of one fused update at the device's memory bandwidth:
//              per parameter 2e (read grad, zero it) + 8 (read/write the fp32 weight or master)
//              + 8 per fp32 state slot + e (write the low-precision weight when mixed)
//   copies     kSyncCopyPasses passes over the gradient bytes at the memory bandwidth
//   allreduce  the cluster's hierarchical model on the DDP buckets of the spec's tensors;
//              overlap efficiency 1 (NCCL on its own stream)
//   No measurement spread: the band equals the estimate.
// Spec file (strict; unknown keys other than "_source", "comment", "_*" are errors):
//   {"schema": "gaccum-tune/spec", "name": "gpt2-small", "layers": 12, "hidden": 768,
//    "heads": 12, "seq_len": 1024, "vocab": 50257, "dtype": "bf16", "optimizer": "adam",
//    "activation_checkpointing": "none", "ffn_hidden": 3072, "tied_embeddings": true,
//    "dropout": true, "mean_tokens_per_sample": 1024}
//   dtype: fp16 | bf16 | fp32 (float16, bfloat16, float32 accepted); optimizer: adam | adamw |
//   sgd (momentum); activation_checkpointing: none | selective | full (true = full, false = none).
// Why: same Prediction type, same tuner downstream.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "model/cluster.hpp"
#include "model/cost_model.hpp"
#include "model/transformer.hpp"

namespace gaccum::model {

struct TransformerSpec {
  std::string name;
  Count layers = 0, hidden = 0, heads = 0, seq_len = 0, vocab = 0;
  Count ffn_hidden = 0;                 // 0: 4 x hidden
  std::string dtype = "bf16";           // fp16 | bf16 | fp32
  std::string optimizer = "adam";       // adam | adamw | sgd
  Recompute activation_checkpointing = Recompute::none;
  bool tied_embeddings = true;
  bool learned_positions = true;
  bool dropout = true;
  double mean_tokens_per_sample = 0;    // real tokens per sample; 0: seq_len
  std::string source;

  TransformerShape shape() const;
  double element_bytes() const;         // 2 for fp16/bf16, 4 for fp32
  bool mixed_precision() const { return element_bytes() < 4; }
  int optimizer_slots() const;          // fp32 state elements per parameter: adam 2, sgd 1
};

TransformerSpec spec_from_json(const nlohmann::json& j, const std::string& what);
TransformerSpec load_spec(const std::string& path);

// InputError when the cluster lacks device.peak_tflops or mfu is not in (0, 1].
std::unique_ptr<CostModel> make_spec_model(const TransformerSpec& spec, const Cluster& cluster, double mfu);

}  // namespace gaccum::model
