// Unit tests for workloads/: parameter counts against hand-computed formulas, finite gradients,
// deterministic sample-exact data, variable token counts, TorchScript loading.
#include <catch2/catch.hpp>

#include <torch/script.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "core/model_inputs.hpp"
#include "workloads/optimizer.hpp"
#include "workloads/workload.hpp"

using namespace gaccum;
using namespace gaccum::workloads;

static std::unique_ptr<Workload> preset(const std::string& name, const std::string& dtype = "float32") {
  WorkloadConfig cfg;
  cfg.name = name;
  cfg.dtype = dtype;
  return make_workload(cfg);
}

TEST_CASE("parameter counts match the hand-computed formulas", "[workloads]") {
  // mlp 256-512-512-10: sum of fan_in*fan_out + fan_out.
  CHECK(preset("mlp-small")->identity().param_count == (256 * 512 + 512) + (512 * 512 + 512) + (512 * 10 + 10));
  // gpt: V d + S d + n (12 d^2 + 13 d) + 2 d + d V.
  auto gpt = [](Count n, Count d, Count S, Count V) { return V * d + S * d + n * (12 * d * d + 13 * d) + 2 * d + d * V; };
  CHECK(preset("gpt-tiny")->identity().param_count == gpt(2, 128, 64, 512));
  CHECK(gpt(2, 128, 64, 512) == 536064);
  CHECK(preset("gpt-small")->identity().param_count == gpt(4, 256, 128, 2048));
  // cnn channels 16,32: stem 27*16+16, stages 2(9c^2+c), transition 9*16*32+32, head 32*10+10.
  CHECK(preset("cnn-small")->identity().param_count ==
        (27 * 16 + 16) + 2 * (9 * 16 * 16 + 16) + (9 * 16 * 32 + 32) + 2 * (9 * 32 * 32 + 32) + (32 * 10 + 10));
}

TEST_CASE("parameter bytes are count x dtype size and per-tensor sizes add up", "[workloads]") {
  for (const auto& dtype : {"float32", "float64"}) {
    auto w = preset("gpt-tiny", dtype);
    const auto& id = w->identity();
    CHECK(id.param_bytes == static_cast<Bytes>(id.param_count) * (std::string(dtype) == "float32" ? 4 : 8));
    Bytes sum = 0;
    for (auto b : id.param_tensor_bytes) sum += b;
    CHECK(sum == id.param_bytes);
    CHECK(id.param_tensor_bytes.size() == w->parameters().size());
  }
}

TEST_CASE("identity hash depends on hyper-parameters and dtype only", "[workloads]") {
  auto a = preset("gpt-tiny")->identity().hash;
  CHECK(preset("gpt-tiny")->identity().hash == a);
  CHECK(preset("gpt-tiny", "float64")->identity().hash != a);
  auto cfg = parse_workload_arg("gpt-tiny:layers=3");
  CHECK(make_workload(cfg)->identity().hash != a);
  CHECK(a.size() == 16);
}

TEST_CASE("every preset runs forward and backward with finite gradients", "[workloads]") {
  torch::set_num_threads(1);
  for (const auto& p : presets()) {
    if (p.name == "gpt-small") continue;  // same code as gpt-tiny, slower
    auto w = preset(p.name);
    auto batch = w->make_batch(7, 0, 3);
    auto out = w->forward(batch);
    auto loss = w->loss_sum(out, batch) / double(batch.loss_terms);
    CHECK(std::isfinite(loss.item<double>()));
    loss.backward();
    for (const auto& param : w->parameters()) {
      REQUIRE(param.grad().defined());
      CHECK(torch::isfinite(param.grad()).all().item<bool>());
    }
    CHECK(w->parameters().front().grad().abs().sum().item<double>() > 0);
  }
}

