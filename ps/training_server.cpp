#include "ps/training_server.h"

#include <algorithm>

#include "common/errors.h"
#include "ps/protocol.h"

namespace gradex {

void StalenessStats::add(long staleness) {
  histogram[std::min<std::size_t>(static_cast<std::size_t>(staleness), kBins - 1)] += 1;
  sum += staleness;
  count += 1;
  max = std::max(max, staleness);
}

StalenessStats& StalenessStats::operator+=(const StalenessStats& o) {
  for (std::size_t i = 0; i < kBins; ++i) histogram[i] += o.histogram[i];
  sum += o.sum;
  count += o.count;
  max = std::max(max, o.max);
  return *this;
}

namespace {

// One server's state while it serves.
class TrainingServer {
 public:
  TrainingServer(Comm& comm, const TrainingServerPlan& plan, std::span<float> shard,
                 const ApplyGradient& apply)
      : comm_(comm),
        plan_(plan),
        shard_(shard),
        apply_(apply),
        w_(static_cast<std::size_t>(plan.workers)),
        pushes_(w_),
        replies_(w_),
        reply_sent_(w_),
        seen_(w_, 0),
        pushed_(w_, 0),
        held_(w_, false) {
    for (std::size_t w = 0; w < w_; ++w) {
      pushes_[w].assign(shard.size(), 0.0f);
      replies_[w].assign(shard.size(), 0.0f);
    }
    if (plan.consistency == Consistency::bsp) sum_.assign(shard.size(), 0.0f);
  }

  StalenessStats run() {
    // Every worker's first pull, then a push receive posted for each.
    for (int w = 0; w < plan_.workers; ++w) reply(w);
    std::vector<Request> receives(w_);
    for (int w = 0; w < plan_.workers; ++w) post_push(receives, w);
    for (long left = plan_.steps * plan_.workers; left > 0; --left) {
      const int w = static_cast<int>(comm_.wait_any(receives));
      const auto i = static_cast<std::size_t>(w);
      stats_.add(version_ - seen_[i]);
      pushed_[i] += 1;
      if (plan_.consistency == Consistency::bsp) {
        bulk_synchronous(receives);
      } else {
        apply_(shard_, pushes_[i]);
        ++version_;
        // The buffer is read: w's next push may land in it (one that came
        // first waits in the transport).
        if (pushed_[i] < plan_.steps) {
          post_push(receives, w);
          held_[i] = true;
        }
        release();
      }
    }
    comm_.wait_all(reply_sent_);
    return stats_;
  }

 private:
  // Once every worker pushed this step, applies the average of the pushes
  // (summed in rank order, so the result does not depend on the order
  // they arrived in), posts the next step's push receives and answers
  // everybody. The pushes stay in their buffers until then.
  void bulk_synchronous(std::vector<Request>& receives) {
    if (++arrived_ < plan_.workers) return;
    std::copy(pushes_[0].begin(), pushes_[0].end(), sum_.begin());
    for (std::size_t w = 1; w < w_; ++w) {
      for (std::size_t k = 0; k < sum_.size(); ++k) sum_[k] += pushes_[w][k];
    }
    const float scale = 1.0f / static_cast<float>(plan_.workers);
    for (float& v : sum_) v *= scale;
    apply_(shard_, sum_);
    arrived_ = 0;
    ++version_;
    for (int v = 0; v < plan_.workers; ++v) {
      if (pushed_[static_cast<std::size_t>(v)] >= plan_.steps) continue;
      post_push(receives, v);
      reply(v);
    }
  }

  // ASP answers every held worker at once; SSP answers a worker that has
  // pushed c steps (and would start step c + 1) once the slowest worker
  // has pushed c - staleness.
  void release() {
    const long slowest = *std::min_element(pushed_.begin(), pushed_.end());
    for (int w = 0; w < plan_.workers; ++w) {
      const auto i = static_cast<std::size_t>(w);
      if (!held_[i]) continue;
      if (plan_.consistency == Consistency::ssp && slowest < pushed_[i] - plan_.staleness) continue;
      held_[i] = false;
      reply(w);
    }
  }

  void post_push(std::vector<Request>& receives, int w) {
    auto& buffer = pushes_[static_cast<std::size_t>(w)];
    receives[static_cast<std::size_t>(w)] =
        comm_.irecv(w, buffer.data(), buffer.size() * sizeof(float), push_tag(plan_.server));
  }

  // Sends worker w the shard's current values from a copy of its own: the
  // shard changes while the message is in flight. The worker only pushes
  // after it received the previous reply, so that one has completed.
  void reply(int w) {
    const auto i = static_cast<std::size_t>(w);
    comm_.wait(reply_sent_[i]);
    std::copy(shard_.begin(), shard_.end(), replies_[i].begin());
    seen_[i] = version_;
    reply_sent_[i] = comm_.isend(w, replies_[i].data(), replies_[i].size() * sizeof(float),
                                 pull_tag(plan_.server));
  }

  Comm& comm_;
  const TrainingServerPlan& plan_;
  std::span<float> shard_;
  const ApplyGradient& apply_;
  std::size_t w_;
  std::vector<std::vector<float>> pushes_;   // per worker: its push receive's buffer
  std::vector<std::vector<float>> replies_;  // per worker: its pull's values
  std::vector<Request> reply_sent_;
  std::vector<long> seen_;    // per worker: the version its last pull carried
  std::vector<long> pushed_;  // per worker: pushes taken
  std::vector<bool> held_;    // per worker: owed a reply the consistency model holds back
  std::vector<float> sum_;    // BSP: the step's average
  int arrived_ = 0;           // BSP: pushes of this step so far
  long version_ = 0;          // updates applied
  StalenessStats stats_;
};

}  // namespace

StalenessStats serve_training(Comm& comm, const TrainingServerPlan& plan, std::span<float> shard,
                              const ApplyGradient& apply) {
  GRADEX_ENFORCE(plan.workers >= 1 && plan.workers <= comm.size(), "training server: ",
                 plan.workers, " workers in a group of ", comm.size());
  GRADEX_ENFORCE(plan.staleness >= 0, "training server: staleness ", plan.staleness);
  return TrainingServer(comm, plan, shard, apply).run();
}

}  // namespace gradex
