// What/why: see scratch_dir.hpp.
#include "core/scratch_dir.hpp"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum {
namespace {

constexpr int kSlots = 16;
constexpr std::size_t kPathMax = 4096;
char g_paths[kSlots][kPathMax];
std::atomic<bool> g_live[kSlots];
std::mutex g_mutex;  // slot allocation and handler installation (not used by the handler)
bool g_installed = false;

// unlink every entry of `dir`, then rmdir it; only calls that are safe enough in a handler
// about to end the process.
void remove_flat(const char* dir) {
  if (DIR* d = ::opendir(dir)) {
    char path[kPathMax + 256];
    const std::size_t n = std::strlen(dir);
    while (dirent* e = ::readdir(d)) {
      if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
      const std::size_t m = std::strlen(e->d_name);
      if (n + 1 + m + 1 > sizeof(path)) continue;
      std::memcpy(path, dir, n);
      path[n] = '/';
      std::memcpy(path + n + 1, e->d_name, m + 1);
      ::unlink(path);
    }
    ::closedir(d);
  }
  ::rmdir(dir);
}

void on_signal(int sig) {
  for (int i = 0; i < kSlots; ++i)
    if (g_live[i].load()) remove_flat(g_paths[i]);
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_handlers() {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace

ScratchDir::ScratchDir(const std::string& prefix) {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/" + prefix + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back(0);
  if (!::mkdtemp(buf.data()))
    throw RuntimeFailure(fmt::format("cannot create a temporary directory like {}: {} (set TMPDIR)", tmpl,
                                     std::strerror(errno)));
  path_ = buf.data();
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_installed) {
    install_handlers();
    g_installed = true;
  }
  if (path_.size() < kPathMax)
    for (int i = 0; i < kSlots; ++i)
      if (!g_live[i].load()) {
        std::memcpy(g_paths[i], path_.c_str(), path_.size() + 1);
        g_live[i].store(true);
        slot_ = i;
        break;
      }
}

ScratchDir::~ScratchDir() {
  if (slot_ >= 0) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_live[slot_].store(false);
  }
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace gaccum
