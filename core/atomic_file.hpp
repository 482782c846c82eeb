// What: write a file so that readers see either the old content or the complete new content, and
//       the one guarded open every input file goes through.
// Why: a Ctrl-C or a crash must never leave a half-written profile.json or report behind: writes
//      go to "<path>.tmp.<pid>" in the same directory, are fsynced, then rename(2)d over <path>.
//      A target that exists and is not a regular file (/dev/null, /dev/full, a FIFO) is written in
//      place, never replaced (renaming over /dev/full as root would replace the device node); a
//      failed write is a RuntimeFailure (exit 1).
//      Reading: a FIFO, device or socket is refused at once (exit 2; never a read that blocks
//      forever or eats /dev/zero), as is a file above the reader's size limit; text readers also
//      refuse UTF-16 and invalid UTF-8, naming the file and the byte.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace gaccum {

// The largest input file a text reader accepts (profiles, specs, clusters, configs, logs).
inline constexpr std::uint64_t kMaxTextFileBytes = std::uint64_t(64) << 20;

void write_file_atomic(const std::filesystem::path& path, std::string_view content);
// Reads a whole regular file of at most max_bytes; InputError naming `field` and the path when it
// cannot be read, is not a regular file, or is larger.
std::string read_file(const std::filesystem::path& path, std::string_view field,
                      std::uint64_t max_bytes = kMaxTextFileBytes);
// The offset of the first byte that does not start a valid UTF-8 sequence (RFC 3629: overlong
// forms, UTF-16 surrogates and code points above U+10FFFF are invalid), or std::string_view::npos
// when all of `text` is UTF-8.
std::size_t first_invalid_utf8(std::string_view text);
// read_file for text: also InputError on a UTF-16 byte-order mark or invalid UTF-8.
std::string read_text_file(const std::filesystem::path& path, std::string_view field);
// Reads a whole file that may not exist (a result or error file another process may not have
// written): "" when it cannot be read.
std::string read_file_if_present(const std::filesystem::path& path);

}  // namespace gaccum
