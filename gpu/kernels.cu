// The CUDA kernels: element-wise reduce (vectorised: 16 bytes per thread
// per step where both buffers allow it), avg's final division, and the
// closed-form fill and check of common/verify.h. The arithmetic is
// gpu/reduce_functors.h's, which the host tests compare with the CPU's.
#include "gpu/kernels.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "gpu/check.h"
#include "gpu/reduce_functors.h"

namespace gradex::gpu {

namespace {

constexpr int kThreads = 256;
// Enough blocks to fill any current GPU; grid-stride loops do the rest.
constexpr std::size_t kMaxBlocks = 4096;

unsigned blocks_for(std::size_t items) {
  return static_cast<unsigned>(std::clamp<std::size_t>((items + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

template <typename T>
struct alignas(16) Pack {
  T v[16 / sizeof(T)];
};

template <DType D, typename Op>
__global__ void reduce_packs(Pack<StorageT<D>>* dst, const Pack<StorageT<D>>* src, std::size_t packs) {
  const Combine<D, Op> combine;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < packs;
       i += std::size_t{gridDim.x} * blockDim.x) {
    Pack<StorageT<D>> a = dst[i];
    const Pack<StorageT<D>> b = src[i];
#pragma unroll
    for (int k = 0; k < static_cast<int>(16 / sizeof(StorageT<D>)); ++k) a.v[k] = combine(a.v[k], b.v[k]);
    dst[i] = a;
  }
}

template <DType D, typename Op>
__global__ void reduce_elements(StorageT<D>* dst, const StorageT<D>* src, std::size_t n) {
  const Combine<D, Op> combine;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    dst[i] = combine(dst[i], src[i]);
  }
}

template <DType D>
__global__ void finish_elements(StorageT<D>* data, std::size_t n, int contributors) {
  const Finish<D> finish{contributors};
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    data[i] = finish(data[i]);
  }
}

// One span's period, by value in the kernel's arguments.
struct SpanArgs {
  std::size_t count = 0;
  std::size_t first = 0;
  double values[kVerifyPeriod] = {};
  unsigned char encoded[kVerifyPeriod * 8] = {};
  double tolerance = 0;
};

SpanArgs span_args(const PeriodicSpan& span, DType dtype) {
  SpanArgs a;
  a.count = span.count;
  a.first = span.first;
  a.tolerance = span.tolerance;
  for (int k = 0; k < kVerifyPeriod; ++k) a.values[k] = span.values[static_cast<std::size_t>(k)];
  // Encoded by the host's own store_element, so that both checks compare
  // against the same bits.
  for (int k = 0; k < kVerifyPeriod; ++k) {
    store_element(Tensor{a.encoded, kVerifyPeriod, dtype}, static_cast<std::size_t>(k),
                  span.values[static_cast<std::size_t>(k)]);
  }
  return a;
}

template <DType D>
__global__ void fill_span_kernel(StorageT<D>* data, SpanArgs span) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < span.count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    StorageT<D> v;
    memcpy(&v, span.encoded + ((span.first + i) % kVerifyPeriod) * sizeof v, sizeof v);
    data[i] = v;
  }
}

// An element's bit pattern (the exact comparison; NaN != NaN by value).
template <typename T>
__device__ unsigned long long bits_of(T v) {
  unsigned long long u = 0;
  memcpy(&u, &v, sizeof v);
  return u;
}

template <DType D>
__global__ void count_wrong_kernel(const StorageT<D>* data, SpanArgs span,
                                   unsigned long long* counter) {
  unsigned long long wrong = 0;
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < span.count;
       i += std::size_t{gridDim.x} * blockDim.x) {
    const std::size_t k = (span.first + i) % kVerifyPeriod;
    StorageT<D> want;
    memcpy(&want, span.encoded + k * sizeof want, sizeof want);
    const StorageT<D> got = data[i];
    if (bits_of(got) == bits_of(want)) continue;
    const double diff = load_as_double<D>(got) - span.values[k];
    const double scale = span.values[k] < -1 ? -span.values[k] : span.values[k] > 1 ? span.values[k] : 1;
    if (!(fabs(diff) <= span.tolerance * scale)) ++wrong;
  }
  if (wrong != 0) atomicAdd(counter, wrong);
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

void launch_reduce_into(void* dst, const void* src, std::size_t count, DType dtype, ReduceOp op,
                        cudaStream_t stream) {
  if (count == 0) return;
  with_dtype(dtype, [&]<DType D>() {
    with_op<D>(op, [&]<DType D2, typename Op>() {
      using T = StorageT<D2>;
      auto* d = static_cast<T*>(dst);
      const auto* s = static_cast<const T*>(src);
      constexpr std::size_t per_pack = 16 / sizeof(T);
      std::size_t done = 0;
      if (aligned16(d) && aligned16(s) && count >= per_pack) {
        const std::size_t packs = count / per_pack;
        reduce_packs<D2, Op><<<blocks_for(packs), kThreads, 0, stream>>>(
            reinterpret_cast<Pack<T>*>(d), reinterpret_cast<const Pack<T>*>(s), packs);
        done = packs * per_pack;
      }
      if (done < count) {
        reduce_elements<D2, Op><<<blocks_for(count - done), kThreads, 0, stream>>>(d + done, s + done,
                                                                                    count - done);
      }
    });
  });
  cuda_check(cudaGetLastError(), "the reduce kernel's launch");
}

void launch_finish_reduce(Tensor data, ReduceOp op, int contributors, cudaStream_t stream) {
  if (op != ReduceOp::avg || contributors <= 1 || data.count == 0 || data.data == nullptr) return;
  with_dtype(data.dtype, [&]<DType D>() {
    finish_elements<D><<<blocks_for(data.count), kThreads, 0, stream>>>(
        static_cast<StorageT<D>*>(data.data), data.count, contributors);
  });
  cuda_check(cudaGetLastError(), "the avg kernel's launch");
}

void launch_fill_span(Tensor data, const PeriodicSpan& span, cudaStream_t stream) {
  if (span.count == 0 || data.data == nullptr) return;
  const Tensor part = data.slice(span.offset, span.count);
  const SpanArgs args = span_args(span, data.dtype);
  with_dtype(data.dtype, [&]<DType D>() {
    fill_span_kernel<D><<<blocks_for(span.count), kThreads, 0, stream>>>(
        static_cast<StorageT<D>*>(part.data), args);
  });
  cuda_check(cudaGetLastError(), "the fill kernel's launch");
}

void launch_count_span_wrong(const Tensor& data, const PeriodicSpan& span,
                             unsigned long long* counter, cudaStream_t stream) {
  if (span.count == 0 || data.data == nullptr) return;
  const Tensor part = data.slice(span.offset, span.count);
  const SpanArgs args = span_args(span, data.dtype);
  with_dtype(data.dtype, [&]<DType D>() {
    count_wrong_kernel<D><<<blocks_for(span.count), kThreads, 0, stream>>>(
        static_cast<const StorageT<D>*>(part.data), args, counter);
  });
  cuda_check(cudaGetLastError(), "the check kernel's launch");
}

}  // namespace gradex::gpu
