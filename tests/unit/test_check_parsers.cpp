// What: the parsers and merge rules of `check`: JSON/YAML structured text, the job file schema,
//       DeepSpeed's batch-field rule, the profile-identity check, and the resolution of
//       (micro_batch, accum_steps, world_size, global_batch) with each value's source.
// Why: bad input must be a one-line InputError naming the field (exit 2), never a crash or a
//      silently wrong job; DeepSpeed's rule must match DeepSpeed's own (runtime/config.py).
#include <catch2/catch.hpp>

#include <functional>

#include <fmt/format.h>

#include "check/check_inputs.hpp"
#include "check/deepspeed_config.hpp"
#include "check/deepspeed_tune.hpp"
#include "check/job.hpp"
#include "check/profile_match.hpp"
#include "check/structured_text.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/profile.hpp"

using namespace gaccum;
using namespace gaccum::check;
using Catch::Matchers::Contains;
using nlohmann::json;

namespace {

json yaml(const std::string& text) { return parse_structured_text(text, TextFormat::yaml, "job.yaml"); }
json js(const std::string& text) { return parse_structured_text(text, TextFormat::json, "job.json"); }
JobFile job_yaml(const std::string& text) { return job_from_json(yaml(text), "job.yaml", "/jobs"); }
JobFile job_json(const std::string& text) { return job_from_json(js(text), "job.json", "/jobs"); }
DeepSpeedConfig ds(const std::string& text) { return deepspeed_from_json(js(text), "ds.json"); }

std::string input_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    const std::string m = e.what();
    CHECK(m.find('\n') == std::string::npos);  // one line
    return m;
  }
  FAIL("no InputError");
  return "";
}

}  // namespace

// ---- structured text ----------------------------------------------------------------------------

TEST_CASE("YAML plain scalars are typed like JSON values, quoted ones stay strings") {
  auto j = yaml("a: 8\nb: -3\nc: 2.5\nd: 1e3\ne: true\nf: ~\ng: \"8\"\nh: hello\ni: 99999999999999999999\n");
  CHECK(j["a"].is_number_unsigned());
  CHECK(j["a"] == 8);
  CHECK(j["b"] == -3);
  CHECK(j["c"] == 2.5);
  CHECK(j["d"] == 1000.0);
  CHECK(j["e"] == true);
  CHECK(j["f"].is_null());
  CHECK(j["g"] == "8");
  CHECK(j["h"] == "hello");
  CHECK(j["i"].is_number_float());  // beyond uint64, as a JSON parser reads it
}

