// Unit tests for the frameworks' own configs as check inputs (check/framework_configs.hpp): TOML
// as torchtitan configs use it (toml++), Megatron-LM arguments (command line, quoting, = forms,
// virtual stages from layers per virtual stage), NeMo YAML and torchtitan TOML fields, and the
// batch arithmetic over dp that resolve() applies to a layout.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "check/framework_configs.hpp"
#include "model/parallel_plan.hpp"
#include "core/error.hpp"
#include "core/framework.hpp"

using namespace gaccum;
using namespace gaccum::check;

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "gaccum-framework-configs";
  std::filesystem::create_directories(dir);
  const auto path = (dir / name).string();
  std::ofstream(path) << text;
  return path;
}

// A pick of micro_batch 1 x 8 microbatches on 16 ranks over an interleaved pipeline of pp x v.
model::Config interleaved_pick(Count pp, Count v) {
  model::Config pick{1, 8, 16, Strategy::overlap};
  pick.layout.pp = pp;
  pick.layout.virtual_stages = v;
  pick.layout.schedule = Schedule::interleaved_1f1b;
  return pick;
}

}  // namespace

TEST_CASE("TOML through toml++: tables, scalars, arrays, comments flattened; errors name the line", "[check][toml]") {
  const auto j = parse_toml("# top\n[a]\nx = 1\ny = \"s # not a comment\" # comment\n[b.c]\nz = 2.5\nw = true\n"
                            "arr = [1, 2, 3]\nbig = 1_000\ninl = {p = 4}\n",
                            "t.toml");
  CHECK(j["a.x"] == 1);
  CHECK(j["a.y"] == "s # not a comment");
  CHECK(j["b.c.z"] == 2.5);
  CHECK(j["b.c.w"] == true);
  CHECK(j["b.c.arr"].size() == 3);
  CHECK(j["b.c.big"] == 1000);
  CHECK(j["b.c.inl.p"] == 4);
  CHECK_THROWS_WITH(parse_toml("[a]\nx = 1\nx = 2\n", "t.toml"), Catch::StartsWith("t.toml:3: "));
  CHECK_THROWS_WITH(parse_toml("[a]\nnot a pair\n", "t.toml"), Catch::StartsWith("t.toml:2: "));
  CHECK_THROWS_WITH(parse_toml("[[runs]]\nx = 1\n", "t.toml"), Catch::Contains("arrays of tables are not read here"));
}

