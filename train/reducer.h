// DDP's Reducer for one worker: gradients grouped into buckets (parameters
// in reverse order, so the last layer's gradients, which backward produces
// first, fill the first bucket), each bucket averaged on a communication
// thread as soon as all its gradients are ready, while backward continues
// on the layers below. Buckets are launched strictly in bucket order, as
// DDP does, so every worker issues the same exchanges in the same order.
//
// On a simulator's virtual clock there is no second thread (a rank is one
// fiber) and compute runs in no virtual time (train/rank_time.h): the
// communication thread's timeline is the fiber's clock, the compute's is
// the RankTime's position. A job (a bucket's exchange, a gather) runs on
// the fiber as soon as it is posted, starting where the compute has got
// to unless an earlier job still holds the clock, as the thread would take
// it from its queue; its wall time is left out of the compute. A wait
// for a job stalls the compute until the job's end on the clock, and
// finish() lets the step end no earlier than both timelines. That is the
// threaded timeline exactly, with the compute's duration measured (or
// declared) instead of slept.
//
// Sharded (ZeRO-2), each bucket is reduce-scattered instead: worker r keeps
// the average of block r of the bucket (BlockSplit), steps the parameters
// of those blocks, and gather() all-gathers each bucket's parameters so
// that every worker holds all of them for the next forward. Over the ring
// the two halves move exactly the bytes of its all-reduce.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "train/gradient_exchange.h"
#include "train/model.h"
#include "train/rank_time.h"
#include "train/trace.h"

namespace gradex {

struct Bucket {
  std::size_t offset = 0;  // a contiguous range of the flat gradient
  std::size_t count = 0;
  std::vector<std::size_t> params;  // parameter indices, in readiness order
};

// Buckets as torch DDP builds them once it has seen the gradients' ready
// order (Reducer::rebuild_buckets, PyTorch 1.13), here the parameters'
// reverse order: each parameter joins the open bucket, and the bucket
// closes once it holds at least its cap, `first_cap_bytes` for the first
// (the last layers', exchanged first, so that backward's first gradients
// leave early) and `cap_bytes` for every later one. A bucket can thus
// exceed its cap by its last parameter; a parameter is never split.
std::vector<Bucket> make_buckets(const std::vector<ParamSpan>& params, std::size_t cap_bytes,
                                 std::size_t first_cap_bytes);

struct ReducerOptions {
  Compression compression = Compression::none;
  bool overlap = true;  // false: launch every bucket only once backward is done
  Trace* trace = nullptr;  // per-bucket spans when set
  // The loop's stretches of compute: waits for jobs are left out of them,
  // and on a virtual clock jobs start where the compute has got to.
  RankTime* compute = nullptr;
  bool shard = false;  // ZeRO-2: reduce-scatter the buckets, gather() the parameters
  // ZeRO-3: bucket b's gradients live in a buffer of their own (a unit's),
  // not in the flat vector: `bucket_grads(b)` gives it when b launches, and
  // `exchanged(b)` runs on the communication thread once it is reduced.
  std::function<Tensor(std::size_t)> bucket_grads;
  std::function<void(std::size_t)> exchanged;
};

class Reducer {
 public:
  // `grads` is empty when `comm` carries sizes only (phantom payloads).
  Reducer(Comm& comm, GradientExchange& exchange, std::span<float> grads,
          std::vector<Bucket> buckets, const std::vector<ParamSpan>& params,
          ReducerOptions options);
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  const std::vector<Bucket>& buckets() const { return buckets_; }

  // At the start of each synchronised step: comm_seconds() and
  // bucket_times() count from here.
  void begin_step();
  // Before the backward pass whose gradients are to be synchronised.
  void prepare();
  // The gradient hook: parameter `param`'s gradient is final.
  void mark_ready(std::size_t param);
  // Called once backward has returned. Launches what is not launched yet
  // and waits for every bucket. Returns the seconds this thread spent
  // waiting: the exposed communication.
  double finish();
  // ZeRO-2, after the optimizer stepped this worker's blocks: all-gathers
  // each bucket's range of `params`, in bucket order, on the communication
  // thread. Returns the seconds this thread waited for it (all exposed).
  double gather(std::span<float> params);
  // Seconds the communication thread spent exchanging in the last step
  // (with gather()'s all-gathers when sharded).
  double comm_seconds() const;
  // When each bucket's exchange began and ended in the last step, on the
  // Comm's clock, in bucket order.
  std::vector<std::pair<double, double>> bucket_times() const;
  // Runs `job` on the communication thread and waits for it (the one thread
  // that uses the Comm).
  void run(const std::function<void()>& job);
  // Queues `job` behind what is queued and returns its ticket; wait(ticket)
  // returns once it has run (jobs run one at a time, in queue order). On a
  // virtual clock the job runs at once, on the timeline above. Tickets are
  // waited for in the order they were issued. wait() returns the seconds
  // the compute stood still for the job, which its stretch leaves out.
  std::size_t post(std::function<void()> job);
  double wait(std::size_t ticket);
  // Posts an all-gather of `data` (each worker's block in place), timed
  // into comm_seconds() and traced as all-gather `index`.
  std::size_t post_all_gather(Tensor data, std::size_t index);
  void set_tracing(bool on) { tracing_ = on; }

 private:
  void launch_ready_locked();
  void launch_all_locked();
  void exchange_bucket(std::size_t b);
  void all_gather_timed(Tensor data, std::size_t index);
  void trace_span(const std::string& what, std::size_t b, std::size_t bytes, double t0, double t1);
  // A bucket's range of `all` (gradients or parameters); phantom when the
  // transport carries sizes only and the buffers were left empty.
  Tensor bucket_tensor(std::span<float> all, const Bucket& bucket) const;
  // Virtual clock: runs `job` on the communication timeline; returns the
  // clock when it ends.
  double run_on_timeline(const std::function<void()>& job);
  // Virtual clock: exchanges the buckets launched since the last call.
  void run_launched();
  void enqueue_locked(std::function<void()> job);
  void loop();
  void wait_idle(std::unique_lock<std::mutex>& lock);

  Comm& comm_;
  GradientExchange& exchange_;
  std::span<float> grads_;
  std::vector<Bucket> buckets_;
  std::vector<std::size_t> bucket_of_;  // parameter -> bucket
  ReducerOptions options_;
  bool tracing_ = true;

  mutable std::mutex mutex_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::function<void()>> queue_;
  std::size_t submitted_ = 0, completed_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
  std::vector<std::size_t> pending_;  // per bucket: gradients not ready yet
  std::size_t next_launch_ = 0;
  // Virtual clock: the buckets launched and not yet exchanged, and when
  // each posted job not yet waited for ended (from ticket first_done_).
  bool virtual_ = false;
  std::vector<std::size_t> launched_;
  std::deque<double> done_at_;
  std::size_t first_done_ = 0;
  double comm_seconds_ = 0;
  std::vector<std::pair<double, double>> bucket_times_;
  std::vector<std::uint16_t> scratch_;  // compression buffer (comm thread only)
  std::thread thread_;
};

}  // namespace gradex