TEST_CASE("malformed JSON and YAML, duplicate keys, deep nesting and several documents are one-line errors") {
  CHECK_THAT(input_error([] { js("{\"micro_batch\": 4,"); }), Contains("job.json: not valid JSON"));
  CHECK_THAT(input_error([] { yaml("micro_batch: [4\n"); }), Contains("job.yaml: not valid YAML"));
  CHECK_THAT(input_error([] { js("{\"a\": 1, \"a\": 2}"); }), Contains("duplicate key 'a'"));
  CHECK_THAT(input_error([] { yaml("a: 1\na: 2\n"); }), Contains("duplicate key 'a'"));
  CHECK_THAT(input_error([] { js(std::string(100, '[') + std::string(100, ']')); }), Contains("nested deeper than 64"));
  CHECK_THAT(input_error([] { yaml(std::string(100, '[') + std::string(100, ']')); }), Contains("nested deeper"));
  CHECK_THAT(input_error([] { yaml("a: 1\n---\nb: 2\n"); }), Contains("more than one YAML document"));
  // yaml-cpp 0.7's LoadAll never returns on these (found by tests/fuzz); they are errors here.
  CHECK_THAT(input_error([] { yaml("{},"); }), Contains("more than one YAML document ('---'), or text after"));
  CHECK_THAT(input_error([] { yaml("[1], 2"); }), Contains("job.yaml"));
  CHECK_THAT(input_error([] { yaml(std::string(2 << 20, ' ')); }), Contains("too large for a YAML job file"));
  // A billion-laughs alias bomb stops at the value limit instead of expanding.
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'h'; ++c, ++prev)
    bomb += fmt::format("{}: &{} [*{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}, *{}]\n", c, c, prev, prev, prev, prev,
                        prev, prev, prev, prev, prev, prev);
  CHECK_THAT(input_error([&] { yaml(bomb); }), Contains("more than 100000 values"));
  // Numbers beyond double are bad input, not an internal error (found by tests/fuzz).
  CHECK_THAT(input_error([] { js(R"({"lr": 4.24e888})"); }), Contains("job.json: not valid JSON: number overflow"));
  // Text that is not UTF-8 is bad input before any value can carry it into JSON output (found by
  // tests/fuzz: a job's name with a stray 0x97 byte reached nlohmann's serializer and aborted).
  CHECK_THAT(input_error([] { yaml("name: a\x97" "b\n"); }), Contains("job.yaml: not valid UTF-8 (byte 7 is 0x97)"));
  // An escape that names no character (a lone UTF-16 surrogate) is refused by the YAML reader.
  CHECK_THAT(input_error([] { yaml("name: \"\\ud800\"\n"); }), Contains("job.yaml: not valid YAML: invalid unicode"));
  CHECK(yaml("name: caf\xC3\xA9\n")["name"] == "caf\xC3\xA9");
  // RFC 3629 by hand: overlong, surrogate, above U+10FFFF and truncated sequences are refused.
  CHECK(first_invalid_utf8("ab\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80") == std::string_view::npos);
  CHECK(first_invalid_utf8("\xC0\x80") == 0);
  CHECK(first_invalid_utf8("a\xE0\x80\x80") == 1);
  CHECK(first_invalid_utf8("ab\xED\xA0\x80") == 2);
  CHECK(first_invalid_utf8("\xF4\x90\x80\x80") == 0);
  CHECK(first_invalid_utf8("abc\xE2\x82") == 3);
  CHECK(format_of_path("a/job.YML") == TextFormat::yaml);
  CHECK(format_of_path("job.json") == TextFormat::json);
  CHECK(parse_structured_text("  {\"a\": 1}", TextFormat::detect, "x")["a"] == 1);
  CHECK(parse_structured_text("a: 1", TextFormat::detect, "x")["a"] == 1);
}

// ---- job file -----------------------------------------------------------------------------------

TEST_CASE("a YAML job and the same JSON job read the same, paths are relative to the job file") {
  const char* y =
      "schema: gaccum-tune/job\nschema_version: 1\nworkload: gpt-tiny\nprofile: ../p/profile.json\n"
      "micro_batch: 8\naccum_steps: 4\nworld_size: 2\nglobal_batch: 64\nstrategy: every-step\n"
      "optimizer: adamw\nlr: 4.2e-4\nlr_ref: 3e-4@32\ndataset_size: 100000\ndrop_last: true\n"
      "memory_cap: 90%\nmargin: 5%\ntolerance: 0.1\nnoise_scale: 500\n";
  const char* j =
      R"({"schema": "gaccum-tune/job", "schema_version": 1, "workload": "gpt-tiny", "profile": "../p/profile.json",
          "micro_batch": 8, "accum_steps": 4, "world_size": 2, "global_batch": 64, "strategy": "every-step",
          "optimizer": "adamw", "lr": 4.2e-4, "lr_ref": {"lr": 3e-4, "global_batch": 32}, "dataset_size": 100000,
          "drop_last": true, "memory_cap": "90%", "margin": "5%", "tolerance": 0.1, "noise_scale": 500})";
  for (const JobFile& f : {job_yaml(y), job_json(j)}) {
    CHECK(*f.workload == "gpt-tiny");
    CHECK(*f.profile == "/p/profile.json");
    CHECK(*f.micro_batch == 8);
    CHECK(*f.accum_steps == 4);
    CHECK(*f.world_size == 2);
    CHECK(*f.global_batch == 64);
    CHECK(*f.strategy == Strategy::every_step);
    CHECK(*f.optimizer == "adamw");
    CHECK(*f.lr == Approx(4.2e-4));
    CHECK(f.lr_ref->lr == Approx(3e-4));
    CHECK(f.lr_ref->global_batch == 32);
    CHECK(*f.dataset_size == 100000);
    CHECK(*f.drop_last);
    CHECK(*f.memory_cap->fraction == Approx(0.9));
    CHECK(*f.margin == Approx(0.05));
    CHECK(*f.tolerance == Approx(0.1));
    CHECK(*f.noise_scale == 500);
    CHECK(f.warnings.empty());
  }
}