TEST_CASE("Megatron-LM arguments: layout, batch, plan and the model", "[check][megatron]") {
  const auto path = write_temp("m.sh", "torchrun --nproc-per-node 8 pretrain_gpt.py \\\n"
                                       "  --tensor-model-parallel-size=4 --pipeline-model-parallel-size 2 \\\n"
                                       "  --num-layers-per-virtual-pipeline-stage 4 --num-layers 16 # 16 / (2 x 4)\n"
                                       "  --micro-batch-size 2 --global-batch-size 128 --recompute-granularity full \\\n"
                                       "  --hidden-size 1024 --num-attention-heads 16 --seq-length 2048 --vocab-size 32000 \\\n"
                                       "  --use-distributed-optimizer --fp16 --data-path 'a b'\n");
  const FrameworkConfig fc = load_megatron_args(path);
  const CheckInputs& in = fc.inputs;
  CHECK(*in.tp == 4);
  CHECK(*in.pp == 2);
  CHECK(*in.virtual_stages == 2);
  CHECK(*in.schedule == Schedule::interleaved_1f1b);
  CHECK(*in.micro_batch == 2);
  CHECK(*in.global_batch == 128);
  CHECK(*in.checkpointing == Checkpointing::full);
  CHECK(in.sharding->sharding == Sharding::zero1);
  CHECK(*in.strategy == Strategy::fused);  // no --overlap-grad-reduce
  CHECK(*in.precision == Precision::fp16);
  CHECK_THAT(in.tp.source, Catch::Contains("--tensor-model-parallel-size"));
  REQUIRE(fc.model);
  CHECK(fc.model->layers == 16);
  CHECK(fc.model->vocab == 32000);
  CHECK(fc.model->tied_embeddings);
  // Layers that do not divide are refused naming both arguments.
  const auto bad = write_temp("bad.sh", "--pipeline-model-parallel-size 4 --num-layers 10 "
                                        "--num-layers-per-virtual-pipeline-stage 2\n");
  CHECK_THROWS_WITH(load_megatron_args(bad), Catch::Contains("--num-layers divisible by pp x 2"));
  // The gradient dtype: unset leaves Megatron-LM's default (fp32 under bf16); the file's own flags win.
  CHECK_FALSE(in.grad_reduce_in_fp32);
  const FrameworkConfig b16 = load_megatron_args(write_temp("b16.sh", "--bf16 --grad-reduce-in-bf16\n"));
  REQUIRE(b16.inputs.grad_reduce_in_fp32);
  CHECK_FALSE(*b16.inputs.grad_reduce_in_fp32);
  CHECK_THAT(b16.inputs.grad_reduce_in_fp32.source, Catch::Contains("--grad-reduce-in-bf16"));
  const FrameworkConfig f32 = load_megatron_args(write_temp("f32.sh", "--fp16 --accumulate-allreduce-grads-in-fp32\n"));
  REQUIRE(f32.inputs.grad_reduce_in_fp32);
  CHECK(*f32.inputs.grad_reduce_in_fp32);
  // Megatron-LM's current spelling of v (it was ignored: priced as 1F1B), and fp8 (it was bf16).
  const FrameworkConfig vs = load_megatron_args(write_temp(
      "vs.sh", "--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 --bf16 --fp8-format hybrid\n"));
  CHECK(*vs.inputs.virtual_stages == 2);
  CHECK(*vs.inputs.schedule == Schedule::interleaved_1f1b);
  CHECK(*vs.inputs.precision == Precision::fp8);
  CHECK_THROWS_WITH(load_megatron_args(write_temp("vs2.sh", "--pipeline-model-parallel-size 4 --num-virtual-stages-per-pipeline-rank 2 "
                                                            "--virtual-pipeline-model-parallel-size 3\n")),
                    Catch::Contains("disagree: keep one"));
  const std::string out = complete_framework_config(vs, interleaved_pick(4, 4), 32);
  CHECK(out.find("--num-virtual-stages-per-pipeline-rank 4") != std::string::npos);
  CHECK(out.find("--virtual-pipeline-model-parallel-size") == std::string::npos);
  const FrameworkConfig nemo8 = load_nemo_config(write_temp("fp8.yaml", "trainer: {precision: bf16-mixed}\nmodel: {fp8: true}\n"));
  CHECK(*nemo8.inputs.precision == Precision::fp8);
}

