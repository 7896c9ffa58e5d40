#include "baselines/mpi_job.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <optional>

#include "baselines/mpi_runtime.h"
#include "common/errors.h"
#include "common/watchdog.h"

namespace gradex {

namespace {

struct Job {
  std::map<int, MPI_Comm> prefixes;
  int rank = 0;  // read at MPI_Init: the watchdog's thread may not call MPI
  std::optional<Watchdog> watchdog;
};

std::mutex job_mutex;
Job* job = nullptr;

Job& active_job() {
  if (job == nullptr) throw InvariantError("the MPI baselines need an MPI job (mpirun)");
  return *job;
}

}  // namespace

bool mpi_built() { return true; }

// MPI_Get_library_version may be called before MPI_Init (MPI 3.0, 8.7.1).
std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "unknown";
  std::string line(text, static_cast<std::size_t>(std::max(length, 0)));
  return line.substr(0, line.find_first_of(",\n"));
}

bool mpi_job_active() {
  std::lock_guard lock(job_mutex);
  return job != nullptr;
}

MpiJob::MpiJob() {
  std::lock_guard lock(job_mutex);
  GRADEX_ENFORCE(job == nullptr, "one MPI job per process");
  int provided = 0;
  // One thread at a time calls MPI, but not always the main one: training
  // runs its exchanges on the reducer's communication thread.
  mpi_check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided),
            "MPI_Init_thread");
  if (provided < MPI_THREAD_SERIALIZED) {
    throw ConfigError("mpirun", "the MPI library does not allow calls from more than one thread "
                                "(MPI_THREAD_SERIALIZED)");
  }
  // Errors come back as codes (mpi_check turns them into exceptions)
  // instead of MPI's default of aborting the job without a word.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0;
  mpi_check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
  job = new Job;
  job->rank = rank;
  job->watchdog.emplace();
}

MpiJob::~MpiJob() {
  if (finalized_) return;
  // An error path: leave MPI as it is (finalising is collective and the
  // other ranks may never get there); stop only our own watchdog thread.
  std::lock_guard lock(job_mutex);
  if (job) job->watchdog.reset();
}

void MpiJob::finalize() {
  if (finalized_) return;
  std::lock_guard lock(job_mutex);
  for (auto& [n, comm] : job->prefixes) {
    if (comm != MPI_COMM_WORLD) MPI_Comm_free(&comm);
  }
  job->watchdog.reset();
  delete job;
  job = nullptr;
  finalized_ = true;
  mpi_check(MPI_Finalize(), "MPI_Finalize");
}

MPI_Comm mpi_prefix_comm(int n) {
  std::lock_guard lock(job_mutex);
  Job& j = active_job();
  auto it = j.prefixes.find(n);
  if (it != j.prefixes.end()) return it->second;
  int world = 0;
  mpi_check(MPI_Comm_size(MPI_COMM_WORLD, &world), "MPI_Comm_size");
  GRADEX_ENFORCE(n >= 1 && n <= world, "an MPI communicator of ", n, " ranks out of ", world);
  MPI_Comm comm = MPI_COMM_WORLD;
  if (n < world) {
    MPI_Group all, first;
    mpi_check(MPI_Comm_group(MPI_COMM_WORLD, &all), "MPI_Comm_group");
    int range[1][3] = {{0, n - 1, 1}};
    mpi_check(MPI_Group_range_incl(all, 1, range, &first), "MPI_Group_range_incl");
    // Collective over the group's members only: the other ranks (servers
    // idle in this run) never call it.
    mpi_check(MPI_Comm_create_group(MPI_COMM_WORLD, first, /*tag=*/n, &comm),
              "MPI_Comm_create_group");
    MPI_Group_free(&first);
    MPI_Group_free(&all);
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  }
  j.prefixes.emplace(n, comm);
  return comm;
}

std::string mpi_broadcast_from_rank0(const std::string& text, std::chrono::milliseconds timeout) {
  const MpiDeadline deadline(timeout, "the rendezvous broadcast (MPI_Bcast)");
  int length = static_cast<int>(text.size());
  mpi_check(MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast");
  GRADEX_ENFORCE(length >= 0 && length <= 4096, "a rendezvous address of ", length, " bytes");
  std::string out = text;
  out.resize(static_cast<std::size_t>(length));
  mpi_check(MPI_Bcast(out.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return out;
}

MpiDeadline::MpiDeadline(std::chrono::milliseconds timeout, const std::string& what) {
  std::lock_guard lock(job_mutex);
  Job& j = active_job();
  ticket_ = j.watchdog->arm(Watchdog::Clock::now() + timeout,
                            "rank " + std::to_string(j.rank) + ": " + what +
                                " did not return within its timeout; a peer is lost or stuck. "
                                "Ending this process so that mpirun ends the job.");
}

MpiDeadline::~MpiDeadline() {
  std::lock_guard lock(job_mutex);
  if (job && job->watchdog) job->watchdog->disarm(ticket_);
}

void mpi_check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw InvariantError(std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

}  // namespace gradex
