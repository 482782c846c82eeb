// What/why: see model_inputs.hpp. Every error is one line naming the field, the value and a
// valid example.
#include "core/model_inputs.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/checked.hpp"
#include "core/error.hpp"
#include "core/parse.hpp"

namespace gaccum {
namespace {

// Elements per sample of one input: far above any real model's sample (a 4K x 4K RGB image is
// 2^25.6), small enough that b x elements stays exact for every accepted micro_batch.
constexpr Count kMaxSampleElements = Count(1) << 30;
constexpr std::size_t kMaxInputs = 8;

std::vector<Count> parse_shape(std::string_view text, std::string_view field, std::string_view whole) {
  if (text.empty())
    throw InputError(fmt::format("{}: '{}' has no shape; e.g. float:3,32,32 or tokens:1000:64", field, whole));
  auto shape = parse_count_list(text, field);
  Count n = 1;
  for (Count d : shape) {
    auto m = checked_mul(n, d);
    if (!m || *m > kMaxSampleElements)
      throw InputError(fmt::format("{}: '{}' has more than 2^30 elements per sample", field, whole));
    n = *m;
  }
  return shape;
}

[[noreturn]] void bad_input(std::string_view field, std::string_view text) {
  throw InputError(fmt::format("{}: invalid value '{}': expected float:D1,D2,... , tokens:VOCAB:SEQ, mask:SEQ or "
                               "pad-mask:SEQ (e.g. float:3,32,32 or tokens:30522:128)",
                               field, text));
}

}  // namespace

ModelInput parse_model_input(std::string_view text, std::string_view field) {
  const auto colon = text.find(':');
  if (colon == std::string_view::npos) bad_input(field, text);
  const std::string_view kind = text.substr(0, colon), rest = text.substr(colon + 1);
  ModelInput in;
  if (kind == "float") {
    in.kind = InputKind::floats;
    in.shape = parse_shape(rest, field, text);
  } else if (kind == "tokens") {
    const auto c2 = rest.find(':');
    if (c2 == std::string_view::npos)
      throw InputError(fmt::format("{}: invalid value '{}': token inputs are tokens:VOCAB:SEQ, e.g. tokens:30522:128",
                                   field, text));
    in.kind = InputKind::tokens;
    in.vocab = parse_count_at_most(rest.substr(0, c2), fmt::format("{} (vocabulary)", field), Count(1) << 31,
                                   "2^31");
    in.shape = parse_shape(rest.substr(c2 + 1), field, text);
  } else if (kind == "mask" || kind == "pad-mask") {
    in.kind = kind == "mask" ? InputKind::mask : InputKind::pad_mask;
    in.shape = parse_shape(rest, field, text);
  } else {
    bad_input(field, text);
  }
  return in;
}

std::string to_text(const ModelInput& in) {
  const std::string shape = fmt::format("{}", fmt::join(in.shape, ","));
  switch (in.kind) {
    case InputKind::floats:
      return "float:" + shape;
    case InputKind::tokens:
      return fmt::format("tokens:{}:{}", in.vocab, shape);
    case InputKind::mask:
      return "mask:" + shape;
    case InputKind::pad_mask:
      return "pad-mask:" + shape;
  }
  return shape;
}

Count sequence_length(const std::vector<ModelInput>& inputs) {
  for (const auto& in : inputs)
    if (in.kind == InputKind::tokens) return in.shape.back();
  return 0;
}

bool has_mask(const std::vector<ModelInput>& inputs) {
  for (const auto& in : inputs)
    if (in.kind == InputKind::mask || in.kind == InputKind::pad_mask) return true;
  return false;
}

std::vector<ModelInput> parse_model_inputs(const std::vector<std::string>& texts, std::string_view field) {
  if (texts.empty())
    throw InputError(fmt::format("{}: the model needs at least one input, e.g. --input-shape 3,32,32 or --input "
                                 "tokens:30522:128",
                                 field));
  if (texts.size() > kMaxInputs)
    throw InputError(fmt::format("{}: {} inputs given; at most {} are supported", field, texts.size(), kMaxInputs));
  std::vector<ModelInput> out;
  for (const auto& t : texts) out.push_back(parse_model_input(t, field));
  Count seq = 0;
  for (const auto& in : out) {
    if (in.kind != InputKind::tokens) continue;
    if (seq != 0 && in.shape.back() != seq)
      throw InputError(fmt::format("{}: token inputs of sequence lengths {} and {}: all token inputs share one "
                                   "sequence length (their last dimension)",
                                   field, seq, in.shape.back()));
    seq = in.shape.back();
  }
  for (const auto& in : out) {
    if (in.kind != InputKind::mask && in.kind != InputKind::pad_mask) continue;
    if (seq == 0)
      throw InputError(fmt::format("{}: '{}' is a mask but no token input is given; add --input tokens:VOCAB:SEQ "
                                   "before it",
                                   field, to_text(in)));
    if (in.shape.size() != 1 || in.shape[0] != seq)
      throw InputError(fmt::format("{}: '{}' does not match the token inputs' sequence length {}; use {}:{}", field,
                                   to_text(in), seq, in.kind == InputKind::mask ? "mask" : "pad-mask", seq));
  }
  return out;
}

ModelTarget parse_model_target(std::string_view text, std::string_view field) {
  const auto colon = text.find(':');
  auto bad = [&]() {
    return InputError(fmt::format("{}: invalid value '{}': expected classes:N, regression:D or tokens:VOCAB (e.g. "
                                  "classes:10)",
                                  field, text));
  };
  if (colon == std::string_view::npos) throw bad();
  const std::string_view kind = text.substr(0, colon);
  ModelTarget t;
  if (kind == "classes") {
    t.kind = TargetKind::classes;
  } else if (kind == "regression") {
    t.kind = TargetKind::regression;
  } else if (kind == "tokens") {
    t.kind = TargetKind::tokens;
  } else {
    throw bad();
  }
  t.width = parse_count_at_most(text.substr(colon + 1), field, Count(1) << 31, "2^31");
  return t;
}

std::string to_text(const ModelTarget& t) {
  switch (t.kind) {
    case TargetKind::classes:
      return fmt::format("classes:{}", t.width);
    case TargetKind::regression:
      return fmt::format("regression:{}", t.width);
    case TargetKind::tokens:
      return fmt::format("tokens:{}", t.width);
  }
  return "";
}

void check_target_fits_inputs(const ModelTarget& t, const std::vector<ModelInput>& inputs, std::string_view field) {
  if (t.kind == TargetKind::tokens && sequence_length(inputs) == 0)
    throw InputError(fmt::format("{}: '{}' predicts a token per position but no token input is given; add --input "
                                 "tokens:VOCAB:SEQ",
                                 field, to_text(t)));
}

}  // namespace gaccum
