#include "transport/nccl/world.h"

#include <cstdlib>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "common/errors.h"
#include "gpu/check.h"
#include "gpu/cuda.h"
#include "transport/nccl/comm.h"

namespace gradex {

namespace {

// The checks every nccl group makes before it touches a device.
int usable_devices(const TransportOptions& options) {
  require_cuda_device("/transport", "\"transport\": \"nccl\"");
  if (options.shaping) {
    throw ConfigError("/network", "does not apply to \"transport\": \"nccl\": NCCL's links cannot "
                                  "be shaped");
  }
  return cuda_device_count();
}

// One thread per GPU: rank r drives device r. The communicators are made
// by the ranks' threads together on the first run and kept for the next.
class NcclWorld final : public World {
 public:
  NcclWorld(int size, TransportOptions options)
      : size_(size), options_(std::move(options)), comms_(static_cast<std::size_t>(size)),
        failure_(std::make_shared<nccl::GroupFailure>()) {
    const int devices = usable_devices(options_);
    if (size > devices) {
      throw ConfigError("/transport",
                        std::to_string(size) + " ranks (workers plus any dedicated servers) on "
                        "\"transport\": \"nccl\" in one process need a GPU each, and this "
                        "machine has " + std::to_string(devices) +
                        ": run fewer, or one process per GPU on several machines (gradex launch)");
    }
    gpu::nccl_check(ncclGetUniqueId(&id_), "ncclGetUniqueId");
  }

  int size() const override { return size_; }

  void run(const std::function<void(Comm&)>& body) override {
    std::vector<std::exception_ptr> errors(comms_.size());
    std::vector<std::thread> threads;
    for (int r = 0; r < size_; ++r) {
      threads.emplace_back([&, r] {
        const auto i = static_cast<std::size_t>(r);
        try {
          gpu::cuda_check(cudaSetDevice(r), "cudaSetDevice(" + std::to_string(r) + ")");
          if (!comms_[i]) {
            comms_[i] = std::make_unique<nccl::NcclComm>(nccl::connect_links(r, size_, r, id_, options_.timeout),
                                                         options_, failure_, nullptr);
          }
          body(*comms_[i]);
        } catch (const std::exception& e) {
          errors[i] = std::current_exception();
          failure_->record(r, e.what());
        } catch (...) {
          errors[i] = std::current_exception();
          failure_->record(r, "unknown exception");
        }
      });
    }
    for (std::thread& t : threads) t.join();
    // The root cause: the rank that failed first.
    if (failure_->first.failed()) {
      const auto root = static_cast<std::size_t>(failure_->first.rank());
      if (root < errors.size() && errors[root]) std::rethrow_exception(errors[root]);
    }
    for (const std::exception_ptr& e : errors) {
      if (e) std::rethrow_exception(e);
    }
  }

 private:
  int size_;
  TransportOptions options_;
  ncclUniqueId id_{};
  std::vector<std::unique_ptr<nccl::NcclComm>> comms_;
  std::shared_ptr<nccl::GroupFailure> failure_;
};

// The launcher's or mpirun's or torchrun's local rank, else the group rank.
int local_rank(int rank) {
  for (const char* name : {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') {
      try {
        return std::stoi(v);
      } catch (const std::exception&) {
        throw ConfigError(name, std::string("expected a rank on this machine, got '") + v + "'");
      }
    }
  }
  return rank;
}

}  // namespace

std::unique_ptr<World> make_nccl_world(int size, const TransportOptions& options) {
  return std::make_unique<NcclWorld>(size, options);
}

std::unique_ptr<GroupEndpoint> make_nccl_group_endpoint(std::unique_ptr<GroupEndpoint> control,
                                                        const TransportOptions& options) {
  const int devices = usable_devices(options);
  const int rank = control->rank();
  const int size = control->size();
  const int device = local_rank(rank) % devices;
  // Rank 0's unique id reaches every rank over the control group.
  ncclUniqueId id{};
  if (rank == 0) {
    gpu::nccl_check(ncclGetUniqueId(&id), "ncclGetUniqueId");
    for (int p = 1; p < size; ++p) control->send(p, &id, sizeof id, kNcclIdTag);
  } else {
    control->recv(0, &id, sizeof id, kNcclIdTag);
  }
  nccl::Links links = nccl::connect_links(rank, size, device, id, options.timeout);
  return std::make_unique<nccl::NcclComm>(std::move(links), options,
                                          std::make_shared<nccl::GroupFailure>(), std::move(control));
}

}  // namespace gradex
