// What: write a file so that readers see either the old content or the complete new content.
// Why: a Ctrl-C or a crash must never leave a half-written profile.json or report behind.
//      Writes to "<path>.tmp.<pid>" in the same directory, fsyncs, then rename(2)s over <path>.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace gaccum {

void write_file_atomic(const std::filesystem::path& path, std::string_view content);
// Reads a whole file; InputError naming `field` and the path when it cannot be read.
std::string read_file(const std::filesystem::path& path, std::string_view field);
// Reads a whole file that may not exist (a result or error file another process may not have
// written): "" when it cannot be read.
std::string read_file_if_present(const std::filesystem::path& path);

}  // namespace gaccum