TEST_CASE("batches are deterministic and sample-exact", "[workloads]") {
  for (const auto& name : {"mlp-small", "gpt-tiny", "cnn-small"}) {
    auto w = preset(name);
    auto a = w->make_batch(1, 10, 4);
    auto b = w->make_batch(1, 10, 4);
    CHECK(torch::equal(a.input, b.input));
    CHECK(torch::equal(a.target, b.target));
    // Two halves concatenated equal the whole: the runner's one-pass reference relies on it.
    auto h1 = w->make_batch(1, 10, 2), h2 = w->make_batch(1, 12, 2);
    CHECK(torch::equal(torch::cat({h1.input, h2.input}), a.input));
    CHECK(torch::equal(torch::cat({h1.target, h2.target}), a.target));
    CHECK(h1.loss_terms + h2.loss_terms == a.loss_terms);
    // Other samples (another rank/step) and another seed differ.
    CHECK_FALSE(torch::equal(w->make_batch(1, 14, 4).input, a.input));
    CHECK_FALSE(torch::equal(w->make_batch(2, 10, 4).input, a.input));
  }
}

TEST_CASE("sample offsets tile the global batch without overlap", "[workloads]") {
  // b=2, k=3, p=2: B = 12. Window 1 starts at 12; rank 1 micro 0 at 12 + 3*2 = 18.
  CHECK(sample_offset(0, 0, 0, 2, 3, 2) == 0);
  CHECK(sample_offset(0, 0, 2, 2, 3, 2) == 4);
  CHECK(sample_offset(0, 1, 0, 2, 3, 2) == 6);
  CHECK(sample_offset(1, 1, 0, 2, 3, 2) == 18);
  CHECK(sample_offset(1, 1, 2, 2, 3, 2) == 22);
}

TEST_CASE("gpt micro-batches carry different numbers of real tokens", "[workloads]") {
  auto w = preset("gpt-tiny");
  std::set<Count> terms;
  for (int i = 0; i < 8; ++i) terms.insert(w->make_batch(3, i * 4, 4).loss_terms);
  CHECK(terms.size() > 1);
  auto b = w->make_batch(3, 0, 4);
  CHECK(b.loss_terms == (b.target != -100).sum().item<Count>());
  CHECK(w->loss_terms(3, 0, 4) == b.loss_terms);  // counted without building the batch
  CHECK(w->loss_terms(3, 5, 7) == w->make_batch(3, 5, 7).loss_terms);
  CHECK(b.loss_terms >= 4 * 16);   // lengths in [seq/4, seq]
  CHECK(b.loss_terms <= 4 * 64);
}

TEST_CASE("optimizer state and zero_grad", "[workloads]") {
  auto w = preset("mlp-small");
  auto params = w->parameters();
  zero_grad(params);
  for (const auto& p : params) CHECK(p.grad().abs().sum().item<double>() == 0);
  CHECK(traits(Optimizer::adam).state_slots == 2);
  CHECK(traits(Optimizer::sgd).state_slots == 1);
  CHECK(make_optimizer(params, Optimizer::adamw, 1e-3) != nullptr);
  CHECK_THROWS_AS(make_optimizer(params, Optimizer::lamb, 1e-3), InputError);
}

TEST_CASE("bf16 parameters step through fp32 masters, one tensor's fp32 gradient at a time", "[workloads][precision]") {
  // SGD momentum 0.9, lr 0.25, first step: buf = g, master = p - lr g. p = 1, g = 0.5 (both
  // exact in bf16) -> 0.875, exact in bf16 too; p = 1 + 2^-7 (exact), g = 2^-10: the fp32 master
  // keeps 1 + 2^-7 - 2^-12, the bf16 parameter rounds it back to 1 + 2^-7 (8 bits of mantissa), and
  // a second step of the master moves on where pure bf16 would have stalled.
  auto a = torch::full({3}, 1.0, torch::kBFloat16).requires_grad_(true);
  auto b = torch::full({2}, 1.0 + std::ldexp(1.0, -7), torch::kBFloat16).requires_grad_(true);
  a.mutable_grad() = torch::full({3}, 0.5, torch::kBFloat16);
  b.mutable_grad() = torch::full({2}, std::ldexp(1.0, -10), torch::kBFloat16);
  auto opt = make_optimizer({a, b}, Optimizer::sgd, 0.25);
  opt->step();
  CHECK(a.scalar_type() == torch::kBFloat16);
  CHECK(a.grad().scalar_type() == torch::kBFloat16);
  CHECK(a.to(torch::kFloat64).eq(0.875).all().item<bool>());
  CHECK(b.to(torch::kFloat64).eq(1.0 + std::ldexp(1.0, -7)).all().item<bool>());
  // Same gradient on: buf_t = 10 (1 - 0.9^t) g, the master loses 0.25 x 2^-10 x sum(buf_t / g)
  // = 2^-12 x (1, 2.9, 5.61, 9.049, 13.144, 17.83) after steps 1..6. The bf16 value drops to 1
  // once the loss passes half a bf16 step (2^-8 = 16 x 2^-12): after step 6, not before. Pure
  // bf16 would stall at 1 + 2^-7 forever (each update is below half a step).
  for (int t = 2; t <= 5; ++t) {
    opt->step();
    INFO("step " << t);
    CHECK(b.to(torch::kFloat64).eq(1.0 + std::ldexp(1.0, -7)).all().item<bool>());
  }
  opt->step();
  CHECK(b.to(torch::kFloat64).eq(1.0).all().item<bool>());
  // fp32 parameters get LibTorch's own optimizer, unchanged.
  auto f = torch::full({2}, 1.0, torch::kFloat32).requires_grad_(true);
  f.mutable_grad() = torch::full({2}, 0.5, torch::kFloat32);
  make_optimizer({f}, Optimizer::sgd, 0.25)->step();
  CHECK(f.eq(0.875).all().item<bool>());
}

