// What: `gaccum-tune devices` (the GPU catalogue with each generation's calibration and its
//       provenance) and `gaccum-tune calibrate` (fit the GPU compute model's efficiencies to
//       measured runs, report in-sample and cross-validated error, write them to a calibration
//       file or into a cluster file's device). model/gpu_device.hpp, model/calibration.hpp.
// Why: the analytic path's compute is only as good as its efficiencies; users see where the
//      shipped ones come from and can fit their own fleet's runs the same way.
#include <iostream>
#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/command.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/units.hpp"
#include "core/utc_time.hpp"
#include "model/calibration.hpp"
#include "model/gpu_device.hpp"

namespace gaccum::cli {
namespace {

struct DevicesOptions {
  bool json = false;
};

std::string calibration_cell(const model::GpuCalibration& c) {
  if (!c.fitted) return "borrowed: " + c.from;
  std::string cv = c.cross_validated.rows > 0
                       ? fmt::format(", CV median {:.1f}% max {:.1f}%", 100 * c.cross_validated.median_abs,
                                     100 * c.cross_validated.max_abs)
                       : "";
  return fmt::format("fitted, {} runs (in-sample median {:.1f}%{})", c.in_sample.rows, 100 * c.in_sample.median_abs, cv);
}

int run_devices(const DevicesOptions& o) {
  if (o.json) {
    nlohmann::json out = {{"calibration_fitted_utc", model::shipped_calibration_json().value("fitted_utc", "")},
                          {"devices", nlohmann::json::array()}};
    for (const auto& d : model::gpu_catalogue()) out["devices"].push_back(model::to_json(d));
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  fmt::print("{:<19} {:<9} {:>6} {:>6} {:>6} {:>8} {:>7} {:>5} {:>5}\n", "device", "gen", "bf16", "fp8", "tf32",
             "memory", "HBM", "SMs", "W");
  fmt::print("{:<19} {:<9} {:>6} {:>6} {:>6} {:>8} {:>7} {:>5} {:>5}\n", "", "", "TFLOPS", "TFLOPS", "TFLOPS", "GiB",
             "TB/s", "", "");
  for (const auto& d : model::gpu_catalogue())
    fmt::print("{:<19} {:<9} {:>6.0f} {:>6} {:>6.0f} {:>8.1f} {:>7.2f} {:>5} {:>5.0f}\n", d.id,
               model::to_string(d.generation), d.bf16_flops / 1e12,
               d.fp8_flops > 0 ? fmt::format("{:.0f}", d.fp8_flops / 1e12) : "-", d.tf32_flops / 1e12,
               double(d.memory) / double(Bytes(1) << 30), d.hbm_bandwidth / 1e12, d.sms, d.watts);
  fmt::print("\nCalibration (GPU compute model efficiencies per generation; model/gpu_calibration.json, fitted {}):\n",
             model::shipped_calibration_json().value("fitted_utc", "never"));
  for (auto g : model::kAllGpuGenerations) {
    const auto& c = model::shipped_calibration(g);
    const auto& e = c.efficiency;
    fmt::print("  {:<9} GEMM {:.1f}%  fp8 x{:.2f}  attention {:.1f}%  memory {:.1f}%  kernel overhead {:.1f} us  "
               "overlap {:.2f}\n            {}\n",
               model::to_string(g), 100 * e.gemm, e.fp8, 100 * e.attention, 100 * e.memory, e.overhead * 1e6, e.overlap,
               calibration_cell(c));
  }
  fmt::print("\nDatasheets:\n");
  for (const auto& d : model::gpu_catalogue()) fmt::print("  {:<19} {}\n", d.id, d.datasheet);
  fmt::print("\nName one in a cluster file: \"device\": \"h100-sxm-80gb\" (or {{\"id\": ..., overrides}}).\n");
  return kExitOk;
}

struct CalibrateOptions {
  std::vector<std::string> runs;
  std::string cross_validate = "none";
  std::string output, cluster, calibration;
  bool evaluate = false, rows = false, json = false, quick = false;
};

double pct(double predicted, double published) { return 100 * (predicted / published - 1); }

nlohmann::json row_json(const model::RunResult& x) {
  const auto& r = *x.run;
  const auto& c = x.config;
  nlohmann::json j = {{"id", r.id},
                      {"file", r.file},
                      {"model", r.model},
                      {"gpu", r.gpu_id},
                      {"group", r.group},
                      {"micro_batch", c.micro_batch},
                      {"accum_steps", c.accum_steps},
                      {"world_size", r.config.world_size},
                      {"seq_len", r.spec.seq_len},
                      {"sharding", to_string(r.config.sharding)},
                      {"precision", std::string(to_string(*r.config.precision))},
                      {"checkpointing", std::string(to_string(*r.config.checkpointing))},
                      {"published_tokens_per_s_per_gpu", r.published},
                      {"predicted_tokens_per_s_per_gpu", x.predicted},
                      {"error_pct", pct(x.predicted, r.published)},
                      {"gemm_efficiency", x.gemm_efficiency},
                      {"mfu", x.mfu},
                      {"held_out", r.held_out}};
  j["predicted_peak_memory_bytes"] = x.peak_memory;
  j["device_memory_bytes"] = r.cluster.device_memory;
  if (!c.layout.data_parallel_only()) {
    j["tp"] = c.layout.tp;
    j["pp"] = c.layout.pp;
    j["cp"] = c.layout.cp;
    j["virtual_stages"] = c.layout.virtual_stages;
    j["schedule"] = c.layout.pp > 1 ? nlohmann::json(std::string(to_string(c.layout.schedule))) : nlohmann::json(nullptr);
    j["bubble_fraction"] = x.bubble_fraction;
    j["layout_chosen"] = r.choose_layout;  // micro_batch (and v) not published: the best predicted that fits
  }
  if (r.published_memory > 0) {
    j["published_peak_memory_bytes"] = r.published_memory;
    j["memory_error_pct"] = pct(double(x.peak_memory), double(r.published_memory));
  }
  if (x.cross_validated > 0) {
    j["cross_validated_tokens_per_s_per_gpu"] = x.cross_validated;
    j["cross_validated_error_pct"] = pct(x.cross_validated, r.published);
    if (!x.note.empty()) j["cross_validation_note"] = x.note;
  }
  return j;
}

int run_calibrate(const CalibrateOptions& o) {
  if (o.runs.empty()) throw InputError("calibrate: --runs FILE is required (published rows or a gaccum-tune/runs file)");
  model::HoldOut hold = model::HoldOut::none;
  if (o.cross_validate == "model") hold = model::HoldOut::model;
  else if (o.cross_validate == "gpu") hold = model::HoldOut::gpu;
  else if (o.cross_validate != "none")
    throw InputError(fmt::format("--cross-validate: '{}': expected model, gpu or none", o.cross_validate));
  if (o.evaluate && (hold != model::HoldOut::none || !o.output.empty() || !o.cluster.empty()))
    throw InputError("--evaluate predicts with a given calibration: drop --cross-validate, -o and --cluster");
  if (!o.calibration.empty() && !o.evaluate) throw InputError("--calibration FILE applies to --evaluate");
  // The cluster file to write into is checked before the fit, so a bad one fails fast.
  nlohmann::json cj;
  const model::GpuDevice* gpu = nullptr;
  if (!o.cluster.empty()) {
    cj = parse_json_text(read_text_file(o.cluster, "--cluster"), o.cluster);
    const model::Cluster cl = model::cluster_from_json(cj, o.cluster);
    gpu = cl.gpu();
    // Named ("device": "h100-sxm-80gb" or {"id": ...}) or raw numbers that match a catalogue
    // part (what `cluster fit` writes): the fit goes to that part, and the file then names it.
    if (!gpu)
      throw InputError(fmt::format("--cluster {}: its device matches no catalogue GPU (peak and memory): set \"device\": "
                                   "{{\"id\": ...}} (gaccum-tune devices) first",
                                   o.cluster));
    if (!cl.gpu_named && !o.json)
      fmt::print(stderr, "calibrate: --cluster {}: its device's peak and memory match {} ({}): the fit is written for it, "
                 "and \"device\".\"id\" names it\n", o.cluster, gpu->id, gpu->name);
  }
  std::vector<model::CalibrationRun> runs;
  for (const auto& f : o.runs) {
    auto r = model::read_runs(f);
    runs.insert(runs.end(), r.begin(), r.end());
  }
  model::FitOptions fo;
  if (o.quick) fo.starts = 1, fo.max_evaluations = 400;
  model::CalibrationReport rep;
  if (o.evaluate) {
    std::vector<model::GpuCalibration> cals;
    if (!o.calibration.empty())
      cals = model::calibrations_from_json(parse_json_text(read_text_file(o.calibration, "--calibration"), o.calibration),
                                           o.calibration);
    else
      for (auto g : model::kAllGpuGenerations) cals.push_back(model::shipped_calibration(g));
    rep = model::evaluate(runs, cals);
  } else {
    rep = model::calibrate(runs, hold, fo, [&](const std::string& s) {
      if (!o.json) fmt::print(stderr, "calibrate: {}\n", s);
    });
  }
  const std::string now = utc_now();
  for (auto& c : rep.calibrations)
    if (c.fitted && !o.evaluate) c.fitted_utc = now;
  // Summaries over all priced runs; a fit's held-out runs (tensor/pipeline layouts, never fitted)
  // apart from its in-sample ones.
  std::vector<double> in, held, cv;
  for (const auto& x : rep.results) {
    (x.run->held_out && !o.evaluate ? held : in).push_back(x.predicted / x.run->published - 1);
    if (x.cross_validated > 0) cv.push_back(x.cross_validated / x.run->published - 1);
  }
  const auto in_sum = model::summarise_errors(in), held_sum = model::summarise_errors(held),
             cv_sum = model::summarise_errors(cv);
  std::map<std::string, int> reasons;
  for (const auto& r : runs)
    if (!r.not_priced.empty()) reasons[r.not_priced]++;
  if (!o.output.empty())
    write_file_atomic(o.output, model::calibrations_to_json(rep.calibrations, now).dump(2) + "\n");
  if (!o.cluster.empty()) {
    const model::GpuCalibration* mine = nullptr;
    for (const auto& c : rep.calibrations)
      if (c.generation == gpu->generation) mine = &c;
    if (!mine)
      throw InputError(fmt::format("--cluster {}: no run on a {} GPU was fitted (the cluster's {} is {})", o.cluster,
                                   model::to_string(gpu->generation), gpu->id, model::to_string(gpu->generation)));
    if (cj["device"].is_string()) cj["device"] = nlohmann::json{{"id", cj["device"]}};
    if (!cj["device"].contains("id")) cj["device"]["id"] = gpu->id;
    cj["device"]["calibration"] = model::to_json(*mine);
    write_file_atomic(o.cluster, cj.dump(2) + "\n");
  }
  if (o.json) {
    nlohmann::json j = {{"schema", "gaccum-tune/calibration-report"},
                        {"mode", o.evaluate ? "evaluate" : "fit"},
                        {"cross_validate", o.cross_validate},
                        {"calibrations", model::calibrations_to_json(rep.calibrations, now)},
                        {"in_sample", model::to_json(in_sum)},
                        {"rows", nlohmann::json::array()},
                        {"not_priced", nlohmann::json::array()}};
    if (!cv.empty()) j["cross_validated"] = model::to_json(cv_sum);
    if (!held.empty()) j["held_out"] = model::to_json(held_sum);
    j["warnings"] = nlohmann::json::array();
    if (!o.evaluate)
      for (const auto& c : rep.calibrations)
        for (const auto& w : model::fit_warnings(c)) j["warnings"].push_back(w);
    for (const auto& x : rep.results) j["rows"].push_back(row_json(x));
    for (const auto& r : runs)
      if (!r.not_priced.empty()) j["not_priced"].push_back({{"id", r.id}, {"file", r.file}, {"reason", r.not_priced}});
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  fmt::print("runs: {} read, {} priced, {} not priced\n", runs.size(), rep.results.size(),
             runs.size() - rep.results.size());
  for (const auto& [why, n] : reasons) fmt::print("  not priced ({}): {}\n", n, why);
  if (o.rows) {
    fmt::print("\n{:<64} {:>11} {:>11} {:>8} {:>8} {:>6}\n", "run", "published", "predicted", "error", "CV err",
               "GEMM");
    for (const auto& x : rep.results) {
      fmt::print("{:<64} {:>11.0f} {:>11.0f} {:>7.1f}% {:>8} {:>5.0f}%\n", x.run->id, x.run->published, x.predicted,
                 pct(x.predicted, x.run->published),
                 x.cross_validated > 0 ? fmt::format("{:.1f}%", pct(x.cross_validated, x.run->published)) : "-",
                 100 * x.gemm_efficiency);
      if (!x.config.layout.data_parallel_only())
        fmt::print("{:<64} {} x dp {}, micro_batch {} x m {}{}, bubble {:.1f}%, peak {}{}\n", "", to_string(x.config.layout),
                   x.config.data_parallel(), x.config.micro_batch, x.config.accum_steps,
                   x.run->choose_layout ? " (not published: the best predicted that fits)" : "",
                   100 * x.bubble_fraction, format_bytes(x.peak_memory),
                   x.run->held_out && !o.evaluate ? "; never fitted (a layout's run tests the fit)" : "");
      if (x.run->published_memory > 0)
        fmt::print("{:<64} peak memory published {}, predicted {} ({:+.1f}%)\n", "", format_bytes(x.run->published_memory),
                   format_bytes(x.peak_memory), pct(double(x.peak_memory), double(x.run->published_memory)));
    }
  }
  fmt::print("\n{} (tokens/s per GPU, predicted vs published):\n", o.evaluate ? "Evaluated" : "Fitted");
  for (const auto& c : rep.calibrations) {
    const auto& e = c.efficiency;
    fmt::print("  {:<9} GEMM {:.1f}%  fp8 x{:.2f}  attention {:.1f}%  memory {:.1f}%  overhead {:.1f} us  overlap "
               "{:.2f}\n",
               model::to_string(c.generation), 100 * e.gemm, e.fp8, 100 * e.attention, 100 * e.memory,
               e.overhead * 1e6, e.overlap);
    if (!o.evaluate && !c.kept.empty()) fmt::print("            {}\n", c.kept);
    if (c.in_sample.rows > 0 && !o.evaluate)
      fmt::print("            in-sample: {} runs, |error| median {:.1f}%, p90 {:.1f}%, max {:.1f}%, mean {:+.1f}%\n",
                 c.in_sample.rows, 100 * c.in_sample.median_abs, 100 * c.in_sample.p90_abs,
                 100 * c.in_sample.max_abs, 100 * c.in_sample.signed_mean);
    if (c.cross_validated.rows > 0)
      fmt::print("            cross-validated {}: median {:.1f}%, p90 {:.1f}%, max {:.1f}%\n",
                 o.evaluate ? std::string("when this calibration was fitted")
                            : fmt::format("(one {} held out at a time)", o.cross_validate == "model" ? "model size" : "GPU part"),
                 100 * c.cross_validated.median_abs, 100 * c.cross_validated.p90_abs, 100 * c.cross_validated.max_abs);
  }
  fmt::print("  all       {}: {} runs, |error| median {:.1f}%, p90 {:.1f}%, max {:.1f}%, mean {:+.1f}%\n",
             o.evaluate ? "evaluated" : "in-sample", in_sum.rows, 100 * in_sum.median_abs, 100 * in_sum.p90_abs,
             100 * in_sum.max_abs, 100 * in_sum.signed_mean);
  if (!held.empty())
    fmt::print("  all       held out (tensor/pipeline runs, never fitted): {} runs, |error| median {:.1f}%, p90 {:.1f}%, "
               "max {:.1f}%, mean {:+.1f}%\n",
               held_sum.rows, 100 * held_sum.median_abs, 100 * held_sum.p90_abs, 100 * held_sum.max_abs,
               100 * held_sum.signed_mean);
  if (!cv.empty())
    fmt::print("  all       cross-validated by {}: median {:.1f}%, p90 {:.1f}%, max {:.1f}%, mean {:+.1f}%\n",
               o.cross_validate, 100 * cv_sum.median_abs, 100 * cv_sum.p90_abs, 100 * cv_sum.max_abs,
               100 * cv_sum.signed_mean);
  if (!o.evaluate)
    for (const auto& c : rep.calibrations)
      for (const auto& w : model::fit_warnings(c)) fmt::print("warning: {}\n", w);
  if (!o.output.empty()) fmt::print("\nwrote {}\n", o.output);
  if (!o.cluster.empty()) fmt::print("\nwrote the calibration into {} (device.calibration)\n", o.cluster);
  return kExitOk;
}

}  // namespace

void add_devices_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<DevicesOptions>();
  auto* sub = app.add_subcommand("devices", "List the GPU catalogue: datasheet numbers and each generation's calibration");
  sub->add_flag("--json", o->json, "Print JSON");
  sub->callback([o, &action] { action = [o] { return run_devices(*o); }; });
}

void add_calibrate_command(CLI::App& app, Action& action) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* sub = app.add_subcommand(
      "calibrate", "Fit the GPU compute model's efficiencies to measured runs (published rows or your own run logs)");
  sub->add_option("--runs", o->runs, "Runs file(s): published rows (llm-foundry schema) or a gaccum-tune/runs file")
      ->required();
  sub->add_option("--cross-validate", o->cross_validate, "Hold out one model size (model) or GPU part (gpu) at a time")
      ->default_str("none");
  sub->add_option("-o,--output", o->output, "Write the fitted calibration file (gaccum-tune/gpu-calibration)");
  sub->add_option("--cluster", o->cluster, "Write the fitted calibration into this cluster file's device");
  sub->add_flag("--evaluate", o->evaluate, "No fit: predict the runs with the shipped (or --calibration) efficiencies");
  sub->add_option("--calibration", o->calibration, "With --evaluate: a calibration file to evaluate");
  sub->add_flag("--rows", o->rows, "Print every run's predicted vs published tokens/s per GPU");
  sub->add_flag("--json", o->json, "Print the report as JSON (rows included)");
  sub->add_flag("--quick", o->quick, "One start and fewer evaluations per fit (a smoke run)");
  sub->callback([o, &action] { action = [o] { return run_calibrate(*o); }; });
}

}  // namespace gaccum::cli