TEST_CASE("unknown keys are warnings naming them (with the closest known key), not errors") {
  auto f = job_yaml("micro_bach: 8\nworld_size: 2\nfrobnicate: 1\n_note: ignored\ncomment: ignored\n");
  REQUIRE(f.warnings.size() == 2);
  CHECK(f.warnings[0] == "job.yaml: unknown key 'frobnicate' ignored");
  CHECK(f.warnings[1] == "job.yaml: unknown key 'micro_bach' ignored (did you mean 'micro_batch'?)");
  auto g = job_yaml("torchscript: {path: m.pt, input_shap: [3, 32, 32]}\n");
  REQUIRE(g.warnings.size() == 1);
  CHECK_THAT(g.warnings[0], Contains("job.yaml.torchscript: unknown key 'input_shap' ignored (did you mean 'input_shape'?)"));
}

TEST_CASE("zero, negative, non-integer and 64-bit-overflowing sizes name the field") {
  CHECK_THAT(input_error([] { job_yaml("micro_batch: 0\n"); }), Contains("job.yaml.micro_batch: expected a positive integer (at least 1), got 0"));
  CHECK_THAT(input_error([] { job_yaml("accum_steps: -4\n"); }), Contains("job.yaml.accum_steps"));
  CHECK_THAT(input_error([] { job_yaml("world_size: 2.5\n"); }), Contains("job.yaml.world_size: expected an integer, got 2.5"));
  CHECK_THAT(input_error([] { job_json(R"({"global_batch": 99999999999999999999})"); }),
             Contains("job.json.global_batch: 1e+20 does not fit in 64 bits"));
  CHECK_THAT(input_error([] { job_yaml("dataset_size: 99999999999999999999\n"); }), Contains("dataset_size"));
  CHECK_THAT(input_error([] { job_json(R"({"dataset_size": 18446744073709551615})"); }), Contains("does not fit in 64 bits"));
  CHECK_THAT(input_error([] { job_yaml("micro_batch: eight\n"); }), Contains("job.yaml.micro_batch"));
  CHECK_THAT(input_error([] { job_yaml("lr: -1\n"); }), Contains("job.yaml.lr"));
  CHECK_THAT(input_error([] { job_yaml("margin: 150%\n"); }), Contains("job.yaml.margin"));
  CHECK_THAT(input_error([] { job_yaml("memory_cap: lots\n"); }), Contains("job.yaml.memory_cap"));
  CHECK_THAT(input_error([] { job_yaml("strategy: sometimes\n"); }), Contains("job.yaml.strategy"));
  CHECK_THAT(input_error([] { job_yaml("drop_last: yes\n"); }), Contains("job.yaml.drop_last: expected true or false"));
}

