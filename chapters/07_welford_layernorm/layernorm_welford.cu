// Chapter 07 — Welford LayerNorm: one pass, numerically stable, at copy speed
//
//   mean[r] = mean_i x[r, i]        var[r] = mean_i (x[r, i] - mean[r])^2   (biased)
//   y[r, i] = (x[r, i] - mean[r]) / sqrt(var[r] + eps) * weight[i] + bias[i]
//
// What this stage adds: LayerNorm needs two statistics per row, and the cheap way
// to get both in one pass, var = E[x^2] - E[x]^2, cancels catastrophically in
// fp32 when the mean is large against the spread. A row of 40000, 40001, 40002,
// 40003 has var = 1.25, but x^2 is about 1.6e9, where neighbouring floats are 128
// apart: E[x^2] - E[x]^2 subtracts two rounded numbers that agree in every digit
// the variance lives in, and returns garbage, often negative (NaN after the
// rsqrt). A constant row fares no better: for 4,099 copies of 1234.0 (var = 0)
// the shortcut (method 2 below) returns non-finite outputs.
// Welford's update keeps a running mean and the sum of squared deviations M2
// instead of raw sums, so nothing large is ever subtracted:
//     n += 1;  d = v - mean;  mean += d / n;  M2 += d * (v - mean)
// and Chan's formula merges two partial results (na, ma, Ma) and (nb, mb, Mb):
//     n = na + nb;  d = mb - ma;  mean = ma + d * nb / n;  M2 = Ma + Mb + d^2 * na * nb / n
// (Welford's update is Chan's merge with nb = 1.) So the statistics of a row come
// out of one read and one reduction: each 16-byte vector's (n, mean, M2) straight
// from its registers, then Chan across a thread's vectors, across the lanes of a
// warp (shuffles) and across the warps of a block (shared memory, one barrier).
// A constant row gives var = 0 exactly: every deviation and every merge's d is 0.
// Shift: a running mean is rounded at the scale of the row's offset at every
// update and merge (a row near 1,000 loses up to half of ulp(1000) = 6e-5 each
// time), and every x - mean inherits the sum of those roundings. So each row's
// statistics are of x - x[0] (exact in fp32 while x and x[0] are within a factor
// of two): their rounding scales with the row's spread, and so does the output's,
// which is computed as (x - x[0]) * rstd - m * rstd with m the mean of x - x[0]
// (see Norm): the mean itself, rounded at the offset's scale, is never formed.
// The limit of this shift: a first element far from the rest. m is then about
// -x[0], held only to x[0]'s ulp, and x - x[0] rounds at that scale too. fp32 rows
// with x[0] at 1e2 to 3e4 times the row's mean |x| came out at 1.3 to 8 times the
// fp32 tolerance for 4,096 to 65,536 columns with the shift alone (0.6-0.8 at
// 1,024; torch 0.01-1.3; H200, book/results.md). So fp32 rows are held as they
// are (not less the shift), and a row whose shift lies more than 4 standard
// deviations from its mean (|m| * rstd, known after the first reduction) has its
// statistics taken again about that mean and is normalized about it (recentered):
// a second reduction for such rows only, in the stage (method 0; method 1 below
// keeps the limit). On those rows: 0.06 of the fp32 tolerance at worst (6.41
// before, torch 0.57); ordinary rows as fast as before (0.991-1.004 at 128 to
// 65,536 floats), rows that all take the second reduction at 0.90-1.00, and a far
// row in a launch of one wave costs it about 0.4 us (H200s, book/results.md).
// fp16 and bf16 outputs round far above that error (0.19-0.24 of their tolerance,
// as torch) and keep the one pass.
//
// method (the launcher's argument; the notebook compares them):
//   0  Welford + Chan as above (the stage). One exception, for speed: 16-bit rows off
//      the vector boundary in layernorm_offset_wb_kernel take sums about x[0] in one
//      reduction, recentered as fp32 rows are (moments_norm, with why it is exact enough).
//   1  two-pass over the register-resident row: a block sum for the mean, then a
//      second block sum of d = x - mean and d^2, whose sum(d) corrects the mean
//      (corrected_two_pass below). Stable; two reductions instead of one. It
//      keeps the shift's limit above (no second reduction for far rows).
//   2  one pass of sum and sum of squares, var = E[x^2] - E[x]^2 in fp32. Kept only
//      to show the failure: nothing is clamped, a negative variance becomes NaN.
//
// Semantics (torch.nn.functional.layer_norm): biased variance, eps inside the
// sqrt, statistics in fp32 for fp32, fp16 and bf16 alike; weight and bias are each
// optional (nullptr reads as 1 and 0). x, weight, bias and y share one dtype and
// y = round_T((float(x) - mean) * rstd * float(w) + float(b)), rounded once.
//
// Paths, picked per launch (16-byte vectors: 4 floats or 8 halves):
//   * aligned: x, y, weight, bias 16-byte aligned and cols a multiple of the
//     vector width; every access is 16 bytes wide.
//   * peeled: rows that do not start on a 16-byte boundary (odd cols in fp16, a
//     tensor starting at an odd offset) while x and y share their misalignment:
//     the row's first elements up to a 16-byte boundary (the head) and its last
//     partial vector (the tail) are read one element each by a few threads; the
//     body in between still moves in 16-byte vectors (weight and bias too when
//     the body starts at a multiple of the vector width, else element-wise).
//   * scalar: x and y misaligned differently; element by element, still one
//     read of x. So a caller allocates y as far past a 16-byte boundary as x
//     (x = t[1:] of rows of odd length: 29-45% of a copy on an H200 with y
//     aligned, 87-92% with y at x's offset; book/results.md).
//   Row lengths, in vectors of the path (4 floats, 8 halves, or 1 element), for
//   the rows not taken by the first case:
//   * a few aligned rows (at most 256, a launch of one wave) of 9 to 2,048
//     vectors: one block per row, 32 to 1,024 threads of one or two vectors,
//     with weight and bias loaded together with x. The time of such a launch is
//     latency: the shortest chain of loads and reductions wins, not the fewest
//     threads.
//   * <= 128 vectors (fp32 <= 512, fp16/bf16 <= 1,024 columns): 1 to 32 lanes
//     per row, several rows per warp and per 64-thread block; the statistics
//     are merged with shuffles alone, no shared memory and no barrier.
//   * <= 4,096 vectors (fp32 <= 16,384, fp16/bf16 <= 32,768 columns; 16,384 on
//     the scalar path): one block per row, 64 to 512 threads holding 4 or 8
//     vectors each (launch_rows has the table, book/layernorm-notes.md why); the
//     row stays in registers between the statistics and the normalize, so x is
//     read once.
//     Weight and bias are read after the reduction: every row shares them, so
//     they stay in L2, and they hold no registers across it. Many rows of up
//     to 2,048 aligned vectors go two to a block, and the two rows share each
//     weight and bias load.
//   * many aligned rows with weight and bias at some lengths (128 to 2,048 and
//     16,384 halves; 128, 1,024, 8,192 and 16,384 floats; 4,096 of either on a
//     GPU like the H200) take kernels that load
//     weight and bias together with x and fit the row exactly (affine_row; rows
//     of 128 two to a thread; on a GPU like the H200, rows of 16,384 floats load
//     them after the reduction, two blocks per SM; 16-bit rows of 16,384 load
//     them after the reduction on every GPU, in program order). Past the L2, the
//     lengths between (129 to 2,047 vectors of 8 halves, 4,095 of 4 floats, not a
//     power of two) take the same block kernel shaped to the row: 64 to 512
//     threads x 3 to 8 vectors, the last slot of some threads past the row's end
//     where it does not fill them (launch_shaped; Welford only); on a GPU like the
//     H200 some take instead the kernels of rows off the boundary below (16-bit rows
//     of 129 to 160 vectors a warp a row, to 168 with weight and bias, from 513
//     vectors the offset kernel, and bf16 rows of 169 to 255 but 192 too; fp32 rows
//     of 2,049 to 3,072 vectors the funnel kernel). Many 16-bit rows off the vector
//     boundary past the L2 (a length not a multiple of 8) take,
//     for Welford, a kernel that shifts weight and bias into shared memory for
//     each of the 8 row offsets (layernorm_shifted_wb_kernel): 83-97% of a copy,
//     against 52-89% for the peeled kernels; on a GPU like the H200, with weight
//     and bias both given and aligned, rows of 161 vectors and more, and rows of 129 to
//     176 whose heads are all even (a warp a row), take one row a block instead, weight
//     and bias read where they lie (from the next lane at 3, 4 and 6 vectors a thread,
//     and 5 in blocks of 64, there with odd heads in 4 branches, not 8) and the
//     statistics as sums about x[0] in one reduction, recentered where x[0] lies far
//     from the mean (layernorm_offset_wb_kernel, moments_norm): 88-99%; fp32 rows (a
//     length not a multiple of 4) take one row a block with each vector's weight and
//     bias moved out of two aligned vectors (layernorm_funnel_wb_kernel): 90-100%,
//     against 72-98% (book/layernorm-notes.md has the numbers).
//   * <= 8,192 vectors of 16 bytes (fp32 <= 32,768, fp16/bf16 <= 65,536 columns):
//     the same, in blocks of 1,024 threads x 8 vectors, one block per SM.
//   * longer: a streaming fallback, 512 threads, sweeps x twice (Welford in the
//     first pass, normalize in the second; method 1 sweeps it three times). The
//     first sweep keeps as much of the row as fits in shared memory (about
//     113 KB a block on an H100 or H200) where the rows in flight would not
//     stay in L2, and loads the rest with an L2 evict_last policy; later sweeps
//     read the stashed part from shared memory and the rest from the L2.
//
// Works for any number of rows (0, 1, more than 65,535: the grid is capped and
// blocks loop over rows) and any row length >= 1 (cols = 1 gives y = bias);
// offsets are 64-bit. x, weight, bias and y must be contiguous and aligned to
// their element size; y must not alias x (the streaming path reads x again
// after writing y, and the kernels promise the compiler no overlap). A NaN or
// inf in a row makes that row NaN and no other.
//
// Build alone:   nvcc -std=c++17 -arch=sm_90 -c layernorm_welford.cu
// Measured:      Welford, % of the copy of x in the same rounds (kernelbook.bench) at 256 MiB
//                moved, rows of 128 / 1,024 / 4,096 / 8,192 / 16,384 / 65,536 columns.
//                NVIDIA H100, 2026-11-25, code 37270254b8f5 (copy ~2,843-2,882 GB/s;
//                book/results/layernorm-h100.json): fp32 100.2 / 99.4 / 100.0 / 99.9 / 97.9 /
//                69.1%, fp16 99.4 / 98.9 / 99.5 / 99.8 / 99.9 / 87.6%, bf16 99.7 / 99.0 / 99.7 /
//                99.8 / 99.8 / 86.5%. NVIDIA H200, 2026-11-25, code 3727025 (copy ~3,917-3,990
//                GB/s; book/results/layernorm-h200.json): fp32 99.9 / 98.8 / 101.7 / 100.2 /
//                99.1 / 63.6%, fp16 98.4 / 98.9 / 97.0 / 98.2 / 98.6 / 75.5%, bf16 98.5 / 98.2 /
//                97.5 / 99.5 / 98.7 / 75.7%. Past 100%: x's L2 policy, which speeds a copy by
//                2.2-3.2% on an H200 and 0.9-1.5% on an H100 (kernelbook.bench).
//                Between the powers of two (book/results/layernorm-sweep-*.json, code 6f04165,
//                16 lengths from 1,024 to 16,384, every dtype): H100 97.7-101.4% (copy
//                ~2,838-2,884 GB/s), H200 96.1-101.3% (copy ~3,922-3,999 GB/s).
//                Lengths off the 16-byte boundary (23 from 1,025 to 16,383 columns in every
//                dtype, and 9 aligned cases among them) on H200s: at 2125a8d (…5544, copy
//                ~3,900-3,943 GB/s) fp32 89.9-99.8%, fp16 89.4-98.7%, bf16 88.9-98.2%, under 95%
//                in 38 of the 78 cases; at e95be94 (…9931, copy ~3,914-3,971 GB/s) fp32
//                89.4-99.2%, fp16 89.9-98.7%, bf16 88.9-97.8%, under 95% in 35 (the lowest fp32
//                14,501 to 16,383 at 512 x 8, 16-bit 1,301 and 2,059); torch, torch.compile and
//                Liger ran such rows at 13-73% of the copy (book/results.md). H200s differ from
//                one to the next by a few points of the copy at the same code.
//                The history of these numbers, and every measurement behind the kernels below
//                (the forms kept and the forms that lost): book/layernorm-notes.md.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace {

constexpr int kStreamingThreads = 512;          // longer rows: see layernorm_streaming_kernel
constexpr int kStreamingBlocksPerSm = 1024 / kStreamingThreads;  // 64 registers a thread
constexpr int kWarpPathThreads = 64;            // block size of the short-row path
// Vectors per lane on the short-row path: fp32 rows spread over twice the lanes.
// H200, 128 columns: fp32 98% of a copy at 16 lanes x 2 float4, 95% at 8 x 4;
// fp16/bf16 the other way round, 95-96% at 4 lanes x 4 against 88-90% at 8 x 2.
template <int N> constexpr int kWarpPathVpt = N == 4 ? 2 : 4;
constexpr int kMaxGrid = 65535;                 // blocks loop over the rows beyond
constexpr int64_t kManyRows = 2048;             // "many rows": see launch_rows
constexpr int64_t kFewRows = 256;               // "few rows": see launch_rows
constexpr int64_t kFewRowsMinVectors = 8;       // few rows this short stay on the short-row path
// The weight-and-bias kernels of affine_row (layernorm_affine_rows_kernel and
// _block_kernel): blocks per SM for VPT vectors a thread. 2 vectors: 1,536 threads
// at 40 registers (fp32 blocks of 512: 2,048 at 32); 4: 1,024 at 64; 8: 512 at up
// to 128, or 1,024 at 64 with weight and bias late (WbLoad); 16-bit rows of 6 or 7
// vectors with weight and bias in order (launch_shaped): 768 at 80 (the offset
// kernel's own count, from 7 vectors in blocks of 256: kOffsetBlocksPerSm). No spill in
// any of them (launch_shaped builds Welford's kernels only: in methods 1 and 2 the
// fp32 ones of 7 and 8 vectors spilled 8-16 bytes).
// When affine_row reads weight and bias: together with x (kEarly); after the
// reduction (kLate: fp32 rows, see affine_row); after the reduction,
// one vector at a time in program order (kInOrder: 16-bit, the row kept in T).
enum class WbLoad { kEarly, kLate, kInOrder };
template <typename T, int THREADS, int VPT, WbLoad WB = WbLoad::kEarly>
constexpr int kAffineBlocksPerSm = (WB == WbLoad::kInOrder && VPT > 5 ? 768
                                    : WB != WbLoad::kEarly ? 1024
                                    : VPT <= 2           ? (sizeof(T) == 4 && THREADS == 512 ? 2048 : 1536)
                                    : VPT == 4           ? 1024
                                                         : 512) /
                                   THREADS;
// layernorm_affine_rows_kernel: as above for its 2 vectors a thread, and for fp32
// rows 2 x 2 (16 floats a thread) 1,024 threads at 64 registers (40 spilled).
template <typename T, int VPT, int R>
constexpr int kAffineRowsBlocksPerSm = sizeof(T) == 4 && VPT * R > 2 ? 1024 / kWarpPathThreads
                                                                     : kAffineBlocksPerSm<T, kWarpPathThreads, 2>;
constexpr int64_t kMaxAffineRows = 0x7fffffff;  // they launch a block per row at most: gridDim.x's limit
constexpr double kFastMemoryBytesPerSmPerUs = 32768;  // see fast_memory_per_sm
constexpr unsigned kFullMask = 0xffffffffu;

// ---- element conversions: intrinsics only (torch builds with the half operators off)
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Two 16-bit values in one 32-bit register (float: unused).
template <typename T> struct Pair { using type = T; };
template <> struct Pair<__half> { using type = __half2; };
template <> struct Pair<__nv_bfloat16> { using type = __nv_bfloat162; };

__device__ __forceinline__ float lo_float(__half2 v) { return __low2float(v); }
__device__ __forceinline__ float hi_float(__half2 v) { return __high2float(v); }
// A bf16 is the top half of an fp32: the pair's low element is the word shifted
// up by 16 bits, the high one the word with its low half cleared. Two integer
// instructions a pair, where the intrinsics spend three.
__device__ __forceinline__ float lo_float(__nv_bfloat162 v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof(u));
  return __uint_as_float(u << 16);
}
__device__ __forceinline__ float hi_float(__nv_bfloat162 v) {
  uint32_t u;
  std::memcpy(&u, &v, sizeof(u));
  return __uint_as_float(u & 0xffff0000u);
}

template <typename T> __device__ __forceinline__ typename Pair<T>::type pair_from_floats(float a, float b);
template <> __device__ __forceinline__ __half2 pair_from_floats<__half>(float a, float b) {
  return __floats2half2_rn(a, b);
}
template <> __device__ __forceinline__ __nv_bfloat162 pair_from_floats<__nv_bfloat16>(float a, float b) {
  return __floats2bfloat162_rn(a, b);
}

// N elements moved as one access: 16 bytes (LDG.128 / STG.128) when N * sizeof(T)
// == 16. 16-bit elements are stored as pairs (__half2, __nv_bfloat162): a row
// slice then occupies N / 2 registers per vector, converted pairwise when used;
// as single 16-bit values the compiler gives each its own register and the
// 64K-element rows no longer fit.
template <typename T, int N>
struct alignas(sizeof(T) * N) Pack {
  static constexpr bool kPairs = sizeof(T) == 2 && N % 2 == 0;
  using Word = std::conditional_t<kPairs, typename Pair<T>::type, T>;
  Word w[kPairs ? N / 2 : N];

  __device__ __forceinline__ float get(int e) const {  // element e as float; e is a compile-time constant
    if constexpr (kPairs) return e % 2 == 0 ? lo_float(w[e / 2]) : hi_float(w[e / 2]);
    else return to_float(w[e]);
  }
  __device__ __forceinline__ void set(const float (&f)[N]) {  // round each value once
    if constexpr (kPairs) {
#pragma unroll
      for (int i = 0; i < N / 2; ++i) w[i] = pair_from_floats<T>(f[2 * i], f[2 * i + 1]);
    } else {
#pragma unroll
      for (int i = 0; i < N; ++i) w[i] = from_float<T>(f[i]);
    }
  }
};

template <typename T, int N>
__device__ __forceinline__ Pack<T, N> constant_pack(float v) {  // N copies of v (1 or 0: exact in T)
  float f[N];
#pragma unroll
  for (int e = 0; e < N; ++e) f[e] = v;
  Pack<T, N> p;
  p.set(f);
  return p;
}

// One access per Pack. A 16-byte Pack of __half2 would otherwise be read as four
// 4-byte loads: go through uint4 so the compiler emits LDG.128 / STG.128; the
// bit copy (memcpy) stays in registers.
// No cache policy, but in some block kernels of affine_row (see
// load_vec_keep_in_l2). Where the policy is not taken, it measured ties or mixed
// results: book/layernorm-notes.md, section load_vec.
template <typename P>
__device__ __forceinline__ P load_vec(const P* src) {
  if constexpr (sizeof(P) == 16) {
    const uint4 u = *reinterpret_cast<const uint4*>(src);
    P r;
    std::memcpy(&r, &u, sizeof(P));
    return r;
  } else {
    return *src;
  }
}

template <typename P>
__device__ __forceinline__ void store_vec(P* dst, const P& v) {
  if constexpr (sizeof(P) == 16) {
    uint4 u;
    std::memcpy(&u, &v, sizeof(P));
    *reinterpret_cast<uint4*>(dst) = u;
  } else {
    *dst = v;
  }
}

// The same 16-byte load and store as inline PTX that the compiler keeps in
// program order (asm volatile; the store also orders other memory accesses
// around it). In a __restrict__ kernel the compiler may move plain loads above
// earlier stores; these it may not (see WbLoad::kInOrder in affine_row).
template <typename P>
__device__ __forceinline__ P load_vec_in_order(const P* src) {
  static_assert(sizeof(P) == 16, "16-byte vectors only");
  uint4 u;
  asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
               : "l"(src));
  P r;
  std::memcpy(&r, &u, sizeof(P));
  return r;
}

template <typename P>
__device__ __forceinline__ void store_vec_in_order(P* dst, const P& v) {
  static_assert(sizeof(P) == 16, "16-byte vectors only");
  uint4 u;
  std::memcpy(&u, &v, sizeof(P));
  asm volatile("st.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(u.x), "r"(u.y), "r"(u.z), "r"(u.w)
               : "memory");
}

// x's 16-byte load with an L2 evict_last policy: x's lines are the last the L2
// evicts, y's dirty lines go first. What that changes in the memory's schedule is
// measured, not explained; chapter 08 measured it speeding a plain copy on an
// H200 too, and torch.compile's LayerNorm loads x this way (keep_x_in_l2).
template <typename P>
__device__ __forceinline__ P load_vec_keep_in_l2(const P* src) {
  static_assert(sizeof(P) == 16, "16-byte vectors only");
  uint64_t policy;
  uint4 u;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
      : "=r"(u.x), "=r"(u.y), "=r"(u.z), "=r"(u.w)
      : "l"(src), "l"(policy));
  P r;
  std::memcpy(&r, &u, sizeof(P));
  return r;
}

// The fp32 vector that starts H elements into the pair (lo, hi) of consecutive
// vectors, 0 < H < 4. H is a compile-time constant (with_head): register moves.
template <int H>
__device__ __forceinline__ Pack<float, 4> funnel_pack(const Pack<float, 4>& lo, const Pack<float, 4>& hi) {
  static_assert(H > 0 && H < 4, "a shift inside one vector");
  Pack<float, 4> out;
#pragma unroll
  for (int j = 0; j < 4; ++j) out.w[j] = j + H < 4 ? lo.w[j + H] : hi.w[j + H - 4];
  return out;
}

// v, opaque to the compiler from here on: work that depends on it (weight and
// bias loads after a reduction) stays where the program puts it.
__device__ __forceinline__ int opaque(int v) {
  asm volatile("" : "+r"(v));
  return v;
}

__device__ __forceinline__ float opaque(float v) {
  asm volatile("" : "+f"(v));
  return v;
}

__device__ __forceinline__ std::uintptr_t opaque(std::uintptr_t v) {
  asm volatile("" : "+l"(v));
  return v;
}

