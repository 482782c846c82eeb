// Unit tests for tune --emit (check/framework_emit.hpp): the format list, which plans each format
// runs (and why not), golden text for two formats, and the round trip: every file written for a
// plan is read back by check's loader (check/framework_configs.hpp, check/deepspeed_config.hpp)
// to the same micro-batch, accumulation steps, world size, sharding, strategy, precision,
// checkpointing and layout, wherever the format carries them.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "check/deepspeed_config.hpp"
#include "check/deepspeed_tune.hpp"
#include "check/framework_configs.hpp"
#include "check/framework_emit.hpp"
#include "core/error.hpp"

using namespace gaccum;
using namespace gaccum::check;

namespace {

namespace fs = std::filesystem;

EmitPlan plan(Count b, Count k, Count p, Strategy s, Sharding sh, Precision prec = Precision::bf16,
              Checkpointing ck = Checkpointing::none) {
  EmitPlan e;
  e.pick = model::Config(b, k, p, s);
  e.pick.sharding = ShardingChoice{sh, sh == Sharding::hsdp ? Count(8) : Count(0)};
  e.pick.precision = prec;
  e.pick.checkpointing = ck;
  e.precision = prec;
  e.checkpointing = ck;
  return e;
}

fs::path write_all(const std::vector<EmittedFile>& files, const std::string& tag) {
  const auto dir = fs::temp_directory_path() / ("gaccum-emit-" + tag);
  fs::create_directories(dir);
  for (const auto& f : files) std::ofstream(dir / f.name) << f.text;
  return dir;
}

// The file read back as check reads it.
CheckInputs read_back(EmitFormat f, const fs::path& dir) {
  const std::string path = (dir / traits(f).file).string();
  switch (f) {
    case EmitFormat::hf: return load_hf_training_args(path).inputs;
    case EmitFormat::accelerate: return load_accelerate_config(path).inputs;
    case EmitFormat::lightning: return load_lightning_config(path).inputs;
    case EmitFormat::torchtitan: return load_torchtitan_config(path).inputs;
    case EmitFormat::megatron: return load_megatron_args(path).inputs;
    case EmitFormat::deepspeed: {
      const DeepSpeedConfig ds = load_deepspeed_config(path);
      const DeepSpeedPlan dp = deepspeed_plan(ds);
      CheckInputs in;
      in.micro_batch.set(*ds.train_micro_batch_size_per_gpu, "ds");
      in.accum_steps.set(*ds.gradient_accumulation_steps, "ds");
      in.global_batch.set(*ds.train_batch_size, "ds");
      in.sharding.set(dp.sharding, "ds");
      in.strategy.set(dp.strategy, "ds");
      in.precision.set(dp.precision.value_or(Precision::fp32), "ds");
      if (dp.checkpointing) in.checkpointing.set(*dp.checkpointing, "ds");
      if (ds.offload_optimizer) in.offload_optimizer.set(true, "ds");
      if (ds.offload_params) in.offload_params.set(true, "ds");
      if (ds.lr) in.lr.set(*ds.lr, "ds");
      return in;
    }
  }
  return {};
}

// Every field the file carries equals the plan's.
void require_same(EmitFormat f, const EmitPlan& p, const CheckInputs& in) {
  INFO(traits(f).name);
  const model::Config& c = p.pick;
  if (in.micro_batch) CHECK(*in.micro_batch == c.micro_batch);
  if (in.accum_steps) CHECK(*in.accum_steps == c.accum_steps);
  if (in.world_size) CHECK(*in.world_size == c.world_size);
  if (in.global_batch) CHECK(*in.global_batch == c.global_batch());
  REQUIRE(in.sharding);
  CHECK(in.sharding->sharding == c.sharding.sharding);
  if (c.world_size > 1 && c.accum_steps > 1) {
    REQUIRE(in.strategy);
    CHECK(*in.strategy == c.strategy);
  }
  REQUIRE(in.precision);
  CHECK(*in.precision == p.precision);
  if (in.checkpointing) CHECK(*in.checkpointing == p.checkpointing);
  CHECK(in.tp.value.value_or(1) == c.layout.tp);
  CHECK(in.pp.value.value_or(1) == c.layout.pp);
  if (c.layout.pp > 1) CHECK(in.virtual_stages.value.value_or(1) == c.layout.virtual_stages);
  CHECK(in.offload_optimizer.value.value_or(false) == c.offload_optimizer);
  CHECK(in.offload_params.value.value_or(false) == c.offload_params);
  if (in.lr) CHECK(*in.lr == Approx(p.lr.value_or(-1)));
}

}  // namespace