TEST_CASE("bf16 workloads: 2-byte parameters, the loss in fp32", "[workloads][precision]") {
  CHECK(parse_dtype("bfloat16") == torch::kBFloat16);
  CHECK_THROWS_WITH(parse_dtype("half"), Catch::Contains("--dtype: unknown dtype 'half'"));
  auto w = preset("gpt-tiny", "bfloat16");
  CHECK(w->identity().param_bytes == 2 * static_cast<Bytes>(w->identity().param_count));
  CHECK(w->identity().hash != preset("gpt-tiny")->identity().hash);
  for (const auto& p : w->parameters()) CHECK(p.scalar_type() == torch::kBFloat16);
  auto batch = w->make_batch(1, 0, 2);
  auto out = w->forward(batch);
  CHECK(out.scalar_type() == torch::kBFloat16);
  auto loss = w->loss_sum(out, batch);
  CHECK(loss.scalar_type() == torch::kFloat32);
  loss.backward();
  for (const auto& p : w->parameters()) {
    REQUIRE(p.grad().defined());
    CHECK(p.grad().scalar_type() == torch::kBFloat16);
  }
}

TEST_CASE("gpt with activation checkpointing: the same gradients, recomputed per block", "[workloads][checkpointing]") {
  WorkloadConfig plain = parse_workload_arg("gpt-tiny");
  WorkloadConfig ckpt = parse_workload_arg("gpt-tiny");
  ckpt.overrides[kCheckpointKey] = 1;
  auto a = make_workload(plain), b = make_workload(ckpt);
  CHECK(a->identity().param_count == b->identity().param_count);
  CHECK(a->identity().hash != b->identity().hash);          // a different measurement
  CHECK(b->identity().hyper.value("checkpoint", 0) == 1);
  CHECK_FALSE(a->identity().hyper.contains("checkpoint"));  // existing identities keep their hashes
  for (auto* w : {a.get(), b.get()}) {
    auto batch = w->make_batch(7, 0, 3);
    w->loss_sum(w->forward(batch), batch).backward();
  }
  const auto pa = a->parameters(), pb = b->parameters();
  REQUIRE(pa.size() == pb.size());
  for (std::size_t i = 0; i < pa.size(); ++i) {
    INFO("parameter " << a->parameter_names()[i]);
    REQUIRE(pb[i].grad().defined());
    CHECK(torch::allclose(pa[i].grad(), pb[i].grad(), 1e-5, 1e-7));
    CHECK(pa[i].grad().abs().sum().item<double>() > 0);
  }
  // Only gpt has blocks to recompute; the error names the flag and the way out.
  WorkloadConfig mlp = parse_workload_arg("mlp-small");
  mlp.overrides[kCheckpointKey] = 1;
  CHECK_THROWS_WITH(make_workload(mlp), Catch::Contains("--checkpointing full: workload 'mlp-small' (mlp) has no blocks"));
  CHECK_THROWS_WITH(make_workload(parse_workload_arg("gpt-tiny:checkpoint=2")), Catch::Contains("checkpointing is 1"));
}