// The same for a vector of floats: what the compiler computed from it before is
// not reused after.
__device__ __forceinline__ Pack<float, 4> opaque(Pack<float, 4> v) {
  asm volatile("" : "+f"(v.w[0]), "+f"(v.w[1]), "+f"(v.w[2]), "+f"(v.w[3]));
  return v;
}

// Calls f with head (0 <= head < N, the same in the whole block) as a
// compile-time constant: a chain of uniform branches.
template <int N, int H = 0, typename F>
__device__ __forceinline__ void with_head(int head, F&& f) {
  if constexpr (H + 1 < N) {
    if (head != H) return with_head<N, H + 1>(head, f);
  }
  f(std::integral_constant<int, H>{});
}

// ---- statistics ---------------------------------------------------------------

struct Stats {
  float n, mean, m2;  // count, mean, sum of squared deviations from the mean
};

// Chan's merge. `f` is b's share of the merged count. An empty side (n = 0,
// mean 0, m2 0) must leave the other side exactly as it is, and two empty sides
// must not divide 0 by 0: when a is empty f is exactly 1 (so the result is b,
// bit for bit), when b is empty f is 0. Otherwise f is b.n / n with the fast
// reciprocal (__fdividef, 2 ulp), which keeps the IEEE division's slow-path
// subroutine (and the registers it pins) out of the kernels; the mean and M2
// are still merged to fp32 accuracy, and a constant row still merges exactly
// because d = 0. d * (d * (na * f)) rather than d * d * na * f: with an empty
// side na * f is 0 and so is the term, even where d * d would overflow.
__device__ __forceinline__ Stats chan_merge(Stats a, Stats b) {
  const float n = a.n + b.n;
  const float f = a.n == 0.0f ? 1.0f : __fdividef(b.n, n);
  const float d = b.mean - a.mean;
  return {n, a.mean + d * f, a.m2 + b.m2 + d * (d * (a.n * f))};
}

// Sum of v[0..K) as a pairwise tree: log2(K) dependent adds instead of K - 1.
// Every thread adds in the same order, so the same inputs give the same bits.
template <int K>
__device__ __forceinline__ float tree_sum(float (&v)[K]) {
#pragma unroll
  for (int o = 1; o < K; o *= 2)
#pragma unroll
    for (int i = 0; i + o < K; i += 2 * o) v[i] += v[i + o];
  return v[0];
}

// Statistics of the N elements of one vector, as values relative to `shift`: the
// vector's own two-pass (sum, mean with the compile-time 1/N, then the squared
// deviations from it) -- exact leaf statistics for Chan's merge, and one
// instruction an element cheaper than N Welford updates (n += 1; d = v - mean;
// mean += d / n; M2 += d (v - mean)), which give the same numbers up to rounding.
// Both sums are trees: in a launch of a few rows this chain is on the critical
// path (H200, 32 rows of 4,096 halves: 2.72 -> 2.64 us against running sums).
template <typename T, int N>
__device__ __forceinline__ Stats pack_welford(const Pack<T, N>& p, float shift) {
  float d[N], t[N];
#pragma unroll
  for (int e = 0; e < N; ++e) t[e] = d[e] = p.get(e) - shift;
  const float mean = tree_sum(t) * (1.0f / static_cast<float>(N));
#pragma unroll
  for (int e = 0; e < N; ++e) t[e] = (d[e] - mean) * (d[e] - mean);
  return {static_cast<float>(N), mean, tree_sum(t)};
}

// Chan's merge of two sides with the same count, the usual case (every thread of
// a row holding a full slice): b's share is exactly 1/2, so there is no division,
// and the result is symmetric in a and b (a + b, and d * d with d = -d on the
// other side), so the two partners of a butterfly end with the same bits.
// Here each `mean` is the side's mean scaled by 2^-k, k the number of merges still
// to come (see group_merge_even): the merged mean, (a + b) / 2, is then a + b at
// its own scale, and M2's term (mb - ma)^2 * n / 4 (n the merged count) is
// d^2 * c with c = n / 4 * 4^k.
__device__ __forceinline__ Stats even_merge(Stats a, Stats b, float c) {
  const float d = b.mean - a.mean;
  return {a.n + b.n, a.mean + b.mean, (a.m2 + b.m2) + d * (d * c)};
}

// One Welford step with a run-time count (the peeled path's head/tail
// elements): Chan's merge with a one-element side, n = 1, mean = v, M2 = 0.
__device__ __forceinline__ Stats welford_push(Stats s, float v) { return chan_merge(s, Stats{1.0f, v, 0.0f}); }

// A thread's vectors v[0..VPT) of which the first `nk` belong to the row (slots
// past the row's end are always at the back, so the valid ones are a prefix).
// Slot k is merged into the running statistics of slots 0..k-1, whose count is
// k * N: b's share is 1 / (k + 1), a compile-time constant again. Slot 0 is
// taken as it is: merged into the empty statistics it would come out the same
// (up to the sign of a zero mean), but the compiler must keep the d * 0 terms
// (d could be inf), four instructions a row.
template <typename T, int N, int VPT>
__device__ __forceinline__ Stats thread_welford(const Pack<T, N> (&v)[VPT], int nk, float shift) {
  Stats s{0.0f, 0.0f, 0.0f};
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    if (k < nk) {
      const Stats p = pack_welford(v[k], shift);
      if (k == 0) {
        s = p;
        continue;
      }
      const float f = 1.0f / static_cast<float>(k + 1);
      const float d = p.mean - s.mean;
      s.mean += d * f;
      s.m2 += p.m2 + d * (d * (static_cast<float>(k * N) * f));
      s.n = static_cast<float>((k + 1) * N);
    }
  }
  return s;
}

template <typename T, int N, int VPT>
__device__ __forceinline__ float thread_sum(const Pack<T, N> (&v)[VPT], int nk, float shift) {
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < VPT; ++k)
    if (k < nk) {
#pragma unroll
      for (int e = 0; e < N; ++e) s += v[k].get(e) - shift;
    }
  return s;
}

// Sums of d = (x - shift) - mean and of d^2 over a thread's valid vectors (method 1).
template <typename T, int N, int VPT>
__device__ __forceinline__ void thread_dev_sums(const Pack<T, N> (&v)[VPT], int nk, float shift, float mean,
                                                float& s, float& q) {
#pragma unroll
  for (int k = 0; k < VPT; ++k)
    if (k < nk) {
#pragma unroll
      for (int e = 0; e < N; ++e) {
        const float d = (v[k].get(e) - shift) - mean;
        s += d;
        q += d * d;
      }
    }
}

// The same for a thread's edge element (peeled rows), if it has one.
__device__ __forceinline__ void edge_dev_sums(bool has_edge, float edge, float shift, float mean, float& s,
                                              float& q) {
  if (has_edge) {
    const float d = (edge - shift) - mean;
    s += d;
    q += d * d;
  }
}

template <typename T, int N, int VPT>
__device__ __forceinline__ float thread_sum_sq(const Pack<T, N> (&v)[VPT], int nk) {
  float s = 0.0f;
#pragma unroll
  for (int k = 0; k < VPT; ++k)
    if (k < nk) {
#pragma unroll
      for (int e = 0; e < N; ++e) {
        const float x = v[k].get(e);
        s += x * x;
      }
    }
  return s;
}

// ---- reductions across the threads of a row ---------------------------------------

// The shuffles below halve or double their offset: a group of lanes, or of warps
// in BlockReduce, must be a power of two (96 threads, 3 warps, give wrong rows).
template <int G>
constexpr bool kPowerOfTwoGroup = G >= 1 && G <= 32 && (G & (G - 1)) == 0;

// G consecutive lanes own one row (G = 1..32: a lone lane has nothing to merge).
// Tree merge: at each step lane i takes lane i + o's statistics (__shfl_down_sync
// within the group of G) and merges them on its right, so the group's first lane
// ends with the row's statistics (the other lanes hold partial or meaningless
// values). A butterfly (xor) would leave the result in every lane, but Chan's merge
// is not symmetric in rounding: the two partners would end with slightly different
// statistics, and the row would be normalized with more than one mean. Broadcasting
// the first lane's result afterwards costs two shuffles and gives every lane the
// same bits.
template <int G>
__device__ __forceinline__ Stats group_merge(Stats s) {
  static_assert(kPowerOfTwoGroup<G>, "a power-of-two group of at most 32");
#pragma unroll
  for (int o = G / 2; o > 0; o >>= 1) {
    const Stats t{__shfl_down_sync(kFullMask, s.n, o, G), __shfl_down_sync(kFullMask, s.mean, o, G),
                  __shfl_down_sync(kFullMask, s.m2, o, G)};
    s = chan_merge(s, t);
  }
  return s;
}

// Every lane of the group holds the same count: a butterfly of even_merge, and
// every lane ends with the group's statistics, the same bits in each. The mean
// travels scaled by 1/G, so that each level adds the two means where it would
// add and halve them, and the last level leaves the mean itself: one instruction
// less a level. Powers of two scale exactly, so the bits are those of the
// unscaled merge, unless a mean is so small (below 2^-126 * G) that the scaled
// one is subnormal. At the level of offset o the sides hold s.n elements each and
// their means are scaled by o / G (even_merge's k = log2(G / o)).
template <int G>
__device__ __forceinline__ Stats group_merge_even(Stats s) {
  static_assert(kPowerOfTwoGroup<G>, "a power-of-two group of at most 32");
  s.mean *= 1.0f / static_cast<float>(G);
#pragma unroll
  for (int o = 1; o < G; o <<= 1) {
    const Stats t{s.n, __shfl_xor_sync(kFullMask, s.mean, o), __shfl_xor_sync(kFullMask, s.m2, o)};
    const float scale = static_cast<float>(G / o) * static_cast<float>(G / o);  // 4^k
    s = even_merge(s, t, 0.5f * s.n * scale);
  }
  return s;
}

// mean and M2 of the group's first lane, to every lane of the group (n is not needed).
template <int G>
__device__ __forceinline__ Stats group_broadcast(Stats s) {
  return {s.n, __shfl_sync(kFullMask, s.mean, 0, G), __shfl_sync(kFullMask, s.m2, 0, G)};
}

template <int G>
__device__ __forceinline__ float group_sum(float v) {
  static_assert(kPowerOfTwoGroup<G>, "a power-of-two group of at most 32");
#pragma unroll
  for (int o = G / 2; o > 0; o >>= 1) v += __shfl_xor_sync(kFullMask, v, o);
  return v;
}

// Short rows: no shared memory, no barrier.
template <int G>
struct GroupReduce {
  __device__ __forceinline__ Stats merge(Stats s) { return group_broadcast<G>(group_merge<G>(s)); }
  __device__ __forceinline__ Stats merge_even(Stats s) { return group_merge_even<G>(s); }
  __device__ __forceinline__ float sum(float v) { return group_sum<G>(v); }
  __device__ __forceinline__ void sum2(float& a, float& b) {
    a = group_sum<G>(a);
    b = group_sum<G>(b);
  }
  // Whether p holds for any row of the warp: a reduction that only some rows need
  // is run by every lane (the shuffles take the whole warp). A vote even where the
  // warp is one row: ptxas then knows a branch on it is uniform (see recentered).
  __device__ __forceinline__ bool any(bool p) { return __any_sync(kFullMask, p); }
  __device__ __forceinline__ void sum2_same_slots(float& a, float& b) { sum2(a, b); }
};

// One row per block of WARPS warps: each warp merges its lanes into lane 0,
// which writes the warp's result to shared memory; one barrier; then every warp
// merges the WARPS per-warp results itself (lane l reads warp l % WARPS, so
// each group of WARPS lanes holds the full set) and broadcasts its first lane's
// result, so all threads get the same bits without a second barrier. Sums
// (methods 1 and 2) use xor butterflies instead: addition is commutative, so
// every lane gets the same bits anyway. Consecutive reductions alternate
// between two slot sets: a warp that runs ahead to the next reduction writes
// the other set, and it can not come back to this one before every warp has
// passed the next barrier, i.e. has finished reading this one.
template <int WARPS>
struct BlockReduce {
  static_assert(kPowerOfTwoGroup<WARPS>, "a block of 1, 2, 4, ... or 32 warps");
  float (*slots)[3][WARPS];
  int parity;

  // Lane 0 of every warp posts its K values; after the barrier lane l holds
  // warp l % WARPS's, so each group of WARPS lanes holds the full set.
  template <int K>
  __device__ __forceinline__ void exchange(float (&v)[K]) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0) {
#pragma unroll
      for (int k = 0; k < K; ++k) slots[parity][k][warp] = v[k];
    }
    __syncthreads();
#pragma unroll
    for (int k = 0; k < K; ++k) v[k] = slots[parity][k][lane % WARPS];
    parity ^= 1;
  }

  __device__ __forceinline__ Stats merge(Stats s) {
    s = group_merge<32>(s);
    float v[3] = {s.n, s.mean, s.m2};
    exchange(v);
    return group_broadcast<32>(group_merge<WARPS>(Stats{v[0], v[1], v[2]}));
  }

  // Every thread holds the same count: butterflies within the warp and across
  // the warps' results, no division and no broadcast (see even_merge).
  __device__ __forceinline__ Stats merge_even(Stats s) {
    s = group_merge_even<32>(s);
    float v[2] = {s.mean, s.m2};
    exchange(v);
    return group_merge_even<WARPS>(Stats{s.n, v[0], v[1]});
  }

  __device__ __forceinline__ float sum(float a) {
    float v[1] = {group_sum<32>(a)};
    exchange(v);
    return group_sum<WARPS>(v[0]);
  }

  __device__ __forceinline__ void sum2(float& a, float& b) {
    float v[2] = {group_sum<32>(a), group_sum<32>(b)};
    exchange(v);
    a = group_sum<WARPS>(v[0]);
    b = group_sum<WARPS>(v[1]);
  }
  // The block's one row: p, computed from merged results, is the same in every
  // thread; the vote tells ptxas so (see recentered).
  __device__ __forceinline__ bool any(bool p) { return __any_sync(kFullMask, p); }

  // sum2 for a reduction only some rows take (recentered), leaving the parity as
  // it was: a barrier after the read, so that no warp writes these slots again
  // before every warp has read them. The parity then stays a compile-time constant
  // wherever it was one (with it flipped on one path only, the kernels kept it and
  // the slots' addresses in registers, and spilled).
  __device__ __forceinline__ void sum2_same_slots(float& a, float& b) {
    sum2(a, b);
    __syncthreads();
    parity ^= 1;
  }
};

// sum / cols, correctly rounded in practice: the product with the rounded
// reciprocal is within about an ulp, and one fma-based correction (the
// residual sum - q * cols is exact) fixes it, without the IEEE division's
// slow-path subroutine. Method 1 needs it: a constant row sums exactly (for
// moderate lengths) and its mean must then come out exactly, so x - mean = 0.
__device__ __forceinline__ float divide_by_cols(float sum, float cols, float inv_cols) {
  const float q = sum * inv_cols;
  return fmaf(fmaf(-q, cols, sum), inv_cols, q);
}

// Two-pass statistics, corrected: the first mean (a rounded fp32 sum over the
// row, divided) can be off by a few ulps of the row's sum / cols, and every
// x - mean would carry that error. The second pass sums d = x - mean0 as well as
// d^2 in the same reduction; sum(d) / cols is the first mean's error, so adding
// it fixes the mean, and var = E[d^2] - E[d]^2 has nothing to cancel (E[d] is
// tiny). A constant row still gives d = 0 everywhere, var = 0, mean exact.
__device__ __forceinline__ void corrected_two_pass(float mean0, float sum_d, float sum_d2, float inv_cols,
                                                   float& mean, float& var) {
  const float c = sum_d * inv_cols;
  mean = mean0 + c;
  var = fmaxf(sum_d2 * inv_cols - c * c, 0.0f);
}

// How a row is normalized: (x - mean) * rstd = (x - center) * rstd + offset, with
// center = the shift (x[0], or near the mean: recentered) and offset = -m * rstd,
// m = mean - center computed from the shifted values: x - x[0] is exact and m is
// small, so one fma does the rest and nothing of the size of the row's offset is
// ever rounded.
struct Norm {
  float center, rstd, offset;
};

__device__ __forceinline__ Norm shifted_norm(float shift, float m, float var, float eps) {
  const float rstd = rsqrtf(var + eps);
  return {shift, rstd, -m * rstd};
}

// fp32 rows whose shift lies far from their mean ("Shift" above): more than
// kFarShift standard deviations, |m| * rstd, which is the Norm's |offset|. Such a
// row's statistics are taken again about c = center + m, the first pass's mean,
// from the same registers (some kernels read x again: affine_row): sums of x - c
// and (x - c)^2, one more reduction. c lies within a few of x[0]'s ulps of the
// mean, far below the row's spread, so var = E[(x - c)^2] - E[x - c]^2 has nothing
// to cancel; the row is then normalized about c. x[0] of a row of Gaussian values
// lies that far from the mean in about one row of 16,000; below it the shift costs
// at most a few 1e-7 of the output (4 standard deviations of rounding at 2^-24).
// sums(c, s, q) adds the thread's sums of x - c and (x - c)^2 to s and q. Every
// thread of `red` calls this: a warp of several rows takes the second reduction if
// any row needs it, and the others keep their first result.
// Register pressure: the branch is on a vote (Reduce::any), which ptxas knows to
// be the same across the warp. On a plain predicate, kernels at their register
// limit (fp32 rows of 2,048, 16,383 and 32,768 columns) spilled up to 116 bytes in
// the path every row takes and ran 4.6-7.4% slower on an H200; the sums in a
// function out of line moved the row to local memory (book/results.md).
// Only the stage's method 0 recenters: the two-pass method 1, kept for the
// notebook's comparison, holds the shift's limit (with it, its kernels spilled).
constexpr float kFarShift = 4.0f;

__device__ __forceinline__ bool far_from_mean(const Norm& n) {
  return fabsf(n.offset) > kFarShift;  // false for a NaN row
}

// The Norm about c from the row's sums of x - c and (x - c)^2: var = E[(x - c)^2] -
// E[x - c]^2, which has little to cancel while c lies near the mean.
__device__ __forceinline__ Norm norm_from_sums(float c, float sum, float sum_sq, float inv_cols, float eps) {
  const float m = sum * inv_cols;
  return shifted_norm(c, m, fmaxf(sum_sq * inv_cols - m * m, 0.0f), eps);
}

// The second pass: the row's Norm about c = center + m.
template <class Reduce, class Sums>
__device__ __forceinline__ Norm about_the_mean(const Norm& n, float inv_cols, float eps, Reduce& red, Sums&& sums) {
  const float c = n.center - __fdividef(n.offset, n.rstd);
  float sum = 0.0f, sum_sq = 0.0f;
  sums(c, sum, sum_sq);
  red.sum2_same_slots(sum, sum_sq);
  return norm_from_sums(c, sum, sum_sq, inv_cols, eps);
}

template <class Reduce, class Sums>
__device__ __forceinline__ Norm recentered(Norm n, float inv_cols, float eps, Reduce& red, Sums&& sums) {
  const bool far = far_from_mean(n);
  if (red.any(far)) {
    const Norm r = about_the_mean(n, inv_cols, eps, red, sums);
    if (far) n = r;
  }
  // The normalize's x - center, opaque: else the compiler keeps the statistics'
  // x - x[0] for it, in registers across the second reduction.
  n.center = opaque(n.center);
  return n;
}

// A thread's sums for recentered: its valid vectors and its edge element, if any.
template <typename T, int N, int VPT>
__device__ __forceinline__ void thread_sums_about(const Pack<T, N> (&v)[VPT], int nk, bool has_edge, float edge,
                                                  float c, float& s, float& q) {
  thread_dev_sums(v, nk, c, 0.0f, s, q);
  edge_dev_sums(has_edge, edge, c, 0.0f, s, q);
}

// How to normalize a row whose elements are held by the threads of `red`: each
// thread has nk valid vectors in v and, on the peeled path, maybe one extra element.
// Every method works on x - shift (the row's first element for the stable methods
// 0 and 1, 0 for the shortcut), and the Norm it returns is relative to the shift.
// even: every thread of the row holds a full slice and no edge element (the
// launch's row length says so, the same for all its rows), so Welford merges
// through even_merge.
template <class Reduce, typename T, int N, int VPT>
__device__ __forceinline__ Norm row_stats_about(int method, const Pack<T, N> (&v)[VPT], int nk, bool has_edge,
                                                float edge, float shift, float cols, float inv_cols, float eps,
                                                bool even, Reduce& red) {
  float mean, var;
  if (method == 0) {
    Stats s = thread_welford(v, nk, shift);
    if (has_edge) s = welford_push(s, edge - shift);
    s = even ? red.merge_even(s) : red.merge(s);
    return shifted_norm(shift, s.mean, s.m2 * inv_cols, eps);
  } else if (method == 1) {
    float a = thread_sum(v, nk, shift);
    if (has_edge) a += edge - shift;
    const float mean0 = divide_by_cols(red.sum(a), cols, inv_cols);
    float e = 0.0f, q = 0.0f;
    thread_dev_sums(v, nk, shift, mean0, e, q);
    edge_dev_sums(has_edge, edge, shift, mean0, e, q);
    red.sum2(e, q);
    corrected_two_pass(mean0, e, q, inv_cols, mean, var);
  } else {  // shift is 0 here: the shortcut as it is usually written
    float a = thread_sum(v, nk, shift), q = thread_sum_sq(v, nk);
    if (has_edge) {
      a += edge;
      q += edge * edge;
    }
    red.sum2(a, q);
    mean = a * inv_cols;
    var = q * inv_cols - mean * mean;  // the unstable shortcut: may be negative
  }
  return shifted_norm(shift, mean, var, eps);
}

// row_stats_about the shift; with kRecenter (fp32 rows held as they are, not less
// the shift), about the row's mean where the shift lies far from it (method 0, see
// recentered): the Norm's center says which.
template <bool kRecenter = false, class Reduce, typename T, int N, int VPT>
__device__ __forceinline__ Norm row_stats(int method, const Pack<T, N> (&v)[VPT], int nk, bool has_edge,
                                          float edge, float shift, float cols, float inv_cols, float eps,
                                          bool even, Reduce& red) {
  const Norm n = row_stats_about(method, v, nk, has_edge, edge, shift, cols, inv_cols, eps, even, red);
  if constexpr (kRecenter) {
    if (method == 0) {
      return recentered(n, inv_cols, eps, red, [&](float c, float& s, float& q) {
        thread_sums_about(v, nk, has_edge, edge, c, s, q);
      });
    }
  }
  return n;
}

