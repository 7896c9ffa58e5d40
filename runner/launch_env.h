// Who this process is in a launched run, from the environment: gradex's own
// variables (set by `gradex launch` or by hand on each host), or those of
// the launcher that started it (Open MPI's mpirun, Slurm's srun, torchrun),
// the way torch.distributed's env:// initialisation works.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace gradex {

struct LaunchEnv {
  int rank = 0;
  int size = 1;
  // host:port of the store rank 0 hosts: GRADEX_RENDEZVOUS, or torch's
  // MASTER_ADDR and MASTER_PORT; under srun without either, the step's
  // first node and slurm_port() of the job; empty under Open MPI's mpirun
  // without either: the MPI job then carries rank 0's (cli/launch_command.cpp).
  std::string rendezvous;
  std::string token;       // GRADEX_TOKEN; must match on every rank
  std::string bind_host;   // GRADEX_BIND, default 127.0.0.1 (loopback only)
  // GRADEX_ADVERTISE: the address peers dial; default bind_host, or empty
  // when that is a wildcard: the interface routing to the rendezvous then
  // (join_group).
  std::string advertise;
  // Which variables gave the rank: "GRADEX", "OMPI", "PMI", "SLURM" or
  // "TORCHRUN" (RANK, WORLD_SIZE), looked for in that order.
  std::string source;
  std::string size_variable;  // the variable that gave the world size, for errors
};

// Reads the variables through `get` (std::getenv in the CLI). Returns
// nullopt when no rank variable is set (this process is not a participant);
// throws ConfigError naming the variable that is missing or malformed.
std::optional<LaunchEnv> launch_env(const std::function<const char*(const char*)>& get);

// The first host of a Slurm host list ("gpu[07-09,12]-ib,cpu1" gives
// "gpu07-ib"); throws ConfigError (no field) when it is not one.
std::string first_slurm_host(const std::string& nodelist);
// The rendezvous port of Slurm job `job_id`'s step `step_id`: in [20000,
// 32000), the same on every task of the step.
int slurm_port(long long job_id, long long step_id);

}  // namespace gradex