TEST_CASE("workload names and overrides are validated", "[workloads]") {
  CHECK_THROWS_WITH(make_workload(parse_workload_arg("gpt-huge")), Catch::Contains("unknown workload 'gpt-huge'"));
  CHECK_THROWS_WITH(make_workload(parse_workload_arg("gpt-tiny:depth=3")), Catch::Contains("no hyper-parameter 'depth'"));
  CHECK_THROWS_AS(parse_workload_arg("gpt-tiny:layers=0"), InputError);
  CHECK_THROWS_WITH(make_workload(parse_workload_arg("gpt-tiny:heads=3")), Catch::Contains("not divisible"));
  auto cfg = parse_workload_arg("mlp-small:hidden=64x32");
  CHECK(make_workload(cfg)->identity().param_count == (256 * 64 + 64) + (64 * 32 + 32) + (32 * 10 + 10));
  CHECK_THROWS_AS(resolve_device("tpu"), InputError);
  CHECK(resolve_device("cpu") == "cpu");
}

// The fixture script (scripts/make-torchscript-fixture.py, run by CTest before this test)
// writes a scripted model; without python3-torch this test is skipped with a message.
TEST_CASE("TorchScript workloads load, train, and reject corrupt files", "[workloads][torchscript]") {
  const char* dir = std::getenv("GACCUM_FIXTURE_DIR");
  std::filesystem::path model = dir ? std::filesystem::path(dir) / "tiny_cnn.pt" : "";
  if (!dir || !std::filesystem::exists(model)) {
    WARN("skipped: no TorchScript fixture (needs python3-torch; run scripts/make-torchscript-fixture.py)");
    return;
  }
  WorkloadConfig cfg;
  cfg.name = "torchscript";
  cfg.torchscript_path = model.string();
  cfg.inputs = parse_model_inputs({"float:3,16,16"}, "--input");
  auto w = make_workload(cfg);
  CHECK_FALSE(w->batch_dependence().any());
  CHECK(w->identity().kind == "torchscript");
  CHECK(w->identity().param_count > 0);
  auto b = w->make_batch(1, 0, 4);
  auto loss = w->loss_sum(w->forward(b), b);
  loss.backward();
  CHECK(w->parameters().front().grad().defined());

  auto corrupt = std::filesystem::temp_directory_path() / "gaccum_corrupt.pt";
  { std::ofstream(corrupt) << "this is not a zip archive"; }
  cfg.torchscript_path = corrupt.string();
  CHECK_THROWS_WITH(make_workload(cfg), Catch::Contains("not a loadable TorchScript file"));
  cfg.torchscript_path = model.string();
  cfg.target = parse_model_target("classes:7", "--target");
  auto w7 = make_workload(cfg);
  auto b7 = w7->make_batch(1, 0, 2);
  CHECK_THROWS_WITH(w7->loss_sum(w7->forward(b7), b7), Catch::Contains("--target"));

  // A wrong input shape is the model's own error, with the micro_batch, never "internal error".
  cfg.target = ModelTarget{};
  cfg.inputs = parse_model_inputs({"float:5,16,16"}, "--input");
  auto wrong = make_workload(cfg);
  auto bw = wrong->make_batch(1, 0, 3);
  try {
    (void)wrong->forward(bw);
    FAIL("a 5-channel input to a 3-channel conv must raise");
  } catch (const ModelError& e) {
    CHECK(e.micro_batch() == 3);
    CHECK_THAT(std::string(e.what()), Catch::Contains("raised in forward at micro_batch 3"));
    CHECK_THAT(e.model_message(), Catch::Contains("channels"));
    CHECK(std::string(e.what()).find('\n') == std::string::npos);
  }
}

