// The bulk fp16/bf16 conversions against the element functions they
// replace: equal bit for bit on every 16-bit input, on rounding ties and
// their neighbours, denormals, infinities and NaNs with payloads, at every
// scale the training path uses, and at every length (the vector loops
// leave a scalar tail).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "common/dtype.h"

namespace gradex {
namespace {

using Narrow = void (*)(std::span<const float>, float, std::span<std::uint16_t>);
using Widen = void (*)(std::span<const std::uint16_t>, std::span<float>);
using NarrowOne = std::uint16_t (*)(float);
using WidenOne = float (*)(std::uint16_t);

struct Format {
  const char* name;
  Narrow narrow;
  Widen widen;
  NarrowOne narrow_one;
  WidenOne widen_one;
  bool (*vectorised)();
};

const Format kHalf{"f16", floats_to_half, half_to_floats, float_to_half, half_to_float,
                   bulk_half_vectorised};
const Format kBf16{"bf16", floats_to_bf16, bf16_to_floats, float_to_bf16, bf16_to_float,
                   bulk_bf16_vectorised};

float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }
std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }

// Inputs where a conversion can go wrong: zeros, the edges of the float
// and 16-bit denormal and normal ranges, overflow to infinity, infinities,
// quiet and signalling NaNs of both signs with and without payload.
std::vector<float> special_values() {
  std::vector<float> v;
  for (std::uint32_t b : {0x00000000u, 0x00000001u, 0x007fffffu, 0x00800000u, 0x33000000u,
                          0x33000001u, 0x337fffffu, 0x33800000u, 0x387fc000u, 0x387fe000u,
                          0x387fffffu, 0x38800000u, 0x3f800000u, 0x477fe000u, 0x477fefffu,
                          0x477ff000u, 0x477ff001u, 0x47800000u, 0x7f7fffffu, 0x7f7f8000u,
                          0x7f7f7fffu, 0x7f800000u, 0x7f800001u, 0x7fa00000u, 0x7fbfffffu,
                          0x7fc00000u, 0x7fc00001u, 0x7fffffffu, 0x7fe01234u}) {
    v.push_back(from_bits(b));
    v.push_back(from_bits(b | 0x80000000u));
  }
  return v;
}

// Every value exactly halfway between two neighbouring finite 16-bit
// values, and the floats either side of it: round to nearest even decides
// these.
std::vector<float> ties(const Format& f) {
  std::vector<float> v;
  const std::uint16_t last_finite = f.widen_one == half_to_float ? 0x7bff : 0x7f7f;
  for (std::uint32_t h = 0; h < last_finite; ++h) {
    const float lo = f.widen_one(static_cast<std::uint16_t>(h));
    const float hi = f.widen_one(static_cast<std::uint16_t>(h + 1));
    // Exact: both have at most 11 significant bits and the same exponent
    // or adjacent ones, so their midpoint fits a float.
    const float mid = lo + (hi - lo) / 2;
    for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      v.push_back(x);
      v.push_back(-x);
    }
  }
  return v;
}

// Float bit patterns spread over the whole range (every exponent, sign and
// NaN payload region) plus random ones.
std::vector<float> sweep() {
  std::vector<float> v;
  for (std::uint64_t b = 0; b <= 0xffffffffu; b += 4099) v.push_back(from_bits(static_cast<std::uint32_t>(b)));
  std::mt19937 rng(16);
  for (int i = 0; i < 100000; ++i) v.push_back(from_bits(rng()));
  return v;
}

void expect_narrow_matches(const Format& f, const std::vector<float>& in, float scale) {
  std::vector<std::uint16_t> out(in.size());
  f.narrow(in, scale, out);
  int reported = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    const std::uint16_t want = f.narrow_one(in[i] * scale);
    if (out[i] != want && reported++ < 10) {
      ADD_FAILURE() << f.name << " scale " << scale << ": input 0x" << std::hex << bits(in[i])
                    << " gave 0x" << out[i] << ", the element function 0x" << want;
    }
  }
  EXPECT_EQ(reported, 0) << f.name << " scale " << scale << " mismatches";
}

