// What/why: see output_dir.hpp.
#include "reports/output_dir.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace gaccum::reports {

void check_outputs(const std::filesystem::path& dir, const std::vector<std::string>& names, bool force,
                   const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw InputError(
        fmt::format("{}: '{}' exists and is not a directory; choose another {}", flag, dir.string(), flag));
  std::vector<std::string> existing;
  for (const auto& n : names)
    if (fs::exists(dir / n, ec)) existing.push_back(n);
  if (!existing.empty() && !force)
    throw InputError(
        fmt::format("{}: '{}' already holds {} from an earlier run; pass --force to replace them or "
                    "choose another {}",
                    flag, dir.string(), fmt::join(existing, ", "), flag));
}

std::vector<std::filesystem::path> write_outputs(const std::filesystem::path& dir, const std::vector<OutputFile>& files,
                                                 bool force, const std::string& flag) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  for (const auto& f : files) names.push_back(f.name);
  check_outputs(dir, names, force, flag);
  std::vector<fs::path> written;
  for (const auto& f : files) {
    write_file_atomic(dir / f.name, f.content);
    written.push_back(dir / f.name);
  }
  return written;
}

}  // namespace gaccum::reports