TEST_CASE("missing required fields of nested objects, schema and model-source conflicts") {
  CHECK_THAT(input_error([] { job_yaml("torchscript: {input_shape: [3]}\n"); }),
             Contains("job.yaml.torchscript: missing required field 'path'"));
  CHECK_THAT(input_error([] { job_yaml("lr_ref: {lr: 3e-4}\n"); }), Contains("job.yaml.lr_ref: missing required field 'global_batch'"));
  CHECK_THAT(input_error([] { job_yaml("lr_ref: 3e-4\n"); }), Contains("job.yaml.lr_ref"));
  CHECK_THAT(input_error([] { job_yaml("schema_version: 2\n"); }), Contains("schema_version: version 2 is not supported"));
  CHECK_THAT(input_error([] { job_yaml("schema: gaccum-tune/profile\n"); }), Contains("not a gaccum-tune job file"));
  CHECK_THAT(input_error([] { job_yaml("workload: gpt-tiny\nspec: s.json\n"); }), Contains("at most one of workload"));
  CHECK_THAT(input_error([] { job_yaml("- 1\n- 2\n"); }), Contains("job.yaml: expected a JSON object, got array"));
  CHECK_THAT(input_error([] { job_yaml(""); }), Contains("job.yaml: expected a JSON object, got null"));
}

// ---- DeepSpeed ----------------------------------------------------------------------------------

TEST_CASE("DeepSpeed's rule derives the missing batch field from the other two and the world size") {
  // train + micro: gas = 512 // 4 // 8 = 16.
  auto d = derive_deepspeed_batch(ds(R"({"train_batch_size": 512, "train_micro_batch_size_per_gpu": 4})"), 8, "flag");
  CHECK(d.accum_steps == 16);
  CHECK(d.accum_steps_source == "train_batch_size // train_micro_batch_size_per_gpu // world_size");
  // train + gas: micro = 512 // 8 // 16 = 4.
  d = derive_deepspeed_batch(ds(R"({"train_batch_size": 512, "gradient_accumulation_steps": 16})"), 8, "flag");
  CHECK(d.micro_batch == 4);
  // micro + gas: train = 4 x 16 x 8 = 512.
  d = derive_deepspeed_batch(ds(R"({"train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 16})"), 8, "f");
  CHECK(d.train_batch_size == 512);
  // train only: gas 1, micro = 512 // 8 = 64.  micro only: gas 1, train = 4 x 8 = 32.
  d = derive_deepspeed_batch(ds(R"({"train_batch_size": 512})"), 8, "f");
  CHECK(d.accum_steps == 1);
  CHECK(d.micro_batch == 64);
  d = derive_deepspeed_batch(ds(R"({"train_micro_batch_size_per_gpu": 4})"), 8, "f");
  CHECK(d.train_batch_size == 32);
  CHECK(d.accum_steps == 1);
  // "auto" counts as not given, without a warning (the inputs block says where the value came from).
  auto a = ds(R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 2})");
  CHECK_FALSE(a.train_batch_size);
  CHECK(a.warnings.empty());
  CHECK(derive_deepspeed_batch(a, 8, "f").train_batch_size == 64);
}