TEST_CASE("NeMo YAML and torchtitan TOML fields", "[check][nemo][torchtitan]") {
  const auto nemo = write_temp("n.yaml", "trainer: {devices: 8, num_nodes: 2, precision: bf16-mixed}\n"
                                         "model: {micro_batch_size: 2, global_batch_size: 64, tensor_model_parallel_size: 2,"
                                         " pipeline_model_parallel_size: 2, virtual_pipeline_model_parallel_size: 2,"
                                         " sequence_parallel: true, activations_checkpoint_granularity: null}\n");
  const FrameworkConfig n = load_nemo_config(nemo);
  CHECK(*n.inputs.world_size == 16);
  CHECK(*n.inputs.virtual_stages == 2);
  CHECK(*n.inputs.schedule == Schedule::interleaved_1f1b);
  CHECK(*n.inputs.sequence_parallel);
  CHECK(*n.inputs.checkpointing == Checkpointing::none);
  CHECK(*n.inputs.precision == Precision::bf16);
  CHECK(!n.model);  // no model shape in the file

  const auto tt = write_temp("t.toml", "[model]\nname = \"llama3\"\nflavor = \"8B\"\n"
                                       "[training]\nlocal_batch_size = 8\nseq_len = 4096\n"
                                       "[parallelism]\ndata_parallel_shard_degree = 4\ndata_parallel_replicate_degree = 2\n"
                                       "tensor_parallel_degree = 2\npipeline_parallel_degree = 2\n"
                                       "pipeline_parallel_microbatch_size = 2\n");
  const FrameworkConfig t = load_torchtitan_config(tt);
  CHECK(*t.inputs.world_size == 2 * 2 * 4 * 2);
  CHECK(t.inputs.sharding->sharding == Sharding::hsdp);
  CHECK(t.inputs.sharding->group == 4);
  CHECK(*t.inputs.micro_batch == 2);
  CHECK(*t.inputs.accum_steps == 4);  // local_batch_size / microbatch size
  CHECK(*t.inputs.strategy == Strategy::overlap);
  CHECK(t.builtin_model == "builtin:llama3-8b@4096");
  // Context parallelism: FSDP shards over dp_shard x cp (torchtitan's dp_shard_cp mesh), so a
  // shard degree of 1 with cp 8 is FSDP over the 8 cp ranks, and HSDP's shard group is shard x cp.
  const FrameworkConfig cp8 = load_torchtitan_config(write_temp(
      "cp8.toml", "[parallelism]\ndata_parallel_shard_degree = 1\ncontext_parallel_degree = 8\n"));
  CHECK(*cp8.inputs.world_size == 8);
  CHECK(cp8.inputs.sharding->sharding == Sharding::zero3);
  CHECK_THAT(cp8.inputs.sharding.source, Catch::Contains("dp_shard_cp"));
  const FrameworkConfig cp_hsdp = load_torchtitan_config(write_temp(
      "cph.toml", "[parallelism]\ndata_parallel_shard_degree = 2\ndata_parallel_replicate_degree = 2\n"
                  "context_parallel_degree = 2\n"));
  CHECK(*cp_hsdp.inputs.world_size == 8);
  CHECK(cp_hsdp.inputs.sharding->sharding == Sharding::hsdp);
  CHECK(cp_hsdp.inputs.sharding->group == 4);
  const auto odd = write_temp("odd.toml", "[training]\nlocal_batch_size = 6\n[parallelism]\npipeline_parallel_degree = 2\n"
                                          "pipeline_parallel_microbatch_size = 4\n");
  CHECK_THROWS_WITH(load_torchtitan_config(odd), Catch::Contains("local_batch_size 6 is not a multiple"));
  // FSDP2's reduce dtype: float32 (torchtitan's default: unset here, the framework's default applies) or bfloat16.
  CHECK_FALSE(t.inputs.grad_reduce_in_fp32);
  const FrameworkConfig rb = load_torchtitan_config(write_temp("rb.toml", "[training]\nmixed_precision_reduce = \"bfloat16\"\n"));
  REQUIRE(rb.inputs.grad_reduce_in_fp32);
  CHECK_FALSE(*rb.inputs.grad_reduce_in_fp32);
  CHECK_THROWS_WITH(load_torchtitan_config(write_temp("rx.toml", "[training]\nmixed_precision_reduce = \"fp8\"\n")),
                    Catch::Contains("training.mixed_precision_reduce 'fp8': expected float32 or bfloat16"));
}

