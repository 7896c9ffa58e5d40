#include "runner/spawn.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>

#include "common/cancel.h"
#include "common/debug_log.h"
#include "common/errors.h"

namespace gradex {

namespace {
// How long cancelled ranks get to end by themselves: they stop within one
// iteration or training step.
constexpr std::chrono::seconds kCancelGrace{3};
}  // namespace

std::vector<pid_t> spawn_ranks(const std::vector<std::string>& args, int count, const EnvVars& env) {
  // Everything the child needs is prepared before fork(): between fork and
  // exec only async-signal-safe calls are allowed.
  std::vector<std::string> all_args = {"/proc/self/exe"};
  all_args.insert(all_args.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all_args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> base;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv(*e);
    const std::string key = kv.substr(0, kv.find('='));
    bool overridden = key == "GRADEX_RANK" || key == "GRADEX_WORLD_SIZE";
    for (const auto& [k, v] : env) overridden = overridden || k == key;
    if (!overridden) base.push_back(kv);
  }
  for (const auto& [k, v] : env) base.push_back(k + "=" + v);
  base.push_back("GRADEX_WORLD_SIZE=" + std::to_string(count));

  const pid_t parent = ::getpid();
  std::vector<pid_t> pids;
  for (int r = 0; r < count; ++r) {
    std::vector<std::string> vars = base;
    vars.push_back("GRADEX_RANK=" + std::to_string(r));
    std::vector<char*> envp;
    for (auto& v : vars) envp.push_back(v.data());
    envp.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) {
      for (pid_t p : pids) ::kill(p, SIGKILL);
      for (pid_t p : pids) ::waitpid(p, nullptr, 0);
      throw Error(std::string("cannot start rank ") + std::to_string(r) + ": " + std::strerror(errno));
    }
    if (pid == 0) {
      // A rank dies with its launcher, whatever ends the launcher (even
      // SIGKILL), instead of running on as an orphan. The signal is sent
      // when the forking thread ends: this is the launcher's main thread.
      // If the launcher died before prctl, the signal will never come: the
      // parent is then no longer the launcher, and the rank gives up.
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
      ::execve(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    pids.push_back(pid);
  }
  return pids;
}

int supervise(const std::vector<pid_t>& children, std::chrono::milliseconds grace,
              std::ostream& log) {
  using clock = std::chrono::steady_clock;
  std::vector<int> status(children.size(), -1);  // -1: still running
  std::size_t running = children.size();
  std::optional<clock::time_point> kill_at;
  bool crashed = false;
  int cancelled = 0;
  while (running > 0) {
    if (cancelled == 0 && cancel_signal() != 0) {
      // Pass the signal on: every rank stops, aborts its group and exits
      // without writing; one that does not within kCancelGrace is killed.
      cancelled = cancel_signal();
      log << "gradex launch: signal " << cancelled << ": stopping the ranks\n";
      for (std::size_t r = 0; r < children.size(); ++r) {
        if (status[r] == -1) ::kill(children[r], cancelled);
      }
      const auto cancel_kill_at = clock::now() + kCancelGrace;
      if (!kill_at || *kill_at > cancel_kill_at) kill_at = cancel_kill_at;
    }
    bool reaped = false;
    for (std::size_t r = 0; r < children.size(); ++r) {
      if (status[r] != -1) continue;
      int ws = 0;
      if (::waitpid(children[r], &ws, WNOHANG) != children[r]) continue;
      reaped = true;
      --running;
      GRADEX_DEBUG_LOG("launcher: rank ", r, " (pid ", children[r], ") ended, wait status ", ws);
      if (WIFEXITED(ws)) {
        status[r] = WEXITSTATUS(ws);
      } else {
        status[r] = 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
        crashed = true;
      }
      if (status[r] != 0 && cancelled == 0) {
        log << "gradex launch: rank " << r << " (pid " << children[r] << ") "
            << (WIFSIGNALED(ws) ? "was killed by signal " + std::to_string(WTERMSIG(ws))
                                : "exited with status " + std::to_string(status[r]))
            << "\n";
        if (!kill_at) kill_at = clock::now() + grace;
      }
    }
    if (kill_at && clock::now() >= *kill_at) {
      for (std::size_t r = 0; r < children.size(); ++r) {
        if (status[r] == -1) {
          log << "gradex launch: rank " << r << " still running after the "
              << (cancelled != 0 ? "signal" : "failure") << "; killing it\n";
          ::kill(children[r], SIGKILL);
        }
      }
      kill_at = clock::now() + std::chrono::hours(1);  // reap them on the next rounds
    }
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (cancelled != 0) return 128 + cancelled;
  if (crashed) return 1;
  for (int s : status) {
    if (s != 0) return s;
  }
  return 0;
}

}  // namespace gradex
