#include "runner/spawn.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <thread>

#include "common/cancel.h"
#include "common/debug_log.h"
#include "common/errors.h"
#include "runner/hostfile.h"

namespace gradex {

namespace {
// How long cancelled ranks get to end by themselves: they stop within one
// iteration or training step.
constexpr std::chrono::seconds kCancelGrace{3};
}  // namespace

namespace {

// `text` as one word for a POSIX shell.
std::string shell_quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::vector<std::string> remote_shell() {
  const char* given = std::getenv("GRADEX_RSH");
  std::istringstream words(given != nullptr ? given : kRemoteShell);
  std::vector<std::string> rsh;
  for (std::string w; words >> w;) rsh.push_back(w);
  if (rsh.empty()) throw ConfigError("GRADEX_RSH", "is empty: set it to a remote shell such as 'ssh'");
  return rsh;
}

std::string this_executable() {
  std::error_code ec;
  const auto path = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find this executable's path: " + ec.message());
  return path.string();
}

// What one rank's process is: its argv and environment, and what its
// standard input carries (nothing: inherited).
struct RankCommand {
  std::vector<std::string> argv;
  std::vector<std::string> envp;
  std::optional<std::string> input;
};

}  // namespace

std::vector<pid_t> spawn_ranks(const std::vector<std::string>& args, int count, const EnvVars& env,
                               const std::vector<std::string>& hosts) {
  GRADEX_ENFORCE(hosts.empty() || static_cast<int>(hosts.size()) == count, "one host per rank");
  // Everything the child needs is prepared before fork(): between fork and
  // exec only async-signal-safe calls are allowed.
  std::vector<std::string> local_args = {"/proc/self/exe"};
  local_args.insert(local_args.end(), args.begin(), args.end());
  std::vector<std::string> inherited;
  for (char** e = environ; *e != nullptr; ++e) inherited.emplace_back(*e);
  std::vector<std::string> base;
  for (const std::string& kv : inherited) {
    const std::string key = kv.substr(0, kv.find('='));
    bool overridden = key == "GRADEX_RANK" || key == "GRADEX_WORLD_SIZE";
    for (const auto& [k, v] : env) overridden = overridden || k == key;
    if (!overridden) base.push_back(kv);
  }
  for (const auto& [k, v] : env) base.push_back(k + "=" + v);
  base.push_back("GRADEX_WORLD_SIZE=" + std::to_string(count));

  std::vector<RankCommand> commands(static_cast<std::size_t>(count));
  for (int r = 0; r < count; ++r) {
    RankCommand& c = commands[static_cast<std::size_t>(r)];
    const std::string rank_var = "GRADEX_RANK=" + std::to_string(r);
    if (hosts.empty() || is_this_host(hosts[static_cast<std::size_t>(r)])) {
      c.argv = local_args;
      c.envp = base;
      c.envp.push_back(rank_var);
      continue;
    }
    // On another host: the remote shell runs it there, with our variables
    // only (that host's environment is its own), binding every interface
    // unless told otherwise so that the other hosts can dial it.
    std::string vars;
    bool bind_given = false;
    for (const auto& [k, v] : env) {
      if (k == "GRADEX_TOKEN") {
        c.input = v + "\n";
        continue;
      }
      bind_given = bind_given || k == "GRADEX_BIND";
      vars += " " + shell_quote(k + "=" + v);
    }
    if (!bind_given) vars += " " + shell_quote("GRADEX_BIND=0.0.0.0");
    if (const char* debug = std::getenv("GRADEX_DEBUG")) {
      vars += " " + shell_quote(std::string("GRADEX_DEBUG=") + debug);
    }
    vars += " " + shell_quote("GRADEX_WORLD_SIZE=" + std::to_string(count));
    vars += " " + shell_quote(rank_var);
    std::string command = "cd " + shell_quote(std::filesystem::current_path().string()) + " && ";
    if (c.input) command += "read -r GRADEX_TOKEN && export GRADEX_TOKEN && ";
    command += "exec env" + vars + " " + shell_quote(this_executable());
    for (const std::string& a : args) command += " " + shell_quote(a);
    c.argv = remote_shell();
    c.argv.push_back(hosts[static_cast<std::size_t>(r)]);
    c.argv.push_back(command);
    c.envp = inherited;  // the remote shell's own (ssh's agent socket, ...)
    GRADEX_DEBUG_LOG("launcher: rank ", r, " on ", hosts[static_cast<std::size_t>(r)], " through ",
                     c.argv.front());
  }

  const pid_t parent = ::getpid();
  std::vector<pid_t> pids;
  const auto fail = [&](int r, const char* what) {
    const std::string why = std::strerror(errno);
    for (pid_t p : pids) ::kill(p, SIGKILL);
    for (pid_t p : pids) ::waitpid(p, nullptr, 0);
    throw Error(detail::concat("cannot start rank ", r, ": ", what, ": ", why));
  };
  for (int r = 0; r < count; ++r) {
    RankCommand& c = commands[static_cast<std::size_t>(r)];
    std::vector<char*> argv;
    for (auto& a : c.argv) argv.push_back(a.data());
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (auto& v : c.envp) envp.push_back(v.data());
    envp.push_back(nullptr);
    // The input is written before the fork: it fits a pipe's buffer, and
    // the child then only has to take the pipe as its standard input.
    int input = -1;
    if (c.input) {
      int fds[2];
      if (::pipe2(fds, O_CLOEXEC) != 0) fail(r, "pipe");
      const bool written =
          ::write(fds[1], c.input->data(), c.input->size()) == static_cast<ssize_t>(c.input->size());
      ::close(fds[1]);
      if (!written) {
        ::close(fds[0]);
        fail(r, "writing its token");
      }
      input = fds[0];
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
      if (input >= 0) ::close(input);
      fail(r, "fork");
    }
    if (pid == 0) {
      // A rank dies with its launcher, whatever ends the launcher (even
      // SIGKILL), instead of running on as an orphan. The signal is sent
      // when the forking thread ends: this is the launcher's main thread.
      // If the launcher died before prctl, the signal will never come: the
      // parent is then no longer the launcher, and the rank gives up.
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
      if (input >= 0 && ::dup2(input, STDIN_FILENO) < 0) ::_exit(127);
      // A remote shell is looked for on PATH; this executable has a path.
      ::execvpe(argv[0], argv.data(), envp.data());
      ::_exit(127);
    }
    if (input >= 0) ::close(input);
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
      log << ("gradex launch: signal " + std::to_string(cancelled) + ": stopping the ranks\n")
          << std::flush;
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
        // One write per line: the ranks write to the same stderr, and a line
        // put out in pieces could be cut by theirs.
        log << ("gradex launch: rank " + std::to_string(r) + " (pid " +
                std::to_string(children[r]) + ") " +
                (WIFSIGNALED(ws) ? "was killed by signal " + std::to_string(WTERMSIG(ws))
                                 : "exited with status " + std::to_string(status[r])) +
                "\n")
            << std::flush;
        if (!kill_at) kill_at = clock::now() + grace;
      }
    }
    if (kill_at && clock::now() >= *kill_at) {
      for (std::size_t r = 0; r < children.size(); ++r) {
        if (status[r] == -1) {
          log << ("gradex launch: rank " + std::to_string(r) + " still running after the " +
                  (cancelled != 0 ? "signal" : "failure") + "; killing it\n")
              << std::flush;
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
