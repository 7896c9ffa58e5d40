#include "runner/launch_env.h"

#include <charconv>
#include <limits>
#include <string_view>

#include "common/errors.h"
#include "transport/wire/auth.h"

namespace gradex {

namespace {

int parse_int(const char* name, const char* text, int lo, int hi) {
  const std::string s(text);
  int v = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || s.empty()) {
    throw ConfigError(name, "'" + s + "' is not an integer");
  }
  if (v < lo || v > hi) {
    throw ConfigError(name, std::to_string(v) + " is outside [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "]");
  }
  return v;
}

bool given_rendezvous(const std::function<const char*(const char*)>& get) {
  for (const char* name : {"GRADEX_RENDEZVOUS", "MASTER_ADDR"}) {
    const char* v = get(name);
    if (v != nullptr && *v != '\0') return true;
  }
  return false;
}

// GRADEX_RENDEZVOUS, else torch's MASTER_ADDR:MASTER_PORT: the store rank 0
// hosts where torch.distributed's rank 0 would host its TCPStore (torchrun
// picks MASTER_PORT free for exactly that).
std::string rendezvous(const std::function<const char*(const char*)>& get) {
  const char* rdv = get("GRADEX_RENDEZVOUS");
  if (rdv != nullptr && *rdv != '\0') return rdv;
  const char* addr = get("MASTER_ADDR");
  const char* port = get("MASTER_PORT");
  if (addr != nullptr && *addr != '\0' && port != nullptr) {
    return std::string(addr) + ":" + std::to_string(parse_int("MASTER_PORT", port, 1, 65535));
  }
  if (addr != nullptr && *addr != '\0') throw ConfigError("MASTER_PORT", "missing while MASTER_ADDR is set");
  throw ConfigError("GRADEX_RENDEZVOUS",
                    "missing: set it (or torch's MASTER_ADDR and MASTER_PORT) to the host:port "
                    "where rank 0 hosts the rendezvous store");
}

// Under srun with no rendezvous given: task 0 runs on the first node of the
// step under every task distribution, so that host names the store, on a
// port every task derives alike from the job and step ids (concurrent
// steps differ) below Linux's ephemeral range (32768 up), which the
// processes' own outgoing connections take ports from.
std::string slurm_rendezvous(const std::function<const char*(const char*)>& get) {
  const char* list_name = "SLURM_STEP_NODELIST";
  const char* list = get(list_name);
  if (list == nullptr || *list == '\0') list = get(list_name = "SLURM_JOB_NODELIST");
  const char* job = get("SLURM_JOB_ID");
  if (list == nullptr || *list == '\0' || job == nullptr) return {};
  const char* step = get("SLURM_STEP_ID");
  const long long job_id = parse_int("SLURM_JOB_ID", job, 0, std::numeric_limits<int>::max());
  const long long step_id = step ? parse_int("SLURM_STEP_ID", step, 0, std::numeric_limits<int>::max()) : 0;
  try {
    return first_slurm_host(list) + ":" + std::to_string(slurm_port(job_id, step_id));
  } catch (const ConfigError& e) {
    throw ConfigError(list_name, e.reason());
  }
}

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  // "gpu[07-09,12]-ib,cpu1": the prefix, the first number of the first
  // bracket with its zero padding, and what follows the bracket.
  const std::size_t comma = nodelist.find(',');
  const std::size_t open = nodelist.find('[');
  if (open == std::string::npos || (comma != std::string::npos && comma < open)) {
    const std::string host = nodelist.substr(0, comma);
    if (host.empty() || host.find(']') != std::string::npos) {
      throw ConfigError("", "'" + nodelist + "' is not a Slurm host list");
    }
    return host;
  }
  const std::size_t close = nodelist.find(']', open);
  std::size_t digits = open + 1;
  while (digits < nodelist.size() && nodelist[digits] >= '0' && nodelist[digits] <= '9') ++digits;
  if (close == std::string::npos || digits == open + 1 || open == 0 ||
      (nodelist[digits] != '-' && nodelist[digits] != ',' && nodelist[digits] != ']')) {
    throw ConfigError("", "'" + nodelist + "' is not a Slurm host list");
  }
  std::size_t end = close + 1;
  while (end < nodelist.size() && nodelist[end] != ',' && nodelist[end] != '[') ++end;
  return nodelist.substr(0, open) + nodelist.substr(open + 1, digits - open - 1) +
         nodelist.substr(close + 1, end - close - 1);
}

int slurm_port(long long job_id, long long step_id) {
  return static_cast<int>(20000 + (job_id * 16 + step_id) % 12000);
}

std::optional<LaunchEnv> launch_env(const std::function<const char*(const char*)>& get) {
  struct Source {
    const char* label;
    const char* rank;
    const char* size;
  };
  static constexpr Source kSources[] = {{"GRADEX", "GRADEX_RANK", "GRADEX_WORLD_SIZE"},
                                        {"OMPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                        // MPICH's and Intel MPI's Hydra, srun --mpi=pmi2
                                        {"PMI", "PMI_RANK", "PMI_SIZE"},
                                        {"SLURM", "SLURM_PROCID", "SLURM_NTASKS"},
                                        // torchrun (and torch.distributed's env://)
                                        {"TORCHRUN", "RANK", "WORLD_SIZE"}};
  for (const Source& src : kSources) {
    const char* rank = get(src.rank);
    if (rank == nullptr) continue;
    const char* size = get(src.size);
    if (size == nullptr) throw ConfigError(src.size, std::string("missing while ") + src.rank + " is set");
    LaunchEnv env;
    env.source = src.label;
    env.size_variable = src.size;
    env.size = parse_int(src.size, size, 1, 4096);
    env.rank = parse_int(src.rank, rank, 0, env.size - 1);
    // Under Open MPI's mpirun the job itself can carry rank 0's address
    // (cli/launch_command.cpp broadcasts it): no variable needed.
    const bool mpi = std::string_view(src.label) == "OMPI";
    const bool slurm = std::string_view(src.label) == "SLURM";
    if (mpi && !given_rendezvous(get)) {
      env.rendezvous.clear();
    } else if (slurm && !given_rendezvous(get)) {
      env.rendezvous = slurm_rendezvous(get);
      if (env.rendezvous.empty()) env.rendezvous = rendezvous(get);  // names what is missing
    } else {
      env.rendezvous = rendezvous(get);
    }
    const char* token = get("GRADEX_TOKEN");
    env.token = token ? token : "";
    const char* bind = get("GRADEX_BIND");
    env.bind_host = bind && *bind ? bind : "127.0.0.1";
    const char* adv = get("GRADEX_ADVERTISE");
    env.advertise = adv && *adv ? adv : env.bind_host;
    if (env.advertise == "0.0.0.0" || env.advertise == "::") {
      // Found from the route to the rendezvous when the group forms
      // (runner/join_group.cpp); under mpirun without one, rank 0 has none.
      if (env.rendezvous.empty()) {
        throw ConfigError("GRADEX_ADVERTISE", "required when GRADEX_BIND is a wildcard and no "
                                              "rendezvous is given: the address peers should dial");
      }
      env.advertise.clear();
    }
    if (adv && *adv && (std::string_view(adv) == "0.0.0.0" || std::string_view(adv) == "::")) {
      throw ConfigError("GRADEX_ADVERTISE", "a wildcard cannot be dialled: give this host's address");
    }
    wire::require_token_beyond_loopback(env.bind_host, env.token);
    return env;
  }
  return std::nullopt;
}

}  // namespace gradex