// Welford's statistics of a row off the vector boundary (layernorm_shifted_wb_kernel,
// layernorm_funnel_wb_kernel): there the threads hold different counts (a last slot
// past the row's end, an edge element), so each step of Chan's pairwise merge
// would divide by a count known only at run time. Chan's formula for k parts at
// once divides by nothing but the row's length:
//     mean = sum_i n_i mean_i / n,     M2 = sum_i (M2_i + n_i (mean_i - mean)^2)
// two sums across the row's threads, the second after the first (it needs the
// mean); each is a butterfly, so every lane gets the same bits, with no broadcast.
// The parts are each thread's vectors (Stats s, Welford within the thread as
// everywhere) and its edge element, if it has one. Nothing large is subtracted:
// the M2 terms are all >= 0 and every mean is of values less the shift. The
// pairwise merge's divisions (__fdividef, with its tests for tiny divisors) and
// three shuffles a step took some 200 of the shifted kernel's 772 instructions a
// warp and row (ncu, H200, fp16 16,383 columns). Speeds in book/layernorm-notes.md.
template <class Reduce>
__device__ __forceinline__ Norm parts_norm(Stats s, bool has_edge, float edge, float shift, float inv_cols,
                                           float eps, Reduce& red) {
  const float mean = red.sum(s.n * s.mean + (has_edge ? edge : 0.0f)) * inv_cols;
  const float d = s.mean - mean, e = edge - mean;
  const float m2 = red.sum(fmaf(s.n * d, d, s.m2) + (has_edge ? e * e : 0.0f));
  return shifted_norm(shift, mean, m2 * inv_cols, eps);
}

// ---- normalize ----------------------------------------------------------------

__device__ __forceinline__ float affine(float v, const Norm& n, float w, float b) {
  return fmaf(fmaf(v - n.center, n.rstd, n.offset), w, b);
}

// Reads N weights and biases starting at element c (1 and 0 where absent): one
// 16-byte access each when `vec`, else N scalar reads (c is then not 16-byte aligned).
// kBoth: the caller has checked that weight and bias are both there, so the
// common case has no per-element tests and no default values in registers.
template <bool kBoth, typename T, int N>
__device__ __forceinline__ void load_affine(const T* __restrict__ weight, const T* __restrict__ bias,
                                            int64_t c, bool vec, float (&w)[N], float (&b)[N]) {
  if (kBoth && vec) {
    const Pack<T, N> pw = load_vec(reinterpret_cast<const Pack<T, N>*>(weight + c));
    const Pack<T, N> pb = load_vec(reinterpret_cast<const Pack<T, N>*>(bias + c));
#pragma unroll
    for (int e = 0; e < N; ++e) {
      w[e] = pw.get(e);
      b[e] = pb.get(e);
    }
  } else if (vec) {
    if (weight) {
      const Pack<T, N> p = load_vec(reinterpret_cast<const Pack<T, N>*>(weight + c));
#pragma unroll
      for (int e = 0; e < N; ++e) w[e] = p.get(e);
    } else {
#pragma unroll
      for (int e = 0; e < N; ++e) w[e] = 1.0f;
    }
    if (bias) {
      const Pack<T, N> p = load_vec(reinterpret_cast<const Pack<T, N>*>(bias + c));
#pragma unroll
      for (int e = 0; e < N; ++e) b[e] = p.get(e);
    } else {
#pragma unroll
      for (int e = 0; e < N; ++e) b[e] = 0.0f;
    }
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) {
      w[e] = weight ? to_float(weight[c + e]) : 1.0f;
      b[e] = bias ? to_float(bias[c + e]) : 0.0f;
    }
  }
}

// A thread's vectors as floats less the shift, each element converted once (see
// kFloatRow in the block kernel).
template <typename T, int N, int VPT>
__device__ __forceinline__ void shifted_floats(const Pack<T, N> (&v)[VPT], float shift, Pack<float, N> (&f)[VPT]) {
#pragma unroll
  for (int k = 0; k < VPT; ++k)
#pragma unroll
    for (int e = 0; e < N; ++e) f[k].w[e] = v[k].get(e) - shift;
}

// y in T from the row's values held as T, or as floats (see kFloatRow).
template <typename T, typename S, int N>
__device__ __forceinline__ Pack<T, N> normalize_pack(const Pack<S, N>& v, const Norm& n,
                                                     const float (&w)[N], const float (&b)[N]) {
  float f[N];
#pragma unroll
  for (int e = 0; e < N; ++e) f[e] = affine(v.get(e), n, w[e], b[e]);
  Pack<T, N> out;
  out.set(f);
  return out;
}

// The same with weight and bias as loaded, converted here, where used (see kEarlyAffine).
template <typename T, typename S, int N>
__device__ __forceinline__ Pack<T, N> normalize_pack(const Pack<S, N>& v, const Norm& n, const Pack<T, N>& w,
                                                     const Pack<T, N>& b) {
  float wf[N], bf[N];
#pragma unroll
  for (int e = 0; e < N; ++e) {
    wf[e] = w.get(e);
    bf[e] = b.get(e);
  }
  return normalize_pack<T>(v, n, wf, bf);
}

// Where a row sits relative to 16-byte boundaries (peeled path). head: elements
// before the first boundary; body: whole vectors; tail: what is left. Thread t
// below head + tail owns edge element edge_index(t).
struct RowSplit {
  int64_t head, body, tail;
  __device__ __forceinline__ int64_t edge_index(int64_t t, int N) const {
    return t < head ? t : head + body * N + (t - head);
  }
};

template <typename T, int N, bool PEEL>
__device__ __forceinline__ RowSplit split_row(const T* xr, int64_t cols) {
  int64_t head = 0;
  if constexpr (PEEL) {
    const int mis = static_cast<int>(reinterpret_cast<std::uintptr_t>(xr) % 16);
    head = mis == 0 ? 0 : (16 - mis) / static_cast<int>(sizeof(T));
    head = head < cols ? head : cols;
  }
  const int64_t body = (cols - head) / N;
  return {head, body, cols - head - body * N};
}

// Which of a row's body vectors a thread holds (rows off the vector boundary).
// Slot k of thread t would be body vector t + k * THREADS; the body's first vector
// then sits `lo` vectors into its 512-byte group, and every warp's 32 vectors
// straddle two groups: five 128-byte lines for four lines' worth. Instead, the
// slots are counted from the group's start, so that each warp but the first
// reads and writes whole groups; the first lo threads, whose first slot would
// lie before the body, take the slot one stride later instead. A thread's slots
// are then body vectors first + k * THREADS, and THREADS x VPT slots still hold
// THREADS x VPT vectors. A row of one warp (THREADS = 32) keeps t + k * 32: its one
// warp straddles two groups either way.
// A plain copy of rows of 8,191 and 16,383 halves, a block a row, ran at 97.4-97.8%
// of the copy with slots t + k * THREADS and 101.0-101.8% with these (H200 …1648);
// the kernels' numbers are in book/layernorm-notes.md.
// The launch's shape has at most THREADS vectors fewer than slots (nb >= THREADS x
// (VPT - 1), checked by shifted_shape_fits): first < THREADS, so every thread's
// slots but the last are in the body, and nk is VPT - 1 or VPT (slots_in_row).
struct SlotMap {
  int first, nk;
};

template <int THREADS, int VPT, typename T>
__device__ __forceinline__ SlotMap slot_map(const T* body, int tid, int nb) {
  static_assert(THREADS % 32 == 0, "whole warps");
  int first = tid;
  if constexpr (THREADS > 32) {
    const int lo = static_cast<int>(reinterpret_cast<std::uintptr_t>(body) / 16 % 32);
    first = (tid < lo ? tid + THREADS : tid) - lo;
  }
  return {first, first < nb ? min(VPT, (nb - first + THREADS - 1) / THREADS) : 0};
}

// A thread's count of slots in the row: under that guarantee, in a form that tells
// the compiler so (the slot tests but the last are gone at compile time); or, in
// the PAIRWISE form the kernels keep for some shapes, as slot_map counted it.
template <bool PAIRWISE, int THREADS, int VPT>
__device__ __forceinline__ int slots_in_row(const SlotMap& m, int nb) {
  if constexpr (PAIRWISE) return m.nk;
  else return VPT - 1 + (m.first + (VPT - 1) * THREADS < nb);
}

// The statistics of a row off the boundary (the next two kernels): Chan's merge of
// all the threads at once (parts_norm), or for the PAIRWISE form Welford's with
// the pairwise merge (row_stats). edge is the thread's edge element, if it has one.
// kRecenter: fp32, see recentered.
template <bool PAIRWISE, bool kRecenter, class Reduce, typename T, int N, int VPT>
__device__ __forceinline__ Norm off_boundary_norm(const Pack<T, N> (&v)[VPT], int nk, bool has_edge, float edge,
                                                  float shift, int64_t cols, float inv_cols, float eps,
                                                  Reduce& red) {
  if constexpr (PAIRWISE) {
    return row_stats<kRecenter>(0, v, nk, has_edge, edge, shift, static_cast<float>(cols), inv_cols, eps, false,
                                red);
  } else {
    const Norm n = parts_norm(thread_welford(v, nk, shift), has_edge, edge - shift, shift, inv_cols, eps, red);
    if constexpr (!kRecenter) return n;
    return recentered(n, inv_cols, eps, red, [&](float c, float& s, float& q) {
      thread_sums_about(v, nk, has_edge, edge, c, s, q);
    });
  }
}

// The statistics of a 16-bit row off the boundary in one reduction
// (layernorm_offset_wb_kernel): the sums of d = x - shift and of d^2 over the row, then
// var = E[d^2] - E[d]^2. With the shift x[0] this subtracts numbers of the size of the
// row's spread as long as x[0] lies within a few standard deviations of the mean, and
// recentered takes the rows where it does not (their sums again about the first mean).
// parts_norm takes two reductions, one after the other; this one. On rows plain, offset
// by 1e2 to 1e4, and with x[0] far from the rest: 0.22-0.24 of the 16-bit tolerance, as
// parts_norm; fp32 rows came out at up to 0.42 of theirs (0.10 with parts_norm) and keep
// parts_norm (H200s, book/results.md).
template <class Reduce, typename T, int N, int VPT>
__device__ __forceinline__ Norm moments_norm(const Pack<T, N> (&v)[VPT], int nk, bool has_edge, float edge,
                                             float shift, float inv_cols, float eps, Reduce& red) {
  float s = 0.0f, q = 0.0f;
  thread_sums_about(v, nk, has_edge, edge, shift, s, q);
  red.sum2(s, q);
  return recentered(norm_from_sums(shift, s, q, inv_cols, eps), inv_cols, eps, red, [&](float c, float& s2, float& q2) {
    thread_sums_about(v, nk, has_edge, edge, c, s2, q2);
  });
}

// ---- kernels ----------------------------------------------------------------------

// Writes the peeled path's edge element c of the row (one per owning thread).
template <typename T>
__device__ __forceinline__ void store_edge(T* yr, const T* __restrict__ weight, const T* __restrict__ bias,
                                           int64_t c, float v, const Norm& n) {
  yr[c] = from_float<T>(affine(v, n, weight ? to_float(weight[c]) : 1.0f, bias ? to_float(bias[c]) : 0.0f));
}

// Short rows: G lanes per row, 32 / G rows per warp, kWarpPathThreads / G rows
// per block, VPT vectors per lane. The loop bound is the same for the
// whole warp (a group whose row is past the end holds no data, or with FULL row
// 0's, and stores nothing), so every lane takes part in every shuffle. On the peeled path G >= 16: the head and
// tail elements (at most 2 * (N - 1) = 14) each get a lane.
// FULL: the row is exactly G * VPT aligned vectors (every power-of-two length on
// this path), so every slot of every lane is in the row and the per-slot tests
// vanish at compile time: a quarter to a third less code. Bandwidth is the same
// (H200, 256 MiB), a launch of a few rows is faster: 3 x 128 halves 2.5 -> 2.0 us,
// 5 x 512 floats 2.3 -> 1.7 us.
// METHOD >= 0 fixes the method at compile time, as in the block kernel: the full
// 16-bit rows of 1 to 16 lanes take it. Only with it does bf16 take the full-row
// kernel at all (with all three methods in one kernel its float slice spilled and
// lost a point), and it gains: H200, 256 MiB, % of a copy in the same rounds, bf16
// 128 columns 94.9 -> 96.4 and 95.0 -> 95.6 (two runs), bf16 256 95.4 -> 96.0 and
// 95.3 -> 97.1; fp16 128 within the runs' spread (+0.1 to +0.6). Rows of 32 lanes
// (fp16 1,024 columns) and fp32 rows lost 0.1-2.3 points with it and keep the
// run-time method. So does fp16's one-pass (method 2): with the method fixed, ptxas
// spilled 4 bytes there.
// Blocks of 64 threads rather than 128: a finished block frees its slots
// sooner, for the next one (H200, 256 MiB, % of a copy in the same rounds:
// fp32 512 columns 99.6 against 97.8, fp16 128 columns 96.2 against 95.2).
// 1,024 threads per SM: 64 registers a thread.
template <typename T, int N, bool PEEL, int G, int VPT, bool FULL, int METHOD = -1>
__global__ void __launch_bounds__(kWarpPathThreads, 1024 / kWarpPathThreads)
layernorm_warp_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                      T* __restrict__ y, int64_t rows, int64_t cols, float inv_cols, float eps,
                      int method, bool wb_vec) {
  if constexpr (METHOD >= 0) method = METHOD;
  constexpr int kRowsPerWarp = 32 / G;
  constexpr int kRowsPerBlock = kWarpPathThreads / G;
  static_assert(!PEEL || G >= 2 * (N - 1), "every head/tail element needs a lane");
  static_assert(!(FULL && PEEL), "a full row has no head or tail");
  using P = Pack<T, N>;
  // The slice (at most 4 vectors) as shifted floats, as in the block kernel, for
  // bf16. Not for fp16: its conversion is one instruction an element, and with
  // the float slice ptxas spilled (H200, fp16 at 1,024 columns: 84% of a copy
  // against 96%). fp32 keeps x itself (kRecenter).
  constexpr bool kFloatRow = !PEEL && N > 1 && std::is_same_v<T, __nv_bfloat16>;
  constexpr bool kRecenter = std::is_same_v<T, float>;  // see recentered
  const int lane = threadIdx.x % 32, t = lane % G;
  GroupReduce<G> red;
  const bool has_affine = weight != nullptr && bias != nullptr;
  const bool even = FULL || (!PEEL && cols == static_cast<int64_t>(G) * VPT * N);  // every lane holds a full slice
  const float cols_f = static_cast<float>(cols);

  for (int64_t first = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + (threadIdx.x / 32) * kRowsPerWarp;
       first < rows; first += static_cast<int64_t>(gridDim.x) * kRowsPerBlock) {
    const int64_t row = first + lane / G;
    const bool live = row < rows;
    const T* xr = x + (live ? row : 0) * cols;
    const RowSplit s = split_row<T, N, PEEL>(xr, cols);
    const int nb = live ? static_cast<int>(s.body) : 0;
    const P* xv = reinterpret_cast<const P*>(xr + s.head);

    P v[VPT];
#pragma unroll
    for (int k = 0; k < VPT; ++k) {  // all loads issued before the reduction needs them
      const int i = t + k * G;
      if (FULL || i < nb) v[k] = load_vec(xv + i);  // a group past the last row reads row 0
    }
    bool has_edge = false;
    float edge = 0.0f;
    if constexpr (PEEL) {
      has_edge = live && t < s.head + s.tail;
      if (has_edge) edge = to_float(xr[s.edge_index(t, N)]);
    }
    const int nk = FULL ? VPT : t < nb ? min(VPT, (nb - t + G - 1) / G) : 0;

    // "Shift" above. Taking x[0] from the group's first lane by a shuffle instead
    // of this load gained nothing (H200, 128 and 1,024 columns, two runs: +0.6
    // then -0.3 points).
    const float shift = method == 2 ? 0.0f : to_float(xr[0]);
    T* yr = y + (live ? row : 0) * cols;
    P* yv = reinterpret_cast<P*>(yr + s.head);
    const bool vec = !PEEL || (wb_vec && s.head == 0);  // weight + c is aligned only when c % N == 0
    auto store_row = [&](const auto (&slice)[VPT], const Norm& n) {
      auto store = [&](auto both) {
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          const int i = t + k * G;
          if (FULL ? live : i < nb) {
            float w[N], b[N];
            load_affine<decltype(both)::value, T, N>(weight, bias, s.head + static_cast<int64_t>(i) * N, vec, w, b);
            store_vec(yv + i, normalize_pack<T>(slice[k], n, w, b));
          }
        }
      };
      if (has_affine) store(std::true_type{});
      else store(std::false_type{});
    };
    Norm n;
    if constexpr (kFloatRow) {  // as in the block kernel below
      Pack<float, N> f[VPT];
      shifted_floats(v, shift, f);
      n = row_stats(method, f, nk, false, 0.0f, 0.0f, cols_f, inv_cols, eps, even, red);
      store_row(f, n);
    } else {
      n = row_stats<kRecenter>(method, v, nk, has_edge, edge, shift, cols_f, inv_cols, eps, even, red);
      store_row(v, n);
    }
    if constexpr (PEEL) {
      if (has_edge) store_edge(yr, weight, bias, s.edge_index(t, N), edge, n);
    }
  }
}

// Many aligned rows with weight and bias both given, of the lengths where it measured
// faster (launch_rows picks them): each thread loads its x vectors and the matching weight
// and bias vectors at once, so the row waits on memory once (they are the same
// columns in every row, mostly L1 hits), and each row is exactly its threads x VPT
// vectors, so nothing is tested per slot and nothing loops. The warp and block
// kernels above load weight and bias after the reduction, to hold fewer registers
// across it; these hold them and ask for fewer threads per SM instead
// (kAffineBlocksPerSm). The warp kernel with 8 x 2 and early weight and bias spilled
// 40-136 bytes at 40 registers (it carries the peeled, partial-row and
// absent-weight cases); at 64 it lost to its 4 x 4 late-weight shape.
//   layernorm_affine_rows_kernel: G lanes x VPT vectors a row, R rows a thread,
//     64-thread blocks. 128 halves as 16 x 1 with R = 2 (torch.compile's layout
//     for them), 128 floats as 16 x 2 with R = 2, 256 and 512 halves as 16 and
//     32 x 2. See "R rows" and "Instructions" in book/layernorm-notes.md.
//   layernorm_affine_block_kernel: a row per block. 16-bit rows of 1,024 halves
//     (64 x 2), 2,048 (128 x 2) and 16,384 (512 x 4); fp32 rows of 1,024 floats
//     (128 x 2), 8,192 (512 x 4) and 16,384 (512 x 8, one block per SM). Where
//     the memory streams more bytes per SM (fast_memory_per_sm: an H200, not an
//     H100), also 4,096 halves (256 x 2) and 4,096 floats (512 x 2, four blocks
//     per SM at 32 registers), and 16,384 floats take kLate instead (below).
//     There, where the bytes moved exceed the L2, fp32 rows load x with an L2
//     evict_last policy (kKeepX, below): 4,096 floats as 128 x 8 in kLate
//     (eight blocks per SM at 64 registers), 8,192 and 16,384 as before.
//     16-bit rows of 16,384 take kInOrder on every GPU (below), and past the
//     L2 load x with that policy on every GPU too; so do 16-bit rows of 8,192
//     past the L2, as 256 x 4 (the row-pair kernel below the L2).
// kKeepX (more bytes than the L2: moves_past_l2; fp32 rows of 4,096 to 16,384
// only where fast_memory_per_sm, keep_x_in_l2; 16-bit rows of 8,192 and 16,384
// on every GPU): x loaded with an L2 evict_last policy, as torch.compile's
// LayerNorm loads it.
// The measurements behind these choices, each GPU's time for the forms not taken,
// what the order of the loads does, "R rows" and "Instructions": book/layernorm-notes.md,
// section affine_row.
// R rows a thread (R > 1: kEarly only), row j starting at element start[j]; the
// thread's slot k of each row is vector t + k * STRIDE. Every row is read and
// written (see layernorm_affine_rows_kernel for the groups past the last row).
// kTail: the row may end inside the last slots (layernorm_affine_block_kernel's
// shaped launches); the thread's first nk slots are in the row, the rest are
// neither read nor written. Otherwise every slot is, and nk is VPT.
template <int METHOD, int VPT, int STRIDE, WbLoad WB = WbLoad::kEarly, int R = 1, bool kKeepX = false,
          bool kTail = false, typename T, typename Reduce>