TEST_CASE("inconsistent DeepSpeed batch fields are bad input naming the fields") {
  // All three given: 512 != 4 x 8 x 8 = 256.
  auto m = input_error([] {
    derive_deepspeed_batch(
        ds(R"({"train_batch_size": 512, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 8})"), 8,
        "flag --world-size");
  });
  CHECK_THAT(m, Contains("ds.json: inconsistent batch fields: train_batch_size 512 != train_micro_batch_size_per_gpu 4 x "
                         "gradient_accumulation_steps 8 x world_size 8 (flag --world-size) = 256"));
  // The layout that keeps train_batch_size first (the given micro_batch kept), the global batch second.
  CHECK_THAT(m, Contains("; keep train_batch_size 512 on world_size 8 (64 samples per rank): set "
                         "train_micro_batch_size_per_gpu 4 and gradient_accumulation_steps 16; or change the global batch: "
                         "set train_batch_size 256"));
  // micro 3 x gas 2 on 64 ranks for train 128: 2 samples per rank, so micro 1 x gas 2 (not train 384 first).
  m = input_error([] {
    derive_deepspeed_batch(
        ds(R"({"train_batch_size": 128, "train_micro_batch_size_per_gpu": 3, "gradient_accumulation_steps": 2})"), 64,
        "f");
  });
  CHECK_THAT(m, Contains("= 384; keep train_batch_size 128 on world_size 64 (2 samples per rank): set "
                         "train_micro_batch_size_per_gpu 1 and gradient_accumulation_steps 2; or change the global batch: "
                         "set train_batch_size 384"));
  // gas 3 for 2 samples per rank: the largest gas up to 3 that divides 2.
  m = input_error([] {
    derive_deepspeed_batch(ds(R"({"train_batch_size": 128, "gradient_accumulation_steps": 3})"), 64, "f");
  });
  CHECK_THAT(m, Contains("keep train_batch_size 128 on world_size 64 (2 samples per rank): set "
                         "train_micro_batch_size_per_gpu 1 and gradient_accumulation_steps 2; or change the global batch: "
                         "set train_batch_size to a multiple of gradient_accumulation_steps x world_size = 192"));
  // train + micro that do not divide: gas = 100 // 3 // 4 = 8, 3 x 8 x 4 = 96 != 100 (DeepSpeed asserts too).
  m = input_error([] { derive_deepspeed_batch(ds(R"({"train_batch_size": 100, "train_micro_batch_size_per_gpu": 3})"), 4, "f"); });
  CHECK_THAT(m, Contains("gradient_accumulation_steps 8 (derived: train_batch_size // train_micro_batch_size_per_gpu // world_size)"));
  CHECK_THAT(m, Contains("set train_batch_size to a multiple of train_micro_batch_size_per_gpu x world_size = 12 (e.g. 96)"));
  // train smaller than one micro-batch per rank: gas 0.
  m = input_error([] { derive_deepspeed_batch(ds(R"({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 4})"), 4, "f"); });
  CHECK_THAT(m, Contains("gradient_accumulation_steps 0"));
  // Neither train nor micro.
  m = input_error([] { derive_deepspeed_batch(ds(R"({"gradient_accumulation_steps": 4})"), 4, "f"); });
  CHECK_THAT(m, Contains("missing required field 'train_batch_size' or 'train_micro_batch_size_per_gpu'"));
  CHECK_THAT(input_error([] { ds(R"({"train_batch_size": 0})"); }), Contains("ds.json.train_batch_size"));
  CHECK_THAT(input_error([] { ds(R"({"zero_optimization": {"stage": 4}})"); }), Contains("ZeRO stage 4 does not exist"));
}

