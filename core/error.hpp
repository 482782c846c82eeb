// What: the typed exceptions libraries throw; only cli/ turns them into messages + exit codes.
// Why: "bad input" (exit 2) must be told apart from "the run failed" (exit 1) without string
//      matching, and every message is one line naming the field and the fix.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#include "core/units.hpp"

namespace gaccum {

// Base of every error we throw on purpose.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The user gave something unusable: a flag, a file, a field. Exit code 2.
class InputError : public Error {
 public:
  using Error::Error;
};

// A profile/result file that is malformed, of another schema version or of another workload.
class ProfileError : public InputError {
 public:
  using InputError::InputError;
};

// The user's model itself raised (a TorchScript forward/loss error: BatchNorm given one value per
// channel, an embedding given an index out of range, a shape mismatch). The message carries the
// model's own words (the last line of the TorchScript traceback) and the micro_batch. Exit code 2:
// it is fixed in the model or its input flags, not by running again.
class ModelError : public InputError {
 public:
  ModelError(const std::string& what, Count micro_batch, std::string model_message)
      : InputError(what), micro_batch_(micro_batch), model_message_(std::move(model_message)) {}
  Count micro_batch() const { return micro_batch_; }
  const std::string& model_message() const { return model_message_; }

 private:
  Count micro_batch_;
  std::string model_message_;
};

// The workload cannot run as asked (e.g. does not fit the memory cap even at micro_batch 1).
class InfeasibleError : public Error {
 public:
  using Error::Error;
};

// A device, collective or rank process failed at run time. Exit code 1.
class RuntimeFailure : public Error {
 public:
  using Error::Error;
};

// The model ran out of memory in this process (e.g. the profiler's own memory sweep: the device
// ran out at the smallest micro_batch, or a forward asked for more than the host has). Exit code
// 87, as a rank that ran out of memory (docs/exit-codes.md).
class OutOfMemoryError : public RuntimeFailure {
 public:
  using RuntimeFailure::RuntimeFailure;
};

// The messages that mean memory ran out when no typed exception says so (LibTorch's TorchScript
// interpreter and older CUDA paths rethrow as a plain error with the text):
//   device  the caching allocator's "CUDA out of memory", a raw "CUDA error: out of memory" (a
//           kernel launch, cudaMalloc outside the allocator), cuBLAS's CUBLAS_STATUS_ALLOC_FAILED
//   host    LibTorch CPU's "can't allocate memory", a std::bad_alloc rethrown as text
//           ("std::bad_alloc", e.g. the tracking allocator's inside a TorchScript forward)
inline bool is_device_out_of_memory_message(std::string_view what) {
  for (const char* m : {"CUDA out of memory", "CUDA error: out of memory", "CUBLAS_STATUS_ALLOC_FAILED"})
    if (what.find(m) != std::string_view::npos) return true;
  return false;
}
inline bool is_out_of_memory_message(std::string_view what) {
  return is_device_out_of_memory_message(what) || what.find("can't allocate memory") != std::string_view::npos ||
         what.find("std::bad_alloc") != std::string_view::npos;
}

// A c10d collective, store operation or process-group setup failed (comm/communicator.cpp): in a
// rank this usually means a peer was lost. The message still starts "c10d <op> failed"; catch the
// type, not the text. Exit code 1 like any RuntimeFailure unless a rank maps it (runner/, profiler/).
class CollectiveFailure : public RuntimeFailure {
 public:
  using RuntimeFailure::RuntimeFailure;
};

// A launched rank process failed; carries the exit code of its failure class, which the CLI
// returns as is: 86 a rank died, 87 a rank ran out of memory, 88 a rank hung, 2 bad input found
// inside a rank (the table in docs/exit-codes.md).
class RankFailure : public RuntimeFailure {
 public:
  RankFailure(const std::string& what, int exit_code) : RuntimeFailure(what), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace gaccum
