// The simulator's pending events, earliest first: a radix heap (Ahuja,
// Mehlhorn, Orlin and Tarjan, 1990) for a clock that never goes back.
//
// A non-negative double's bits, read as an unsigned integer, order as the
// double does. Every pending event is at or after the time last popped,
// so it is filed by the highest bit in which its time differs from that
// time: bucket 0 holds events at that very time, bucket b those whose
// highest differing bit is b-1. Popping takes bucket 0 in order; when it is
// empty, the lowest non-empty bucket's earliest time becomes the time last
// popped and its events are filed again, each into a lower bucket. A push
// is O(1), and an event is filed at most 65 times over its life, where a
// binary or 4-ary heap compares at every level on every pop.
//
// Ties are broken by `seq` (posting order), as the heap this replaced
// did, so the simulation is the same to the last bit: events reach bucket
// 0 either by a push at the current time (the newest, so appended in
// order) or when a bucket is filed again (sorted by seq there).
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/errors.h"

namespace gradex::sim {

// `Event` has a double `time` (never negative) and a unique `seq`.
template <class Event>
class EventQueue {
 public:
  bool empty() const { return size_ == 0; }

  // `e` must not be earlier than the last event popped.
  void push(const Event& e) {
    const std::uint64_t k = key(e);
    GRADEX_ENFORCE(k >= last_, "an event scheduled at t=", e.time, " before the current time");
    buckets_[bucket_of(k)].push_back(e);
    ++size_;
  }

  // Removes every pending event `drop` says to and returns how many. The
  // others keep their order (bucket 0 stays sorted by seq), so popping
  // gives what it would have given, less the dropped ones.
  template <class Drop>
  std::size_t remove_if(Drop drop) {
    std::vector<Event>& now = buckets_[0];
    now.erase(now.begin(), now.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
    std::size_t removed = 0;
    for (std::vector<Event>& bucket : buckets_) removed += std::erase_if(bucket, drop);
    size_ -= removed;
    return removed;
  }

  // Whether an event is pending at the time last popped.
  bool due_now() const { return head_ < buckets_[0].size(); }
  // The event `ahead` places after the next one among those already due
  // at the time last popped, or nullptr: where a caller looks ahead to
  // prefetch what the coming events will touch.
  const Event* due_ahead(std::size_t ahead) const {
    const std::vector<Event>& now = buckets_[0];
    return head_ + ahead < now.size() ? &now[head_ + ahead] : nullptr;
  }

  // The earliest event, ties by seq; the queue must not be empty.
  Event pop() {
    std::vector<Event>& now = buckets_[0];
    if (head_ == now.size()) refill();
    --size_;
    return now[head_++];
  }

 private:
  static constexpr int kBuckets = 65;

  static std::uint64_t key(const Event& e) { return std::bit_cast<std::uint64_t>(e.time); }
  int bucket_of(std::uint64_t k) const {
    return k == last_ ? 0 : 64 - std::countl_zero(k ^ last_);
  }

  // Bucket 0 is used up: the lowest non-empty bucket's earliest time is
  // now the current one, and its events are filed again below it.
  void refill() {
    buckets_[0].clear();
    head_ = 0;
    int b = 1;
    while (buckets_[static_cast<std::size_t>(b)].empty()) ++b;  // size_ > 0: one is not
    refiling_.swap(buckets_[static_cast<std::size_t>(b)]);
    last_ = key(*std::min_element(refiling_.begin(), refiling_.end(),
                                  [](const Event& x, const Event& y) { return key(x) < key(y); }));
    for (const Event& e : refiling_) buckets_[bucket_of(key(e))].push_back(e);
    refiling_.clear();
    // Usually already in order (in a ring every instant's events were
    // filed in posting order): checking costs one pass where sorting
    // thousands of events costs a dozen (6% of a 1,024-rank ring's
    // instructions went to sorting sorted instants).
    const auto by_seq = [](const Event& x, const Event& y) { return x.seq < y.seq; };
    if (!std::is_sorted(buckets_[0].begin(), buckets_[0].end(), by_seq)) {
      std::sort(buckets_[0].begin(), buckets_[0].end(), by_seq);
    }
  }

  std::array<std::vector<Event>, kBuckets> buckets_;
  std::vector<Event> refiling_;  // kept between refills: no allocation once warm
  std::size_t head_ = 0;         // bucket 0's next event
  std::uint64_t last_ = 0;       // the bits of the time last popped
  std::size_t size_ = 0;
};

}  // namespace gradex::sim
