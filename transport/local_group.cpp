#include "transport/local_group.h"

#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/errors.h"

namespace gradex {

void run_endpoint_ranks(const std::string& transport, int size, const TransportOptions& options,
                        const std::function<void(Comm&)>& body) {
  std::vector<std::unique_ptr<GroupEndpoint>> endpoints;
  std::vector<std::string> addresses;
  for (int r = 0; r < size; ++r) {
    endpoints.push_back(make_group_endpoint(transport, r, size, options));
    addresses.push_back(endpoints.back()->address());
  }
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(size));
  std::mutex first_mutex;
  int first = -1;
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      GroupEndpoint& ep = *endpoints[static_cast<std::size_t>(r)];
      try {
        ep.connect(addresses);
        body(ep);
        ep.close();
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
        // A PeerLostError is a consequence; anything else is a root cause.
        const auto* lost = dynamic_cast<const PeerLostError*>(&e);
        {
          std::lock_guard lock(first_mutex);
          if (first < 0 && lost == nullptr) first = r;
        }
        ep.abort(lost ? lost->peer() : r, e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  endpoints.clear();
  if (first >= 0) std::rethrow_exception(errors[static_cast<std::size_t>(first)]);
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace gradex
