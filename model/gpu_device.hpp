// What: the GPU catalogue and the efficiency parameters of the GPU compute model
//       (model/gpu_compute.hpp; docs/DESIGN.md, GPU compute model).
//   GpuDevice      one part's datasheet numbers: dense tensor-core peaks (bf16/fp16, fp8, tf32),
//                  memory, HBM bandwidth, SM (CU) count, board power, and the datasheet named
//   GpuGeneration  what shares one set of efficiency parameters (the same tensor-core
//                  architecture and kernels): ampere, hopper, blackwell, cdna3
//   GpuEfficiency  the fitted parameters of a generation (all dimensionless but the overhead):
//                    gemm       fraction of the dense peak a large, wave-aligned GEMM reaches
//                    fp8        fraction of the fp8 peak an fp8 GEMM reaches, relative to `gemm`
//                    attention  fraction of the dense peak FlashAttention's causal FLOPs reach
//                    memory     fraction of the HBM bandwidth memory-bound kernels reach
//                    overhead   seconds per kernel (launch, prologue, tail)
//                    overlap    model/overlap.hpp's efficiency for collectives beside compute
//   GpuCalibration the parameters of a generation with where they came from (the fit's rows,
//                  residuals, cross-validated error); the shipped ones are fitted by
//                  `gaccum-tune calibrate` on bench/data/published/ and compiled in from
//                  model/gpu_calibration.json.
// Why: a GPU's achieved FLOP/s depends on the GEMM shapes a micro_batch makes; a flat MFU cannot
//      see the micro_batch trade-off the tuner exists to make.
// Units: FLOP/s, Bytes, bytes/s, Seconds.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.hpp"

namespace gaccum::model {

enum class GpuGeneration { ampere, hopper, blackwell, cdna3 };
inline constexpr std::array<GpuGeneration, 4> kAllGpuGenerations{GpuGeneration::ampere, GpuGeneration::hopper,
                                                                 GpuGeneration::blackwell, GpuGeneration::cdna3};

struct GpuGenerationTraits {
  GpuGeneration value;
  const char* name;
  Count tile_m, tile_n;  // the output tile of a large bf16 GEMM (cuBLAS/hipBLASLt's usual choice)
};
const GpuGenerationTraits& traits(GpuGeneration g);
std::string_view to_string(GpuGeneration g);
std::optional<GpuGeneration> find_generation(std::string_view name);

struct GpuDevice {
  std::string id;        // "h100-sxm-80gb": what a cluster file names
  std::string name;      // "NVIDIA H100 SXM5 80GB"
  GpuGeneration generation = GpuGeneration::hopper;
  double bf16_flops = 0; // dense FLOP/s, bf16 and fp16 tensor cores
  double fp8_flops = 0;  // dense FLOP/s; 0: no fp8 tensor cores
  double tf32_flops = 0; // dense FLOP/s of fp32 training (TF32 / XF32 tensor cores)
  Bytes memory = 0;
  BytesPerSecond hbm_bandwidth = 0;
  Count sms = 0;         // streaming multiprocessors (compute units on AMD)
  double watts = 0;
  std::string datasheet;
  std::vector<std::string> aliases;  // other spellings a cluster file or a runs file may use
};

struct GpuEfficiency {
  double gemm = 0.8;
  double fp8 = 0.8;
  double attention = 0.4;
  double memory = 0.7;
  Seconds overhead = 10e-6;
  double overlap = 0.8;
};
// The parameters in a fixed order (the fit's vector), their names and bounds.
inline constexpr int kGpuEfficiencyParams = 6;
std::array<double, kGpuEfficiencyParams> to_array(const GpuEfficiency& e);
GpuEfficiency from_array(const std::array<double, kGpuEfficiencyParams>& a);
const std::array<const char*, kGpuEfficiencyParams>& efficiency_names();
const std::array<std::pair<double, double>, kGpuEfficiencyParams>& efficiency_bounds();

struct ErrorSummary {
  Count rows = 0;
  double median_abs = 0, p90_abs = 0, max_abs = 0, signed_mean = 0;  // relative errors (0.05 = 5%)
};
ErrorSummary summarise_errors(std::vector<double> rel_errors);
nlohmann::json to_json(const ErrorSummary& s);
ErrorSummary error_summary_from_json(const nlohmann::json& j, const std::string& what);

struct GpuCalibration {
  GpuGeneration generation = GpuGeneration::hopper;
  GpuEfficiency efficiency;
  bool fitted = false;            // false: another generation's parameters, borrowed (see `from`)
  std::string from;               // provenance: the runs fitted, or what was borrowed (and `kept`)
  std::string kept;               // parameters the fitted runs cannot show, kept from the shipped calibration, and why
  std::string fitted_utc;
  ErrorSummary in_sample;         // tokens/s errors of the fitted rows
  ErrorSummary cross_validated;   // the same rows, each predicted by a fit that did not see its model size
};
nlohmann::json to_json(const GpuCalibration& c);
GpuCalibration calibration_from_json(const nlohmann::json& j, const std::string& what);

// The catalogue, in a fixed order.
const std::vector<GpuDevice>& gpu_catalogue();
// By id or alias (case-insensitive, '_' and ' ' read as '-'); nullptr when none.
const GpuDevice* find_gpu(std::string_view id);
// The catalogue entry whose dense bf16 peak is within 2% of `peak_flops` and whose memory is
// within 5% of `memory` (a cluster file that gives raw numbers only); nullptr when none.
const GpuDevice* match_gpu(double peak_flops, Bytes memory);
// The shipped calibration of a generation (compiled in from model/gpu_calibration.json); a
// generation without fitted rows borrows another's parameters and says so.
const GpuCalibration& shipped_calibration(GpuGeneration g);
// The shipped calibration file as compiled in (for `devices --json` and the equality test).
const nlohmann::json& shipped_calibration_json();
// A calibration file (`gaccum-tune calibrate -o`): {"schema": "gaccum-tune/gpu-calibration",
// "generations": {"ampere": {...}, ...}}; InputError naming the field on any problem.
std::vector<GpuCalibration> calibrations_from_json(const nlohmann::json& j, const std::string& what);
nlohmann::json calibrations_to_json(const std::vector<GpuCalibration>& c, const std::string& fitted_utc);

nlohmann::json to_json(const GpuDevice& d);

}  // namespace gaccum::model
