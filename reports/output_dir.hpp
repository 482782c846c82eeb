// What: writes a run's report files into an output directory: every file atomically
//       (core/atomic_file.hpp), and never over files of an earlier run unless forced.
// Why: a second `tune` must not silently clobber the reports someone is looking at; a crash
//      must not leave half a report.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace gaccum::reports {

struct OutputFile {
  std::string name;  // file name inside the directory, e.g. "result.csv"
  std::string content;
};

// InputError naming `flag` when `dir` is not a directory or already holds any of `names` and
// !force. Call it before expensive work so a refusal comes early; write_outputs checks again.
void check_outputs(const std::filesystem::path& dir, const std::vector<std::string>& names, bool force,
                   const std::string& flag = "--out");

// Checks first, then writes: InputError naming `flag` when `dir` is not a directory or already
// holds any of the files and !force. Returns the written paths.
std::vector<std::filesystem::path> write_outputs(const std::filesystem::path& dir, const std::vector<OutputFile>& files,
                                                 bool force, const std::string& flag = "--out");

}  // namespace gaccum::reports