TEST_CASE("tune --emit: format names, all, and a bad name", "[check][emit]") {
  CHECK(parse_emit_formats("megatron,hf") == std::vector<EmitFormat>{EmitFormat::megatron, EmitFormat::hf});
  CHECK(parse_emit_formats("all").size() == 6);
  CHECK(parse_emit_formats("HF, hf,megatron-lm") == std::vector<EmitFormat>{EmitFormat::hf, EmitFormat::megatron});
  CHECK_THROWS_WITH(parse_emit_formats("hf,keras"),
                    "--emit: 'keras' is not a format; give a comma list of hf, accelerate, lightning, torchtitan, "
                    "megatron, deepspeed (or all)");
}

TEST_CASE("tune --emit: the framework under each format, and the plans a format cannot run", "[check][emit]") {
  std::string why;
  // DDP under the trainers; FSDP for zero2/zero3; DeepSpeed for zero1 and offload.
  CHECK(emit_framework(EmitFormat::hf, plan(4, 8, 16, Strategy::overlap, Sharding::none)) == Framework::ddp);
  CHECK(emit_framework(EmitFormat::accelerate, plan(4, 8, 16, Strategy::overlap, Sharding::zero3)) == Framework::fsdp);
  CHECK(emit_framework(EmitFormat::hf, plan(4, 8, 16, Strategy::fused, Sharding::zero1)) == Framework::deepspeed);
  // Lightning blocks the sync of DDP models only: its FSDP reduces on every micro-batch.
  CHECK_FALSE(emit_framework(EmitFormat::lightning, plan(4, 8, 16, Strategy::overlap, Sharding::zero3), &why));
  CHECK(why == "Lightning with FSDP accumulates with strategy every-step, the pick is overlap");
  CHECK(emit_framework(EmitFormat::lightning, plan(4, 8, 16, Strategy::every_step, Sharding::zero3)) == Framework::fsdp);
  // The HF Trainer accumulates under no_sync(): an every-step DDP plan is not its own.
  CHECK_FALSE(emit_framework(EmitFormat::hf, plan(4, 8, 16, Strategy::every_step, Sharding::none), &why));
  // A layout needs Megatron or torchtitan.
  EmitPlan tp = plan(1, 16, 64, Strategy::overlap, Sharding::none);
  tp.pick.layout.tp = 8;
  CHECK_FALSE(emit_framework(EmitFormat::hf, tp, &why));
  CHECK(why == "HF Trainer runs data-parallel plans (DDP, FSDP, DeepSpeed); the pick's layout tp 8 needs --emit megatron "
               "or torchtitan");
  CHECK_FALSE(emit_framework(EmitFormat::megatron, tp, &why));  // no model: Megatron-LM builds its own
  CHECK_THAT(why, Catch::StartsWith("Megatron-LM trains its own model definitions"));
  tp.model = model::builtin_spec("llama3-8b");
  CHECK(emit_framework(EmitFormat::megatron, tp) == Framework::megatron);
  CHECK_FALSE(emit_framework(EmitFormat::deepspeed, tp, &why));
  // HYBRID_SHARD is a node's worth of GPUs.
  EmitPlan h = plan(2, 4, 32, Strategy::overlap, Sharding::hsdp);
  h.gpus_per_node = 4;
  CHECK_FALSE(emit_framework(EmitFormat::hf, h, &why));
  CHECK(why == "HF Trainer's HYBRID_SHARD shards within a node of 4 GPUs, the pick over groups of 8");
  CHECK_THROWS_WITH(emit_files(EmitFormat::hf, h), Catch::StartsWith("--emit hf: HF Trainer's HYBRID_SHARD"));
}

TEST_CASE("tune --emit: golden HF TrainingArguments and Accelerate config", "[check][emit]") {
  EmitPlan p = plan(4, 8, 16, Strategy::overlap, Sharding::zero3, Precision::bf16, Checkpointing::full);
  p.lr = 3e-4;
  const auto hf = emit_files(EmitFormat::hf, p);
  REQUIRE(hf.size() == 1);
  CHECK(hf[0].name == "hf_training_args.json");
  CHECK(hf[0].text ==
        "{\n  \"output_dir\": \"output\",\n  \"per_device_train_batch_size\": 4,\n  \"gradient_accumulation_steps\": 8,\n"
        "  \"bf16\": true,\n  \"fp16\": false,\n  \"gradient_checkpointing\": true,\n  \"learning_rate\": 0.0003,\n"
        "  \"fsdp\": \"full_shard auto_wrap\"\n}\n");
  const auto acc = emit_files(EmitFormat::accelerate, p);
  REQUIRE(acc.size() == 1);
  CHECK(acc[0].text.find("distributed_type: FSDP\n") != std::string::npos);
  CHECK(acc[0].text.find("num_machines: 2\nnum_processes: 16\n") != std::string::npos);
  CHECK(acc[0].text.find("  fsdp_activation_checkpointing: true\n") != std::string::npos);
  CHECK(acc[0].text.find("  fsdp_sharding_strategy: FULL_SHARD\n") != std::string::npos);
}