// Models the test suite writes with torchvision / torch.nn (scripts/make-torchscript-fixture.py).
TEST_CASE("stock models: BatchNorm and dropout are found, token inputs and masks are built", "[workloads][torchscript]") {
  const char* dir = std::getenv("GACCUM_FIXTURE_DIR");
  const auto resnet = dir ? std::filesystem::path(dir) / "resnet18.pt" : std::filesystem::path();
  const auto encoder = dir ? std::filesystem::path(dir) / "token_encoder.pt" : std::filesystem::path();
  if (!dir || !std::filesystem::exists(encoder)) {
    WARN("skipped: no token_encoder.pt fixture (needs python3-torch)");
    return;
  }
  WorkloadConfig cfg;
  cfg.name = "torchscript";
  cfg.torchscript_path = encoder.string();
  cfg.inputs = parse_model_inputs({"tokens:1000:32", "pad-mask:32"}, "--input");
  cfg.target = parse_model_target("tokens:1000", "--target");
  auto enc = make_workload(cfg);
  const auto dep = enc->batch_dependence();
  CHECK(dep.batch_statistics.empty());
  REQUIRE_FALSE(dep.dropout.empty());
  CHECK_THAT(dep.dropout.front(), Catch::Contains("Dropout"));
  auto b = enc->make_batch(3, 10, 4);
  REQUIRE(b.more_inputs.size() == 1);
  CHECK(b.input.scalar_type() == torch::kInt64);
  CHECK(b.more_inputs[0].scalar_type() == torch::kBool);
  // Padding: the mask is true exactly where the token is 0 and the target -100; every sample has
  // between 16 and 32 real tokens; loss_terms counts them.
  const auto real = b.more_inputs[0].logical_not().sum(1);
  CHECK(real.min().item<std::int64_t>() >= 16);
  CHECK(real.max().item<std::int64_t>() <= 32);
  CHECK(b.loss_terms == real.sum().item<std::int64_t>());
  CHECK(b.loss_terms == enc->loss_terms(3, 10, 4));
  CHECK(torch::equal(b.input.eq(0), b.more_inputs[0]));
  CHECK(torch::equal(b.target.eq(-100), b.more_inputs[0]));
  CHECK(b.input.max().item<std::int64_t>() < 1000);
  // Same micro-batch, same dropout masks: forward is deterministic per (seed, first, count) ...
  auto o1 = enc->forward(b), o2 = enc->forward(b);
  CHECK(torch::equal(o1, o2));
  // ... and a different micro-batch of the same data draws different masks.
  auto shifted = enc->make_batch(3, 10, 4);
  shifted.first_sample = 11;
  CHECK_FALSE(torch::equal(enc->forward(shifted), o1));
  auto loss = enc->loss_sum(o1, b) / static_cast<double>(b.loss_terms);
  CHECK(std::isfinite(loss.item<double>()));

  // An embedding given ids beyond its vocabulary: the model's message, not "internal error".
  cfg.inputs = parse_model_inputs({"tokens:5000:32", "pad-mask:32"}, "--input");
  auto big = make_workload(cfg);
  auto bb = big->make_batch(1, 0, 2);
  CHECK_THROWS_WITH(big->forward(bb), Catch::Contains("index out of range"));

  if (!std::filesystem::exists(resnet)) {
    WARN("skipped: no resnet18.pt fixture (needs python3-torchvision)");
    return;
  }
  WorkloadConfig rc;
  rc.name = "torchscript";
  rc.torchscript_path = resnet.string();
  rc.inputs = parse_model_inputs({"float:3,32,32"}, "--input-shape");
  auto rn = make_workload(rc);
  CHECK(rn->identity().param_count == 11181642);  // torchvision resnet18, 10 classes
  CHECK(rn->batch_dependence().batch_statistics.size() == 20);
  CHECK(rn->batch_dependence().dropout.empty());
  // BatchNorm at micro_batch 1 on a 1x1 map: the model's own words reach the user.
  auto one = rn->make_batch(1, 0, 1);
  CHECK_THROWS_WITH(rn->forward(one), Catch::Contains("Expected more than 1 value per channel when training"));
  auto two = rn->make_batch(1, 0, 2);
  CHECK(rn->forward(two).sizes() == torch::IntArrayRef({2, 10}));
}