__device__ __forceinline__ void affine_row(const T* __restrict__ x, const T* __restrict__ weight,
                                           const T* __restrict__ bias, T* __restrict__ y,
                                           const int64_t (&start)[R], int t, int nk, float cols,
                                           float inv_cols, float eps, Reduce& red) {
  static_assert(R == 1 || (WB == WbLoad::kEarly && STRIDE <= 32), "several rows a thread: a group of lanes each");
  static_assert(R == 1 || !kTail, "a group of lanes holds whole rows");
  constexpr int N = 16 / sizeof(T);
  using P = Pack<T, N>;
  const auto in_row = [&](int k) { return !kTail || k < nk; };
  P v[R][VPT];
#pragma unroll
  for (int j = 0; j < R; ++j)
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const P* src = reinterpret_cast<const P*>(x + start[j]) + t + k * STRIDE;
      if (in_row(k)) v[j][k] = kKeepX ? load_vec_keep_in_l2(src) : load_vec(src);
    }
  const auto out = [&](int j) { return reinterpret_cast<P*>(y + start[j]) + t; };  // row j's slot 0
  constexpr bool kRecenter = std::is_same_v<T, float>;  // see recentered
  // fp32 rows held as they are, or, shaped to the block in at most 6 vectors a
  // thread, as x - x[0] (below).
  constexpr bool kHeldShifted = kTail && VPT <= 6;
  if constexpr (WB == WbLoad::kLate && !kHeldShifted) {
    // fp32 rows (4,096 and 16,384 floats on a GPU like the H200, shaped ones of 7
    // or 8 vectors a thread) held as they are, weight and bias read after the
    // reduction and converted at once.
    static_assert(kRecenter, "kLate is for fp32 rows");
    const float shift = METHOD == 2 ? 0.0f : to_float(x[start[0]]);  // "Shift" above
    const Norm n =
        row_stats<kRecenter>(METHOD, v[0], kTail ? nk : VPT, false, 0.0f, shift, cols, inv_cols, eps, !kTail, red);
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      if (!in_row(k)) continue;
      float w[N], b[N];
      load_affine<true, T, N>(weight, bias, static_cast<int64_t>(t + k * STRIDE) * N, true, w, b);
      store_vec(out(0) + k * STRIDE, normalize_pack<T>(v[0][k], n, w, b));
    }
  } else if constexpr (WB == WbLoad::kLate) {
    // fp32 rows shaped to the block (launch_shaped) in at most 6 vectors a thread,
    // held as x - x[0], as kFloatRow in layernorm_block_kernel: the normalize then
    // needs no center, a register these kernels at 64 do not have. A row far from
    // its shift (recentered) reads x again, from the L2, takes its statistics about
    // its mean and is stored by its own loop, about that mean. H200 …7162, against
    // the form above: 1.015-1.023 at 1,300, 3,000, 5,500 and 12,000 floats (6
    // vectors a thread, which spilled 16 bytes held as x); with 7 and 8 vectors this
    // form spilled 8-16 bytes and took 0.996-0.999 of that one's speed at 7,000 and
    // 14,000, and rows that fill their slots lost 1.6% (4,096) and 1.1% (16,384).
    static_assert(kRecenter, "kLate is for fp32 rows");
    const float shift = METHOD == 2 ? 0.0f : to_float(x[start[0]]);  // "Shift" above
    const int held = nk;
    Pack<float, N> f[VPT];
    shifted_floats(v[0], shift, f);
    Norm n = row_stats(METHOD, f, held, false, 0.0f, 0.0f, cols, inv_cols, eps, false, red);
    const auto store_row = [&](const Norm& norm) {
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        if (!in_row(k)) continue;
        float w[N], b[N];
        load_affine<true, T, N>(weight, bias, static_cast<int64_t>(t + k * STRIDE) * N, true, w, b);
        store_vec(out(0) + k * STRIDE, normalize_pack<T>(f[k], norm, w, b));
      }
    };
    if constexpr (METHOD == 0) {
      if (red.any(far_from_mean(n))) {  // one row a block: the same in every thread
        // x's slot 0 from y's (a register the stores keep) and the distance from y
        // to x (kernel arguments), opaque so that the compiler does not fold it
        // back to x + start, which would hold the row's start across the reduction.
        const std::uintptr_t y_to_x = reinterpret_cast<std::uintptr_t>(x) - reinterpret_cast<std::uintptr_t>(y);
        const P* xv = reinterpret_cast<const P*>(opaque(reinterpret_cast<std::uintptr_t>(out(0))) + y_to_x);
#pragma unroll
        for (int k = 0; k < VPT; ++k)
          if (in_row(k)) f[k] = load_vec(xv + k * STRIDE);
        n.center = shift;  // the first pass's Norm, relative to x
        store_row(about_the_mean(n, inv_cols, eps, red, [&](float c, float& s, float& q) {
          thread_sums_about(f, held, false, 0.0f, c, s, q);
        }));
        return;
      }
    }
    store_row(n);
  } else {
    // The row kept in T. kEarly loads weight and bias here, with x; kInOrder
    // reads each vector's just before its store (the same bits), so that one
    // vector of them is in registers.
    const P* wv = reinterpret_cast<const P*>(weight) + t;
    const P* bv = reinterpret_cast<const P*>(bias) + t;
    P w[VPT], b[VPT];
    if constexpr (WB == WbLoad::kEarly) {
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        if (!in_row(k)) continue;
        w[k] = load_vec(wv + k * STRIDE);
        b[k] = load_vec(bv + k * STRIDE);
      }
    }
    // Each row's statistics in turn (the compiler interleaves the rows'
    // shuffles: written interleaved by hand they measured the same). With
    // several rows a thread, a row's first element ("Shift" above) comes from its
    // group's first lane by a shuffle rather than a load: H100, fp32 128 columns,
    // 256 MiB, 50 paired rounds, load time over shuffle 1.003, 1.002.
    float shift[R];
#pragma unroll
    for (int j = 0; j < R; ++j) {
      if constexpr (R > 1) shift[j] = METHOD == 2 ? 0.0f : __shfl_sync(kFullMask, v[j][0].get(0), 0, STRIDE);
      else shift[j] = METHOD == 2 ? 0.0f : to_float(x[start[j]]);
    }
    // fp32 blocks held to 32 registers (512 x 2) with weight and bias early: a row
    // far from its shift (recentered) is stored by its own loop below, which reads
    // weight and bias again, so that the vectors loaded early are not held through
    // its second reduction (there the kernel spilled 12 bytes; at 40 registers it
    // took 1.02-1.04 times as long for 512 to 1,536 rows of 4,096 floats in a CUDA
    // graph, H200 …9140; this form 0.99-1.00, …5281). Other kernels keep the far
    // row in the common path (as this form, 8,192 floats in 512 x 4 took 1.03 times
    // as long, …5281).
    constexpr bool kFarAlone = kRecenter && R == 1 && WB == WbLoad::kEarly &&
                               kAffineBlocksPerSm<T, STRIDE, VPT, WB> * STRIDE == 2048;
    Norm n[R];
#pragma unroll
    for (int j = 0; j < R; ++j)
      n[j] = row_stats<kRecenter && !kFarAlone>(METHOD, v[j], kTail ? nk : VPT, false, 0.0f, shift[j], cols,
                                                inv_cols, eps, !kTail, red);
    if constexpr (kFarAlone && METHOD == 0) {
      if (red.any(far_from_mean(n[0]))) {
        const Norm r = about_the_mean(n[0], inv_cols, eps, red, [&](float c, float& s, float& q) {
          thread_sums_about(v[0], kTail ? nk : VPT, false, 0.0f, c, s, q);
        });
        const int first = opaque(t);  // not the early loads' addresses: loaded again
        const P* const wf = reinterpret_cast<const P*>(weight) + first;
        const P* const bf = reinterpret_cast<const P*>(bias) + first;
#pragma unroll
        for (int k = 0; k < VPT; ++k)
          if (in_row(k))
            store_vec(out(0) + k * STRIDE, normalize_pack<T>(v[0][k], r, wf[k * STRIDE], bf[k * STRIDE]));
        return;
      }
    }
#pragma unroll
    for (int j = 0; j < R; ++j) {
      P* const yv = out(j);
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        if (!in_row(k)) continue;
        if constexpr (WB == WbLoad::kInOrder) {
          w[k] = load_vec_in_order(wv + k * STRIDE);
          b[k] = load_vec_in_order(bv + k * STRIDE);
          store_vec_in_order(yv + k * STRIDE, normalize_pack<T>(v[j][k], n[j], w[k], b[k]));
        } else {
          store_vec(yv + k * STRIDE, normalize_pack<T>(v[j][k], n[j], w[k], b[k]));
        }
      }
    }
  }
}

// G lanes x VPT vectors a row; a thread's R rows are kLayer apart, so the block's
// rows are contiguous and each weight and bias load serves R rows.
template <typename T, int G, int VPT, int R, int METHOD>
__global__ void __launch_bounds__(kWarpPathThreads, (kAffineRowsBlocksPerSm<T, VPT, R>))
layernorm_affine_rows_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                             T* __restrict__ y, int64_t rows, float inv_cols, float eps) {
  constexpr int64_t kCols = G * VPT * (16 / sizeof(T));
  constexpr int kLayer = kWarpPathThreads / G;  // rows the block's threads cover at once
  // A group past the last row reads and writes the last row again. It computes the
  // same bits as that row's own group, so its write changes nothing, and the
  // kernel has no branch: with one around each row's store the compiler converted
  // weight and bias once per row. Rows fit 32 bits here (kMaxAffineRows).
  const unsigned first = blockIdx.x * (kLayer * R) + threadIdx.x / G;
  const unsigned last = static_cast<unsigned>(rows - 1);
  int64_t start[R];
#pragma unroll
  for (int j = 0; j < R; ++j) start[j] = static_cast<int64_t>(min(first + j * kLayer, last)) * kCols;
  GroupReduce<G> red;
  affine_row<METHOD, VPT, G, WbLoad::kEarly, R>(x, weight, bias, y, start, threadIdx.x % G, VPT,
                                                static_cast<float>(kCols), inv_cols, eps, red);
}

// A row of nvec vectors per block of THREADS x VPT slots. kTail: nvec is more
// than THREADS x (VPT - 1) and less than THREADS x VPT, so only the last slot of
// some threads is past the row's end; otherwise nvec is THREADS x VPT.
template <typename T, int THREADS, int VPT, int METHOD, WbLoad WB = WbLoad::kEarly, bool kKeepX = false,
          bool kTail = false>
__global__ void __launch_bounds__(THREADS, (kAffineBlocksPerSm<T, THREADS, VPT, WB>))
layernorm_affine_block_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                              T* __restrict__ y, int nvec, float inv_cols, float eps) {
  constexpr int kWarps = THREADS / 32;
  constexpr int N = 16 / sizeof(T);
  const int64_t cols = static_cast<int64_t>(kTail ? nvec : THREADS * VPT) * N;
  __shared__ float slots[2][3][kWarps];
  BlockReduce<kWarps> red{slots, 0};
  const int64_t start[1] = {static_cast<int64_t>(blockIdx.x) * cols};
  const int nk = kTail && static_cast<int>(threadIdx.x) + (VPT - 1) * THREADS >= nvec ? VPT - 1 : VPT;
  affine_row<METHOD, VPT, THREADS, WB, 1, kKeepX, kTail>(x, weight, bias, y, start, threadIdx.x, nk,
                                                         static_cast<float>(cols), inv_cols, eps, red);
}

// Many 16-bit rows whose starts are not all on a 16-byte boundary (a length not a
// multiple of 8, such as 4,097, or x a view off the boundary): the rows start at
// up to N offsets from one, so a row's body vectors (peeled path) lie at a
// different offset in weight and bias from one row to the next, where the peeled
// kernels read them an element at a time. Rows r and r + N start at the same
// offset: block b takes the rows r = b (mod N), and first copies weight and bias
// into shared memory shifted by that offset (the head), so that body vector k's
// weight and bias are vector k there, two 16-byte loads as in the aligned kernels.
// The grid is a multiple of N, each block looping over its class's rows:
// persistent (the blocks that fit at once) in the block form, two rows a warp
// with WARP_ROWS (see launch_shifted_wb). A row's nb body vectors in THREADS x VPT slots;
// head and tail elements (at most 2 x (N - 1)) one to a thread. WARP_ROWS (rows
// of at most 256 vectors): a warp a row instead, 32 x VPT slots, so that a row's
// statistics take shuffles only, no barrier; the block's warps take consecutive
// rows of its class. x with its L2 policy; weight and bias absent read as 1 and
// 0. Welford's statistics only (launch_rows sends method 0 alone here), merged by
// off_boundary_norm. Numbers in book/layernorm-notes.md.
template <typename T, int THREADS, int VPT, bool WARP_ROWS = false>
__global__ void __launch_bounds__(THREADS, (kAffineBlocksPerSm<T, THREADS, VPT, WbLoad::kInOrder>))
layernorm_shifted_wb_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                            T* __restrict__ y, int64_t rows, int64_t cols, float inv_cols, float eps) {
  constexpr int N = 16 / sizeof(T);
  constexpr int kWarps = THREADS / 32;
  constexpr int kLanes = WARP_ROWS ? 32 : THREADS;  // threads a row
  constexpr bool kPairwise = VPT == 8;              // see the slots' count below
  constexpr int kRowsAtOnce = THREADS / kLanes;     // rows the block holds at once
  using P = Pack<T, N>;
  extern __shared__ uint4 shifted_wb[];  // weight, then bias, each of padded elements
  const int64_t padded = (cols + N - 1) / N * N;
  T* const sw = reinterpret_cast<T*>(shifted_wb);
  T* const sb = sw + padded;
  __shared__ float slots[2][3][kWarps];
  const auto reducer = [&] {
    if constexpr (WARP_ROWS) return GroupReduce<32>{};
    else return BlockReduce<kWarps>{slots, 0};
  };
  auto red = reducer();
  const int tid = threadIdx.x % kLanes;
  // Block b holds rows of class b mod N; its kRowsAtOnce groups of lanes take
  // consecutive rows of the class, and step over the other blocks' of that class.
  const int64_t step = static_cast<int64_t>(gridDim.x / N) * kRowsAtOnce * N;
  const int64_t block_first = blockIdx.x % N + static_cast<int64_t>(blockIdx.x / N) * kRowsAtOnce * N;
  if (block_first >= rows) return;  // the whole block: no barrier is missed
  const int64_t first = block_first + static_cast<int64_t>(threadIdx.x / kLanes) * N;
  // Rows r and r + N start at the same offset from a boundary, so the class's
  // split, and with it the thread's slots and edge, hold for each of its rows.
  const RowSplit s = split_row<T, N, true>(x + block_first * cols, cols);
  const int nb = static_cast<int>(s.body);
  // A row of one warp: its slots do not depend on the row (slot_map), so they are taken once.
  const SlotMap warp_row_map = slot_map<kLanes, VPT>(x, tid, nb);
  const bool has_edge = tid < s.head + s.tail;
  const int edge_at = has_edge ? static_cast<int>(s.edge_index(tid, N)) : 0;
  for (int64_t i = threadIdx.x; i < cols - s.head; i += THREADS) {
    sw[i] = weight ? weight[s.head + i] : from_float<T>(1.0f);
    sb[i] = bias ? bias[s.head + i] : from_float<T>(0.0f);
  }
  __syncthreads();
  for (int64_t row = first; row < rows; row += step) {
    const T* xr = x + row * cols;
    const SlotMap m = WARP_ROWS ? warp_row_map : slot_map<kLanes, VPT>(xr + s.head, tid, nb);
    // 8 vectors keep the form of ead227f (kPairwise): a test at every slot, as if
    // any could be past the row's end, Chan's pairwise merge, weight and bias
    // loaded wherever the compiler puts them. With the first 7 slots known to be in
    // the row ptxas spilled 48-56 bytes at 80 registers; with the tests kept but
    // parts_norm, 256 x 8 took 1.02-1.05 times as long at 14,501 and 16,383 halves
    // (H200 …9725).
    const int nk = slots_in_row<kPairwise, kLanes, VPT>(m, nb);
    const P* xv = reinterpret_cast<const P*>(xr + s.head) + m.first;
    P v[VPT];
#pragma unroll
    for (int k = 0; k < VPT; ++k)
      if (k < nk) v[k] = load_vec_keep_in_l2(xv + k * kLanes);
    const float edge = has_edge ? to_float(xr[edge_at]) : 0.0f;
    const float shift = to_float(xr[0]);  // "Shift" above
    constexpr bool kRecenter = std::is_same_v<T, float>;  // see recentered
    const Norm n = off_boundary_norm<kPairwise, kRecenter>(v, nk, has_edge, edge, shift, cols, inv_cols, eps, red);
    // Weight and bias are read after the reduction: the index is opaque to the
    // compiler from here on, or it would load them ahead, 8 registers a vector held
    // across the reduction (rows of a warp in 5 and 7 vectors spilled 4 to 12 bytes).
    const int wb_first = kPairwise ? m.first : opaque(m.first);
    T* yr = y + row * cols;
    P* yv = reinterpret_cast<P*>(yr + s.head) + m.first;
    const P* const wv = reinterpret_cast<const P*>(sw) + wb_first;
    const P* const bv = reinterpret_cast<const P*>(sb) + wb_first;
#pragma unroll
    for (int k = 0; k < VPT; ++k)
      if (k < nk) store_vec(yv + k * kLanes, normalize_pack<T>(v[k], n, wv[k * kLanes], bv[k * kLanes]));
    if (has_edge) store_edge(yr, weight, bias, edge_at, edge, n);
  }
}

// fp32 weight's or bias's vector at element c (a multiple of 4), or the vector
// after it (NEXT): that one whole where it lies in p, else only its first H
// elements, the ones a shift by H uses, which lie in the row. Loaded in program
// order (as kInOrder). PRESENT: the caller has checked that p is there (no test a
// slot); else p absent reads as `fill` (1 or 0).
template <bool NEXT, int H, bool PRESENT>
__device__ __forceinline__ Pack<float, 4> affine_vec(const float* __restrict__ p, int64_t c, int64_t cols,
                                                     float fill) {
  using P = Pack<float, 4>;
  if (!PRESENT && p == nullptr) return constant_pack<float, 4>(fill);
  if (!NEXT) return load_vec_in_order(reinterpret_cast<const P*>(p + c));
  if (c + 8 <= cols) return load_vec_in_order(reinterpret_cast<const P*>(p + c + 4));
  P r;
#pragma unroll
  for (int e = 0; e < 4; ++e) r.w[e] = e < H ? p[c + 4 + e] : 0.0f;
  return r;
}

// The first H elements of the next lane's `mine` into `next`, unless `own` (the
// thread loaded them itself). Every lane of the warp must call it.
template <int H>
__device__ __forceinline__ void from_next_lane(const Pack<float, 4>& mine, bool own, Pack<float, 4>& next) {
#pragma unroll
  for (int e = 0; e < H; ++e) {
    const float v = __shfl_down_sync(kFullMask, mine.w[e], 1);
    if (!own) next.w[e] = v;
  }
}

// A row off the vector boundary in a block of its own (layernorm_funnel_wb_kernel,
// layernorm_offset_wb_kernel): where it sits (s), the thread's slots (m) and its count
// of them in the row (nk; PAIRWISE: see slots_in_row), its body vectors (x with its L2
// policy), its edge element if it has one, and the shift x[0].
template <bool PAIRWISE, int THREADS, int VPT, typename T, int N>
__device__ __forceinline__ void load_off_boundary_row(const T* xr, int64_t cols, int tid, RowSplit& s, int& nb,
                                                      SlotMap& m, int& nk, Pack<T, N> (&v)[VPT], bool& has_edge,
                                                      float& edge, float& shift) {
  s = split_row<T, N, true>(xr, cols);
  nb = static_cast<int>(s.body);
  m = slot_map<THREADS, VPT>(xr + s.head, tid, nb);
  nk = slots_in_row<PAIRWISE, THREADS, VPT>(m, nb);
  const Pack<T, N>* xv = reinterpret_cast<const Pack<T, N>*>(xr + s.head) + m.first;
#pragma unroll
  for (int k = 0; k < VPT; ++k)
    if (k < nk) v[k] = load_vec_keep_in_l2(xv + k * THREADS);
  has_edge = tid < s.head + s.tail;
  edge = has_edge ? to_float(xr[s.edge_index(tid, N)]) : 0.0f;
  shift = to_float(xr[0]);  // "Shift" above
}