TEST_CASE("partial recompute: the fraction of the layers each framework's config recomputes", "[check][recompute]") {
  // Megatron-LM --recompute-method block: 2 of the 16 / (2 x 2) = 4 layers of each virtual chunk.
  const auto mb = write_temp("block.sh", "--num-layers 16 --pipeline-model-parallel-size 2 "
                                         "--virtual-pipeline-model-parallel-size 2 --recompute-granularity full "
                                         "--recompute-method block --recompute-num-layers 1\n");
  const CheckInputs m = load_megatron_args(mb).inputs;
  CHECK(*m.checkpointing == Checkpointing::full);
  CHECK(*m.recomputed_fraction == Approx(0.25));
  CHECK_THAT(m.recomputed_fraction.source, Catch::Contains("--recompute-num-layers 1: 1 of 4 layers per stage"));
  // At or above the stage's layers, and with the uniform method, every layer recomputes.
  CHECK(!load_megatron_args(write_temp("all.sh", "--num-layers 16 --pipeline-model-parallel-size 4 --recompute-granularity "
                                                 "full --recompute-method block --recompute-num-layers 4\n"))
             .inputs.recomputed_fraction);
  CHECK(!load_megatron_args(write_temp("uni.sh", "--num-layers 16 --recompute-granularity full --recompute-method uniform "
                                                 "--recompute-num-layers 1\n"))
             .inputs.recomputed_fraction);
  CHECK_THROWS_WITH(load_megatron_args(write_temp("bad.sh", "--recompute-granularity full --recompute-method blocks\n")),
                    Catch::Contains("--recompute-method 'blocks': expected uniform or block"));
  // NeMo's block method: 3 of 24 / 2 = 12 layers per stage.
  const auto nb = write_temp("nb.yaml", "trainer: {devices: 8}\n"
                                        "model: {micro_batch_size: 1, global_batch_size: 64, pipeline_model_parallel_size: 2,"
                                        " num_layers: 24, activations_checkpoint_granularity: full,"
                                        " activations_checkpoint_method: block, activations_checkpoint_num_layers: 3}\n");
  CHECK(*load_nemo_config(nb).inputs.recomputed_fraction == Approx(0.25));
  // torchtitan's selective with an integer: every n-th block in full recompute.
  auto titan = [&](const std::string& option) {
    return load_torchtitan_config(write_temp("ac.toml", "[activation_checkpoint]\nmode = \"selective\"\n"
                                                        "selective_ac_option = " + option + "\n"))
        .inputs;
  };
  const CheckInputs t2 = titan("\"2\"");
  CHECK(*t2.checkpointing == Checkpointing::full);
  CHECK(*t2.recomputed_fraction == Approx(0.5));
  CHECK_THAT(t2.recomputed_fraction.source, Catch::Contains("1 in every 2 layers"));
  const CheckInputs t1 = titan("\"1\"");
  CHECK(*t1.checkpointing == Checkpointing::full);
  CHECK(!t1.recomputed_fraction);
  CHECK(*titan("\"op\"").checkpointing == Checkpointing::selective_op);
  CHECK_THROWS_WITH(titan("\"often\""), Catch::Contains("selective_ac_option 'often': expected \"op\" or a positive integer"));
  // torchtitan's defaults: mode "selective" with selective_ac_option "2", table or option absent.
  const CheckInputs no_option =
      load_torchtitan_config(write_temp("sel.toml", "[activation_checkpoint]\nmode = \"selective\"\n")).inputs;
  CHECK(*no_option.recomputed_fraction == Approx(0.5));
  CHECK_THAT(no_option.recomputed_fraction.source, Catch::Contains("torchtitan's default selective_ac_option \"2\""));
  const CheckInputs no_table = load_torchtitan_config(write_temp("none.toml", "[training]\nlocal_batch_size = 2\n")).inputs;
  CHECK(*no_table.checkpointing == Checkpointing::full);
  CHECK(*no_table.recomputed_fraction == Approx(0.5));
  CHECK(!load_torchtitan_config(write_temp("off.toml", "[activation_checkpoint]\nmode = \"none\"\n"))
             .inputs.recomputed_fraction);
  // A checkpointing named on top of the config recomputes every layer it names.
  CheckInputs merged = t2;
  CheckInputs flag;
  flag.checkpointing.set(Checkpointing::full, "flag --checkpointing");
  overlay(merged, flag);
  CHECK(!merged.recomputed_fraction);
}