TEST_CASE("DeepSpeed optimizer, lr, strategy, drop_last and unknown-key warnings") {
  auto c = ds(R"({"train_batch_size": 64, "optimizer": {"type": "AdamW", "params": {"lr": 3e-4, "betas": [0.9, 0.95]}},
                  "zero_optimization": {"stage": 2, "overlap_comm": true}, "dataloader_drop_last": true,
                  "fp16": {"enabled": true}, "gradient_acumulation_steps": 4})");
  CHECK(*c.optimizer_type == "AdamW");
  CHECK(*c.lr == Approx(3e-4));
  CHECK(c.zero_stage == 2);
  CHECK(c.overlap_comm);
  REQUIRE(c.warnings.size() == 1);
  CHECK_THAT(c.warnings[0], Contains("unknown key 'gradient_acumulation_steps' ignored (did you mean 'gradient_accumulation_steps'?)"));
  auto in = inputs_from_deepspeed(c, derive_deepspeed_batch(c, 2, "f"));
  CHECK(*in.optimizer == "adamw");
  // Stage 2 reduce-scatters into the gradient partitions on every micro-step, overlap_comm or not.
  CHECK(*in.strategy == Strategy::every_step);
  CHECK(in.sharding->sharding == Sharding::zero2);
  CHECK(*in.precision == Precision::fp16);
  CHECK_FALSE(in.checkpointing);
  auto stage0 = inputs_from_deepspeed(ds(R"({"train_batch_size": 64, "zero_optimization": {"overlap_comm": true}})"),
                                      derive_deepspeed_batch(ds(R"({"train_batch_size": 64})"), 2, "f"));
  CHECK(*stage0.strategy == Strategy::overlap);
  CHECK(stage0.sharding->sharding == Sharding::none);
  CHECK_FALSE(stage0.precision);
  auto z3 = ds(R"({"train_batch_size": 64, "bf16": {"enabled": true}, "activation_checkpointing": {"partition_activations": false},
                   "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}, "offload_param": {"device": "none"}}})");
  CHECK(*z3.precision == Precision::bf16);
  CHECK(z3.activation_checkpointing);
  CHECK(z3.offload_optimizer);
  CHECK_FALSE(z3.offload_params);
  auto z3in = inputs_from_deepspeed(z3, derive_deepspeed_batch(z3, 2, "f"));
  CHECK(z3in.sharding->sharding == Sharding::zero3);
  CHECK(*z3in.checkpointing == Checkpointing::full);
  CHECK(*z3in.offload_optimizer);
  CHECK_THAT(input_error([] { ds(R"({"train_batch_size": 8, "bf16": {"enabled": true}, "fp16": {"enabled": true}})"); }),
             Contains("both true"));
  CHECK_THAT(input_error([] { ds(R"({"train_batch_size": 8, "zero_optimization": {"offload_param": {"device": "gpu"}}})"); }),
             Contains("offload_param.device"));
  CHECK(*in.drop_last);
  CHECK(in.global_batch.source == "deepspeed ds.json train_batch_size");
  CHECK(*optimizer_rule_name("OneBitAdam") == Optimizer::adam);
  CHECK(*optimizer_rule_name("Lamb") == Optimizer::lamb);
  CHECK(*optimizer_rule_name("SGD") == Optimizer::sgd);
  CHECK_FALSE(optimizer_rule_name("Adagrad"));
  CHECK(*implied_world_size(ds(R"({"train_batch_size": 512, "train_micro_batch_size_per_gpu": 4, "gradient_accumulation_steps": 16})")) == 8);
}

// ---- resolution ---------------------------------------------------------------------------------

TEST_CASE("resolve derives the missing one of b, k, p, B and records its source") {
  CheckInputs in = default_inputs();
  in.micro_batch.set(4, "flag --micro-batch");
  in.world_size.set(2, "environment WORLD_SIZE (torchrun)");
  in.global_batch.set(64, "job file job.yaml");
  auto r = resolve(in);
  CHECK(r.accum_steps == 8);
  CHECK_FALSE(r.inexact);
  CHECK(r.inputs.accum_steps.source == "derived: accum_steps = global_batch / (micro_batch x world_size)");
  // b and p only: k defaults to 1, B = b p.
  CheckInputs two = default_inputs();
  two.micro_batch.set(4, "f");
  two.world_size.set(2, "f");
  auto t = resolve(two);
  CHECK(t.accum_steps == 1);
  CHECK(t.global_batch == 8);
  // world_size derived from the other three.
  CheckInputs w = default_inputs();
  w.micro_batch.set(4, "f");
  w.accum_steps.set(8, "f");
  w.global_batch.set(64, "f");
  CHECK(resolve(w).world_size == 2);
}

TEST_CASE("resolve: missing world_size / micro_batch, overflow and implausible sizes are bad input") {
  CheckInputs a = default_inputs();
  a.micro_batch.set(4, "f");
  CHECK_THAT(input_error([&] { resolve(a); }), Contains("world_size: not given"));
  CheckInputs b = default_inputs();
  b.world_size.set(4, "f");
  CHECK_THAT(input_error([&] { resolve(b); }), Contains("micro_batch: not given"));
  CheckInputs c = default_inputs();
  c.micro_batch.set(kMaxSetting, "f");
  c.accum_steps.set(kMaxSetting, "f");
  c.world_size.set(kMaxSetting, "f");
  CHECK_THAT(input_error([&] { resolve(c); }), Contains("overflows 64 bits"));
  CheckInputs d = default_inputs();
  d.micro_batch.set(kMaxSetting + 1, "flag --micro-batch");
  d.world_size.set(1, "f");
  CHECK_THAT(input_error([&] { resolve(d); }), Contains("micro_batch (from flag --micro-batch): 16777217 is implausibly large"));
}