// Many fp32 rows whose starts are not all on a 16-byte boundary (a length not a
// multiple of 4, such as 4,097, or x a view off it), past the L2 (and, on a GPU like
// the H200, aligned rows of 2,049 to 3,072 vectors: launch_shaped_block): one row a
// block, as layernorm_affine_block_kernel, its body vectors in THREADS x VPT
// slots, head and tail elements (at most 6) one to a thread. Body vector j lies
// `head` elements into weight's and bias's vectors j and j + 1, and is moved out
// of the pair (funnel_pack), with the head a compile-time constant (with_head);
// a lane loads vector j + 1 itself or, in blocks of 256 threads and more, takes
// it from the next lane (below). x with its L2 policy; weight and bias 16-byte
// aligned or absent (BOTH: both there, known at compile time, as kBoth in
// load_affine); 1,024 threads an SM (64 registers, no spill). Welford's
// statistics only (launch_rows sends method 0 alone here), merged by
// off_boundary_norm. 16-bit rows keep layernorm_shifted_wb_kernel: in this form
// (a byte permute for odd heads, with or without the next lane's vector) they
// were slower. Numbers in book/layernorm-notes.md.
template <typename T, int THREADS, int VPT, bool BOTH, bool PAIRS = false>
__global__ void __launch_bounds__(THREADS, 1024 / THREADS)
layernorm_funnel_wb_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                           T* __restrict__ y, int64_t cols, float inv_cols, float eps) {
  static_assert(std::is_same_v<T, float>, "16-bit rows: layernorm_shifted_wb_kernel");
  static_assert(!PAIRS || (THREADS >= 256 && BOTH), "pairs of slots: blocks that take the next lane's vector");
  constexpr int N = 4;
  constexpr int kWarps = THREADS / 32;
  using P = Pack<T, N>;
  __shared__ float slots[2][3][kWarps];
  BlockReduce<kWarps> red{slots, 0};
  const int tid = threadIdx.x;
  const T* xr = x + static_cast<int64_t>(blockIdx.x) * cols;
  // Blocks of 64 and 128 threads keep the form of ead227f (kPairwise): a test at
  // every slot and Chan's pairwise merge, one barrier where parts_norm takes two.
  // With parts_norm, 128 x 4 took 1.08 times as long at 2,050 floats (H200 …2180),
  // and 64 x 5 to 128 x 8 gained at most 0.6% at 1,102 to 4,097 (H100 …1476, H200
  // …9725, …2180); 256 threads and more gained up to 2.8% (book/layernorm-notes.md).
  constexpr bool kPairwise = THREADS < 256;
  RowSplit s;
  SlotMap m;
  int nb, nk;
  P v[VPT];
  bool has_edge;
  float edge, shift;
  load_off_boundary_row<kPairwise, THREADS>(xr, cols, tid, s, nb, m, nk, v, has_edge, edge, shift);
  const Norm n = off_boundary_norm<kPairwise, true>(v, nk, has_edge, edge, shift, cols, inv_cols, eps, red);  // fp32
  T* yr = y + static_cast<int64_t>(blockIdx.x) * cols;
  P* yv = reinterpret_cast<P*>(yr + s.head) + m.first;
  // The slot index is opaque to the compiler from here on: without that, ptxas
  // spilled in 3 of these kernels and in 4 put the last slot's load of x behind
  // part of the statistics (blocks of 256 and 512 threads x 5 and 8 vectors).
  const int wb_first = opaque(m.first);
  // Body vector j lies `head` elements into weight's and bias's vectors j and j + 1.
  // In blocks of 256 threads and more a lane loads vector j alone, as the aligned
  // kernels do, and takes what it needs of j + 1 from the next lane, whose slot k
  // holds it (shuffles); but a warp's last lane, the lane before slot_map's wrap
  // (first = THREADS - 1: vector THREADS is the next lane's next slot) and the row's
  // last body vector load it themselves, in the same round of loads. Blocks of 64
  // and 128 threads load both vectors in every lane (kFromNextLane false; numbers
  // in book/layernorm-notes.md).
  // PAIRS (on a GPU like the H200, weight and bias both given; launch_funnel_wb has
  // where and the numbers): weight and bias load two slots at a time, so that one
  // wait on the L2 serves two slots. Slot by slot, each slot's loads wait out the
  // L2's latency alone: with weight and bias absent these kernels ran at 99-101% of
  // the copy where with them they ran at 90-95% (fp32 8,191 to 16,383 floats).
  constexpr bool kFromNextLane = THREADS >= 256;
  const bool next_lane_has_next = kFromNextLane && tid % 32 != 31 && wb_first != THREADS - 1;
  with_head<N>(static_cast<int>(s.head), [&](auto head) {
    constexpr int H = decltype(head)::value;
    if constexpr (PAIRS) {
      // Two slots at a time: both slots' vectors j load together, then each slot
      // takes vector j + 1's first H elements from the next lane, or, in the lanes
      // that need their own, loads them element by element.
#pragma unroll
      for (int k0 = 0; k0 < VPT; k0 += 2) {
        P w[2], b[2];
#pragma unroll
        for (int g = 0; g < 2 && k0 + g < VPT; ++g) {
          const int64_t c = static_cast<int64_t>(wb_first + (k0 + g) * THREADS) * N;
          w[g] = b[g] = P{};
          if (k0 + g < nk) {
            w[g] = load_vec_in_order(reinterpret_cast<const P*>(weight + c));
            b[g] = load_vec_in_order(reinterpret_cast<const P*>(bias + c));
          }
        }
#pragma unroll
        for (int g = 0; g < 2 && k0 + g < VPT; ++g) {
          const int k = k0 + g;
          const int j = wb_first + k * THREADS;
          if constexpr (H > 0) {
            const bool own_next = !next_lane_has_next || j + 1 >= nb;
            const int64_t c_next = (static_cast<int64_t>(j) + 1) * N;
            P w_next{}, b_next{};
#pragma unroll
            for (int e = 0; e < H; ++e) {
              float ow = 0.0f, ob = 0.0f;
              if (k < nk && own_next) {  // elements of the row (see affine_vec)
                ow = weight[c_next + e];
                ob = bias[c_next + e];
              }
              const float tw = __shfl_down_sync(kFullMask, w[g].w[e], 1);
              const float tb = __shfl_down_sync(kFullMask, b[g].w[e], 1);
              w_next.w[e] = own_next ? ow : tw;
              b_next.w[e] = own_next ? ob : tb;
            }
            w[g] = funnel_pack<H>(w[g], w_next);
            b[g] = funnel_pack<H>(b[g], b_next);
          }
          if (k < nk) store_vec_in_order(yv + k * THREADS, normalize_pack<T>(opaque(v[k]), n, w[g], b[g]));
        }
      }
    } else {
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const bool in_row = k < nk;
        if (!kFromNextLane && !in_row) continue;  // no shuffles: the slot's lane alone
        const int j = wb_first + k * THREADS;
        const int64_t c = static_cast<int64_t>(j) * N;
        const bool own_next = !next_lane_has_next || j + 1 >= nb;
        P w{}, b{}, w_next{}, b_next{};
        if (in_row) {
          w = affine_vec<false, H, BOTH>(weight, c, cols, 1.0f);
          b = affine_vec<false, H, BOTH>(bias, c, cols, 0.0f);
          if (H > 0 && own_next) {
            w_next = affine_vec<true, H, BOTH>(weight, c, cols, 1.0f);
            b_next = affine_vec<true, H, BOTH>(bias, c, cols, 0.0f);
          }
        }
        if constexpr (H > 0) {
          if constexpr (kFromNextLane) {  // outside `in_row`: every lane takes part
            from_next_lane<H>(w, own_next, w_next);
            from_next_lane<H>(b, own_next, b_next);
          }
          w = funnel_pack<H>(w, w_next);
          b = funnel_pack<H>(b, b_next);
        }
        // x's vector opaque in each head's branch: without it ptxas spilled 4 bytes
        // in blocks of 256 and 512 threads x 8 vectors.
        const P xk = kFromNextLane ? opaque(v[k]) : v[k];
        if (in_row) store_vec_in_order(yv + k * THREADS, normalize_pack<T>(xk, n, w, b));
      }
    }
  });
  if (has_edge) store_edge(yr, weight, bias, s.edge_index(tid, N), edge, n);
}

// A 16-bit weight or bias vector that starts H elements past p (16-byte aligned), read
// where it lies: piece by piece, each the widest aligned load that fits (16, 8, 4 or 2
// bytes; H = 4 takes two loads, H = 2 or 6 three, an odd H four), chosen at compile
// time, in program order (as load_vec_in_order). The pieces' words are kept as loaded,
// a one-element piece zero-extended into a word of its own (4 or 5 words where floats
// take 8), and converted where used (head_floats). Against floats converted as loaded,
// in the offset kernel (H200s …0158 and …8145, 2026-11-28, 30 paired rounds, 256 MiB):
// 0.999-1.013 times the speed at 16-bit rows of 4,097 to 16,383 halves, 16 of 17 cases
// at 1.005 or more; bf16 rows of 7 vectors a thread still spilled 8 bytes.
__host__ __device__ constexpr int piece_size(int n_vec, int head, int at) {  // elements of the piece at `at`
  int n = n_vec;
  while (n > 1 && (at % n != 0 || at + n > head + n_vec)) n /= 2;
  return n;
}

__host__ __device__ constexpr int piece_words(int size) { return size == 1 ? 1 : size / 2; }

__host__ __device__ constexpr int words_at_head(int n_vec, int head) {
  int words = 0;
  for (int at = head; at < head + n_vec; at += piece_size(n_vec, head, at)) {
    words += piece_words(piece_size(n_vec, head, at));
  }
  return words;
}

// Element e's word among them (word_of) and its half, 0 for the low 16 bits (half_of).
__host__ __device__ constexpr int word_of(int n_vec, int head, int e) {
  int words = 0, at = head;
  while (head + e >= at + piece_size(n_vec, head, at)) {
    words += piece_words(piece_size(n_vec, head, at));
    at += piece_size(n_vec, head, at);
  }
  return words + (head + e - at) / 2;
}

__host__ __device__ constexpr int half_of(int n_vec, int head, int e) {
  int at = head;
  while (head + e >= at + piece_size(n_vec, head, at)) at += piece_size(n_vec, head, at);
  return (head + e - at) % 2;  // a piece of two or more elements starts on a word
}

template <typename T>
__device__ __forceinline__ float bits_to_float(uint16_t u) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(__ushort_as_half(u));
  else return __uint_as_float(static_cast<uint32_t>(u) << 16);  // bf16: the top half of an fp32
}

template <typename T, int N, int H, int AT = H, int WORD = 0>
__device__ __forceinline__ void load_at_head(const T* __restrict__ p, uint32_t (&u)[words_at_head(N, H)]) {
  static_assert(sizeof(T) == 2, "16-bit elements");
  if constexpr (AT < H + N) {
    constexpr int S = piece_size(N, H, AT);
    const T* a = p + AT;
    if constexpr (S == 8) {
      asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(u[WORD]), "=r"(u[WORD + 1]), "=r"(u[WORD + 2]), "=r"(u[WORD + 3]) : "l"(a));
    } else if constexpr (S == 4) {
      asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(u[WORD]), "=r"(u[WORD + 1]) : "l"(a));
    } else if constexpr (S == 2) {
      asm volatile("ld.global.u32 %0, [%1];" : "=r"(u[WORD]) : "l"(a));
    } else {
      asm volatile("ld.global.u16 %0, [%1];" : "=r"(u[WORD]) : "l"(a));  // zero-extended
    }
    load_at_head<T, N, H, AT + S, WORD + piece_words(S)>(p, u);
  }
}

// A vector loaded by load_at_head, as floats (each element's word known at compile time).
template <typename T, int N, int H, int E = 0>
__device__ __forceinline__ void head_floats(const uint32_t (&u)[words_at_head(N, H)], float (&f)[N]) {
  if constexpr (E < N) {
    const uint32_t word = u[word_of(N, H, E)];
    f[E] = bits_to_float<T>(static_cast<uint16_t>(half_of(N, H, E) ? word >> 16 : word));
    head_floats<T, N, H, E + 1>(u, f);
  }
}

// The next-lane form of the offset kernel (kFromNextLane there). The vector that starts
// H elements into aligned vector j is words H / 2 to 3 of vector j and the first
// kNextWords of vector j + 1; element e is half (H + e) % 2 of word (H + e) / 2 of the
// pair. A lane loads vector j alone, 16 bytes as the aligned kernels do, and takes
// those words of j + 1 from the next lane, which holds it in the same slot (next_words).
template <int H>
constexpr int kNextWords = (H + 1) / 2;

// The first kNextWords<H> words of the aligned vector at p, for a lane that loads them
// itself. LAST: the row's last body vector, whose next vector may run past the end of
// the buffer: an odd head's last word is read as the one element the row uses.
template <int H>
__device__ __forceinline__ void load_next_words(const uint32_t* p, bool last, uint32_t (&u)[4]) {
  constexpr int NB = kNextWords<H>;
  if constexpr (NB == 0) {
    return;  // head 0: the vector is aligned vector j alone
  } else if (H % 2 == 0 || !last) {
    if constexpr (NB == 4) {
      asm volatile("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];"
                   : "=r"(u[0]), "=r"(u[1]), "=r"(u[2]), "=r"(u[3]) : "l"(p));
    } else if constexpr (NB >= 2) {
      asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(u[0]), "=r"(u[1]) : "l"(p));
      if constexpr (NB == 3) asm volatile("ld.global.u32 %0, [%1];" : "=r"(u[2]) : "l"(p + 2));
    } else {
      asm volatile("ld.global.u32 %0, [%1];" : "=r"(u[0]) : "l"(p));
    }
  } else {  // odd H, the row's end: whole words, then the last one's low half (zero-extended)
    if constexpr (NB >= 3) asm volatile("ld.global.v2.u32 {%0, %1}, [%2];" : "=r"(u[0]), "=r"(u[1]) : "l"(p));
    if constexpr (NB == 2 || NB == 4) asm volatile("ld.global.u32 %0, [%1];" : "=r"(u[NB - 2]) : "l"(p + NB - 2));
    asm volatile("ld.global.u16 %0, [%1];" : "=r"(u[NB - 1]) : "l"(p + NB - 1));
  }
}

// The next lane's first kNextWords<H> words of `mine`, or, where `own`, the thread's own
// load of them from p. Every lane of the warp must call it.
template <int H>
__device__ __forceinline__ void next_words(const uint32_t (&mine)[4], bool own, const uint32_t* p, bool last,
                                           uint32_t (&u)[4]) {
#pragma unroll
  for (int i = 0; i < kNextWords<H>; ++i) u[i] = __shfl_down_sync(kFullMask, mine[i], 1);
  if (own) load_next_words<H>(p, last, u);
}

// Element e of the vector H elements into aligned vector a, next holding the words after it.
template <typename T, int H>
__device__ __forceinline__ float element_at_head(const uint32_t (&a)[4], const uint32_t (&next)[4], int e) {
  const int word = (H + e) / 2;  // e is a compile-time constant where this is called
  const uint32_t u = word < 4 ? a[word] : next[word - 4];
  return bits_to_float<T>(static_cast<uint16_t>((H + e) % 2 ? u >> 16 : u));
}

// Many 16-bit rows off the vector boundary past the L2 (and some aligned ones, every
// head 0), weight and bias both given and 16-byte aligned, on a GPU like the H200
// (launch_shaped, launch_shaped_block): one row a block, as layernorm_funnel_wb_kernel,
// its body vectors in THREADS x VPT slots, head and tail elements one to a thread; rows
// of 129 to 176 vectors whose heads are all even (and aligned ones to 168) in blocks of
// one warp (32 x 5, 32 x 6). Body vector j's weight and bias start `head` elements into
// aligned vector j (the head a compile-time constant), slot k + 1's loaded before slot
// k's store, so that a slot does not wait for its own loads (but where registers are
// short: kOffsetBlocksPerSm); the statistics in one reduction (moments_norm). Weight
// and bias are read where they lie, in one of two forms: in aligned pieces of up to 16
// bytes (load_at_head: 1 to 4 loads a vector), or, in blocks of 4 and 6 vectors a
// thread (kFromNextLane), one 16-byte load a vector and the rest from the next lane
// (next_words). What these loads cost is their number: with the head forced to 0 (one
// aligned load a vector, wrong weights, timing only) the pieces' form ran 1.025-1.094
// times as fast. Against layernorm_shifted_wb_kernel (a persistent block a row class,
// weight and bias shifted into shared memory): 1.00-1.12 times as fast at 4,097 to
// 16,383 halves in blocks of 128 and 256 threads on H200s. Method 0 only, as the
// shifted kernel.
// Its blocks per SM: as the block kernels' that read weight and bias in order (768
// threads at 80 registers from 6 vectors a thread), but the short rows' shapes, 64 x 3,
// 64 x 4 and 128 x 3 (1,288 to 2,055 and 2,568 to 3,079 halves), take 1,152 threads at
// 56 registers (kShortRowShape; bf16 rows of 3 vectors load each slot's bias at that
// slot, so as not to spill), and blocks of 256 threads x 7 and 8 vectors (rows of 1,537
// to 2,048 vectors) 1,024 threads at 64 registers: to fit, 256 x 8 and bf16 256 x 7 read
// each slot's weight and bias at that slot, not a slot ahead, and count their slots as
// slot_map does (kAtSlot). fp16 128 x 7 keeps 768.
// The measurements behind these choices: book/layernorm-notes.md, section
// layernorm_offset_wb_kernel.
template <typename T, int THREADS, int VPT>
constexpr bool kAtSlot = THREADS == 256 && (VPT == 8 || (VPT == 7 && std::is_same_v<T, __nv_bfloat16>));

template <int THREADS, int VPT>
constexpr bool kShortRowShape = THREADS <= 128 && VPT <= 4 && THREADS * VPT <= 384;

// bf16 with its heads paired (64 x 5, PAIRED, launch_shaped) spilled 8-28 bytes at 1,024
// threads an SM and takes 896 (72 registers).
template <typename T, int THREADS, int VPT, bool PAIRED = false>
constexpr int kOffsetBlocksPerSm = PAIRED && std::is_same_v<T, __nv_bfloat16> ? 896 / THREADS
                                   : kShortRowShape<THREADS, VPT>             ? 1152 / THREADS
                                   : THREADS == 256 && VPT >= 7               ? 1024 / THREADS
                                   : kAffineBlocksPerSm<T, THREADS, VPT, WbLoad::kInOrder>;

template <typename T, int THREADS, int VPT, bool PAIRED = false, bool BIAS_AT_SLOT = false>
__global__ void __launch_bounds__(THREADS, (kOffsetBlocksPerSm<T, THREADS, VPT, PAIRED>))
layernorm_offset_wb_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                           T* __restrict__ y, int64_t cols, float inv_cols, float eps) {
  static_assert(sizeof(T) == 2, "fp32 rows: layernorm_funnel_wb_kernel");
  constexpr int N = 8;
  constexpr int kWarps = THREADS / 32;
  constexpr bool kPairwise = VPT == 8 || kAtSlot<T, THREADS, VPT>;  // slot counts: see slots_in_row
  // The next-lane form where it measured faster (3, 4 and 6 vectors a thread, and 5 in
  // blocks of 64; at 5 in larger blocks, 7 and 8 it spilled or lost: numbers in
  // book/layernorm-notes.md).
  constexpr bool kFromNextLane = VPT == 3 || VPT == 4 || VPT == 6 || (VPT == 5 && THREADS == 64);
  static_assert(!PAIRED || kFromNextLane, "paired heads: the next-lane form");
  // Rows that load each slot's bias at that slot, not a slot ahead, where ahead ptxas
  // spilled: bf16 rows of 7 vectors a thread (8 bytes at 80 registers) in the pieces'
  // form; in the next-lane form fp16 rows of 4 (16 bytes at 64 registers), bf16 rows
  // of 4 in blocks of 64 (4 bytes), rows of 5 (32-36 bytes), bf16 rows of 3 at 56
  // registers (4 bytes; kShortRowShape), and fp16 rows of 6 a warp a row (4 bytes at 80).
  // BIAS_AT_SLOT: fp16 rows of 7 vectors a thread whose heads are not all even, where it
  // measured faster without a spill either way (launch_shaped_block).
  constexpr bool kWeightAhead = !kAtSlot<T, THREADS, VPT>;  // see kOffsetBlocksPerSm
  constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  constexpr bool kBiasAhead =
      kWeightAhead && !BIAS_AT_SLOT &&
      (kFromNextLane ? !((VPT == 4 && (!kBf16 || THREADS == 64)) || VPT == 5 || (VPT == 3 && kBf16) ||
                         (VPT == 6 && THREADS == 32 && !kBf16))
                     : !(kBf16 && VPT == 7));
  using P = Pack<T, N>;
  __shared__ float slots[2][3][kWarps];
  BlockReduce<kWarps> red{slots, 0};
  const int tid = threadIdx.x;
  const T* xr = x + static_cast<int64_t>(blockIdx.x) * cols;
  RowSplit s;
  SlotMap m;
  int nb, nk;
  P v[VPT];
  bool has_edge;
  float edge, shift;
  load_off_boundary_row<kPairwise, THREADS>(xr, cols, tid, s, nb, m, nk, v, has_edge, edge, shift);
  const Norm n = moments_norm(v, nk, has_edge, edge, shift, inv_cols, eps, red);
  T* yr = y + static_cast<int64_t>(blockIdx.x) * cols;
  P* yv = reinterpret_cast<P*>(yr + s.head) + m.first;
  const int wb_first = opaque(m.first);  // weight and bias stay after the reduction
  // The lanes whose next lane does not hold their next vector: a warp's last lane, and
  // the lane before slot_map's wrap (first = THREADS - 1: vector THREADS is the next
  // lane's next slot). The row's last body vector is a third (in the loop).
  const bool next_in_lane = tid % 32 != 31 && wb_first != THREADS - 1;
  if constexpr (PAIRED) {
    // Heads paired (launch_shaped): the next-lane form with the head's word shift U =
    // head / 2 a compile-time constant (4 branches) and its low bit known at run time.
    // Element e is half e % 2 of the word made of words U + e / 2 and U + e / 2 + 1 of
    // the pair: the first alone at an even head, its top half and the second's bottom
    // half at an odd one (a byte permute). A loop of its own: with this loop and the one
    // below sharing their code through helper functions, ptxas spilled 48 bytes here.
    const bool odd = s.head % 2 != 0;
    const unsigned sel = odd ? 0x5432u : 0x3210u;
    with_head<N / 2>(static_cast<int>(s.head / 2), [&](auto word_shift) {
      constexpr int U = decltype(word_shift)::value;
      const auto at = [&](int k) { return static_cast<int64_t>(wb_first + k * THREADS) * N; };
      uint32_t w[2][4] = {}, b[2][4] = {};
      if (kWeightAhead && 0 < nk) {
        load_at_head<T, N, 0>(weight + at(0), w[0]);
        if constexpr (kBiasAhead) load_at_head<T, N, 0>(bias + at(0), b[0]);
      }
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        if (kWeightAhead && k + 1 < VPT && k + 1 < nk) {
          load_at_head<T, N, 0>(weight + at(k + 1), w[(k + 1) % 2]);
          if constexpr (kBiasAhead) load_at_head<T, N, 0>(bias + at(k + 1), b[(k + 1) % 2]);
        }
        if (!kWeightAhead && k < nk) load_at_head<T, N, 0>(weight + at(k), w[k % 2]);
        if (!kBiasAhead && k < nk) load_at_head<T, N, 0>(bias + at(k), b[k % 2]);
        uint32_t wn[4] = {}, bn[4] = {};  // the next vector's first U + 1 words (an odd head's)
        const bool last = wb_first + k * THREADS + 1 >= nb;
        const bool own = k < nk && (!next_in_lane || last);
#pragma unroll
        for (int i = 0; i <= U; ++i) {  // every lane takes part
          wn[i] = __shfl_down_sync(kFullMask, w[k % 2][i], 1);
          bn[i] = __shfl_down_sync(kFullMask, b[k % 2][i], 1);
        }
        if (own) {
          const auto* pw = reinterpret_cast<const uint32_t*>(weight + at(k) + N);
          const auto* pb = reinterpret_cast<const uint32_t*>(bias + at(k) + N);
          if (odd) {
            load_next_words<2 * U + 1>(pw, last, wn);
            load_next_words<2 * U + 1>(pb, last, bn);
          } else {
            load_next_words<2 * U>(pw, last, wn);
            load_next_words<2 * U>(pb, last, bn);
          }
        }
        if (k < nk) {
          const uint32_t cw[8] = {w[k % 2][0], w[k % 2][1], w[k % 2][2], w[k % 2][3], wn[0], wn[1], wn[2], wn[3]};
          const uint32_t cb[8] = {b[k % 2][0], b[k % 2][1], b[k % 2][2], b[k % 2][3], bn[0], bn[1], bn[2], bn[3]};
          float f[N];
#pragma unroll
          for (int e = 0; e < N; ++e) {
            const uint32_t wu = __byte_perm(cw[U + e / 2], cw[U + e / 2 + 1], sel);
            const uint32_t bu = __byte_perm(cb[U + e / 2], cb[U + e / 2 + 1], sel);
            f[e] = affine(v[k].get(e), n, bits_to_float<T>(static_cast<uint16_t>(e % 2 ? wu >> 16 : wu)),
                          bits_to_float<T>(static_cast<uint16_t>(e % 2 ? bu >> 16 : bu)));
          }
          P out;
          out.set(f);
          store_vec_in_order(yv + k * THREADS, out);
        }
      }
    });
  } else  // the head a compile-time constant: 8 branches
  with_head<N>(static_cast<int>(s.head), [&](auto head) {
    constexpr int H = decltype(head)::value;
    const auto at = [&](int k) { return static_cast<int64_t>(wb_first + k * THREADS) * N; };  // slot k's element
    // Slot k's words in [k % 2]; the next-lane form loads the aligned vector alone (head 0),
    // zeroed so that a lane past the row's end hands its neighbour defined words (which
    // that lane does not use).
    constexpr int kLoadHead = kFromNextLane ? 0 : H;
    uint32_t w[2][words_at_head(N, kLoadHead)], b[2][words_at_head(N, kLoadHead)];
    if constexpr (kFromNextLane) {
      std::memset(w, 0, sizeof(w));
      std::memset(b, 0, sizeof(b));
    }
    if (kWeightAhead && 0 < nk) {
      load_at_head<T, N, kLoadHead>(weight + at(0), w[0]);
      if constexpr (kBiasAhead) load_at_head<T, N, kLoadHead>(bias + at(0), b[0]);
    }
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      if (kWeightAhead && k + 1 < VPT && k + 1 < nk) {
        load_at_head<T, N, kLoadHead>(weight + at(k + 1), w[(k + 1) % 2]);
        if constexpr (kBiasAhead) load_at_head<T, N, kLoadHead>(bias + at(k + 1), b[(k + 1) % 2]);
      }
      if (!kWeightAhead && k < nk) load_at_head<T, N, kLoadHead>(weight + at(k), w[k % 2]);
      if (!kBiasAhead && k < nk) load_at_head<T, N, kLoadHead>(bias + at(k), b[k % 2]);
      [[maybe_unused]] uint32_t wn[4], bn[4];  // the next-lane form: the next vector's first words
      if constexpr (kFromNextLane) {  // outside `k < nk`: every lane takes part in the shuffles
        const bool last = wb_first + k * THREADS + 1 >= nb;
        const bool own = k < nk && (!next_in_lane || last);
        next_words<H>(w[k % 2], own, reinterpret_cast<const uint32_t*>(weight + at(k) + N), last, wn);
        next_words<H>(b[k % 2], own, reinterpret_cast<const uint32_t*>(bias + at(k) + N), last, bn);
      }
      if (k < nk) {
        P out;
        if constexpr (kFromNextLane) {  // each element converted where used (as measured;
          float f[N];                   // through normalize_pack the machine code differs)
#pragma unroll
          for (int e = 0; e < N; ++e) {
            f[e] = affine(v[k].get(e), n, element_at_head<T, H>(w[k % 2], wn, e),
                          element_at_head<T, H>(b[k % 2], bn, e));
          }
          out.set(f);
        } else {
          float wf[N], bf[N];
          head_floats<T, N, H>(w[k % 2], wf);
          head_floats<T, N, H>(b[k % 2], bf);
          out = normalize_pack<T>(v[k], n, wf, bf);
        }
        store_vec_in_order(yv + k * THREADS, out);
      }
    }
  });
  if (has_edge) store_edge(yr, weight, bias, s.edge_index(tid, N), edge, n);
}