TEST_CASE("a completed file says the recompute tune priced", "[check][recompute]") {
  // tune prices none, selective, full (every layer) or per-op; the completed file is rewritten
  // where its own recompute differs (or covers only some layers), so check reads the same plan.
  model::Config pick{1, 8, 8, Strategy::overlap};
  pick.checkpointing = Checkpointing::full;
  const FrameworkConfig mb = load_megatron_args(write_temp("mb.sh", "--num-layers 16 --pipeline-model-parallel-size 2 "
                                                                    "--recompute-granularity full --recompute-method block "
                                                                    "--recompute-num-layers 2\n"));
  const std::string m = complete_framework_config(mb, pick, 16);
  CHECK_THAT(m, Catch::Contains("--recompute-granularity full") && Catch::Contains("--recompute-method uniform") &&
                    Catch::Contains("--recompute-num-layers 1"));
  CHECK(!load_megatron_args(write_temp("mb2.sh", m)).inputs.recomputed_fraction);
  pick.checkpointing = Checkpointing::none;
  const std::string off = complete_framework_config(mb, pick, 16);
  CHECK(off.find("--recompute") == std::string::npos);
  CHECK(*load_megatron_args(write_temp("mb3.sh", off)).inputs.checkpointing == Checkpointing::none);

  const FrameworkConfig tt = load_torchtitan_config(write_temp("tt.toml", "[activation_checkpoint]\nmode = \"selective\"\n"));
  pick.checkpointing = Checkpointing::full;
  const CheckInputs back = load_torchtitan_config(write_temp("tt2.toml", complete_framework_config(tt, pick, 16))).inputs;
  CHECK(*back.checkpointing == Checkpointing::full);
  CHECK(!back.recomputed_fraction);
  pick.checkpointing = Checkpointing::selective_op;
  CHECK(*load_torchtitan_config(write_temp("tt3.toml", complete_framework_config(tt, pick, 16))).inputs.checkpointing ==
        Checkpointing::selective_op);

  const FrameworkConfig nemo = load_nemo_config(write_temp("nb.yaml", "trainer:\n  devices: 8\nmodel:\n  num_layers: 16\n"
                                                                      "  activations_checkpoint_granularity: full\n"
                                                                      "  activations_checkpoint_method: block\n"
                                                                      "  activations_checkpoint_num_layers: 2\n"));
  REQUIRE(nemo.inputs.recomputed_fraction);
  pick.checkpointing = Checkpointing::full;
  const CheckInputs nb = load_nemo_config(write_temp("nb2.yaml", complete_framework_config(nemo, pick, 16))).inputs;
  CHECK(*nb.checkpointing == Checkpointing::full);
  CHECK(!nb.recomputed_fraction);
}

TEST_CASE("resolve: a layout's batch arithmetic is over dp = world_size / (tp pp cp)", "[check][layout]") {
  CheckInputs in = default_inputs();
  in.micro_batch.set(1, "t");
  in.global_batch.set(64, "t");
  in.world_size.set(64, "t");
  in.tp.set(8, "t");
  in.pp.set(4, "t");
  const ResolvedJob j = resolve(in);
  CHECK(j.data_parallel() == 2);
  CHECK(j.accum_steps == 32);  // 64 / (1 x 2)
  CHECK(j.product == 64);
  CHECK(j.consistent());
  CHECK(j.layout.pp == 4);
  CheckInputs bad = in;
  bad.world_size.set(60, "flag --world-size");
  CHECK_THROWS_WITH(resolve(bad), Catch::Contains("world_size 60 (flag --world-size) is not a multiple of tp x pp x cp = 32"));
}