// Any op that draws random numbers in forward() makes the masks a micro-batch draws part of its
// result, like a Dropout module: torchvision's StochasticDepth (bernoulli_ per sample; ConvNeXt
// read accumulation INCORRECT, 32 of 16346 gradient elements off, before it counted), noise added
// with torch.randn_like (no module says so), and torch 2.x's scaled_dot_product_attention with a
// dropout_p that is not the constant 0.
TEST_CASE("random draws in forward() count as dropout, and draw the same per micro-batch", "[workloads][torchscript]") {
  const char* dir = std::getenv("GACCUM_FIXTURE_DIR");
  const auto at = [&](const char* name) { return dir ? std::filesystem::path(dir) / name : std::filesystem::path(); };
  if (!dir || !std::filesystem::exists(at("noise_mlp.pt"))) {
    WARN("skipped: no noise_mlp.pt fixture (needs python3-torch)");
    return;
  }
  const auto load = [&](const char* name, std::vector<std::string> inputs) {
    WorkloadConfig cfg;
    cfg.name = "torchscript";
    cfg.torchscript_path = at(name).string();
    cfg.inputs = parse_model_inputs(inputs, "--input");
    if (inputs.front().rfind("tokens", 0) == 0) cfg.target = parse_model_target("tokens:200", "--target");
    return make_workload(cfg);
  };
  // 16 samples: two seeds drawing one per-sample mask alike is 2^-16 likely at p = 0.5.
  const auto same_masks_per_micro_batch = [](Workload& w) {
    auto b = w.make_batch(3, 10, 16);
    const auto o1 = w.forward(b), o2 = w.forward(b);
    CHECK(torch::equal(o1, o2));
    auto shifted = w.make_batch(3, 10, 16);
    shifted.first_sample = 11;
    CHECK_FALSE(torch::equal(w.forward(shifted), o1));
  };
  {
    auto noise = load("noise_mlp.pt", {"float:16"});
    const auto dep = noise->batch_dependence();
    REQUIRE(dep.dropout.size() == 1);
    CHECK_THAT(dep.dropout.front(), Catch::StartsWith("random draws in forward(): aten::randn_like"));
    same_masks_per_micro_batch(*noise);
  }
  if (std::filesystem::exists(at("convnext_sd.pt"))) {
    auto convnext = load("convnext_sd.pt", {"float:3,32,32"});
    const auto dep = convnext->batch_dependence();
    REQUIRE(dep.dropout.size() == 2);  // one StochasticDepth per block
    CHECK_THAT(dep.dropout.front(), Catch::Contains("(StochasticDepth)"));
    same_masks_per_micro_batch(*convnext);
  } else {
    WARN("skipped: no convnext_sd.pt fixture (needs python3-torchvision)");
  }
#if TORCH_VERSION_MAJOR >= 2
  if (!std::filesystem::exists(at("sdpa_lm.pt"))) {
    WARN("skipped: no sdpa_lm.pt fixture (written by the python of a pip torch 2.x: scripts/test-torch2)");
    return;
  }
  auto sdpa = load("sdpa_lm.pt", {"tokens:200:16"});
  REQUIRE(sdpa->batch_dependence().dropout.size() == 1);
  CHECK_THAT(sdpa->batch_dependence().dropout.front(),
             Catch::StartsWith("random draws in forward(): aten::scaled_dot_product_attention with dropout_p"));
  same_masks_per_micro_batch(*sdpa);
  CHECK(load("sdpa_lm_nodrop.pt", {"tokens:200:16"})->batch_dependence().dropout.empty());
#endif
}

