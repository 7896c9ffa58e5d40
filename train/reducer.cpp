#include "train/reducer.h"

#include <algorithm>

#include "common/errors.h"

namespace gradex {

std::vector<Bucket> make_buckets(const std::vector<ParamSpan>& params, std::size_t cap_bytes,
                                 std::size_t first_cap_bytes) {
  std::vector<Bucket> out;
  bool open = false;
  for (std::size_t i = params.size(); i-- > 0;) {
    const ParamSpan& p = params[i];
    // Reverse order over a forward layout: each new parameter sits just
    // below the current bucket, so buckets stay contiguous.
    if (!open) out.push_back({p.offset + p.count, 0, {}});
    Bucket& b = out.back();
    GRADEX_ENFORCE_EQ(p.offset + p.count, b.offset, "parameters must be laid out contiguously");
    b.offset = p.offset;
    b.count += p.count;
    b.params.push_back(i);
    const std::size_t cap = out.size() == 1 ? first_cap_bytes : cap_bytes;
    open = b.count * sizeof(float) < cap;
  }
  return out;
}

Reducer::Reducer(Comm& comm, GradientExchange& exchange, std::span<float> grads,
                 std::vector<Bucket> buckets, const std::vector<ParamSpan>& params,
                 ReducerOptions options)
    : comm_(comm),
      exchange_(exchange),
      grads_(grads),
      buckets_(std::move(buckets)),
      bucket_of_(params.size(), 0),
      options_(options),
      pending_(buckets_.size(), 0),
      bucket_times_(buckets_.size()) {
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    for (std::size_t p : buckets_[b].params) bucket_of_[p] = b;
  }
  virtual_ = comm_.clock().is_virtual();
  if (virtual_) {
    GRADEX_ENFORCE(options_.compute != nullptr, "a Reducer on a virtual clock needs the compute's RankTime");
    return;
  }
  thread_ = std::thread([this] { loop(); });
}

Reducer::~Reducer() {
  if (virtual_) return;
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  thread_.join();
}

void Reducer::begin_step() {
  std::lock_guard lock(mutex_);
  comm_seconds_ = 0;
}

void Reducer::prepare() {
  std::lock_guard lock(mutex_);
  for (std::size_t b = 0; b < buckets_.size(); ++b) pending_[b] = buckets_[b].params.size();
  next_launch_ = 0;
  launched_.clear();
}

void Reducer::mark_ready(std::size_t param) {
  {
    std::lock_guard lock(mutex_);
    std::size_t& pending = pending_.at(bucket_of_.at(param));
    GRADEX_ENFORCE(pending > 0, "gradient of parameter ", param, " marked ready twice");
    --pending;
    if (options_.overlap) launch_ready_locked();
  }
  if (virtual_) run_launched();
}

void Reducer::launch_ready_locked() {
  while (next_launch_ < buckets_.size() && pending_[next_launch_] == 0) {
    const std::size_t b = next_launch_++;
    if (virtual_) {
      launched_.push_back(b);
    } else {
      enqueue_locked([this, b] { exchange_bucket(b); });
    }
  }
}

void Reducer::exchange_bucket(std::size_t b) {
  const Bucket& bucket = buckets_[b];
  const double t0 = comm_.clock().now();
  const Collective collective =
      options_.shard ? Collective::reduce_scatter : Collective::all_reduce;
  const ExchangeCall call = average_call(bucket.count, options_.compression, collective);
  const Tensor grads =
      options_.bucket_grads ? options_.bucket_grads(b) : bucket_tensor(grads_, bucket);
  average_gradients(exchange_, comm_, grads, options_.compression, collective, scratch_);
  if (options_.exchanged) options_.exchanged(b);
  const double t1 = comm_.clock().now();
  trace_span("bucket", b, call.count * dtype_size(call.dtype), t0, t1);
  std::lock_guard lock(mutex_);
  comm_seconds_ += t1 - t0;
  bucket_times_[b] = {t0, t1};
}

Tensor Reducer::bucket_tensor(std::span<float> all, const Bucket& bucket) const {
  if (all.empty() && comm_.phantom_payloads()) return Tensor{nullptr, bucket.count, DType::f32};
  return Tensor{all.data() + bucket.offset, bucket.count, DType::f32};
}

void Reducer::trace_span(const std::string& what, std::size_t b, std::size_t bytes, double t0,
                         double t1) {
  if (options_.trace == nullptr || !tracing_) return;
  options_.trace->add({what + " " + std::to_string(b) + " (" + std::to_string(bytes) + " B)",
                       comm_.rank(), 1, t0, t1 - t0, static_cast<int>(b), bytes});
}

void Reducer::all_gather_timed(Tensor data, std::size_t index) {
  const double s0 = comm_.clock().now();
  exchange_.all_gather(comm_, data);
  const double s1 = comm_.clock().now();
  trace_span("all-gather", index, data.count * dtype_size(data.dtype), s0, s1);
  std::lock_guard lock(mutex_);
  comm_seconds_ += s1 - s0;
}