TEST_CASE("layers: flags over job over DeepSpeed over environment over defaults") {
  CheckInputs merged = default_inputs();
  CheckInputs env, dsl, job, flags;
  env.world_size.set(8, "environment WORLD_SIZE (torchrun)");
  dsl.micro_batch.set(4, "deepspeed");
  dsl.accum_steps.set(16, "deepspeed");
  job.accum_steps.set(8, "job file");
  flags.world_size.set(2, "flag --world-size");
  for (const auto* l : {&env, &dsl, &job, &flags}) overlay(merged, *l);
  CHECK(*merged.world_size == 2);
  CHECK(merged.world_size.source == "flag --world-size");
  CHECK(*merged.accum_steps == 8);
  CHECK(*merged.micro_batch == 4);
  CHECK(merged.strategy.source.rfind("default", 0) == 0);
  auto j = inputs_json(merged);
  CHECK(j["accum_steps"]["source"] == "job file");
}

// ---- profile identity ---------------------------------------------------------------------------

TEST_CASE("a profile of another workload, other overrides or another hash is a ProfileError") {
  Profile p;
  p.workload.name = "gpt-tiny";
  p.workload.hash = "00000000deadbeef";
  p.workload.hyper = {{"layers", 2}, {"hidden", {512, 512}}};
  CHECK_NOTHROW(require_profile_of(p, "p.json", std::string("gpt-tiny"), std::nullopt, "flag"));
  CHECK_NOTHROW(require_profile_of(p, "p.json", std::string("gpt-tiny:layers=2,hidden=512x512"), std::nullopt, "flag"));
  CHECK_THROWS_AS(require_profile_of(p, "p.json", std::string("mlp-small"), std::nullopt, "job"), ProfileError);
  CHECK_THROWS_WITH(require_profile_of(p, "p.json", std::string("mlp-small"), std::nullopt, "job file j.yaml"),
                    Contains("p.json: profile is for workload 'gpt-tiny' (hash 00000000deadbeef), not 'mlp-small' from job file j.yaml"));
  CHECK_THROWS_WITH(require_profile_of(p, "p.json", std::string("gpt-tiny:layers=4"), std::nullopt, "f"),
                    Contains("layers = 2 in the profile"));
  CHECK_THROWS_AS(require_profile_of(p, "p.json", std::nullopt, std::string("0123456789abcdef"), "f"), ProfileError);
  // A profile made with overrides carries them in its name (workloads/workload.cpp).
  Profile q = p;
  q.workload.name = "gpt-tiny:{\"layers\":4}";
  q.workload.hyper["layers"] = 4;
  CHECK_NOTHROW(require_profile_of(q, "q.json", std::string("gpt-tiny:layers=4"), std::nullopt, "flag"));
  CHECK_THROWS_WITH(require_profile_of(q, "q.json", std::string("gpt-tiny"), std::nullopt, "flag"),
                    Contains("the profile overrides layers = 4"));
}