TEST_CASE("tune --emit: every format's file reads back to the plan it was written for", "[check][emit]") {
  model::TransformerSpec llama = model::builtin_spec("llama3-8b");
  std::vector<EmitPlan> plans = {
      plan(4, 8, 16, Strategy::overlap, Sharding::none),
      plan(2, 4, 64, Strategy::overlap, Sharding::zero3, Precision::bf16, Checkpointing::full),
      plan(2, 4, 64, Strategy::every_step, Sharding::zero3),
      plan(1, 16, 32, Strategy::overlap, Sharding::zero1),
      plan(1, 16, 32, Strategy::fused, Sharding::zero1, Precision::fp16),
      plan(8, 2, 8, Strategy::every_step, Sharding::zero2, Precision::fp32),
      plan(3, 1, 1, Strategy::overlap, Sharding::none),
  };
  plans[1].lr = 3e-4;  // the learning rate scaled from --lr-ref, where a format says it
  plans[3].lr = 1.5e-4;
  EmitPlan offload = plan(1, 4, 16, Strategy::every_step, Sharding::zero3);
  offload.pick.offload_optimizer = offload.pick.offload_params = true;
  plans.push_back(offload);
  EmitPlan pipe = plan(1, 32, 128, Strategy::overlap, Sharding::zero1);
  pipe.pick.layout.tp = 4;
  pipe.pick.layout.pp = 4;
  pipe.pick.layout.virtual_stages = 2;
  pipe.pick.layout.schedule = Schedule::interleaved_1f1b;
  pipe.pick.layout.sequence_parallel = true;
  pipe.model = llama;
  plans.push_back(pipe);
  EmitPlan titan = pipe;
  titan.pick.sharding = ShardingChoice{Sharding::zero3, 0};
  titan.pick.layout.virtual_stages = 4;  // pipeline_parallel_layers_per_stage = 32 / (4 x 4)
  plans.push_back(titan);
  for (auto& p : plans) p.model = llama;  // Megatron-LM and torchtitan are written for a spec only
  int written = 0;
  for (std::size_t i = 0; i < plans.size(); ++i)
    for (const EmitFormat f : kAllEmitFormats) {
      if (!emit_framework(f, plans[i])) continue;
      INFO("plan " << i);
      const auto dir = write_all(emit_files(f, plans[i]), std::to_string(i));
      require_same(f, plans[i], read_back(f, dir));
      ++written;
    }
  CHECK(written >= 30);
}

TEST_CASE("tune --emit: launch.sh runs each format on nodes of the cluster's size and lists the checks", "[check][emit]") {
  EmitPlan p = plan(2, 4, 24, Strategy::overlap, Sharding::none);
  p.gpus_per_node = 8;
  p.gpus_per_node_assumed = false;
  const std::string t = launch_script({{EmitFormat::hf, p}, {EmitFormat::accelerate, p}}, " --spec s.json");
  CHECK(t.find("#SBATCH --nodes=3\n") != std::string::npos);
  CHECK(t.find("torchrun --nnodes 3 --nproc-per-node 8") != std::string::npos);
  CHECK(t.find("--per_device_train_batch_size 2 --gradient_accumulation_steps 4") != std::string::npos);
  CHECK(t.find("ACCELERATE_GRADIENT_ACCUMULATION_STEPS=4") != std::string::npos);
  CHECK(t.find("#   gaccum-tune check --hf-args \"$here\"/hf_training_args.json --world-size 24 --spec s.json\n") !=
        std::string::npos);
  // 12 ranks on nodes of 8: two nodes of 6.
  EmitPlan q = plan(2, 4, 12, Strategy::overlap, Sharding::none);
  CHECK(launch_script({{EmitFormat::lightning, q}}, "").find("--nnodes 2 --nproc-per-node 6") != std::string::npos);
}
