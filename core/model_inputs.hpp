// What: the inputs and the target of a user's TorchScript model, as typed on the command line or
//       in a job file (docs/DESIGN.md, "A user's model"):
//   --input float:3,32,32       float tensor [b, 3, 32, 32] ~ N(0, 1)
//   --input tokens:30522:128    int64 token ids [b, 128], uniform in [0, 30522)
//   --input mask:128            int64 attention mask [b, 128]: 1 = real token, 0 = padding (HF)
//   --input pad-mask:128        bool key-padding mask [b, 128]: true = padding (torch.nn.Transformer)
//   --input-shape 3,32,32       the same as --input float:3,32,32
//   --target classes:10         output [b, 10], labels [b], cross-entropy summed over samples
//   --target regression:4       output [b, 4], N(0, 1) targets, squared error
//   --target tokens:30522       output [b, S, 30522], labels [b, S] (-100 on padding),
//                               cross-entropy summed over real tokens
//   The inputs are passed to forward() in the order given. With a mask, sample i has
//   L_i in [ceil(S/2), S] real tokens (a deterministic function of the stream seed and i), the
//   rest is padding (token id 0); without one every position is real.
// Why: one parser and one canonical text for every subcommand, the job file and the rank
//      processes; no LibTorch here, so check/ can read a job file's model section.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/units.hpp"

namespace gaccum {

enum class InputKind { floats, tokens, mask, pad_mask };

struct ModelInput {
  InputKind kind = InputKind::floats;
  std::vector<Count> shape;  // per sample
  Count vocab = 0;           // tokens only
  bool operator==(const ModelInput& o) const { return kind == o.kind && shape == o.shape && vocab == o.vocab; }
};

enum class TargetKind { classes, regression, tokens };

struct ModelTarget {
  TargetKind kind = TargetKind::classes;
  Count width = 10;  // classes, regression outputs, or the vocabulary of token targets
  bool operator==(const ModelTarget& o) const { return kind == o.kind && width == o.width; }
};

// "float:3,32,32", "tokens:1000:64", "mask:64", "pad-mask:64"; InputError naming `field`.
ModelInput parse_model_input(std::string_view text, std::string_view field);
std::string to_text(const ModelInput& in);
// The whole input list: at least one input; masks need a token input of the same sequence
// length (the last dimension); at most 8 inputs.
std::vector<ModelInput> parse_model_inputs(const std::vector<std::string>& texts, std::string_view field);

ModelTarget parse_model_target(std::string_view text, std::string_view field);
std::string to_text(const ModelTarget& t);
// A token target needs a token input; InputError naming `field` otherwise.
void check_target_fits_inputs(const ModelTarget& t, const std::vector<ModelInput>& inputs, std::string_view field);

// Sequence length of the token inputs (their last dimension), 0 when there are none.
Count sequence_length(const std::vector<ModelInput>& inputs);
bool has_mask(const std::vector<ModelInput>& inputs);

}  // namespace gaccum
