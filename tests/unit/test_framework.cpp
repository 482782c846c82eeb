// Unit tests for core/framework.hpp: which frameworks run each plan, worked out by hand from each
// framework's rule (the table in core/framework.hpp), their spellings and the flag parser.
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/framework.hpp"

using namespace gaccum;
using Catch::Matchers::Contains;

namespace {
FrameworkPlan plan(Strategy s, Sharding sh, Precision p = Precision::fp32, Count world = 2, Count group = 0) {
  FrameworkPlan f;
  f.strategy = s;
  f.sharding = {sh, group};
  f.precision = p;
  f.world_size = world;
  return f;
}
using F = Framework;
}  // namespace

TEST_CASE("frameworks: each plan's runners, by hand", "[framework]") {
  // no_sync() over DDP buckets: DDP, FSDP NO_SHARD, DeepSpeed stage 0 + overlap_comm, Megatron
  // --overlap-grad-reduce; not FSDP2 (shards), torchtitan (reduces every micro-batch), Horovod.
  CHECK(frameworks_running(plan(Strategy::overlap, Sharding::none)) ==
        std::vector<F>{F::ddp, F::fsdp, F::deepspeed, F::megatron});
  CHECK(frameworks_running(plan(Strategy::every_step, Sharding::none)) ==
        std::vector<F>{F::ddp, F::fsdp, F::torchtitan, F::horovod});
  CHECK(frameworks_running(plan(Strategy::fused, Sharding::none)) == std::vector<F>{F::deepspeed, F::megatron, F::horovod});
  CHECK(frameworks_running(plan(Strategy::overlap, Sharding::zero1)) == std::vector<F>{F::ddp, F::deepspeed, F::megatron});
  CHECK(frameworks_running(plan(Strategy::every_step, Sharding::zero3, Precision::bf16)) ==
        std::vector<F>{F::fsdp, F::fsdp2, F::deepspeed, F::torchtitan});
  // no_sync() under ZeRO 3: FSDP and FSDP2 hold unsharded gradients; DeepSpeed asserts.
  CHECK(frameworks_running(plan(Strategy::overlap, Sharding::zero3)) == std::vector<F>{F::fsdp, F::fsdp2});
  CHECK(frameworks_running(plan(Strategy::every_step, Sharding::zero3, Precision::fp8)) ==
        std::vector<F>{F::fsdp2, F::torchtitan});
  CHECK(frameworks_running(plan(Strategy::every_step, Sharding::zero2, Precision::fp16)) ==
        std::vector<F>{F::fsdp, F::fsdp2, F::deepspeed});
  // One rank synchronises and shards nothing: every framework runs it.
  CHECK(frameworks_running(plan(Strategy::fused, Sharding::none, Precision::fp32, 1)).size() == kAllFrameworks.size());
  // Offload: DeepSpeed's optimizer offload from stage 1, parameters at stage 3; FSDP offloads both.
  auto off = plan(Strategy::every_step, Sharding::zero3);
  off.offload_optimizer = off.offload_params = true;
  CHECK(frameworks_running(off) == std::vector<F>{F::fsdp, F::fsdp2, F::deepspeed, F::torchtitan});
  off.offload_params = false;
  CHECK(frameworks_running(off) == std::vector<F>{F::deepspeed});
}

TEST_CASE("frameworks: at accum_steps 1 overlap and every-step are one run", "[framework]") {
  // One micro-step: no no_sync() window, so the reduction overlapped with the only backward is
  // both strategies; a framework running either runs it. fused (one reduction after backward)
  // stays apart, and an unchosen k (0, a search shape) keeps the table as it is.
  auto one = [](Strategy s, Sharding sh) {
    FrameworkPlan f = plan(s, sh);
    f.accum_steps = 1;
    return f;
  };
  const std::vector<F> both_none{F::ddp, F::fsdp, F::deepspeed, F::megatron, F::torchtitan, F::horovod};
  CHECK(frameworks_running(one(Strategy::overlap, Sharding::none)) == both_none);
  CHECK(frameworks_running(one(Strategy::every_step, Sharding::none)) == both_none);
  CHECK(frameworks_running(one(Strategy::fused, Sharding::none)) == std::vector<F>{F::deepspeed, F::megatron, F::horovod});
  // ZeRO-3: DeepSpeed and torchtitan reduce-scatter every micro-step, which at k = 1 is overlap.
  CHECK(frameworks_running(one(Strategy::overlap, Sharding::zero3)) ==
        std::vector<F>{F::fsdp, F::fsdp2, F::deepspeed, F::torchtitan});
  FrameworkPlan k2 = one(Strategy::overlap, Sharding::zero3);
  k2.accum_steps = 2;
  CHECK(frameworks_running(k2) == std::vector<F>{F::fsdp, F::fsdp2});
  // Each framework spells the run it has: no no_sync() to name at one micro-step.
  CHECK(framework_setting(F::ddp, one(Strategy::overlap, Sharding::none)) == "DDP");
  CHECK(framework_setting(F::horovod, one(Strategy::overlap, Sharding::none)) == "Horovod backward_passes_per_step=1");
  CHECK(framework_setting(F::horovod, one(Strategy::fused, Sharding::none)) == "Horovod backward_passes_per_step=1");
  CHECK(framework_setting(F::deepspeed, one(Strategy::every_step, Sharding::zero1)) == "DeepSpeed ZeRO stage 1 + overlap_comm");
  CHECK(framework_setting(F::fsdp2, one(Strategy::overlap, Sharding::zero3)) == "fully_shard(reshard_after_forward=True)");
  // A refusal that is not about the strategy stays.
  CHECK_THAT(*framework_refusal(F::ddp, one(Strategy::overlap, Sharding::zero3)), Contains("DDP replicates"));
}

