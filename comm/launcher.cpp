// What/why: see launcher.hpp.
#include "comm/launcher.hpp"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "comm/communicator.hpp"
#include "core/error.hpp"

extern char** environ;

namespace gaccum::comm {
namespace {

volatile sig_atomic_t g_interrupt = 0;
void on_interrupt(int) { g_interrupt = 1; }

const char* signal_name(int sig) {
  switch (sig) {
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGABRT: return "SIGABRT";
    case SIGSEGV: return "SIGSEGV";
    case SIGINT: return "SIGINT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGPIPE: return "SIGPIPE";
    default: return "signal";
  }
}

using Clock = std::chrono::steady_clock;

}  // namespace

std::string RankStatus::describe() const {
  if (!finished) return fmt::format("rank {} (pid {}) is still running", rank, pid);
  if (signal != 0)
    return fmt::format("rank {} (pid {}) was killed by {} ({}){}", rank, pid, signal_name(signal), signal,
                       killed_by_us ? " after the run was stopped" : "");
  return fmt::format("rank {} (pid {}) exited with status {}", rank, pid, exit_code);
}

std::string self_executable() {
  char buf[4096];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) throw RuntimeFailure("launcher: cannot resolve /proc/self/exe");
  buf[n] = 0;
  return buf;
}

LaunchResult launch_local(const LaunchOptions& opts) {
  if (opts.argv.empty()) throw InputError("launcher: empty worker command");
  if (opts.world_size < 1) throw InputError("--world-size: must be at least 1");
  LaunchResult res;
  auto server = host_store(0, opts.world_size, opts.store_timeout);
  const int port = server->port();

  // Everything a child needs is prepared before fork(): after fork only async-signal-safe calls.
  std::vector<std::vector<std::string>> envs(opts.world_size);
  for (int r = 0; r < opts.world_size; ++r) {
    std::map<std::string, std::string> e;
    for (char** p = environ; *p; ++p) {
      std::string kv = *p;
      auto eq = kv.find('=');
      if (eq != std::string::npos) e[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    // Launcher variables of an outer job must not leak into our ranks.
    for (const char* k : {"TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", "SLURM_PROCID", "SLURM_NTASKS",
                          "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMI_SIZE"})
      e.erase(k);
    for (const auto& [k, v] : opts.env) e[k] = v;
    e["RANK"] = std::to_string(r);
    e["WORLD_SIZE"] = std::to_string(opts.world_size);
    e["LOCAL_RANK"] = std::to_string(r);
    e["LOCAL_WORLD_SIZE"] = std::to_string(opts.world_size);
    e["MASTER_ADDR"] = "127.0.0.1";
    e["MASTER_PORT"] = std::to_string(port);
    e["GACCUM_STORE"] = "launcher";
    if (auto it = opts.rank_env.find(r); it != opts.rank_env.end())
      for (const auto& [k, v] : it->second) e[k] = v;
    for (const auto& [k, v] : e) envs[r].push_back(k + "=" + v);
  }
  std::vector<char*> argv;
  for (const auto& a : opts.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  struct sigaction sa {}, old_int{}, old_term{};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  g_interrupt = 0;
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);

  const auto start = Clock::now();
  const pid_t parent = ::getpid();
  for (int r = 0; r < opts.world_size; ++r) {
    std::vector<char*> envp;
    for (auto& s : envs[r]) envp.push_back(const_cast<char*>(s.c_str()));
    envp.push_back(nullptr);
    pid_t pid = ::fork();
    if (pid < 0) {
      for (auto& st : res.ranks) ::kill(-st.pid, SIGKILL);
      sigaction(SIGINT, &old_int, nullptr);
      sigaction(SIGTERM, &old_term, nullptr);
      throw RuntimeFailure(fmt::format("launcher: fork failed for rank {}: {}", r, std::strerror(errno)));
    }
    if (pid == 0) {
      ::setpgid(0, 0);
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      struct sigaction dfl {};
      dfl.sa_handler = SIG_DFL;
      sigaction(SIGINT, &dfl, nullptr);
      sigaction(SIGTERM, &dfl, nullptr);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    ::setpgid(pid, pid);
    RankStatus st;
    st.rank = r;
    st.pid = pid;
    res.ranks.push_back(st);
  }

  auto alive = [&]() {
    int n = 0;
    for (const auto& st : res.ranks) n += st.finished ? 0 : 1;
    return n;
  };
  auto reap = [&](bool block) {
    while (true) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, block ? 0 : WNOHANG);
      if (pid <= 0) return;
      for (auto& st : res.ranks) {
        if (st.pid != pid) continue;
        st.finished = true;
        if (WIFEXITED(status)) st.exit_code = WEXITSTATUS(status);
        if (WIFSIGNALED(status)) st.signal = WTERMSIG(status);
      }
      block = false;
    }
  };
  auto stop_all = [&]() {
    for (auto& st : res.ranks)
      if (!st.finished) {
        st.killed_by_us = true;
        ::kill(-st.pid, SIGTERM);
      }
    auto t0 = Clock::now();
    while (alive() > 0 && std::chrono::duration<double>(Clock::now() - t0).count() < opts.grace) {
      reap(false);
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    for (auto& st : res.ranks)
      if (!st.finished) ::kill(-st.pid, SIGKILL);
    while (alive() > 0) reap(true);
    // Grandchildren of a rank share its process group; make sure none survive.
    for (auto& st : res.ranks) ::kill(-st.pid, SIGKILL);
  };

  auto failed = [](const RankStatus& st) {
    return st.finished && !st.killed_by_us && (st.exit_code != 0 || st.signal != 0);
  };
  auto secondary = [](const RankStatus& st) { return st.signal == 0 && st.exit_code == kExitPeerLost; };
  while (alive() > 0) {
    reap(false);
    const RankStatus* bad = nullptr;
    for (const auto& st : res.ranks)
      if (failed(st)) bad = bad && !secondary(*bad) ? bad : &st;
    if (bad && secondary(*bad)) {
      // A rank that lost its peers: give the rank that caused it a moment to be reaped, so the
      // message names the cause, not the symptom.
      auto t0 = Clock::now();
      while (std::chrono::duration<double>(Clock::now() - t0).count() < 1.0 && alive() > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        reap(false);
        for (const auto& st : res.ranks)
          if (failed(st) && !secondary(st)) bad = &st;
        if (!secondary(*bad)) break;
      }
    }
    if (bad) {
      res.failed_rank = bad->rank;
      res.failure = bad->describe();
      if (secondary(*bad)) {
        // Its peers gave up on a collective and nobody died: the ranks still running are the
        // ones that stopped taking part (hung), so they are the cause to name.
        std::vector<std::string> hung;
        for (const auto& st : res.ranks)
          if (!st.finished) {
            if (hung.empty()) res.failed_rank = st.rank;
            hung.push_back(fmt::format("rank {} (pid {})", st.rank, st.pid));
          }
        if (hung.empty())
          res.failure += " (a collective failed: a peer died or the network failed)";
        else
          res.failure = fmt::format("{} stopped responding (hung?): {} (its collective timed out waiting for it)",
                                    fmt::join(hung, ", "), res.failure);
      }
      stop_all();
      break;
    }
    if (g_interrupt) {
      res.interrupted = true;
      res.failure = "interrupted: stopped all ranks";
      stop_all();
      break;
    }
    double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (opts.deadline > 0 && elapsed > opts.deadline) {
      res.timed_out = true;
      std::vector<int> running;
      for (const auto& st : res.ranks)
        if (!st.finished) running.push_back(st.rank);
      res.failure = fmt::format("deadline of {} passed with rank(s) {} still running (hung?); stopped all ranks",
                                format_seconds(opts.deadline), fmt::join(running, ","));
      if (!running.empty()) res.failed_rank = running.front();
      stop_all();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  res.wall = std::chrono::duration<double>(Clock::now() - start).count();
  res.ok = res.failure.empty();
  if (res.ok)
    for (const auto& st : res.ranks)
      if (st.exit_code != 0 || st.signal != 0) {
        res.ok = false;
        res.failure = st.describe();
        res.failed_rank = st.rank;
      }
  return res;
}

}  // namespace gaccum::comm
