// Which host each rank of `gradex launch --hostfile FILE` runs on.
//
// The file is Open MPI's hostfile format, the part of it a launcher of one
// program needs: one host per line with an optional `slots=K` (default 1),
// `#` starting a comment, blank lines ignored:
//
//   # two nodes, four ranks each
//   node01 slots=4
//   node02 slots=4
//
// Ranks fill the hosts in the file's order, each up to its slots (mpirun's
// default, by slot): ranks 0-3 on node01, 4-7 on node02. Rank 0 hosts the
// rendezvous store, so the first host is where the others dial.
#pragma once

#include <istream>
#include <string>
#include <vector>

namespace gradex {

struct HostSlots {
  std::string host;
  int slots = 1;
};

// Throws ConfigError naming "FILE:LINE" for a malformed line (an unknown
// word, slots not a positive integer, a host listed twice) and "FILE" for
// a file that lists no host.
std::vector<HostSlots> parse_hostfile(std::istream& in, const std::string& file);
// The same from a file; ConfigError naming --hostfile when it cannot be read.
std::vector<HostSlots> read_hostfile(const std::string& path);

// Rank r's host for `ranks` ranks, by slot. Throws ConfigError naming
// --hostfile when the slots are fewer than the ranks.
std::vector<std::string> place_ranks(const std::vector<HostSlots>& hosts, int ranks);

// True for a name of this machine: localhost, a loopback address written
// as 127.0.0.1 or ::1, or this host's name (gethostname, with or without
// its domain). Ranks there are started directly; others through the
// remote shell.
bool is_this_host(const std::string& host);
// This machine's name (gethostname); throws Error if it cannot be read.
std::string this_host_name();

}  // namespace gradex