TEST_CASE("tune --deepspeed-config: numeric fields pin, \"auto\" fields are left to the tuner") {
  // HF style: everything "auto"; ZeRO-2 with bf16 "auto" (a 16-bit run, as check prices it, with the
  // assumption in its source), no checkpointing.
  auto p = deepspeed_tune_pins(ds(R"({"train_batch_size": "auto", "train_micro_batch_size_per_gpu": "auto",
      "gradient_accumulation_steps": "auto", "bf16": {"enabled": "auto"}, "zero_optimization": {"stage": 2}})"));
  CHECK_FALSE(p.global_batch);
  CHECK_FALSE(p.micro_batch);
  CHECK_FALSE(p.accum_steps);
  CHECK_FALSE(p.world_size);
  CHECK(p.precision == Precision::bf16);
  CHECK_THAT(p.precision_source, Contains("bf16.enabled \"auto\" (assumed on"));
  CHECK(p.plan.sharding.sharding == Sharding::zero2);
  CHECK(p.plan.strategy == Strategy::every_step);
  CHECK(p.checkpointing == Checkpointing::none);
  // Numbers: all three give the world size; no bf16/fp16 section means fp32.
  p = deepspeed_tune_pins(ds(R"({"train_batch_size": 64, "train_micro_batch_size_per_gpu": 8,
      "gradient_accumulation_steps": 4, "activation_checkpointing": {},
      "zero_optimization": {"stage": 1, "overlap_comm": true, "offload_optimizer": {"device": "cpu"}}})"));
  CHECK(p.global_batch == Count(64));
  CHECK(p.micro_batch == Count(8));
  CHECK(p.accum_steps == Count(4));
  CHECK(p.world_size == Count(2));
  CHECK(p.precision == Precision::fp32);
  CHECK(p.checkpointing == Checkpointing::full);
  CHECK(p.plan.strategy == Strategy::overlap);
  CHECK(p.offload_optimizer);
  // A train_batch_size no world size can satisfy is bad input naming the fields and the fix.
  CHECK_THROWS_WITH(
      deepspeed_tune_pins(ds(R"({"train_batch_size": 100, "train_micro_batch_size_per_gpu": 8,
          "gradient_accumulation_steps": 4})")),
      Catch::Contains("ds.json: train_batch_size 100 is not a multiple of train_micro_batch_size_per_gpu x "
                      "gradient_accumulation_steps = 32") &&
          Catch::Contains("(e.g. 96)"));
  CHECK_THROWS_WITH(deepspeed_tune_pins(ds(R"({"train_batch_size": 100, "train_micro_batch_size_per_gpu": 3})")),
                    Catch::Contains("not a multiple of train_micro_batch_size_per_gpu = 3"));
  CHECK_THROWS_AS(deepspeed_tune_pins(ds(R"({"train_batch_size": 10, "gradient_accumulation_steps": 4})")), InputError);
}

TEST_CASE("the completed DeepSpeed config keeps every other field and its order (golden)") {
  const auto doc = nlohmann::ordered_json::parse(R"({
    "optimizer": {"type": "AdamW", "params": {"lr": "auto", "betas": [0.9, 0.95]}},
    "train_batch_size": "auto",
    "bf16": {"enabled": "auto"},
    "fp16": {"enabled": "auto", "loss_scale": 0},
    "zero_optimization": {"stage": 3, "overlap_comm": true},
    "gradient_accumulation_steps": "auto",
    "steps_per_print": 100
  })");
  model::Config pick{8, 4, 16, Strategy::every_step};
  pick.precision = Precision::bf16;
  const std::string expected =
      R"({"optimizer":{"type":"AdamW","params":{"lr":"auto","betas":[0.9,0.95]}},"train_batch_size":512,)"
      R"("bf16":{"enabled":true},"fp16":{"enabled":false,"loss_scale":0},"zero_optimization":{"stage":3,)"
      R"("overlap_comm":true},"gradient_accumulation_steps":4,"steps_per_print":100,)"
      R"("train_micro_batch_size_per_gpu":8})";
  const auto done = complete_deepspeed_config(doc, pick);
  CHECK(done.dump() == expected);
  // train_batch_size = micro x accum x world_size, and the result reads back as consistent.
  const auto back = deepspeed_from_json(nlohmann::json::parse(done.dump()), "done.json");
  CHECK(derive_deepspeed_batch(back, 16, "p").train_batch_size == 512);
  CHECK(back.precision == Precision::bf16);
  CHECK_THROWS_AS(complete_deepspeed_config(nlohmann::ordered_json::array(), pick), InputError);
}