TEST_CASE("frameworks: a module of the user's own runs on the frameworks that wrap modules", "[framework]") {
  // Megatron-LM and torchtitan build their own transformers; DDP, FSDP, FSDP2, DeepSpeed and
  // Horovod wrap whatever module they are given.
  FrameworkPlan own = plan(Strategy::overlap, Sharding::none);
  own.accum_steps = 1;
  own.own_module = true;
  CHECK(frameworks_running(own) == std::vector<F>{F::ddp, F::fsdp, F::deepspeed, F::horovod});
  own.sharding = {Sharding::zero3, 0};
  own.precision = Precision::bf16;
  CHECK(frameworks_running(own) == std::vector<F>{F::fsdp, F::fsdp2, F::deepspeed});
  CHECK_THAT(*model_refusal(F::megatron, true), Contains("GPTModel") && Contains("--spec or --model-config"));
  CHECK_THAT(*framework_refusal(F::torchtitan, own), Contains("registry"));
  CHECK_FALSE(model_refusal(F::megatron, false));
  // torchtitan's selective is per-op or every n-th layer, never the attention core alone.
  CHECK_THAT(*checkpointing_refusal(F::torchtitan, Checkpointing::selective), Contains("no attention-core selective"));
  CHECK_FALSE(checkpointing_refusal(F::megatron, Checkpointing::selective));
  CHECK_FALSE(model_refusal(F::deepspeed, true));
}

TEST_CASE("frameworks: refusals name the framework's rule", "[framework]") {
  CHECK_THAT(*framework_refusal(F::deepspeed, plan(Strategy::overlap, Sharding::zero3)),
             Contains("DeepSpeed has no no_sync() under ZeRO stage 2/3"));
  CHECK_THAT(*framework_refusal(F::deepspeed, plan(Strategy::every_step, Sharding::zero1)),
             Contains("once, at the accumulation boundary"));
  CHECK_THAT(*framework_refusal(F::megatron, plan(Strategy::every_step, Sharding::zero3)),
             Contains("--use-distributed-optimizer"));
  CHECK_THAT(*framework_refusal(F::torchtitan, plan(Strategy::overlap, Sharding::zero3)),
             Contains("reduces on every micro-batch"));
  CHECK_THAT(*framework_refusal(F::horovod, plan(Strategy::overlap, Sharding::none)), Contains("no no_sync()"));
  CHECK_FALSE(framework_refusal(F::deepspeed, plan(Strategy::every_step, Sharding::zero2)));
}

TEST_CASE("frameworks: each spells the plan its own way", "[framework]") {
  CHECK(framework_setting(F::deepspeed, plan(Strategy::every_step, Sharding::zero2)) == "DeepSpeed ZeRO stage 2");
  CHECK(framework_setting(F::deepspeed, plan(Strategy::every_step, Sharding::hsdp, Precision::bf16, 64, 8)) ==
        "DeepSpeed ZeRO stage 3 + mics_shard_size 8");
  CHECK(framework_setting(F::deepspeed, plan(Strategy::overlap, Sharding::zero1)) == "DeepSpeed ZeRO stage 1 + overlap_comm");
  CHECK(framework_setting(F::fsdp, plan(Strategy::overlap, Sharding::zero3)) ==
        "FSDP FULL_SHARD + no_sync() on the first k-1 micro-steps");
  CHECK(framework_setting(F::fsdp2, plan(Strategy::every_step, Sharding::zero2)) ==
        "fully_shard(reshard_after_forward=False)");
  CHECK(framework_setting(F::megatron, plan(Strategy::overlap, Sharding::zero1)) ==
        "Megatron-LM --use-distributed-optimizer --overlap-grad-reduce");
  CHECK(framework_setting(F::horovod, plan(Strategy::fused, Sharding::none)) == "Horovod backward_passes_per_step=k");
  CHECK(framework_names({F::ddp, F::megatron}) == "ddp megatron");
  CHECK(framework_displays({F::ddp, F::megatron}) == "DDP, Megatron-LM");
}

TEST_CASE("frameworks: --framework spellings", "[framework]") {
  CHECK(parse_framework("DeepSpeed") == F::deepspeed);
  CHECK(parse_framework("megatron-lm") == F::megatron);
  CHECK(parse_framework("fully_shard") == F::fsdp2);
  CHECK(parse_framework("ds") == F::deepspeed);
  CHECK_THROWS_AS(parse_framework("jax"), InputError);
  CHECK_THROWS_WITH(parse_framework("jax"), Contains("--framework: unknown framework 'jax': expected ddp, fsdp"));
}
