#include "train/step_accounting.h"

#include <algorithm>
#include <bit>

namespace gradex {

namespace {

// The layout: the four step times, the parameter hash, the bytes sent and
// received, the peak resident size, then each bucket's start and end.
constexpr std::size_t kHashWord = 4, kPeakWord = 7, kFixedWords = 8;

}  // namespace

std::vector<std::uint64_t> encode_worker(const StepTimes& sum, std::uint64_t params_hash,
                                         const Traffic& traffic, std::size_t peak_resident,
                                         const std::vector<std::pair<double, double>>& bucket_sums) {
  std::vector<std::uint64_t> words = {
      std::bit_cast<std::uint64_t>(sum.iteration), std::bit_cast<std::uint64_t>(sum.compute),
      std::bit_cast<std::uint64_t>(sum.comm),      std::bit_cast<std::uint64_t>(sum.exposed),
      params_hash, traffic.bytes_sent, traffic.bytes_received, peak_resident};
  for (const auto& [start, end] : bucket_sums) {
    words.push_back(std::bit_cast<std::uint64_t>(start));
    words.push_back(std::bit_cast<std::uint64_t>(end));
  }
  return words;
}

std::uint64_t params_hash_word(const std::vector<std::uint64_t>& words) {
  return words.at(kHashWord);
}

void decode_workers(TrainResult& result, const std::vector<std::vector<std::uint64_t>>& all,
                 const std::vector<std::size_t>& bucket_bytes, bool synchronised) {
  const double workers = static_cast<double>(all.size());
  const double n = workers * static_cast<double>(result.steps);
  const auto real = [](std::uint64_t w) { return std::bit_cast<double>(w); };
  StepTraffic wire;
  result.bucket_spans.clear();
  for (std::size_t b = 0; synchronised && b < bucket_bytes.size(); ++b) {
    result.bucket_spans.push_back({bucket_bytes[b], 0, 0});
  }
  result.replicas_agree = true;
  for (const auto& rec : all) {
    result.mean.iteration += real(rec[0]) / n;
    result.mean.compute += real(rec[1]) / n;
    result.mean.comm += real(rec[2]) / n;
    result.mean.exposed += real(rec[3]) / n;
    if (rec[kHashWord] != all.front()[kHashWord]) result.replicas_agree = false;
    wire.sent += static_cast<double>(rec[5]) / n;
    wire.received += static_cast<double>(rec[6]) / n;
    result.peak_resident_bytes =
        std::max(result.peak_resident_bytes, static_cast<double>(rec[kPeakWord]));
    for (std::size_t b = 0; b < result.bucket_spans.size(); ++b) {
      result.bucket_spans[b].start += real(rec[kFixedWords + 2 * b]) / n;
      result.bucket_spans[b].end += real(rec[kFixedWords + 2 * b + 1]) / n;
    }
  }
  result.wire = wire;
}

std::optional<StepTraffic> declared_step(const GradientExchange& exchange,
                                         const std::vector<ExchangeCall>& calls) {
  StepTraffic t;
  for (int w = 0; w < exchange.workers(); ++w) {
    for (const ExchangeCall& c : calls) {
      const std::optional<Traffic> d = exchange.declared_traffic(c.collective, w, c.count, c.dtype);
      if (!d) return std::nullopt;
      t.sent += static_cast<double>(d->bytes_sent) / exchange.workers();
      t.received += static_cast<double>(d->bytes_received) / exchange.workers();
    }
  }
  return t;
}

Traffic traffic_since(const Traffic& before, const Traffic& now) {
  return {now.bytes_sent - before.bytes_sent, now.bytes_received - before.bytes_received,
          now.messages_sent - before.messages_sent,
          now.messages_received - before.messages_received};
}

}  // namespace gradex
