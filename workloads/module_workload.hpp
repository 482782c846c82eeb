// What: shared plumbing for the built-in workloads (mlp, gpt, cnn) that are torch::nn modules,
//       and the hyper-parameter readers they use. Internal to workloads/.
#pragma once

#include <memory>
#include <string>

#include <nlohmann/json.hpp>
#include <torch/nn/module.h>

#include "workloads/workload.hpp"

namespace gaccum::workloads {

class ModuleWorkload : public Workload {
 public:
  std::vector<torch::Tensor> parameters() const override;
  std::vector<std::string> parameter_names() const override;

 protected:
  ModuleWorkload(WorkloadIdentity id, const WorkloadConfig& cfg);
  // Moves the module to device/dtype, puts it in training mode and fills the identity.
  void adopt(std::shared_ptr<torch::nn::Module> module);
  std::shared_ptr<torch::nn::Module> module_;
};

// Reads a positive integer hyper-parameter; InputError "workload <name>: <key> ..." otherwise.
Count hyper_int(const nlohmann::json& hyper, const std::string& workload, const std::string& key);
std::vector<Count> hyper_int_list(const nlohmann::json& hyper, const std::string& workload, const std::string& key);

std::unique_ptr<Workload> make_mlp(WorkloadIdentity id, const WorkloadConfig& cfg);
std::unique_ptr<Workload> make_gpt(WorkloadIdentity id, const WorkloadConfig& cfg);
std::unique_ptr<Workload> make_cnn(WorkloadIdentity id, const WorkloadConfig& cfg);
std::unique_ptr<Workload> make_torchscript(WorkloadIdentity id, const WorkloadConfig& cfg);

}  // namespace gaccum::workloads
