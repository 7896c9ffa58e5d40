#include "runner/idle_ranks.h"

#include "common/errors.h"

namespace gradex {

namespace {
// What rank 0 says: one byte each.
constexpr char kEpochEnded = 'e';
constexpr char kRunEnded = 'r';
}  // namespace

IdleRanks::IdleRanks(Comm& comm, int endpoints) : comm_(comm), endpoints_(endpoints) {}

void IdleRanks::tell_all(const char* what) {
  if (comm_.rank() != 0) return;
  for (int r = endpoints_; r < comm_.size(); ++r) {
    told_.push_back(comm_.isend(r, what, 1, kIdleProgressTag));
  }
}

void IdleRanks::epoch_ended() { tell_all(&kEpochEnded); }

void IdleRanks::run_ended() {
  tell_all(&kRunEnded);
  comm_.wait_all(told_);
  told_.clear();
}

void IdleRanks::sit_out() {
  while (true) {
    char said = 0;
    comm_.recv(0, &said, 1, kIdleProgressTag);
    if (said == kRunEnded) return;
    GRADEX_ENFORCE(said == kEpochEnded, "rank ", comm_.rank(), ": rank 0 sent '", said,
                   "' where it tells how far a run got");
  }
}

}  // namespace gradex