// Register budget of the block path: 64 registers a thread (two 512-thread
// blocks, or more smaller ones, per SM); 128 for the scalar path's 32-element
// slices, which would spill in 64. Asking for this occupancy also keeps ptxas
// from its own guess, which spilled a few bytes here and there. One exception,
// kDenseFp32: aligned fp32 blocks of 512 x 4 (rows of 1,025 to 2,048 vectors,
// more than a few of them) are held to 40 registers, three blocks per SM; they
// fit without spilling (measured for many rows: layernorm_row_pair_kernel).
template <typename T, int N, bool PEEL, int THREADS, int VPT>
constexpr bool kDenseFp32 = sizeof(T) == 4 && N == 4 && !PEEL && THREADS == 512 && VPT == 4;
template <typename T, int N, bool PEEL, int THREADS, int VPT>
constexpr int kBlocksPerSm = kDenseFp32<T, N, PEEL, THREADS, VPT> ? 3 : (VPT >= 32 ? 512 : 1024) / THREADS;
// A few-rows launch is one wave of at most kFewRows blocks (1,024-thread ones
// at most one per SM): two blocks per SM cover it, so blocks of 256 or 512
// threads may take 128 or 64 registers, room for weight and bias next to the
// row; smaller blocks keep 64.
template <int THREADS>
constexpr int kFewRowsBlocksPerSm = THREADS >= 1024 ? 1 : THREADS >= 256 ? 2 : 1024 / THREADS;

// One row per block of THREADS threads, VPT vectors per thread held in
// registers. THREADS is a compile-time constant so that slot k's address is the
// slot-0 address plus an immediate (k * THREADS * 16 bytes): no per-slot address
// registers to keep alive across the reduction. Rows on this path have at most
// 16,384 vectors, so in-row indices fit in 32 bits.
// METHOD >= 0 fixes the method at compile time (the few-rows launches): the
// other two methods' code is gone, a third of the kernel, and a launch of one
// wave, whose time is latency, is 1-3% faster (H200, 32 x 4,096 halves:
// 2.73 -> 2.66 us; 256 x 4,096 floats: 4.8 -> 4.7 us).
// EVEN (few-rows launches only): the row is exactly THREADS x VPT vectors and the
// grid has a block per row, so every slot test, the thread's count and the choice
// of merge are known at compile time, and a block does one row. H200, CUDA graph,
// same rounds, run-time tests -> EVEN (Liger): 32 x 4,096 halves 2.60 -> 2.44 us
// (2.52), bf16 2.62 -> 2.48 (2.55), floats 2.90 -> 2.73 (2.90); 1 x 4,096 halves
// 1.98 -> 1.75 (1.80); 256 x 4,096 halves 3.71 -> 3.34 (3.54); 64 x 8,192 floats
// 4.24 -> 3.91 (3.94). A block doing one row with the tests kept at run time
// gained nothing (2.6 us at 32 x 4,096 halves).
template <typename T, int N, bool PEEL, int THREADS, int VPT, int METHOD = -1, bool EVEN = false>
__global__ void __launch_bounds__(THREADS, METHOD >= 0 ? kFewRowsBlocksPerSm<THREADS>
                                                   : kBlocksPerSm<T, N, PEEL, THREADS, VPT>)
layernorm_block_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                       T* __restrict__ y, int64_t rows, int64_t cols, float inv_cols, float eps,
                       int method, bool wb_vec) {
  if constexpr (METHOD >= 0) method = METHOD;
  using P = Pack<T, N>;
  constexpr int kWarps = THREADS / 32;
  // Weight and bias are loaded before the reduction only for the few-rows
  // launches (METHOD fixed): there a launch is one wave and its time is latency;
  // elsewhere they would hold registers across it.
  constexpr bool kEarlyAffine = METHOD >= 0;
  // A slice of 3 or 4 whole vectors (at most 32 elements) is converted to float
  // once, already shifted (16-bit; fp32 is held as it is), and kept that way for
  // the statistics and the normalize: each element is then converted once, not
  // twice, and its normalize is two fmas. Other slices stay as T and are converted when used: larger ones
  // (16-bit elements: half the registers), and those that share the registers
  // with early weights or peeled edges (ptxas spilled those).
  constexpr bool kFloatRow = !PEEL && !kEarlyAffine && N > 1 && VPT <= 4 && VPT * N <= 32;
  constexpr bool kSplitAffine = !PEEL && !kEarlyAffine && !kFloatRow;  // see load_wb
  constexpr bool kRecenter = std::is_same_v<T, float>;                 // see recentered
  __shared__ float slots[2][3][kWarps];
  BlockReduce<kWarps> red{slots, 0};
  const int tid = threadIdx.x;
  const bool has_affine = weight != nullptr && bias != nullptr;
  static_assert(!EVEN || (METHOD >= 0 && !PEEL), "EVEN is for the few-rows launches of aligned rows");
  // every thread holds a full slice
  const bool even = EVEN || (!PEEL && cols == static_cast<int64_t>(THREADS) * VPT * N);

  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * cols;
    const RowSplit s = split_row<T, N, PEEL>(xr, cols);
    const int nb = static_cast<int>(s.body);
    const P* xv = reinterpret_cast<const P*>(xr + s.head) + tid;

    P v[VPT];
#pragma unroll
    for (int k = 0; k < VPT; ++k)
      if (EVEN || tid + k * THREADS < nb) v[k] = load_vec(xv + k * THREADS);
    bool has_edge = false;
    float edge = 0.0f;
    if constexpr (PEEL) {
      has_edge = tid < s.head + s.tail;
      if (has_edge) edge = to_float(xr[s.edge_index(tid, N)]);
    }
    const int nk = EVEN ? VPT : tid < nb ? min(VPT, (nb - tid + THREADS - 1) / THREADS) : 0;

    const float shift = method == 2 ? 0.0f : to_float(xr[0]);  // "Shift" above
    const int64_t c0 = s.head + static_cast<int64_t>(tid) * N;  // first element of slot 0
    const bool vec = !PEEL || (wb_vec && s.head == 0);
    float w[VPT][N], b[VPT][N];
    // Weight and bias both there (the common case, `both` is std::true_type) or
    // not: one branch for the whole loop, none per element. Not where they are
    // loaded early or the slice is held as floats: the two copies of the loop
    // then cost more registers than the tests (ptxas spilled, and 32 rows of
    // 4,096 took 2.9 us instead of 2.7 on an H200).
    auto load_wb = [&](int k, auto both) {
      load_affine<decltype(both)::value, T, N>(weight, bias, c0 + k * THREADS * N, vec, w[k], b[k]);
    };
    // kEarlyAffine (never peeled): weight and bias packs loaded with the row, one
    // wait for memory, not two. Kept as loaded until used: converted at once, the
    // first slot's registers were reused for the second slot's loads, which then
    // waited for the first slot's data (a memory latency per slot).
    P pw[VPT], pb[VPT];
    if constexpr (kEarlyAffine) {
      static_assert(!PEEL, "early weight and bias loads are 16-byte packs");
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        if (EVEN || tid + k * THREADS < nb) {
          const int64_t c = c0 + k * THREADS * N;
          pw[k] = weight ? load_vec(reinterpret_cast<const P*>(weight + c)) : constant_pack<T, N>(1.0f);
          pb[k] = bias ? load_vec(reinterpret_cast<const P*>(bias + c)) : constant_pack<T, N>(0.0f);
        }
      }
    }
    T* yr = y + row * cols;
    P* yv = reinterpret_cast<P*>(yr + s.head) + tid;
    auto store_row = [&](const auto (&slice)[VPT], const Norm& n) {
      auto store = [&](auto both) {
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
          if (EVEN || tid + k * THREADS < nb) {
            if constexpr (kEarlyAffine) {
              store_vec(yv + k * THREADS, normalize_pack<T>(slice[k], n, pw[k], pb[k]));
            } else {
              load_wb(k, both);
              store_vec(yv + k * THREADS, normalize_pack<T>(slice[k], n, w[k], b[k]));
            }
          }
        }
      };
      if (kSplitAffine && has_affine) store(std::true_type{});
      else store(std::false_type{});
    };
    const float cols_f = static_cast<float>(cols);
    Norm n;
    if constexpr (kFloatRow) {
      // 16-bit slices as floats less the shift: statistics about 0 (the compiler
      // drops the subtractions), so the Norm's center is 0 too. fp32 slices are x
      // itself (the conversion is nothing), kept for recentered.
      const float held = kRecenter ? 0.0f : shift;
      Pack<float, N> f[VPT];
      shifted_floats(v, held, f);
      const Norm nf = row_stats<kRecenter>(method, f, nk, has_edge, edge - held, kRecenter ? shift : 0.0f, cols_f,
                                           inv_cols, eps, even, red);
      store_row(f, nf);
      n = Norm{nf.center + held, nf.rstd, nf.offset};
    } else {
      n = row_stats<kRecenter>(method, v, nk, has_edge, edge, shift, cols_f, inv_cols, eps, even, red);
      store_row(v, n);
    }
    if constexpr (PEEL) {
      if (has_edge) store_edge(yr, weight, bias, s.edge_index(tid, N), edge, n);
    }
    if constexpr (EVEN) break;  // the grid has a block per row
  }
}

// Many rows of 257 to 2,048 aligned 16-byte vectors (fp32 1,028 to 4,096
// columns, fp16/bf16 2,056 to 16,384): two rows per block, the same columns in
// the same thread, THREADS x VPT vectors a row. Each weight and bias vector is
// then loaded and converted once for two rows. Its statistics are the block
// kernel's, row after row; a block whose second row is past the end computes a
// copy of its first and stores it once. fp32 rows of 1,025 to 2,048 vectors
// (4,100 to 8,192 columns) take a block each instead, 512 x 4 held to 40
// registers so that three fit per SM (kDenseFp32); 16-bit rows keep the pairs.
// The measurements: book/layernorm-notes.md, section layernorm_row_pair_kernel.
template <typename T, int N, int THREADS, int VPT>
__global__ void __launch_bounds__(THREADS, 1024 / THREADS)
layernorm_row_pair_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                          T* __restrict__ y, int64_t rows, int64_t cols, float inv_cols, float eps,
                          int method) {
  using P = Pack<T, N>;
  constexpr int kWarps = THREADS / 32;
  __shared__ float slots[2][3][kWarps];
  BlockReduce<kWarps> red{slots, 0};
  const int tid = threadIdx.x;
  const bool has_affine = weight != nullptr && bias != nullptr;
  const bool even = cols == static_cast<int64_t>(THREADS) * VPT * N;
  const int nb = static_cast<int>(cols / N);
  const int nk = tid < nb ? min(VPT, (nb - tid + THREADS - 1) / THREADS) : 0;
  const float cols_f = static_cast<float>(cols);

  for (int64_t row = 2 * static_cast<int64_t>(blockIdx.x); row < rows; row += 2 * static_cast<int64_t>(gridDim.x)) {
    const bool two = row + 1 < rows;
    const T* xa = x + row * cols;
    const T* xb = two ? xa + cols : xa;
    const P* xva = reinterpret_cast<const P*>(xa) + tid;
    const P* xvb = reinterpret_cast<const P*>(xb) + tid;
    P va[VPT], vb[VPT];
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      if (tid + k * THREADS < nb) {
        va[k] = load_vec(xva + k * THREADS);
        vb[k] = load_vec(xvb + k * THREADS);
      }
    }
    const float sa = method == 2 ? 0.0f : to_float(xa[0]);  // "Shift" above
    const float sb = method == 2 ? 0.0f : to_float(xb[0]);
    constexpr bool kRecenter = std::is_same_v<T, float>;  // see recentered
    const Norm norm_a = row_stats<kRecenter>(method, va, nk, false, 0.0f, sa, cols_f, inv_cols, eps, even, red);
    const Norm norm_b = row_stats<kRecenter>(method, vb, nk, false, 0.0f, sb, cols_f, inv_cols, eps, even, red);
    P* yva = reinterpret_cast<P*>(y + row * cols) + tid;
    P* yvb = two ? yva + cols / N : yva;
    auto store = [&](auto both) {
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        if (tid + k * THREADS < nb) {
          float w[N], b[N];
          load_affine<decltype(both)::value, T, N>(weight, bias, static_cast<int64_t>(tid + k * THREADS) * N, true,
                                                   w, b);
          store_vec(yva + k * THREADS, normalize_pack<T>(va[k], norm_a, w, b));
          if (two) store_vec(yvb + k * THREADS, normalize_pack<T>(vb[k], norm_b, w, b));
        }
      }
    };
    if (has_affine) store(std::true_type{});
    else store(std::false_type{});
  }
}

// Rows too long for registers: x is swept once for the statistics and once more to
// normalize (three times for method 1). The first sweep also keeps the row's first
// `stash` vectors in shared memory (as much as the block's share of the SM holds),
// and later sweeps read those from there; the rest is read from global memory
// again. Each thread stashes and reads back only its own vectors, so the stash
// needs no barrier. The first sweep loads the vectors it does not stash with an L2
// evict_last policy, so that they are still in the L2 when the next sweep reads
// them (torch.compile's kernel loads x with that policy too). fp32 rows of 65,536
// (each block stashes 113 of its 256 KB), % of a copy and torch.compile's time
// over this kernel's, plain loads -> the policy: H200 (…6420 -> …8274, chapter
// notebook) 60.5 -> 63.8%, 0.957 (torch.compile 4% ahead) -> 1.012; H100 (…6641 ->
// …1382, the H100 ladder at 6b089be) 65.9 -> 69.2%, 1.019 -> 1.067. kUnroll
// vectors are loaded before any is used, so several loads are in flight per
// thread. The thread's running count is only known at run time here, so each chunk
// joins the running statistics through chan_merge (one division per chunk).
template <typename T, int N, bool PEEL>
__global__ void __launch_bounds__(kStreamingThreads, kStreamingBlocksPerSm)
layernorm_streaming_kernel(const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ bias,
                           T* __restrict__ y, int64_t rows, int64_t cols, float inv_cols, float eps,
                           int method, bool wb_vec, int64_t stash) {
  constexpr int kUnroll = 4;
  constexpr int64_t kStride = kStreamingThreads;
  using P = Pack<T, N>;
  extern __shared__ uint4 stash_words[];
  P* const kept = reinterpret_cast<P*>(stash_words);
  __shared__ float slots[2][3][kStreamingThreads / 32];
  BlockReduce<kStreamingThreads / 32> red{slots, 0};
  const int64_t tid = threadIdx.x;

  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    const RowSplit s = split_row<T, N, PEEL>(xr, cols);
    const P* xv = reinterpret_cast<const P*>(xr + s.head);

    bool has_edge = false;
    float edge = 0.0f;
    if constexpr (PEEL) {
      has_edge = tid < s.head + s.tail;
      if (has_edge) edge = to_float(xr[s.edge_index(tid, N)]);
    }

    // One sweep over the thread's vectors, kUnroll at a time: `use` gets the
    // loaded chunk, how many of its vectors are in the row (a prefix), and the
    // index of its first vector; vector u of the chunk is i0 + u * kStride.
    // `first`: the sweep that reads everything from global memory and stashes.
    bool first = true;
    auto sweep = [&](auto&& use) {
      for (int64_t i0 = tid; i0 < s.body; i0 += kUnroll * kStride) {
        P v[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
          const int64_t i = i0 + u * kStride;
          if (i >= s.body) continue;
          if (!first && i < stash) v[u] = kept[i];
          else if constexpr (sizeof(P) == 16)
            v[u] = first && i >= stash ? load_vec_keep_in_l2(xv + i) : load_vec(xv + i);
          else
            v[u] = load_vec(xv + i);
        }
        if (first) {
#pragma unroll
          for (int u = 0; u < kUnroll; ++u)
            if (i0 + u * kStride < stash && i0 + u * kStride < s.body) kept[i0 + u * kStride] = v[u];
        }
        const int64_t left = (s.body - i0 + kStride - 1) / kStride;
        use(v, static_cast<int>(left < kUnroll ? left : kUnroll), i0);
      }
    };

    const float shift = method == 2 ? 0.0f : to_float(xr[0]);  // "Shift" above
    float mean, var;
    if (method == 0) {
      Stats st{0.0f, 0.0f, 0.0f};
      sweep([&](const P(&v)[kUnroll], int nk, int64_t) { st = chan_merge(st, thread_welford(v, nk, shift)); });
      first = false;
      if (has_edge) st = welford_push(st, edge - shift);
      st = red.merge(st);
      mean = st.mean;
      var = st.m2 * inv_cols;
    } else if (method == 1) {
      float a = has_edge ? edge - shift : 0.0f;
      sweep([&](const P(&v)[kUnroll], int nk, int64_t) { a += thread_sum(v, nk, shift); });
      first = false;
      const float mean0 = divide_by_cols(red.sum(a), static_cast<float>(cols), inv_cols);
      float e = has_edge ? (edge - shift) - mean0 : 0.0f, q = e * e;
      sweep([&](const P(&v)[kUnroll], int nk, int64_t) { thread_dev_sums(v, nk, shift, mean0, e, q); });
      red.sum2(e, q);
      corrected_two_pass(mean0, e, q, inv_cols, mean, var);
    } else {
      float a = has_edge ? edge : 0.0f, q = has_edge ? edge * edge : 0.0f;
      sweep([&](const P(&v)[kUnroll], int nk, int64_t) {
        a += thread_sum(v, nk, shift);
        q += thread_sum_sq(v, nk);
      });
      first = false;
      red.sum2(a, q);
      mean = a * inv_cols;
      var = q * inv_cols - mean * mean;
    }
    Norm n = shifted_norm(shift, mean, var, eps);
    if constexpr (std::is_same_v<T, float>) {  // see recentered: one more sweep for such rows
      if (method == 0) {
        n = recentered(n, inv_cols, eps, red, [&](float c, float& sum, float& sum_sq) {
          sweep([&](const P(&v)[kUnroll], int nk, int64_t) { thread_dev_sums(v, nk, c, 0.0f, sum, sum_sq); });
          edge_dev_sums(has_edge, edge, c, 0.0f, sum, sum_sq);
        });
      }
    }

    P* yv = reinterpret_cast<P*>(yr + s.head);
    const bool vec = !PEEL || (wb_vec && s.head == 0);
    sweep([&](const P(&v)[kUnroll], int nk, int64_t i0) {
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        if (u < nk) {
          const int64_t i = i0 + u * kStride;
          float w[N], b[N];
          load_affine<false, T, N>(weight, bias, s.head + i * N, vec, w, b);
          store_vec(yv + i, normalize_pack<T>(v[u], n, w, b));
        }
      }
    });
    if constexpr (PEEL) {
      if (has_edge) store_edge(yr, weight, bias, s.edge_index(tid, N), edge, n);
    }
  }
}

// ---- launch ---------------------------------------------------------------------

// Everything a launch needs, so the size-dependent choice below reads as a table.
template <typename T>
struct Launch {
  const T* x;
  const T* weight;
  const T* bias;
  T* y;
  int64_t rows, cols;
  float inv_cols, eps;  // 1 / cols computed on the host, in double, then rounded once
  int method;
  bool wb_vec;          // weight and bias 16-byte aligned (or absent)
  cudaStream_t stream;
};

unsigned grid_for(int64_t blocks) { return static_cast<unsigned>(blocks < kMaxGrid ? blocks : kMaxGrid); }

// Calls f with the method (0, 1 or 2) as a compile-time constant, for kernels
// built with it fixed; WELFORD_ONLY: with 0, the caller having checked it.
template <bool WELFORD_ONLY = false, typename F>
decltype(auto) with_method(int method, F&& f) {
  if constexpr (WELFORD_ONLY) {
    return f(std::integral_constant<int, 0>{});
  } else {
    if (method == 0) return f(std::integral_constant<int, 0>{});
    if (method == 1) return f(std::integral_constant<int, 1>{});
    return f(std::integral_constant<int, 2>{});
  }
}

// The current GPU's SMs (0 if the query fails).
int sm_count() {
  int device = 0, sms = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) return 0;
  return sms;
}