TEST_CASE("torchtitan's pipeline stages: module_fqns_per_model_part and layers per stage, read and written",
          "[check][torchtitan][pipeline]") {
  const std::string base = "[model]\nname = \"llama3\"\nflavor = \"70B\"\n[training]\nlocal_batch_size = 8\n"
                           "[parallelism]\npipeline_parallel_degree = 2\n";
  // Every stage named: its layers.N counted (tok_embeddings, norm and output are not layers).
  const FrameworkConfig named = load_torchtitan_config(write_temp(
      "fqn.toml", base + "pipeline_parallel_schedule = \"Interleaved1F1B\"\nmodule_fqns_per_model_part = [\n"
                         "  [\"tok_embeddings\", \"layers.0\"],\n  [\"layers.1\", \"layers.2\"],\n"
                         "  [\"layers.3\", \"layers.4\", \"layers.5\"],\n  [\"layers.6\", \"norm\", \"output\"],\n]\n"));
  REQUIRE(named.inputs.stage_layer_counts);
  CHECK(*named.inputs.stage_layer_counts == std::vector<Count>{1, 2, 3, 1});
  CHECK(*named.inputs.virtual_stages == 2);  // 4 lists over pp 2
  // The single-stage schedule needs one list per rank.
  CHECK_THROWS_WITH(load_torchtitan_config(write_temp("fqn1.toml", base + "module_fqns_per_model_part = [[\"layers.0\"], "
                                                                          "[\"layers.1\"], [\"layers.2\"], [\"layers.3\"]]\n")),
                    Catch::Contains("the 1f1b schedule runs one stage per rank (2 lists)"));
  // pipeline_parallel_layers_per_stage: ceil((80 + 2) / 10) = 9 stages: not over pp 2, refused as
  // torchtitan refuses it; 41 stages of 2 neither; 82 / 41 = 2 stages, one per rank with 1F1B.
  CHECK_THROWS_WITH(load_torchtitan_config(write_temp("per10.toml", base + "pipeline_parallel_schedule = \"Interleaved1F1B\"\n"
                                                                            "pipeline_parallel_layers_per_stage = 10\n")),
                    Catch::Contains("= 9 stages, not a multiple of pipeline_parallel_degree 2"));
  const FrameworkConfig per41 = load_torchtitan_config(write_temp("per41.toml", base + "pipeline_parallel_layers_per_stage = 41\n"));
  CHECK(*per41.inputs.virtual_stages == 1);
  // Weights other than torchtitan's default 1: the split made here, stage by stage (82 + 0 - 1 ... :
  // first_less 0, last_less 2: 82 effective, 41 each: 41, 39).
  const FrameworkConfig weighted = load_torchtitan_config(write_temp(
      "w.toml", base + "pipeline_parallel_first_stage_less_layers = 0\npipeline_parallel_last_stage_less_layers = 2\n"));
  REQUIRE(weighted.inputs.stage_layer_counts);
  CHECK(*weighted.inputs.stage_layer_counts == std::vector<Count>{41, 39});
  // Deprecated split points are refused with the key to use.
  CHECK_THROWS_WITH(load_torchtitan_config(write_temp("sp.toml", base + "pipeline_parallel_split_points = [\"layers.40\"]\n")),
                    Catch::Contains("give the stages as module_fqns_per_model_part"));

  // Written: torchtitan's own stages need nothing; 5 chunks per rank name every stage, and the
  // file's own stage keys go (a multi-line list included).
  model::Config pick = interleaved_pick(2, 2);
  const std::string own = complete_framework_config(named, pick, 80);
  CHECK(own.find("module_fqns_per_model_part") == std::string::npos);
  CHECK(!load_torchtitan_config(write_temp("own.toml", own)).inputs.stage_layer_counts);
  pick.layout.virtual_stages = 5;
  const std::string five = complete_framework_config(named, pick, 80);
  const FrameworkConfig back = load_torchtitan_config(write_temp("five.toml", five));
  REQUIRE(back.inputs.stage_layer_counts);
  CHECK(*back.inputs.stage_layer_counts == model::torchtitan_split(80, 10));  // 82 over 10: 9 - 1, 9, 8 x 7, 8 - 1
  CHECK(*back.inputs.stage_layer_counts == std::vector<Count>{8, 9, 8, 8, 8, 8, 8, 8, 8, 7});
  CHECK(*back.inputs.virtual_stages == 5);

  // NeMo (Megatron-Core): uneven ends read from and written to num_layers_in_first/last_pipeline_stage.
  const FrameworkConfig nemo = load_nemo_config(write_temp(
      "ends.yaml", "trainer:\n  devices: 8\nmodel:\n  pipeline_model_parallel_size: 8\n  num_layers: 126\n"
                   "  num_layers_in_first_pipeline_stage: 15\n  num_layers_in_last_pipeline_stage: 15\n"));
  CHECK(*nemo.inputs.first_stage_layers == 15);
  CHECK(*nemo.inputs.last_stage_layers == 15);
  model::Config ends{1, 8, 8, Strategy::overlap};
  ends.layout.pp = 8;
  ends.layout.first_stage_layers = 14;
  ends.layout.last_stage_layers = 16;
  const CheckInputs written = load_nemo_config(write_temp("ends2.yaml", complete_framework_config(nemo, ends, 126))).inputs;
  CHECK(*written.first_stage_layers == 14);
  CHECK(*written.last_stage_layers == 16);
  CHECK_THROWS_WITH(load_nemo_config(write_temp("ends3.yaml", "model:\n  pipeline_model_parallel_size: 8\n"
                                                              "  virtual_pipeline_model_parallel_size: 2\n"
                                                              "  num_layers_in_first_pipeline_stage: 7\n")),
                    Catch::Contains("Megatron-Core spreads those layers over the rank's chunks"));
}