// A TorchScript model whose forward() is a chain of submodule calls runs block by block
// (workloads/torchscript.cpp find_chain): the nn.Sequential's Linear layers with their GELUs
// joined, the ModuleList model scripted and traced; anything else is refused with the reason.
TEST_CASE("TorchScript chains run block by block; other forwards are refused with the reason",
          "[workloads][torchscript][staged]") {
  const char* dir = std::getenv("GACCUM_FIXTURE_DIR");
  const auto at = [&](const char* name) { return dir ? std::filesystem::path(dir) / name : std::filesystem::path(); };
  if (!dir || !std::filesystem::exists(at("seq_mlp.pt"))) {
    WARN("skipped: no seq_mlp.pt fixture (needs python3-torch)");
    return;
  }
  WorkloadConfig cfg;
  cfg.name = "torchscript";
  cfg.torchscript_path = at("seq_mlp.pt").string();
  cfg.inputs = parse_model_inputs({"float:16"}, "--input");
  auto w = make_workload(cfg);
  StagedModel* st = w->staged();
  REQUIRE(st != nullptr);
  // 6 Linear layers, the 5 GELUs joined to the Linear before them: 6 units, 4 blocks.
  CHECK(st->units() == 6);
  CHECK(st->blocks() == 4);
  CHECK(w->identity().hyper.at("units") == nlohmann::json({"0+1", "2+3", "4+5", "6+7", "8+9", "10"}));
  CHECK(w->identity().unit_tensors == std::vector<Count>{2, 2, 2, 2, 2, 2});
  // Parameters in unit order (the concatenation over units), 16*64+64 + 4*(64*64+64) + 64*10+10.
  std::vector<torch::Tensor> concat;
  for (Count u = 0; u < st->units(); ++u)
    for (const auto& p : st->unit_parameters(u)) concat.push_back(p);
  const auto params = w->parameters();
  REQUIRE(concat.size() == params.size());
  for (std::size_t i = 0; i < params.size(); ++i) CHECK(concat[i].is_same(params[i]));
  CHECK(w->identity().param_count == (16 * 64 + 64) + 4 * (64 * 64 + 64) + (64 * 10 + 10));
  CHECK(w->parameter_names().front() == "0.weight");
  // Unit by unit equals the module's own forward, bitwise.
  auto b = w->make_batch(3, 0, 5);
  torch::jit::script::Module whole = torch::jit::load(cfg.torchscript_path);
  const auto direct = whole.forward({b.input}).toTensor();
  CHECK(torch::equal(w->forward(b), direct));
  CHECK(torch::equal(st->forward_units(2, 6, st->forward_units(0, 2, b.input)), direct));
  // What crosses each boundary: [b, 64] float.
  const auto in3 = st->unit_input(5, 3);
  CHECK(in3.shape == std::vector<std::int64_t>{5, 64});
  CHECK(in3.dtype == torch::kFloat32);
  CHECK(st->tensor_parallel_rejection(1, false).empty());
  CHECK_THAT(st->tensor_parallel_rejection(2, false), Catch::Contains("run this model with --pp or --sharding"));

  // The ModuleList model, scripted and traced: embedding, 4 blocks, head.
  for (const char* name : {"blocks_lm.pt", "blocks_lm_traced.pt"}) {
    INFO(name);
    WorkloadConfig lm;
    lm.name = "torchscript";
    lm.torchscript_path = at(name).string();
    lm.inputs = parse_model_inputs({"tokens:200:16"}, "--input");
    lm.target = parse_model_target("tokens:200", "--target");
    auto m = make_workload(lm);
    REQUIRE(m->staged() != nullptr);
    CHECK(m->identity().hyper.at("units") ==
          nlohmann::json({"embed", "blocks.0", "blocks.1", "blocks.2", "blocks.3", "head"}));
    CHECK(m->staged()->unit_input(2, 1).shape == std::vector<std::int64_t>{2, 16, 64});
    auto lb = m->make_batch(1, 0, 2);
    auto loss = m->loss_sum(m->forward(lb), lb);
    loss.backward();
    for (const auto& p : m->parameters()) CHECK(p.grad().defined());
  }

  // Refused, each with its reason (and then run whole).
  struct Refusal {
    const char* file;
    std::vector<std::string> inputs;
    const char* why;
  };
  for (const auto& r : {Refusal{"tiny_cnn.pt", {"float:3,16,16"}, "runs aten::relu"},
                        Refusal{"causal_lm.pt", {"tokens:200:16"}, "takes 2 inputs"},
                        Refusal{"token_encoder.pt", {"tokens:1000:32", "pad-mask:32"}, "takes 2 inputs"}}) {
    INFO(r.file);
    WorkloadConfig c;
    c.name = "torchscript";
    c.torchscript_path = at(r.file).string();
    c.inputs = parse_model_inputs(r.inputs, "--input");
    if (std::string(r.file) != "tiny_cnn.pt") c.target = parse_model_target(r.inputs[0] == "tokens:200:16" ? "tokens:200" : "tokens:1000", "--target");
    auto m = make_workload(c);
    CHECK(m->staged() == nullptr);
    CHECK_THAT(m->staging_rejection(), Catch::Contains(r.why) && Catch::Contains("write it as a sequence of blocks"));
    CHECK(m->identity().unit_tensors.empty());
  }
  CHECK_THAT(preset("mlp-small")->staging_rejection(), Catch::Contains("the built-in mlp runs as one module"));
}