class BulkConversion : public ::testing::TestWithParam<const Format*> {};

TEST_P(BulkConversion, WidensEveryValueAsTheElementFunction) {
  const Format& f = *GetParam();
  RecordProperty("vectorised", f.vectorised() ? "yes" : "no");
  std::vector<std::uint16_t> in(0x10000);
  for (std::uint32_t h = 0; h < 0x10000; ++h) in[h] = static_cast<std::uint16_t>(h);
  std::vector<float> out(in.size());
  f.widen(in, out);
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    ASSERT_EQ(bits(out[h]), bits(f.widen_one(in[h]))) << f.name << " 0x" << std::hex << h;
  }
}

TEST_P(BulkConversion, NarrowsEveryValueAsTheElementFunction) {
  const Format& f = *GetParam();
  // Every 16-bit value's float comes back to itself (NaNs canonicalised).
  std::vector<float> exact(0x10000);
  for (std::uint32_t h = 0; h < 0x10000; ++h) exact[h] = f.widen_one(static_cast<std::uint16_t>(h));
  expect_narrow_matches(f, exact, 1.0f);
  expect_narrow_matches(f, special_values(), 1.0f);
  expect_narrow_matches(f, ties(f), 1.0f);
}

TEST_P(BulkConversion, ScalesBeforeRoundingAsTheElementFunction) {
  const Format& f = *GetParam();
  const std::vector<float> values = sweep();
  const std::vector<float> specials = special_values();
  // 1/N for the worker counts training uses (exact and inexact
  // reciprocals), and scales that push values into and out of the
  // 16-bit formats' denormal and overflow ranges.
  for (float scale : {1.0f, 0.5f, 1.0f / 3, 0.25f, 1.0f / 7, 0.125f, 1e-6f, 3e4f, -1.0f}) {
    expect_narrow_matches(f, values, scale);
    expect_narrow_matches(f, specials, scale);
  }
}

// Lengths around the vector width, from unaligned starts, and nothing
// written past the end of the output.
TEST_P(BulkConversion, HandlesEveryTailAndOffset) {
  const Format& f = *GetParam();
  const std::vector<float> values = special_values();
  constexpr std::uint16_t kGuard = 0xa5a5;
  constexpr float kGuardFloat = -12345.0f;
  for (std::size_t offset = 0; offset < 4; ++offset) {
    for (std::size_t n = 0; n + offset <= values.size(); ++n) {
      const std::span<const float> in(values.data() + offset, n);
      std::vector<std::uint16_t> narrow(offset + n + 3, kGuard);
      f.narrow(in, 0.5f, std::span<std::uint16_t>(narrow).subspan(offset, n));
      for (std::size_t i = 0; i < narrow.size(); ++i) {
        const bool inside = i >= offset && i < offset + n;
        const std::uint16_t want = inside ? f.narrow_one(in[i - offset] * 0.5f) : kGuard;
        ASSERT_EQ(narrow[i], want) << f.name << " offset " << offset << " n " << n << " i " << i;
      }
      std::vector<float> wide(offset + n + 3, kGuardFloat);
      f.widen(std::span<const std::uint16_t>(narrow).subspan(offset, n),
              std::span<float>(wide).subspan(offset, n));
      for (std::size_t i = 0; i < wide.size(); ++i) {
        const bool inside = i >= offset && i < offset + n;
        const std::uint32_t want = inside ? bits(f.widen_one(narrow[i])) : bits(kGuardFloat);
        ASSERT_EQ(bits(wide[i]), want) << f.name << " offset " << offset << " n " << n << " i " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, BulkConversion, ::testing::Values(&kHalf, &kBf16),
                         [](const auto& info) { return std::string(info.param->name); });

}  // namespace
}  // namespace gradex