TEST_CASE("Megatron-LM's own splits: --pipeline-model-parallel-layout and the embedding/loss accounting",
          "[check][megatron][nemo][pipeline]") {
  // The layout as Megatron-LM unrolls it: commas dropped, (group)*n then x*n, stages at '|'.
  const MegatronLayout ds = parse_megatron_layout("Et*3|(tt|)*2,t*3L", 2, "layout");
  CHECK(ds.stage_layers == std::vector<Count>{3, 2, 2, 3});
  CHECK(ds.virtual_stages == 2);
  CHECK(parse_megatron_layout("Etttt|ttttL", 2, "layout").stage_layers == std::vector<Count>{4, 4});
  CHECK_THROWS_WITH(parse_megatron_layout("Et*3|t*3L|t", 2, "layout"), Catch::Contains("3 stages do not divide"));
  CHECK_THROWS_WITH(parse_megatron_layout("t*3|Et*3L", 2, "layout"), Catch::Contains("the embedding E must come exactly once, first"));
  CHECK_THROWS_WITH(parse_megatron_layout("Et*3|t*3", 2, "layout"), Catch::Contains("the loss L must come exactly once, last"));
  CHECK_THROWS_WITH(parse_megatron_layout("E|t*6L", 2, "layout"), Catch::Contains("model stage 0 ('E') holds no transformer layer"));
  CHECK_THROWS_WITH(parse_megatron_layout("Et*3|t*3mL", 2, "layout"), Catch::Contains("multi-token prediction layers (m)"));
  CHECK_THROWS_WITH(parse_megatron_layout("Et*3|t*3 L", 2, "layout"), Catch::Contains("' ' is not a layer"));
  CHECK_THROWS_WITH(parse_megatron_layout("Et*99999999|tL", 2, "layout"), Catch::Contains("more than a million"));
  // Written back: runs of equal middle stages folded, and read again to the same split.
  for (const std::vector<Count>& split : {std::vector<Count>{20, 21, 20, 19}, std::vector<Count>{7, 8, 8, 8, 8, 7},
                                          std::vector<Count>{3, 4}, std::vector<Count>{1, 1, 1, 1}}) {
    const std::string text = megatron_layout_text(split);
    CHECK(parse_megatron_layout(text, 2, "layout").stage_layers == split);
  }
  CHECK(megatron_layout_text({20, 21, 20, 19}) == "Et*20|t*21|t*20|t*19L");
  CHECK(megatron_layout_text({7, 8, 8, 8, 8, 7}) == "Et*7|(t*8|)*4t*7L");
  CHECK(megatron_layout_text({1, 1}) == "Et|tL");
  // Accounting: L + e + l over pp (x v), the first stage one fewer for the embedding, the last for
  // the loss. 80 + 2 = 82 over pp 2: 40, 40; 78 + 2 = 80 over pp 4 x v 2: 9, 10 x 6, 9; 80 + 1
  // over pp 3: 26, 27, 27; 80 + 2 over pp 4 refused (82 is not a multiple of 4).
  CHECK(model::megatron_account_split(80, 2, 1, true, true) == std::vector<Count>{40, 40});
  CHECK(model::megatron_account_split(78, 4, 2, true, true) == std::vector<Count>{9, 10, 10, 10, 10, 10, 10, 9});
  CHECK(model::megatron_account_split(80, 3, 1, true, false) == std::vector<Count>{26, 27, 27});
  CHECK_THROWS_WITH(model::megatron_account_split(80, 4, 1, true, true), Catch::Contains("not a multiple of pp 4"));
  CHECK_THROWS_WITH(model::megatron_account_split(78, 4, 3, true, true), Catch::Contains("not a multiple of the 3 virtual stages"));
  CHECK_THROWS_WITH(model::megatron_account_split(2, 4, 1, true, true), Catch::Contains("without a transformer layer"));

  // Read from Megatron-LM's arguments and NeMo's keys (a string, or stages of layer names).
  const std::string args = "--pipeline-model-parallel-size 2 --num-layers 80 --hidden-size 1024 ";
  const FrameworkConfig lay = load_megatron_args(write_temp("lay.sh", args + "--pipeline-model-parallel-layout 'Et*39|t*41L'\n"));
  REQUIRE(lay.inputs.stage_layer_counts);
  CHECK(*lay.inputs.stage_layer_counts == std::vector<Count>{39, 41});
  CHECK_THAT(lay.inputs.stage_layer_counts.source, Catch::Contains("--pipeline-model-parallel-layout"));
  CHECK_THROWS_WITH(load_megatron_args(write_temp("lay79.sh", args + "--pipeline-model-parallel-layout 'Et*39|t*40L'\n")),
                    Catch::Contains("places 79 transformer layers, --num-layers says 80"));
  CHECK_THROWS_WITH(load_megatron_args(write_temp("both.sh", args + "--pipeline-model-parallel-layout 'Et*39|t*41L' "
                                                                    "--decoder-first-pipeline-num-layers 39\n")),
                    Catch::Contains("Megatron-LM takes one way to split the layers"));
  // 80 + 1 = 81 over pp 2 is refused as Megatron-LM refuses it; over pp 3: 26, 27, 27.
  CHECK_THROWS_WITH(load_megatron_args(write_temp("acc.sh", args + "--account-for-loss-in-pipeline-split\n")),
                    Catch::Contains("80 layers count as 81 with the embedding and loss, not a multiple of pp 2"));
  CHECK_THROWS_WITH(load_megatron_args(write_temp("acc2.sh", "--pipeline-model-parallel-size 2 --account-for-loss-in-pipeline-split\n")),
                    Catch::Contains("needs --num-layers"));
  const FrameworkConfig acc3 = load_megatron_args(write_temp(
      "acc3.sh", "--pipeline-model-parallel-size 3 --num-layers 80 --account-for-embedding-in-pipeline-split\n"));
  REQUIRE(acc3.inputs.stage_layer_counts);
  CHECK(*acc3.inputs.stage_layer_counts == std::vector<Count>{26, 27, 27});
  const FrameworkConfig nl = load_nemo_config(write_temp(
      "lay.yaml", "model:\n  pipeline_model_parallel_size: 2\n  num_layers: 3\n"
                  "  pipeline_model_parallel_layout: [[embedding, decoder], [decoder, decoder, loss]]\n"));
  REQUIRE(nl.inputs.stage_layer_counts);
  CHECK(*nl.inputs.stage_layer_counts == std::vector<Count>{1, 2});
  CHECK_THROWS_WITH(load_nemo_config(write_temp("lay2.yaml", "model:\n  pipeline_model_parallel_size: 2\n  num_layers: 3\n"
                                                            "  pipeline_model_parallel_layout: [[embedding, decoder], "
                                                            "[decoder], [decoder, loss], []]\n")),
                    Catch::Contains("model stage 3 (empty) holds no transformer layer"));
  const FrameworkConfig na = load_nemo_config(write_temp(
      "acc.yaml", "model:\n  pipeline_model_parallel_size: 3\n  num_layers: 80\n"
                  "  account_for_embedding_in_pipeline_split: true\n"));
  REQUIRE(na.inputs.stage_layer_counts);
  CHECK(*na.inputs.stage_layer_counts == std::vector<Count>{26, 27, 27});

  // Written by tune: a pick split stage by stage becomes the layout (v from it), and the file's
  // accounting stays where it makes the pick's split.
  model::Config pick{1, 8, 16, Strategy::overlap};
  pick.layout.pp = 2;
  pick.layout.stage_layer_counts = {39, 41};
  const std::string out = complete_framework_config(acc3, pick, 80);
  CHECK(out.find("--pipeline-model-parallel-layout 'Et*39|t*41L'") != std::string::npos);
  CHECK(out.find("--account-for-embedding-in-pipeline-split") == std::string::npos);
  CHECK(*load_megatron_args(write_temp("out.sh", out)).inputs.stage_layer_counts == std::vector<Count>{39, 41});
  pick.layout.pp = 3;
  pick.layout.stage_layer_counts = {26, 27, 27};
  const std::string kept = complete_framework_config(acc3, pick, 80);
  CHECK(kept.find("--account-for-embedding-in-pipeline-split") != std::string::npos);
  CHECK(kept.find("--pipeline-model-parallel-layout") == std::string::npos);
}