int l2_bytes() {  // 0 if the query fails (cleared: the launch reports its own error)
  int device = 0, l2 = 0;
  if (cudaGetDevice(&device) != cudaSuccess || cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return l2;
}

// Whether the current GPU's memory streams more than kFastMemoryBytesPerSmPerUs
// bytes per SM per microsecond (false if a query fails): an H200 36.5 KB (4.8
// TB/s over 132 SMs), an H100 25.4 KB (3.35 TB/s). Some kernel choices differ
// between the two (launch_rows). The peak is two transfers per memory clock,
// each the width of the bus. Asked once per process, which uses one kind of GPU
// (as chapters 06 and 08 do): asked at every launch, it kept the host long enough
// that launches timed behind a 0.5 ms device-side spin rather than the bench's
// gate spread widely, those that asked it and no others (book/results.md,
// 2026-11-28).
bool fast_memory_per_sm() {
  static const bool fast = [] {
    const int sms = sm_count();
    int device = 0, clock_khz = 0, bus_bits = 0;
    if (sms <= 0 || cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device) != cudaSuccess) {
      cudaGetLastError();  // clear it: the launch reports its own error
      return false;
    }
    const double bytes_per_sm_per_us = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / sms * 1e-6;
    return bytes_per_sm_per_us > kFastMemoryBytesPerSmPerUs;
  }();
  return fast;
}

// Whether a launch moves more bytes (x read, y written) than the L2 holds: only
// then do the block kernels of affine_row load x with an L2 evict_last policy
// (load_vec_keep_in_l2; chapter 08: a graph of a few rows lost 1-2.5 points with
// any hint). 16-bit rows of 8,192 and 16,384 take it on every GPU; fp32 rows of
// 4,096, 8,192 and 16,384 only where the memory is faster per SM (keep_x_in_l2;
// see kKeepX at affine_row).
template <typename T>
bool moves_past_l2(const Launch<T>& l) {
  const int l2 = l2_bytes();
  return l2 > 0 && 2 * l.rows * l.cols * static_cast<int64_t>(sizeof(T)) > l2;
}

template <typename T>
bool keep_x_in_l2(const Launch<T>& l) {
  return fast_memory_per_sm() && moves_past_l2(l);
}

template <typename T, int N, bool PEEL, int G, int VPT>
cudaError_t launch_warp(const Launch<T>& l) {
  constexpr int64_t kRowsPerBlock = kWarpPathThreads / G;
  const unsigned grid = grid_for((l.rows + kRowsPerBlock - 1) / kRowsPerBlock);
  if constexpr (!PEEL && N > 1) {
    if (l.cols == static_cast<int64_t>(G) * VPT * N) {  // full rows (see the kernel)
      constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
      if constexpr (sizeof(T) == 2 && G < 32) {
        const auto run = [&](auto m) {
          layernorm_warp_kernel<T, N, false, G, VPT, true, decltype(m)::value><<<grid, kWarpPathThreads, 0, l.stream>>>(
              l.x, l.weight, l.bias, l.y, l.rows, l.cols, l.inv_cols, l.eps, l.method, l.wb_vec);
          return cudaGetLastError();
        };
        if (l.method == 0) return run(std::integral_constant<int, 0>{});
        if (l.method == 1) return run(std::integral_constant<int, 1>{});
        if constexpr (kBf16) return run(std::integral_constant<int, 2>{});
      }
      if constexpr (!kBf16) {
        layernorm_warp_kernel<T, N, false, G, VPT, true><<<grid, kWarpPathThreads, 0, l.stream>>>(
            l.x, l.weight, l.bias, l.y, l.rows, l.cols, l.inv_cols, l.eps, l.method, l.wb_vec);
        return cudaGetLastError();
      }
    }
  }
  layernorm_warp_kernel<T, N, PEEL, G, VPT, false><<<grid, kWarpPathThreads, 0, l.stream>>>(
      l.x, l.weight, l.bias, l.y, l.rows, l.cols, l.inv_cols, l.eps, l.method, l.wb_vec);
  return cudaGetLastError();
}

// One of the weight-and-bias kernels of affine_row: G lanes x VPT vectors a row,
// R rows a thread (G < 64), or, from G = 64, a block of G threads x VPT a row.
// No grid loop: the caller keeps rows within gridDim.x (kMaxAffineRows).
// kKeepX (blocks only): x loaded with an L2 evict_last policy (keep_x_in_l2).
// WELFORD_ONLY: built for method 0 alone, which the caller has checked.
template <typename T, int G, int VPT = 2, WbLoad WB = WbLoad::kEarly, int R = 1, bool kKeepX = false,
          bool kTail = false, bool WELFORD_ONLY = false>
cudaError_t launch_affine(const Launch<T>& l) {
  static_assert(G < 64 || R == 1, "a block of G threads holds one row");
  static_assert(G >= 64 || (!kKeepX && !kTail), "the policy and the tail are for the block kernel");
  constexpr int64_t kRowsPerBlock = G < 64 ? kWarpPathThreads / G * R : 1;
  const auto grid = static_cast<unsigned>((l.rows + kRowsPerBlock - 1) / kRowsPerBlock);
  return with_method<WELFORD_ONLY>(l.method, [&](auto m) {
    constexpr int M = decltype(m)::value;
    if constexpr (G < 64) {
      layernorm_affine_rows_kernel<T, G, VPT, R, M><<<grid, kWarpPathThreads, 0, l.stream>>>(
          l.x, l.weight, l.bias, l.y, l.rows, l.inv_cols, l.eps);
    } else {
      const int nvec = static_cast<int>(l.cols / (16 / sizeof(T)));
      layernorm_affine_block_kernel<T, G, VPT, M, WB, kKeepX, kTail><<<grid, G, 0, l.stream>>>(
          l.x, l.weight, l.bias, l.y, nvec, l.inv_cols, l.eps);
    }
    return cudaGetLastError();
  });
}

template <typename T, int THREADS, int VPT, bool WARP_ROWS = false>
cudaError_t launch_shifted_wb(const Launch<T>& l);
template <typename T, int THREADS, int VPT>
cudaError_t launch_funnel_wb(const Launch<T>& l);
template <typename T, int THREADS, int VPT, bool PAIRED = false, bool BIAS_AT_SLOT = false>
cudaError_t launch_offset_wb(const Launch<T>& l);

// 16-bit rows off the boundary for layernorm_offset_wb_kernel: weight and bias both given
// and 16-byte aligned (it reads them from their aligned vectors), on a GPU like the H200.
template <typename T>
bool takes_offset_wb(const Launch<T>& l) {
  return l.weight && l.bias && l.wb_vec && fast_memory_per_sm();
}

// Whether every row's head (its elements before a 16-byte boundary) is even: x on a
// 4-byte boundary and rows of an even length.
template <typename T>
bool even_heads(const Launch<T>& l) {
  return reinterpret_cast<std::uintptr_t>(l.x) % 4 == 0 && l.cols % 2 == 0;
}

// The block kernel of affine_row shaped to a row of nvec vectors, for lengths the
// table in launch_rows does not name (129 to 2,047 16-bit vectors, 4,095 fp32, not
// a power of two): THREADS a power of two from 64, the fewest that hold the row in
// at most 6 vectors each at 64 threads, 7 (16-bit) or 8 (fp32) from 128, and VPT
// the fewest that then fit, so only the last slot may be past the row's end
// (kTail). x loaded with its L2 policy; weight and bias after the reduction, fp32
// as shifted floats (kLate), 16-bit vector by vector (kInOrder; from 6 vectors
// 768 threads an SM, 80 registers: at 64, 6 and 7 spilled, and bf16 8 spilled
// at 80). Welford's kernels only: methods 1 and 2, the notebook's comparisons,
// keep the general kernels at these lengths.
// SHIFTED: rows whose length is not a multiple of the vector, nvec = cols / N
// (16-bit: layernorm_shifted_wb_kernel; fp32: layernorm_funnel_wb_kernel),
// rather than aligned rows.
// Aligned rows on a GPU like the H200 take those rows' kernels at the shapes where they
// measured faster than this kernel (every row's head 0): 16-bit rows from 513 vectors in
// blocks of 128 and 256 threads (the offset kernel), but fp16 at 128 x 7; fp32 rows at
// 512 x 5 and 512 x 6 (the funnel kernel); bf16 rows of 161 to 255 vectors but 192, in
// 64 x 3 and 64 x 4 (the offset kernel). The measurements: book/layernorm-notes.md,
// section launch_shaped_block.
template <typename T, int THREADS, int VPT, int MAX_VPT, bool SHIFTED>
cudaError_t launch_shaped_block(const Launch<T>& l, int64_t nvec) {
  constexpr WbLoad WB = sizeof(T) == 4 ? WbLoad::kLate : WbLoad::kInOrder;
  constexpr int kSlots = THREADS * VPT;
  if constexpr (VPT < MAX_VPT) {
    if (nvec > kSlots) return launch_shaped_block<T, THREADS, VPT + 1, MAX_VPT, SHIFTED>(l, nvec);
  }
  // The offset kernel (takes_offset_wb), in blocks of 128 and 256 threads (512 x 4 is
  // the H100's shape). Blocks of 64 threads here (64 x 5 and 64 x 6) keep the shifted
  // kernel (the offset kernel took 0.85-0.91 of its speed at 3,001 halves, 64 x 6). bf16
  // rows of 7 vectors a thread take it with each slot's bias loaded at that slot (numbers
  // in book/layernorm-notes.md), and so do fp16 rows at 128 x 7 whose heads are not all even: the
  // shifted kernel's time over it (H200 …9466, copy 3,906-3,951 GB/s, 256 MiB, 30 paired
  // rounds) 1.044 at 6,153 halves (91.8% -> 96.0% of the copy), 1.062 at 6,601 (89.8 ->
  // 94.9) and 7,001 (90.0 -> 95.0), 1.068 at 7,167 (90.4 -> 96.9), 1.008 at 6,201, where
  // with bias a slot ahead it had taken 0.984-0.986 of the shifted kernel's speed at 7,001;
  // as built (…4384, copy 3,912-3,980 GB/s) 1.051-1.072 at 6,153 to 7,169 (89.0-90.8% ->
  // 94.8-96.1%) but 1.018 at 6,201 (90.0 -> 91.4%), the rest unchanged (0.994-1.007).
  // fp16 rows whose heads are all even keep bias a slot ahead (with it at its slot 0.977
  // at 6,500, 0.989 at 7,150, 0.994 aligned at 7,000; …9466).
  constexpr bool kOffset = sizeof(T) == 2 && (THREADS == 128 || THREADS == 256);
  constexpr bool kHalf128x7 = VPT == 7 && THREADS == 128 && std::is_same_v<T, __half>;
  if constexpr (SHIFTED && sizeof(T) == 2) {
    if constexpr (kOffset) {
      if (takes_offset_wb(l)) {
        if constexpr (kHalf128x7) {
          if (!even_heads(l)) return launch_offset_wb<T, THREADS, VPT, false, true>(l);  // bias at its slot
        }
        return launch_offset_wb<T, THREADS, VPT>(l);
      }
    }
    return launch_shifted_wb<T, THREADS, VPT>(l);
  } else if constexpr (SHIFTED) {
    return launch_funnel_wb<T, THREADS, VPT>(l);
  } else {
    if constexpr (kOffset && !kHalf128x7) {
      if (nvec > 512 && takes_offset_wb(l)) return launch_offset_wb<T, THREADS, VPT>(l);
    } else if constexpr (std::is_same_v<T, __nv_bfloat16> && THREADS == 64 && VPT <= 4) {
      if (nvec != kSlots && takes_offset_wb(l)) return launch_offset_wb<T, THREADS, VPT>(l);
    } else if constexpr (sizeof(T) == 4 && THREADS == 512 && (VPT == 5 || VPT == 6)) {
      if (l.wb_vec && fast_memory_per_sm()) return launch_funnel_wb<T, THREADS, VPT>(l);
    }
    if constexpr ((kSlots & (kSlots - 1)) != 0) {  // (a power of two never comes here)
      if (nvec == kSlots) return launch_affine<T, THREADS, VPT, WB, 1, true, false, true>(l);
    }
    return launch_affine<T, THREADS, VPT, WB, 1, true, true, true>(l);
  }
}

// The offset kernel a warp a row, for rows of 129 to 176 vectors (launch_shaped has
// which rows and the numbers): 32 x 5 to 160 vectors, 32 x 6 above.
template <typename T>
cudaError_t launch_offset_warp_rows(const Launch<T>& l, int64_t nvec) {
  return nvec <= 160 ? launch_offset_wb<T, 32, 5>(l) : launch_offset_wb<T, 32, 6>(l);
}

template <typename T, bool SHIFTED = false>
cudaError_t launch_shaped(const Launch<T>& l, int64_t nvec) {
  constexpr int kMax = sizeof(T) == 4 ? 8 : 7;  // vectors a thread from 128 threads
  if constexpr (SHIFTED && sizeof(T) == 2) {  // a warp a row, four rows a block (see WARP_ROWS)
    // Rows of 129 to 176 vectors whose heads are all even (1,032 to 1,415 halves), weight
    // and bias given (takes_offset_wb): the offset kernel a warp a row, 32 x 5 and 32 x 6,
    // in place of this kernel's 128 x 5 and the offset kernel's 64 x 3. A warp a row:
    // 1,024 threads an SM at 64 registers (32 x 5), 768 at 80 (32 x 6, fp16's bias at its
    // slot); its reduction is shuffles and one warp's barrier. The kernels before over
    // these, as built (H200s …3070 and …5071, 2026-11-29, copy 3,920-4,002 GB/s, 256
    // MiB, 30 paired rounds), fp16 / bf16: 1,034 1.029 / 1.033, 1,102 1.034 / 1.040
    // (95.0 / 93.8% -> 98.1 / 97.4% of the copy), 1,150 1.041 / 1.045, 1,250 1.035 /
    // 1.046, 1,286 1.050 / 1.057 (93.8 / 92.6% -> 99.3 / 97.4%); 32 x 6: 1,290 1.060 /
    // 1.077, 1,300 1.043-1.049 / 1.049-1.064 (91.3 / 91.7% -> 95.5 / 97.6%), 1,350 1.027
    // / 1.050, 1,402 1.028 / 1.037, 1,414 1.007 / 1.039. From 177 vectors 64 x 3 stays:
    // 32 x 6 took 0.985-0.986 of its speed in fp16 at 1,534 and 1,542 (bf16 1.004). With
    // odd heads, 32 x 5 took 0.77-0.81 of 128 x 5's speed (1,033, 1,201), 32 x 6
    // 0.74-0.75 of 64 x 3's at 1,301 and 0.89-0.91 with its heads paired (1,301,
    // 1,537), 32 x 4 0.89-0.92 at 1,025; 32 x 7 tied at 1,550 and 1,700 (0.988-1.007),
    // 32 x 8 lost (0.61 at 1,801; …9385, …5858).
    if (nvec > 128 && nvec <= 176 && takes_offset_wb(l) && even_heads(l)) {
      return launch_offset_warp_rows(l, nvec);
    }
    if (nvec <= 128) return launch_shifted_wb<T, 128, 4, true>(l);  // 1,025 to 1,031 halves
    if (nvec <= 160) return launch_shifted_wb<T, 128, 5, true>(l);
    if (takes_offset_wb(l)) {
      // The offset kernel from 161 vectors, where a warp a row holds 6 to 8 vectors a
      // lane: 64 x 3 and 64 x 4 (1,288 to 2,055 halves), and 128 x 3 for 321 to 384
      // vectors (2,568 to 3,079), in place of the shifted kernel's 64 x 6 (numbers in
      // book/layernorm-notes.md).
      if (nvec <= 192) return launch_offset_wb<T, 64, 3>(l);
      if (nvec <= 256) return launch_offset_wb<T, 64, 4>(l);
      // 257 to 320 vectors (2,056 to 2,567 halves) as 64 x 5 where every row's head
      // is even: 1.07-1.10 times the shifted kernel's speed at 2,058 to 2,566 halves.
      // Where heads are odd it took 0.88-1.04 (under 1 but bf16 2,545 and 2,567), its
      // blocks' 8 head branches at once missing the instruction cache (ncu: 5.35 warps
      // stalled for an instruction an issue at 2,059, 0.16 at 2,058; H200s,
      // book/results.md). There the kernel takes its heads paired (4 branches; PAIRED),
      // against the shifted kernel (H200s, 256 MiB, 30 paired rounds): fp16 1.021-1.086
      // times as fast at 2,057 to 2,567 halves (88.5-90.6% -> 91.8-96.8% of the copy;
      // …4647, …7781), bf16 at 896 threads an SM 0.969-1.077 (88.6-91.0% ->
      // 87.7-96.6%; …3623, …3547; 2,075 the one loss). At even heads that form took
      // 0.95 of the 8 branches' speed, and bf16 at 1,024 threads spilled 8-28 bytes.
      if (nvec <= 320 && even_heads(l)) return launch_offset_wb<T, 64, 5>(l);
      if (nvec <= 320) return launch_offset_wb<T, 64, 5, true>(l);
      if (nvec > 320 && nvec <= 384) return launch_offset_wb<T, 128, 3>(l);
    }
    if (nvec <= 192) return launch_shifted_wb<T, 128, 6, true>(l);
    if (nvec <= 224) return launch_shifted_wb<T, 128, 7, true>(l);
    if (nvec <= 256) return launch_shifted_wb<T, 128, 8, true>(l);
  } else if constexpr (sizeof(T) == 2) {
    // Aligned rows of 129 to 160 vectors (1,032 to 1,280 halves; fp16 to 152) on a GPU
    // like the H200: a warp a row, 5 vectors a lane, as the rows off the boundary (every
    // head 0), where 64 x 3 leaves up to a third of its slots empty: 1.06-1.18 times as
    // fast at 1,032 to 1,104 halves, 1.01-1.08 at 1,200, bf16 1.03 at 1,280, at 95.2-96.1%
    // of the copy (H200 …7917, 256 MiB, 30 paired rounds); fp16 1.010 at 1,216, 1.000 at
    // 1,240, 0.984 at 1,264 and 0.971-0.980 at 1,280 (…7917, …8541, …1523).
    // With weight and bias given (takes_offset_wb), the offset kernel a warp a row (32 x
    // 5 and, to 168 vectors, 32 x 6; above) instead: 1.028-1.040 times as fast at 1,040
    // and 1,104 halves, 1.044-1.051 at 1,240 (95.0 / 95.3% -> 99.5 / 99.4% of the copy),
    // 1.014 / 1.045 at 1,280 (H200 …5858, 256 MiB, 30 paired rounds; as built on …3070,
    // 1.017-1.052 at 1,040 to 1,280, 94.2-98.1% -> 97.9-100.1%); against the block
    // kernel (fp16) and the offset kernel's 64 x 3 (bf16) at 161 to 168 (…6896, copy
    // 3,960-4,004 GB/s): fp16 1.019 at 1,288, 0.997-1.013 at 1,304 to 1,344; bf16 1.032
    // at 1,288 (96.1% -> 99.5%), 1.021-1.036 at 1,304 to 1,336, 1.008 at 1,344. At 175
    // and 191 vectors 32 x 6 measured 0.983-1.005 (1,400, 1,528; …5858), not taken.
    if (nvec <= 168 && takes_offset_wb(l)) {
      return launch_offset_warp_rows(l, nvec);
    }
    constexpr int64_t kWarpRowMax = std::is_same_v<T, __half> ? 152 : 160;
    if (nvec <= kWarpRowMax && fast_memory_per_sm()) return launch_shifted_wb<T, 128, 5, true>(l);
  }
  constexpr int kFirst64 = SHIFTED && sizeof(T) == 2 ? 5 : 3;  // nvec > 256 there, > 128 elsewhere
  if (nvec <= 64 * 6) return launch_shaped_block<T, 64, kFirst64, 6, SHIFTED>(l, nvec);
  if constexpr (SHIFTED && sizeof(T) == 4) {
    // fp32 rows off the boundary of 961 to 1,024 vectors on a GPU like the H200: 256 x 4,
    // not 128 x 8 (1.02-1.04 times as fast at 4,001 to 4,099 floats; numbers in book/layernorm-notes.md).
    if (nvec > 960 && nvec <= 1024 && fast_memory_per_sm()) return launch_shaped_block<T, 256, 4, 4, true>(l, nvec);
  }
  if (nvec <= 128 * kMax) return launch_shaped_block<T, 128, 4, kMax, SHIFTED>(l, nvec);
  if (nvec <= 256 * kMax) return launch_shaped_block<T, 256, 128 * kMax / 256 + 1, kMax, SHIFTED>(l, nvec);
  if constexpr (sizeof(T) == 2) {  // 1,793 to 2,048 vectors: 512 x 4
    // Rows off the boundary, on a GPU like the H200: 256 x 8, half the warps whose
    // statistics each row merges (16,383 halves: 1.04-1.06 on an H200, 0.99 on an
    // H100, where 14,501 measured 0.97-0.98). 8 vectors at 64 and 128 threads took
    // 0.86-0.89 of 128 x 4's and 256 x 4's speed at 4,097 and 8,191 halves (H200).
    // Rows off the boundary in at most 4 vectors a thread (blocks of up to 512, 1,024
    // threads an SM) took 0.98-1.02 of these shapes' speed at 3,001 to 16,383 halves
    // and 0.86 at 10,001 (H200 …5419).
    // Aligned rows there take the offset kernel at 256 x 8 (see launch_shaped_block;
    // 1.03-1.07 at 15,000 to 16,376 halves, H200 …7917), launched here: through
    // launch_shaped_block<T, 256, 8, 8, false> the block kernel at 256 x 8 would be
    // built too, never taken, and bf16 8 vectors spill there (above).
    if constexpr (SHIFTED) {
      if (fast_memory_per_sm()) return launch_shaped_block<T, 256, 8, 8, true>(l, nvec);
    } else {
      if (takes_offset_wb(l)) return launch_offset_wb<T, 256, 8>(l);
    }
    return launch_shaped_block<T, 512, 4, 4, SHIFTED>(l, nvec);
  } else {
    return launch_shaped_block<T, 512, 5, 8, SHIFTED>(l, nvec);
  }
}

