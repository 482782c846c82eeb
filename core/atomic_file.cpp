// What/why: see atomic_file.hpp.
#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum {

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  auto dir = path.parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) throw InputError(fmt::format("output: cannot create directory '{}': {}", dir.string(), ec.message()));
  }
  auto tmp = path;
  tmp += fmt::format(".tmp.{}", ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(fmt::format("output: cannot write '{}': {}", path.string(), std::strerror(errno)));
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw RuntimeFailure(fmt::format("output: writing '{}' failed: {}", path.string(), std::strerror(err)));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw RuntimeFailure(fmt::format("output: flushing '{}' failed: {}", path.string(), std::strerror(err)));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw RuntimeFailure(fmt::format("output: renaming onto '{}' failed: {}", path.string(), std::strerror(err)));
  }
}

std::string read_file(const std::filesystem::path& path, std::string_view field) {
  // A directory opens as an ifstream and reads as empty ("not valid JSON ... unexpected end of
  // input"); name the cause instead.
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw InputError(fmt::format("{}: '{}' is a directory, not a file", field, path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read '{}': {}", field, path.string(), std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string read_file_if_present(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace gaccum