std::size_t Reducer::post_all_gather(Tensor data, std::size_t index) {
  return post([this, data, index] { all_gather_timed(data, index); });
}

double Reducer::gather(std::span<float> params) {
  GRADEX_ENFORCE(options_.shard, "gather() is ZeRO's; this Reducer all-reduces");
  GRADEX_ENFORCE_EQ(params.size(), grads_.size(), "parameters and gradients differ in size");
  const double t0 = comm_.clock().now();
  run([&] {
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      all_gather_timed(bucket_tensor(params, buckets_[b]), b);
    }
  });
  return comm_.clock().now() - t0;
}

double Reducer::run_on_timeline(const std::function<void()>& job) {
  RankTime& compute = *options_.compute;
  Clock& clock = comm_.clock();
  // Whatever this fiber does from here is not compute: the sleep lets
  // other ranks' fibers run, the job moves messages.
  const double wall0 = wall_clock().now();
  if (compute.computing()) clock.sleep_until(compute.position());
  job();
  compute.exclude(wall_clock().now() - wall0);
  return clock.now();
}

void Reducer::run_launched() {
  std::vector<std::size_t> due;
  {
    std::lock_guard lock(mutex_);
    due.swap(launched_);
  }
  for (std::size_t b : due) run_on_timeline([&] { exchange_bucket(b); });
}

void Reducer::launch_all_locked() {
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    GRADEX_ENFORCE_EQ(pending_[b], std::size_t{0}, "bucket ", b, " has unready gradients");
  }
  launch_ready_locked();
}

double Reducer::finish() {
  if (virtual_) {
    // The compute has ended; the step ends when the last exchange does.
    const double compute_end = options_.compute->position();
    {
      std::lock_guard lock(mutex_);
      launch_all_locked();
    }
    run_launched();
    Clock& clock = comm_.clock();
    const double exposed = std::max(0.0, clock.now() - compute_end);
    clock.sleep_until(compute_end);
    return exposed;
  }
  const double t0 = comm_.clock().now();
  std::unique_lock lock(mutex_);
  launch_all_locked();
  wait_idle(lock);
  return comm_.clock().now() - t0;
}

double Reducer::comm_seconds() const {
  std::lock_guard lock(mutex_);
  return comm_seconds_;
}

std::vector<std::pair<double, double>> Reducer::bucket_times() const {
  std::lock_guard lock(mutex_);
  return bucket_times_;
}

void Reducer::run(const std::function<void()>& job) {
  if (virtual_) {
    run_on_timeline(job);
    return;
  }
  std::unique_lock lock(mutex_);
  enqueue_locked(job);
  wait_idle(lock);
}

std::size_t Reducer::post(std::function<void()> job) {
  if (virtual_) {
    done_at_.push_back(run_on_timeline(job));
    return submitted_++;
  }
  std::lock_guard lock(mutex_);
  enqueue_locked(std::move(job));
  return submitted_ - 1;
}

double Reducer::wait(std::size_t ticket) {
  if (virtual_) {
    GRADEX_ENFORCE(ticket >= first_done_ && ticket < submitted_, "ticket ", ticket,
                   " waited for out of order");
    while (first_done_ < ticket) {
      done_at_.pop_front();
      ++first_done_;
    }
    const double end = done_at_.front();
    done_at_.pop_front();
    ++first_done_;
    return options_.compute->stall_until(end);
  }
  const double t0 = wall_clock().now();
  {
    std::unique_lock lock(mutex_);
    // Jobs end or throw (their waits time out), so this cannot hang.
    done_cv_.wait(lock, [&] { return completed_ > ticket || error_; });
    if (error_) std::rethrow_exception(error_);
  }
  RankTime* compute = options_.compute;
  if (compute == nullptr || !compute->computing()) return 0.0;
  const double waited = wall_clock().now() - t0;
  compute->exclude(waited);
  return waited;
}

void Reducer::enqueue_locked(std::function<void()> job) {
  queue_.push_back(std::move(job));
  ++submitted_;
  work_cv_.notify_one();
}

void Reducer::wait_idle(std::unique_lock<std::mutex>& lock) {
  // Exchanges end or throw (their waits time out), so this cannot hang.
  done_cv_.wait(lock, [this] { return completed_ == submitted_ || error_; });
  if (error_) std::rethrow_exception(error_);
}

void Reducer::loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    work_cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop requested and nothing left
    std::function<void()> job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    std::exception_ptr failed;
    try {
      job();
    } catch (...) {
      failed = std::current_exception();
    }
    lock.lock();
    if (failed && !error_) error_ = failed;
    ++completed_;
    done_cv_.notify_all();
  }
}

}  // namespace gradex