// Dynamic shared memory for layernorm_shifted_wb_kernel: weight and bias, each of
// cols rounded up to the vector. Its grid, a multiple of N (one block a row class
// at least), no more than the rows need: for rows of a block each, the blocks that
// fit at once; for rows of a warp each (WARP_ROWS), enough blocks that each warp
// takes two rows of its class. A persistent grid waits for its slowest SM (see
// book/layernorm-notes.md, launch_rows); blocks of 128 threads whose weight and
// bias are a few KB refill the SMs as they free. Why two rows a warp, and the
// persistent grid for rows of a block each, with the forms that lost:
// book/layernorm-notes.md, section layernorm_shifted_wb_kernel's grid. The
// attribute (and for the persistent grid the occupancy) is asked at each launch:
// this path only takes launches that move more than the L2.
// The shape slot_map assumes: a row's body, whatever its head (at most N - 1
// elements), leaves only the last slot of some of its LANES threads empty.
template <int LANES, int VPT, int N>
bool shifted_shape_fits(int64_t cols) {
  return (cols - (N - 1)) / N >= static_cast<int64_t>(LANES) * (VPT - 1) &&
         cols / N <= static_cast<int64_t>(LANES) * VPT;
}

template <typename T, int THREADS, int VPT, bool WARP_ROWS>
cudaError_t launch_shifted_wb(const Launch<T>& l) {
  constexpr int N = 16 / sizeof(T);
  constexpr int kRowsAtOnce = WARP_ROWS ? THREADS / 32 : 1;
  if (!shifted_shape_fits<WARP_ROWS ? 32 : THREADS, VPT, N>(l.cols)) return cudaErrorInvalidValue;
  const int64_t bytes = 2 * ((l.cols + N - 1) / N * N) * static_cast<int64_t>(sizeof(T));
  const auto kernel = layernorm_shifted_wb_kernel<T, THREADS, VPT, WARP_ROWS>;
  int per_sm = 0;
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(bytes));
  if (err == cudaSuccess && !WARP_ROWS) {  // the persistent grid's size
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, THREADS, static_cast<size_t>(bytes));
  }
  if (err != cudaSuccess) return err;
  const int64_t classes = (l.rows + N * kRowsAtOnce - 1) / (N * kRowsAtOnce);  // blocks one class could use
  constexpr int64_t kRowsAWarp = 2;  // WARP_ROWS: rows each warp takes (above)
  int64_t blocks = WARP_ROWS ? (classes + kRowsAWarp - 1) / kRowsAWarp
                             : static_cast<int64_t>(sm_count()) * per_sm / N;
  blocks = (blocks < 1 ? 1 : blocks < classes ? blocks : classes) * N;
  kernel<<<static_cast<unsigned>(blocks), THREADS, static_cast<size_t>(bytes), l.stream>>>(
      l.x, l.weight, l.bias, l.y, l.rows, l.cols, l.inv_cols, l.eps);
  return cudaGetLastError();
}

template <typename T, int THREADS, int VPT, bool PAIRED, bool BIAS_AT_SLOT>
cudaError_t launch_offset_wb(const Launch<T>& l) {
  if (!shifted_shape_fits<THREADS, VPT, 8>(l.cols)) return cudaErrorInvalidValue;
  layernorm_offset_wb_kernel<T, THREADS, VPT, PAIRED, BIAS_AT_SLOT>
      <<<static_cast<unsigned>(l.rows), THREADS, 0, l.stream>>>(l.x, l.weight, l.bias, l.y, l.cols, l.inv_cols, l.eps);
  return cudaGetLastError();
}

// On a GPU like the H200, with weight and bias both given, blocks of 256 and 512
// threads load weight and bias two slots at a time (PAIRS), but 512 x 8 (16,383
// floats, 0.993-0.996). Probes first (H200s, 2026-11-29, 256 MiB, 30 paired rounds):
// with no lane loading vector j + 1 and no shuffles (wrong weights, timing only) the
// kernel gained only 1.5-1.9%, with two slots' loads at once 2.6-5.8% (95.7-98.2% of
// the copy); vector j + 1 copied into shared memory during the reduction (cp.async)
// lost 3-9%, and so did every form that spilled. As built, the slot-by-slot form's
// time over this one's (…9737, copy 3,953-3,998 GB/s): 4,097 floats 1.020 (97.4% ->
// 98.8% of the copy), 6,001 1.020, 7,001 1.023 (96.3 -> 98.3), 8,191 1.008, 10,001
// 1.018 (94.6 -> 96.0), 11,001 1.016 (93.5 -> 95.0), 12,289 1.021 (92.4 -> 94.6),
// 13,001 1.024, 14,001 1.030 (91.1 -> 94.1); aligned rows at 512 x 5 1.010-1.012
// (9,000 and 10,000). Outputs bit for bit the same. Not measured on an H100, which
// keeps the slot-by-slot form.
template <typename T, int THREADS, int VPT>
cudaError_t launch_funnel_wb(const Launch<T>& l) {
  if (!shifted_shape_fits<THREADS, VPT, 4>(l.cols)) return cudaErrorInvalidValue;
  auto kernel = l.weight && l.bias ? layernorm_funnel_wb_kernel<T, THREADS, VPT, true>
                                   : layernorm_funnel_wb_kernel<T, THREADS, VPT, false>;
  if constexpr (THREADS >= 256 && !(THREADS == 512 && VPT == 8)) {
    if (l.weight && l.bias && fast_memory_per_sm()) kernel = layernorm_funnel_wb_kernel<T, THREADS, VPT, true, true>;
  }
  kernel<<<static_cast<unsigned>(l.rows), THREADS, 0, l.stream>>>(l.x, l.weight, l.bias, l.y, l.cols, l.inv_cols,
                                                                  l.eps);
  return cudaGetLastError();
}

// FEW: a few-rows launch (see launch_rows): the method fixed at compile time and
// weight and bias loaded with the row.
template <typename T, int N, bool PEEL, int THREADS, int VPT, bool FEW = false>
cudaError_t launch_block(const Launch<T>& l) {
  if constexpr (FEW) {
    static_assert(kFewRows <= kMaxGrid, "a few-rows launch has a block per row");
    const bool even = !PEEL && l.cols == static_cast<int64_t>(THREADS) * VPT * N;
    const auto run = [&](auto m) {
      constexpr int kMethod = decltype(m)::value;
      if constexpr (!PEEL) {
        if (even) {
          layernorm_block_kernel<T, N, PEEL, THREADS, VPT, kMethod, true>
              <<<static_cast<unsigned>(l.rows), THREADS, 0, l.stream>>>(
              l.x, l.weight, l.bias, l.y, l.rows, l.cols, l.inv_cols, l.eps, l.method, l.wb_vec);
          return;
        }
      }
      layernorm_block_kernel<T, N, PEEL, THREADS, VPT, kMethod><<<grid_for(l.rows), THREADS, 0, l.stream>>>(
          l.x, l.weight, l.bias, l.y, l.rows, l.cols, l.inv_cols, l.eps, l.method, l.wb_vec);
    };
    with_method(l.method, run);
  } else {
    layernorm_block_kernel<T, N, PEEL, THREADS, VPT><<<grid_for(l.rows), THREADS, 0, l.stream>>>(
        l.x, l.weight, l.bias, l.y, l.rows, l.cols, l.inv_cols, l.eps, l.method, l.wb_vec);
  }
  return cudaGetLastError();
}

template <typename T, int N, int THREADS, int VPT>
cudaError_t launch_row_pairs(const Launch<T>& l) {
  layernorm_row_pair_kernel<T, N, THREADS, VPT><<<grid_for((l.rows + 1) / 2), THREADS, 0, l.stream>>>(
      l.x, l.weight, l.bias, l.y, l.rows, l.cols, l.inv_cols, l.eps, l.method);
  return cudaGetLastError();
}

// The stash takes the block's share of the SM's shared memory (its blocks per
// SM as the registers allow), asked for once per kernel: on an H100 or H200,
// about 113 KB for each of two blocks of 512 threads. It is used only where the
// rows of all resident blocks together fill more than half of L2; below that
// the second sweep finds the row in L2 anyway. H200, 256 MiB, % of a copy in the
// same rounds, without -> with the stash (measured while rows of up to 8,192
// 16-byte vectors still streamed; now only longer rows and the scalar path's
// do): rows of 128 KB (fp16 65,536 columns)
// 62.7 -> 68.3, bf16 63.2 -> 68.3, fp32 32,768 66.5 -> 75.0; 256 KB (fp32
// 65,536) 59.9 -> 61.5; but rows of 64-80 KB, 17-21 MB in flight over 264
// blocks (fp16 40,000 columns) 73.9 -> 71.5, bf16 32,776 74.5 -> 71.8. One
// block of 1,024 threads with 227 KB was slower still at 80 KB: 57%.
struct StreamingFit {
  cudaError_t err;      // of the queries
  int64_t stash_bytes;  // dynamic shared memory a block may take (0: no stash)
  int64_t half_l2;      // bytes
  int64_t resident;     // blocks the GPU holds at once
};

template <typename Kernel>
StreamingFit query_streaming_fit(Kernel kernel) {
  int device = 0, per_sm = 0, per_block = 0, l2 = 0, sms = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&per_block, cudaDevAttrMaxSharedMemoryPerBlockOptin, device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err != cudaSuccess) return {err, 0, 0, 0};
  // 1 KB of each block's share is the system's; the reductions' slots are static
  const int slots_bytes = static_cast<int>(sizeof(float)) * 3 * 2 * kStreamingThreads / 32;
  const int share = per_sm / kStreamingBlocksPerSm - 1024 - slots_bytes;
  int bytes = (share < per_block ? share : per_block) / 16 * 16;
  if (bytes < 0 || cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes) != cudaSuccess) {
    cudaGetLastError();  // no stash: every sweep reads global memory
    bytes = 0;
  }
  return {cudaSuccess, bytes, l2 / 2, static_cast<int64_t>(sms) * kStreamingBlocksPerSm};
}

template <typename T, int N, bool PEEL>
cudaError_t launch_streaming(const Launch<T>& l) {
  const auto kernel = layernorm_streaming_kernel<T, N, PEEL>;
  static const StreamingFit fit = query_streaming_fit(kernel);  // once per kernel; a process uses one kind of GPU
  if (fit.err != cudaSuccess) return fit.err;
  const int64_t body_bytes = l.cols * static_cast<int64_t>(sizeof(T));  // at least any row's body
  const bool fills_l2 = body_bytes * (l.rows < fit.resident ? l.rows : fit.resident) > fit.half_l2;
  const int64_t bytes = !fills_l2 ? 0 : body_bytes < fit.stash_bytes ? (body_bytes + 15) / 16 * 16 : fit.stash_bytes;
  const int64_t stash = bytes / static_cast<int64_t>(sizeof(Pack<T, N>));
  kernel<<<grid_for(l.rows), kStreamingThreads, bytes, l.stream>>>(
      l.x, l.weight, l.bias, l.y, l.rows, l.cols, l.inv_cols, l.eps, l.method, l.wb_vec, stash);
  return cudaGetLastError();
}

// Picks the kernel for rows of `cols` elements moved N at a time (nvec vectors), in
// this order (the header's "Paths" and "Row lengths" say what each kernel does):
//   Few rows (<= kFewRows, one wave) of more than kFewRowsMinVectors aligned vectors:
//     the launch's time is latency, so one block a row and the row spread thin (32 to
//     512 threads of one vector, 512 x 2, and 1,024 x 2 for 1,025 to 2,048 vectors when
//     each row gets an SM of its own), weight and bias loaded with x, so that the launch
//     waits on memory once.
//   Many aligned rows with weight and bias at the lengths affine_row names: x, weight
//     and bias loaded at once. Past the L2, aligned lengths between the powers of two
//     (129 to 2,047 16-bit or 4,095 fp32 vectors) take kernels shaped to the row
//     (launch_shaped).
//   Many rows off the vector boundary past the L2 (16-bit from 128 vectors, fp32 from
//     129 with weight and bias aligned, to 2,048 and 4,096; on an H100 not at a power of
//     two): shaped to the row too, 16-bit rows in layernorm_shifted_wb_kernel or, on a
//     GPU like the H200 with weight and bias given, layernorm_offset_wb_kernel; fp32 rows
//     in layernorm_funnel_wb_kernel.
//   nvec <= 128: G lanes a row, the fewest (at least 4, 16 when peeled) that leave each
//     lane at most kWarpPathVpt vectors (2 for fp32, 4 otherwise), then 32 lanes x 4;
//     many aligned rows of 1 to 4 vectors one lane a row (1 or 2 vectors) or two.
//   nvec <= 4,096 (16,384 floats, 32,768 halves): the row stays in registers. Many rows
//     (>= kManyRows) of 257 to 2,048 aligned vectors two rows a block of 128, 256 or 512
//     threads x 4 vectors, sharing each weight and bias load (fp32 rows of 1,025 to
//     2,048 vectors a block each, kDenseFp32); otherwise one block a row, 64 to 512
//     threads x 4 vectors, then 512 x 8.
//   The scalar path (one element a slot) goes on to 512 threads x 16 or 32.
//   nvec <= 8,192 (16-byte vectors): one block a row of 1,024 threads x 8, one block
//     per SM.
//   longer: streaming.
// Why each choice, with the measurements behind it and the forms that lost:
// book/layernorm-notes.md, section launch_rows.
template <typename T, int N, bool PEEL>
cudaError_t launch_rows(const Launch<T>& l) {
  const int64_t nvec = l.cols / N;  // a row's body has at most this many vectors
  constexpr int V = kWarpPathVpt<N>;
  if constexpr (!PEEL && N > 1) {  // few rows of 16-byte vectors: latency (see above)
    if (l.rows <= kFewRows && nvec > kFewRowsMinVectors) {
      if (nvec <= 32) return launch_block<T, N, PEEL, 32, 1, true>(l);
      if (nvec <= 64) return launch_block<T, N, PEEL, 64, 1, true>(l);
      if (nvec <= 128) return launch_block<T, N, PEEL, 128, 1, true>(l);
      if (nvec <= 256) return launch_block<T, N, PEEL, 256, 1, true>(l);
      if (nvec <= 512) return launch_block<T, N, PEEL, 512, 1, true>(l);
      if (nvec <= 1024) return launch_block<T, N, PEEL, 512, 2, true>(l);
      if (nvec <= 2048 && l.rows <= sm_count()) return launch_block<T, N, PEEL, 1024, 2, true>(l);
    }
  }
  if constexpr (!PEEL && N > 1) {  // many rows with weight and bias, of these lengths: see affine_row
    if (l.rows > kFewRows && l.rows <= kMaxAffineRows && l.weight != nullptr && l.bias != nullptr) {
      if constexpr (N == 8) {
        if (nvec == 16) return launch_affine<T, 16, 1, WbLoad::kEarly, 2>(l);  // 128 halves
        if (nvec == 32) return launch_affine<T, 16>(l);
        if (nvec == 64) return launch_affine<T, 32>(l);
        if (nvec == 128) return launch_affine<T, 64>(l);
        if (nvec == 256) return launch_affine<T, 128>(l);
        if (nvec == 512 && fast_memory_per_sm()) return launch_affine<T, 256>(l);
        if (nvec == 1024 && moves_past_l2(l)) {  // 8,192 halves past the L2 (see kKeepX)
          return launch_affine<T, 256, 4, WbLoad::kInOrder, 1, true>(l);
        }
        if (nvec == 2048) {  // 16,384 halves
          if (moves_past_l2(l)) return launch_affine<T, 512, 4, WbLoad::kInOrder, 1, true>(l);
          return launch_affine<T, 512, 4, WbLoad::kInOrder>(l);
        }
      } else {
        if (nvec == 32) return launch_affine<T, 16, 2, WbLoad::kEarly, 2>(l);  // 128 floats
        if (nvec == 256) return launch_affine<T, 128>(l);
        if (nvec == 1024 && keep_x_in_l2(l)) return launch_affine<T, 128, 8, WbLoad::kLate, 1, true>(l);
        if (nvec == 1024 && fast_memory_per_sm()) return launch_affine<T, 512>(l);
        if (nvec == 2048) {
          return keep_x_in_l2(l) ? launch_affine<T, 512, 4, WbLoad::kEarly, 1, true>(l) : launch_affine<T, 512, 4>(l);
        }
        if (nvec == 4096) {
          if (keep_x_in_l2(l)) return launch_affine<T, 512, 8, WbLoad::kLate, 1, true>(l);
          return fast_memory_per_sm() ? launch_affine<T, 512, 8, WbLoad::kLate>(l) : launch_affine<T, 512, 8>(l);
        }
      }
      // Lengths between the powers of two, past the L2: shaped to the row (see above).
      const bool power_of_two = (nvec & (nvec - 1)) == 0;
      if (l.method == 0 && nvec > 128 && nvec <= (N == 8 ? 2048 : 4096) && !power_of_two && moves_past_l2(l)) {
        return launch_shaped(l, nvec);
      }
    }
  }
  if constexpr (PEEL && N > 1) {  // many rows off the vector boundary, past the L2
    // On an H100 not at a power of two (the general kernels' slots full: see
    // above). fp32's kernel (a block a row) needs weight and bias aligned.
    // 16-bit rows from 128 vectors (1,025 to 1,031 halves): the peeled warp kernel
    // of 32 lanes x 4 ran them at 73.8-75.3% of a copy at 1,025 and 1,031 halves,
    // 87.3% at 1,028; launch_shifted_wb's warp a row at 4 vectors a lane 93.8-96.1%,
    // 1.10-1.28 times as fast (H200 …2779, 30 paired rounds, fp16 and bf16; not
    // measured on an H100, which keeps the peeled kernel at this power of two).
    const bool power_of_two = (nvec & (nvec - 1)) == 0;
    constexpr int64_t kFewest = N == 8 ? 128 : 129;  // vectors: shorter rows take the warp kernels
    if (l.method == 0 && l.rows > kFewRows && l.rows <= kMaxAffineRows && (N == 8 || l.wb_vec) && nvec >= kFewest &&
        nvec <= (N == 8 ? 2048 : 4096) && (!power_of_two || fast_memory_per_sm()) && moves_past_l2(l)) {
      return launch_shaped<T, true>(l, nvec);
    }
  }
  if constexpr (!PEEL) {  // the peeled path needs 16 lanes for a row's head and tail
    if (l.rows > kFewRows && nvec <= 4) {  // many rows of 1 to 4 vectors: see above
      if (nvec == 1) return launch_warp<T, N, PEEL, 1, 1>(l);
      if (nvec == 2) return launch_warp<T, N, PEEL, 1, 2>(l);
      return launch_warp<T, N, PEEL, 2, 2>(l);
    }
    if (nvec <= 4 * V) return launch_warp<T, N, PEEL, 4, V>(l);
    if (nvec <= 8 * V) return launch_warp<T, N, PEEL, 8, V>(l);
  }
  if (nvec <= 16 * V) return launch_warp<T, N, PEEL, 16, V>(l);
  if (nvec <= 32 * V) return launch_warp<T, N, PEEL, 32, V>(l);
  if (V < 4 && nvec <= 32 * 4) return launch_warp<T, N, PEEL, 32, 4>(l);  // fp32, 257 to 512 columns
  if (nvec <= 64 * 4) return launch_block<T, N, PEEL, 64, 4>(l);
  if constexpr (!PEEL && N > 1) {  // many rows of 16-byte vectors: two rows per block
    if (l.rows >= kManyRows && nvec <= 512 * 4) {
      if (nvec <= 128 * 4) return launch_row_pairs<T, N, 128, 4>(l);
      if (nvec <= 256 * 4) return launch_row_pairs<T, N, 256, 4>(l);
      if constexpr (N == 4) return launch_block<T, N, PEEL, 512, 4>(l);  // fp32: a row per block (kDenseFp32)
      else return launch_row_pairs<T, N, 512, 4>(l);
    }
  }
  if (nvec <= 128 * 4) return launch_block<T, N, PEEL, 128, 4>(l);
  if (nvec <= 256 * 4) return launch_block<T, N, PEEL, 256, 4>(l);
  if (nvec <= 512 * 4) return launch_block<T, N, PEEL, 512, 4>(l);
  if (nvec <= 512 * 8) return launch_block<T, N, PEEL, 512, 8>(l);
  if constexpr (N == 1) {
    if (nvec <= 512 * 16) return launch_block<T, N, PEEL, 512, 16>(l);
    if (nvec <= 512 * 32) return launch_block<T, N, PEEL, 512, 32>(l);
  }
  if constexpr (N > 1) {
    if (nvec <= 1024 * 8) return launch_block<T, N, PEEL, 1024, 8>(l);
  }
  return launch_streaming<T, N, PEEL>(l);
}

std::uintptr_t misalignment(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16; }

template <typename T>
cudaError_t dispatch(const T* x, const T* weight, const T* bias, T* y, int64_t rows, int64_t cols, float eps,
                     int method, cudaStream_t stream) {
  if (method < 0 || method > 2) return cudaErrorInvalidValue;
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  constexpr int N = 16 / sizeof(T);  // elements per 16-byte vector
  const bool wb_vec = misalignment(weight) == 0 && misalignment(bias) == 0;  // nullptr counts as aligned
  Launch<T> l{x, weight, bias, y, rows, cols, static_cast<float>(1.0 / static_cast<double>(cols)), eps, method,
              wb_vec, stream};
  if (cols % N == 0 && misalignment(x) == 0 && misalignment(y) == 0 && wb_vec) return launch_rows<T, N, false>(l);
  if (misalignment(x) == misalignment(y)) return launch_rows<T, N, true>(l);
  l.wb_vec = true;  // the scalar path reads weight and bias per element anyway
  return launch_rows<T, 1, false>(l);
}

}  // namespace

// method: 0 = Welford + Chan (the stage), 1 = two-pass, 2 = E[x^2] - E[x]^2 (unstable).
// weight, bias: may be nullptr (read as 1 and 0). y must not alias x.
// Returns cudaErrorInvalidValue for another method, cudaSuccess without a launch
// when rows or cols is <= 0, else the launch's cudaGetLastError().
cudaError_t layernorm_forward(const float* x, const float* weight, const float* bias, float* y, int64_t rows,
                              int64_t cols, float eps, int method, cudaStream_t stream) {
  return dispatch(x, weight, bias, y, rows, cols, eps, method, stream);
}

cudaError_t layernorm_forward(const __half* x, const __half* weight, const __half* bias, __half* y, int64_t rows,
                              int64_t cols, float eps, int method, cudaStream_t stream) {
  return dispatch(x, weight, bias, y, rows, cols, eps, method, stream);
}

cudaError_t layernorm_forward(const __nv_bfloat16* x, const __nv_bfloat16* weight, const __nv_bfloat16* bias,
                              __nv_bfloat16* y, int64_t rows, int64_t cols, float eps, int method,
                              cudaStream_t stream) {
  return dispatch(x, weight, bias, y, rows, cols, eps, method, stream);
}
