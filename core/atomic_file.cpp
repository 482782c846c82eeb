// What/why: see atomic_file.hpp.
#include "core/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum {

namespace {

void write_all(int fd, std::string_view content, const std::filesystem::path& path) {
  const char* p = content.data();
  size_t left = content.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw RuntimeFailure(fmt::format("output: writing '{}' failed: {}", path.string(), std::strerror(err)));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

const char* kind_of(mode_t m) {
  return S_ISFIFO(m) ? "a FIFO" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
         : S_ISSOCK(m) ? "a socket" : S_ISDIR(m) ? "a directory" : "not a regular file";
}

}  // namespace

void write_file_atomic(const std::filesystem::path& path, std::string_view content) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // Written in place, never replaced: a device or a FIFO stays what it is.
    if (S_ISDIR(st.st_mode))
      throw InputError(fmt::format("output: '{}' is a directory: give a file path", path.string()));
    if (S_ISBLK(st.st_mode) || S_ISSOCK(st.st_mode))
      throw InputError(fmt::format("output: '{}' is {}: give a file path", path.string(), kind_of(st.st_mode)));
    const int fd = ::open(path.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
      throw RuntimeFailure(fmt::format("output: cannot write '{}' ({}): {}", path.string(), kind_of(st.st_mode),
                                       errno == ENXIO ? "no reader on the FIFO" : std::strerror(errno)));
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    write_all(fd, content, path);
    if (::close(fd) != 0)
      throw RuntimeFailure(fmt::format("output: writing '{}' failed: {}", path.string(), std::strerror(errno)));
    return;
  }
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
  try {
    write_all(fd, content, path);
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
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

std::string read_file(const std::filesystem::path& path, std::string_view field, std::uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO without a writer returns at once, so fstat can refuse it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw InputError(fmt::format("{}: cannot read '{}': {}", field, path.string(), std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const mode_t mode = st.st_mode;
    ::close(fd);
    if (S_ISDIR(mode)) throw InputError(fmt::format("{}: '{}' is a directory, not a file", field, path.string()));
    throw InputError(fmt::format("{}: '{}' is {}, not a regular file: give the path of a file", field, path.string(),
                                 kind_of(mode)));
  }
  if (std::uint64_t(st.st_size) > max_bytes) {
    ::close(fd);
    throw InputError(fmt::format("{}: '{}' is {} bytes, above the {}-byte limit of this reader: is it the right file?",
                                 field, path.string(), std::uint64_t(st.st_size), max_bytes));
  }
  std::string out;
  out.reserve(std::size_t(st.st_size));
  char buf[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      const int err = errno;
      ::close(fd);
      throw InputError(fmt::format("{}: cannot read '{}': {}", field, path.string(), std::strerror(err)));
    }
    if (n == 0) break;
    out.append(buf, std::size_t(n));
    if (out.size() > max_bytes) {  // grew while read
      ::close(fd);
      throw InputError(fmt::format("{}: '{}' is above the {}-byte limit of this reader", field, path.string(),
                                   max_bytes));
    }
  }
  ::close(fd);
  return out;
}

std::size_t first_invalid_utf8(std::string_view s) {
  auto u8 = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  for (std::size_t i = 0; i < s.size();) {
    const unsigned char c = u8(i);
    // RFC 3629: the lead byte fixes the length and the range of the second byte (no overlong
    // forms, no UTF-16 surrogates D800-DFFF, nothing above U+10FFFF); later bytes are 80-BF.
    std::size_t len = 0;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) len = 1;
    else if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
    else if (c >= 0xF0 && c <= 0xF4) len = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
    bool ok = len > 0 && i + len <= s.size();
    for (std::size_t k = 1; ok && k < len; ++k)
      ok = k == 1 ? u8(i + 1) >= lo && u8(i + 1) <= hi : (u8(i + k) >> 6) == 0x2;
    if (!ok) return i;
    i += len;
  }
  return std::string_view::npos;
}

std::string read_text_file(const std::filesystem::path& path, std::string_view field) {
  std::string s = read_file(path, field);
  auto u8 = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  if (s.size() >= 2 && ((u8(0) == 0xFF && u8(1) == 0xFE) || (u8(0) == 0xFE && u8(1) == 0xFF)))
    throw InputError(fmt::format("{}: '{}' is UTF-16 (byte-order mark {:02X} {:02X}): save it as UTF-8", field,
                                 path.string(), u8(0), u8(1)));
  if (const std::size_t i = first_invalid_utf8(s); i != std::string_view::npos)
    throw InputError(fmt::format("{}: '{}' is not valid UTF-8 (byte {} is 0x{:02X}): save it as UTF-8", field,
                                 path.string(), i, u8(i)));
  return s;
}

std::string read_file_if_present(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace gaccum
