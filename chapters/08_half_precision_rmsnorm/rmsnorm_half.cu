// Chapter 08 — RMSNorm in fp16 and bf16: upcast or overflow, and copy speed at every row length
//
//   y[r, i] = round_T( float(x[r, i]) * rsqrt(mean_i(float(x[r, i])^2) + eps) * float(weight[i]) )
//
// What this stage adds over chapter 05:
//   * fp16 and bf16 (and fp32, through the same code) with fp32 arithmetic. Every
//     element is upcast to float on load, squared and summed in float, multiplied by
//     the weight in float, and rounded to T once, on store. The upcast is not a
//     detail: fp16 ends at 65,504. Once the input's standard deviation passes about
//     70, a sum of squares kept in half overflows (a 4,096-long row sums to about
//     20 million; squares of the larger elements overflow on their own), and the
//     outputs become Inf, NaN or 0 instead of numbers near 1. In fp32, inputs near
//     6e4 (squares near 3.6e9) are ordinary numbers.
//   * 16-byte packs whatever the dtype: 8 halves or 4 floats per load and store, so
//     a half row moves twice the elements per instruction of a float row.
//   * Several rows per block for short rows. One block per row of 128 halves leaves
//     most of the block idle and spends a barrier on 256 bytes; here a group of
//     1 to 32 lanes owns a row (aligned fp32: two rows at once), a block of 64
//     threads (32 for aligned fp32) holds 2 to 64 rows, and the row's sum is a
//     shuffle within the group, with no __syncthreads.
//   * Peeled heads and tails. Chapter 05 took a scalar path for a whole launch as
//     soon as one row was misaligned. With 769 halves per row, row r starts at byte
//     1538 r, so each row's first 16-byte boundary is somewhere else. Every row is
//     now split into a head (scalar elements up to x's first 16-byte boundary), a
//     body of whole 16-byte packs and a tail (scalar elements after the last pack).
//     The weight and y are read and written at the same in-row positions; where the
//     row's body does not start on a 16-byte boundary of the weight (or of y), those
//     packs move in 8-, 4- or 2-byte pieces instead (the widest the address allows).
//     The weight is read from L1/L2 by every row, so its narrower loads cost
//     instructions, not DRAM bandwidth; x and y always move in 16-byte packs unless
//     y's offset from x is not a multiple of 16 bytes (then y moves in pieces too),
//     so a caller allocates y as far past a 16-byte boundary as x.
//   * An aligned copy of every kernel. When x, weight and y are 16-byte aligned and
//     a row is a whole number of packs (the usual case), every row is all body: a
//     template flag removes the peel at compile time, which saves registers and
//     the steps before the first load that a launch of a few rows waits on.
//   * Every load of a row is issued before the reduction, the weight's included
//     (with up to 4 packs a thread): a launch of a few rows then waits for memory
//     once, not twice. mean = sum * (1 / cols), the reciprocal computed on the host.
//
// Paths, picked per launch from the row length (P = whole 16-byte packs per row):
//   * P <= 128 (up to 1,031 halves or 515 floats): G = 8, 16 or 32 lanes per row
//     (the fewest that hold the row in <= 4 packs a lane); for many aligned rows,
//     1 or 2 (a pack a lane) for rows of 1 or 2 packs and 4 for up to 8 packs.
//     64 threads, 64 / G rows per block; shuffle reduction within the G lanes.
//     Many aligned 16-bit rows of 33 to 64 packs: 32 lanes in blocks of 128 (on an
//     H100 also 9 to 16 packs: 16 lanes of one pack in blocks of 512); many peeled
//     16-bit rows of 65 to 128 packs: 32 lanes in blocks of 128.
//     Aligned fp32 rows: 32-thread blocks, each group of G lanes taking two rows
//     at once. A few (<= 256) such rows of 17 to 128 packs take the next path
//     instead, a block per row: the launch is one wave, and its time is latency.
//   * P <= 4,096 (32,768 halves or 16,384 floats, plus a partial pack): one block
//     per row, the row in registers. VPT packs per thread and a block of P / VPT
//     threads rounded up to a warp, at most 512: VPT starts at 4 (for at most 256
//     rows, where latency matters more than overlap, 1 for halves and 2 for fp32,
//     4 again from 32 fp32 rows up to one per SM: 4,096 halves then take 512
//     threads of one pack each, loaded in one step) and doubles while the block
//     would be too large, up to 8. With 8 the weight is loaded after the reduction,
//     to keep two blocks per SM within the registers. fp32 blocks of 257 to 384
//     threads at 4 packs each are held to 56 registers, so three fit per SM, not
//     two (rows of 4,100 to 6,144 floats; 5,125 on an H200: 93% -> 101% of a copy).
//   * P <= 8,192 (65,536 halves or 32,768 floats): the same with 8 packs a thread
//     in blocks of up to 1,024 threads, one per SM (fp32 32,768 columns on an
//     H200: 94% of a copy, where the streaming path below took 69%).
//   * longer rows: streaming fallback, 512 threads per row; x is read twice (the
//     second read mostly from L2). Correct for any length; slower than a copy.
// Every block walks rows with a grid stride (at most 65,535 blocks), so any number
// of rows works; row offsets are 64-bit.
//
// Semantics: torch's F.rms_norm for fp16/bf16 inputs with a weight of the same
// dtype: normalize in fp32, multiply by the weight in fp32, cast to T once. Some
// model code (vLLM, HF Llama) casts x * rsqrt(...) to T before the weight multiply;
// that differs by about one ulp of T in some elements.
//
// Limits: x, weight and y contiguous, each aligned to its element size (any offset
// within 16 bytes is fine, e.g. a tensor starting 2 bytes into an allocation); y
// must not alias x. rows <= 0 or cols <= 0: nothing to do. Rows past 8,192 packs
// take the streaming path (x read twice), one block of 512 threads per row: fine
// for many rows, slow for a handful of very long ones. Inputs must be finite with
// a finite fp32 sum of squares (|x| below about 1e19). 253 kernels (those of the
// register paths twice, with and without the L2 policy on x: keep_x_in_l2): about 25 s
// to compile at -O3.
//
// Build alone:   nvcc -std=c++17 -arch=sm_90 -c rmsnorm_half.cu
// Measured:      % of the copy of x in the same rounds (kernelbook.bench) at 256 MiB moved,
//                rows of 128 to 16,384, 2026-11-24. NVIDIA H200 (code e33b7be702e5; x with the
//                L2 policy; copy ~3,990-4,100 GB/s; chapter notebook): fp16 97.7-100.3%, bf16
//                97.8-101.1%, fp32 95.3-99.0% (16,384 columns lowest). NVIDIA H100 (code
//                df76cd8e4be4; plain loads; copy ~2,860-2,965 GB/s; book/results/rmsnorm-h100.json):
//                fp16 98.2-100.7%, bf16 98.0-100.5%, fp32 98.8-100.2%.
//                Longer rows, same runs: fp16/bf16 65,536 columns H200 82%, H100 95-96%;
//                fp32 32,768 H200 91%, H100 97%; fp32 65,536 (streaming) H200 64%, H100 67%.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>
#include <cstring>

namespace {

constexpr int kPackBytes = 16;
constexpr int kMaxBlockThreads = 512;    // one-row-per-block paths: block size limit
constexpr int kThreeBlockThreads = 384;  // fp32 blocks of 257-384 threads: three per SM
constexpr double kFastMemoryBytesPerSmPerUs = 32768;  // see memory_kind
constexpr int kWideBlockThreads = 1024;  // rows of 4,097 to 8,192 packs: one block per SM (Fit::kWide)
constexpr int kMaxGroupPacks = 4;        // several-rows path: at most 4 packs per lane
constexpr int kMaxPacksPerThread = 8;    // one-row-per-block register path: at most 8
constexpr int kFewRows = 256;            // at most this many rows: spread each row thin
constexpr int kFewRowsWide = 32;         // fp32: from this many few rows, 4 packs a thread (launch_in_registers)
constexpr int kFewRowsMinPacks = 16;     // a few aligned fp32 rows longer than this: a block each
constexpr int64_t kMaxBlocks = 65535;    // grid cap; blocks then loop over rows

// ---------------------------------------------------------------------------
// Element types. A pack is 16 bytes, held in registers as a uint4 (four 32-bit
// words): 4 floats, or 8 halves as four pairs (one __half2 / __nv_bfloat162 per
// word). Only intrinsics convert: torch builds with __CUDA_NO_HALF_CONVERSIONS__,
// __CUDA_NO_HALF_OPERATORS__, __CUDA_NO_HALF2_OPERATORS__ and
// __CUDA_NO_BFLOAT16_CONVERSIONS__, which remove the implicit conversions and
// operators.

template <class To, class From>
__device__ __forceinline__ To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
  To to;
  memcpy(&to, &from, sizeof(To));  // compiles to nothing: the bits stay in the register
  return to;
}

template <class T> struct Dtype;

template <> struct Dtype<float> {
  static __device__ __forceinline__ float to_float(float v) { return v; }
  static __device__ __forceinline__ float from_float(float v) { return v; }
};

template <> struct Dtype<__half> {
  static __device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
  static __device__ __forceinline__ __half from_float(float v) { return __float2half_rn(v); }
  static __device__ __forceinline__ float2 pair_to_float2(uint32_t w) {
    return __half22float2(bit_cast<__half2>(w));
  }
  static __device__ __forceinline__ uint32_t float2_to_pair(float lo, float hi) {
    return bit_cast<uint32_t>(__floats2half2_rn(lo, hi));  // lo lands at the lower address
  }
};

template <> struct Dtype<__nv_bfloat16> {
  static __device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
  static __device__ __forceinline__ __nv_bfloat16 from_float(float v) { return __float2bfloat16_rn(v); }
  static __device__ __forceinline__ float2 pair_to_float2(uint32_t w) {
    return __bfloat1622float2(bit_cast<__nv_bfloat162>(w));
  }
  static __device__ __forceinline__ uint32_t float2_to_pair(float lo, float hi) {
    return bit_cast<uint32_t>(__floats2bfloat162_rn(lo, hi));
  }
};

template <class T> constexpr int kPerPack = kPackBytes / static_cast<int>(sizeof(T));

template <class T>
__device__ __forceinline__ void unpack(const uint4& p, float (&f)[kPerPack<T>]) {
  const uint32_t w[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(T) == 4) {
      f[i] = __uint_as_float(w[i]);
    } else {
      const float2 v = Dtype<T>::pair_to_float2(w[i]);
      f[2 * i] = v.x;
      f[2 * i + 1] = v.y;
    }
  }
}

template <class T>
__device__ __forceinline__ uint4 pack(const float (&f)[kPerPack<T>]) {
  uint32_t w[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    if constexpr (sizeof(T) == 4) {
      w[i] = __float_as_uint(f[i]);
    } else {
      w[i] = Dtype<T>::float2_to_pair(f[2 * i], f[2 * i + 1]);
    }
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

template <class T>
__device__ __forceinline__ float sum_squares(const uint4& p) {
  float f[kPerPack<T>];
  unpack<T>(p, f);
  float s = 0.0f;
#pragma unroll
  for (int i = 0; i < kPerPack<T>; ++i) s = fmaf(f[i], f[i], s);
  return s;
}

// (x * inv_rms) * w in fp32, rounded to T once: torch's order of operations.
template <class T>
__device__ __forceinline__ uint4 normalize(const uint4& xp, float inv_rms, const uint4& wp) {
  float xf[kPerPack<T>], wf[kPerPack<T>];
  unpack<T>(xp, xf);
  unpack<T>(wp, wf);
#pragma unroll
  for (int i = 0; i < kPerPack<T>; ++i) xf[i] = xf[i] * inv_rms * wf[i];
  return pack<T>(xf);
}

// ---------------------------------------------------------------------------
// Memory access. x's packs are always 16-byte aligned (the peel sees to that).
// The weight and y are accessed at the same in-row positions, so their packs are
// aligned only where their base pointers' offset from x's row allows: `align` is
// the largest power of two (16, 8, 4 or 2) dividing the pack's address.

__device__ __forceinline__ int alignment_of(const void* p) {
  const uint32_t a = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p)) | 16u;
  return static_cast<int>(a & (0u - a));  // lowest set bit, at most 16
}

// A 16-byte load through the ordinary global path. The compiler turns a load
// through a const __restrict__ pointer (or __ldg) into the read-only one
// (LDG.E.128.CONSTANT); for a launch of a few rows, whose time is the latency of
// its loads, the ordinary one was faster (H200, % of a copy in the same rounds,
// fp32 rows of 4,096: 32 rows 79.2 against 78.0, 256 rows 88.9 against 88.0).
// The kernels that load the weight early (kEarlyWeight) use it; those that load
// it after the reduction keep the read-only path, which measured better there
// (fp32 rows of 16,384: 97.3% of a copy against 95.6%).
// Not volatile: the compiler may still schedule it like any other load.
__device__ __forceinline__ uint4 load_global(const void* p) {
  uint4 v;
  asm("ld.global.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

// x's 16-byte load with an L2 evict_last policy (see keep_x_in_l2).
__device__ __forceinline__ uint4 load_keep_in_l2(const void* p) {
  uint64_t policy;
  uint4 v;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  asm("ld.global.L2::cache_hint.v4.u32 {%0, %1, %2, %3}, [%4], %5;"
      : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p), "l"(policy));
  return v;
}

template <bool kPlain = false, class T>
__device__ __forceinline__ uint4 load_pack(const T* p, int align) {
  if (align >= 16) return kPlain ? load_global(p) : __ldg(reinterpret_cast<const uint4*>(p));
  if (align == 8) {
    const uint2* q = reinterpret_cast<const uint2*>(p);
    const uint2 a = __ldg(q), b = __ldg(q + 1);
    return make_uint4(a.x, a.y, b.x, b.y);
  }
  if constexpr (sizeof(T) == 2) {
    if (align == 2) {
      const unsigned short* q = reinterpret_cast<const unsigned short*>(p);
      uint32_t w[4];
#pragma unroll
      for (int i = 0; i < 4; ++i)
        w[i] = static_cast<uint32_t>(__ldg(q + 2 * i)) | (static_cast<uint32_t>(__ldg(q + 2 * i + 1)) << 16);
      return make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
  const unsigned int* q = reinterpret_cast<const unsigned int*>(p);
  return make_uint4(__ldg(q), __ldg(q + 1), __ldg(q + 2), __ldg(q + 3));
}

template <class T>
__device__ __forceinline__ void store_pack(T* p, const uint4& v, int align) {
  if (align >= 16) {
    *reinterpret_cast<uint4*>(p) = v;
    return;
  }
  if (align == 8) {
    uint2* q = reinterpret_cast<uint2*>(p);
    q[0] = make_uint2(v.x, v.y);
    q[1] = make_uint2(v.z, v.w);
    return;
  }
  if constexpr (sizeof(T) == 2) {
    if (align == 2) {
      unsigned short* q = reinterpret_cast<unsigned short*>(p);
      const uint32_t w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        q[2 * i] = static_cast<unsigned short>(w[i] & 0xffffu);
        q[2 * i + 1] = static_cast<unsigned short>(w[i] >> 16);
      }
      return;
    }
  }
  unsigned int* q = reinterpret_cast<unsigned int*>(p);
  q[0] = v.x;
  q[1] = v.y;
  q[2] = v.z;
  q[3] = v.w;
}

// Elements before x's first 16-byte boundary in this row (never more than the row).
template <class T>
__device__ __forceinline__ int64_t head_length(const T* row, int64_t cols) {
  const int misalign = static_cast<int>(reinterpret_cast<uintptr_t>(row) % kPackBytes);
  const int64_t head = ((kPackBytes - misalign) % kPackBytes) / static_cast<int>(sizeof(T));
  return head < cols ? head : cols;
}

// ---------------------------------------------------------------------------
// Reductions.

template <int WIDTH>
__device__ __forceinline__ float group_sum(float v) {  // over aligned groups of WIDTH lanes
#pragma unroll
  for (int offset = WIDTH / 2; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// Block-wide sum that every thread receives; one barrier. Rows alternate between
// the two halves of `slots`, so a fast warp can not overwrite a slow warp's inputs.
// kMaxWarps: the most warps a block of the caller has. Up to 16 (512 threads),
// the warps' sums take a 16-lane butterfly (each half-warp adds all of them), one
// shuffle step fewer than a full warp's; Fit::kWide's 1,024 threads take 32.
template <int kMaxWarps = 16>
__device__ __forceinline__ float block_sum(float v, float (*slots)[32], int parity) {
  static_assert(kMaxWarps == 16 || kMaxWarps == 32, "a half-warp or a warp adds the warps' sums");
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  v = group_sum<32>(v);
  if (lane == 0) slots[parity][warp] = v;
  __syncthreads();
  const int w = lane % kMaxWarps;
  return group_sum<kMaxWarps>(w < static_cast<int>(blockDim.x / 32) ? slots[parity][w] : 0.0f);
}

// ---------------------------------------------------------------------------
// One row in registers, shared by both register paths. `nthreads` threads (index
// `tid`) own the row: thread tid holds packs tid, tid + nthreads, ... (VPT slots,
// coalesced across threads), head element tid and tail element tid (nthreads is at
// least 8, more than a head or tail can hold). row_sum(v) returns the sum of v over
// the row's threads. Threads with active == false (a group past the last row) load
// and store nothing but still take part in row_sum.
//
// kAligned: the launcher found x, weight and y 16-byte aligned and the row a whole
// number of packs, so every row is all body. The peel and the narrow accesses
// then vanish at compile time: fewer registers and fewer steps before the first
// load, which is what a launch of a few rows waits on.
// kEarlyWeight: the weight packs are loaded together with x, before the
// reduction (one wait for memory, not two: what a launch of a few rows needs),
// at the cost of holding them in registers across it.
// kKeepX: x's packs are loaded with an L2 evict_last policy (see keep_x_in_l2).
template <class T, int VPT, bool kAligned, bool kEarlyWeight, bool kKeepX, class RowSum>
__device__ __forceinline__ void normalize_row(const T* __restrict__ xr, const T* __restrict__ weight,
                                              T* __restrict__ yr, int cols, float inv_cols, float eps,
                                              int tid, int nthreads, bool active, RowSum row_sum) {
  constexpr int N = kPerPack<T>;
  static_assert(!kEarlyWeight || VPT <= 4, "8 slots of x and weight do not fit in registers");
  constexpr bool kZeroSlots = VPT <= 4 && (kEarlyWeight || sizeof(T) == 4);  // see below

  int head = 0, body = active ? cols / N : 0, tail = 0;  // scalar head, 16-byte packs, scalar tail
  int w_align = kPackBytes, y_align = kPackBytes;
  if constexpr (!kAligned) {
    if (active) {
      head = static_cast<int>(head_length(xr, cols));
      body = (cols - head) / N;
      tail = cols - head - body * N;
    }
    w_align = alignment_of(weight + head);  // changes from row to row when cols * sizeof(T) % 16 != 0
    y_align = alignment_of(yr + head);      // 16 unless y's offset from x is not a multiple of 16 bytes
  }
  const T* xb = xr + head;
  const T* wb = weight + head;
  T* yb = yr + head;

  // Issue every load before the first use: the x packs, then (early) the weight
  // packs, then the head and tail scalars. With up to 4 slots a thread, a slot past the
  // row reads as zeros so that the sum below has no branch: a branch there let the
  // compiler wait for the first pack before issuing the second load, one memory
  // latency per slot for a launch of a few rows. With 8 slots the registers are
  // full (the zeros would spill), so those kernels test each slot in the sum; the
  // compiler still issues their 8 loads together. So do the 16-bit kDense
  // kernels (4 slots, weight loaded late): held to 40 registers, the zeros
  // spilled there, and their 4 loads still go out together (fp32's did not).
  uint4 xv[VPT], wv[VPT];
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int i = tid + k * nthreads;
    if constexpr (kZeroSlots) xv[k] = make_uint4(0u, 0u, 0u, 0u);
    if (i < body) xv[k] = kKeepX ? load_keep_in_l2(xb + i * N) : load_pack<kEarlyWeight>(xb + i * N, kPackBytes);
  }
  if constexpr (kEarlyWeight) {
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int i = tid + k * nthreads;
      if (i < body) wv[k] = load_pack<kEarlyWeight>(wb + i * N, w_align);
    }
  }
  const int tail_at = head + body * N + tid;
  float xh = 0.0f, wh = 0.0f, xt = 0.0f, wt = 0.0f;
  if constexpr (!kAligned) {
    if (tid < head) {
      xh = Dtype<T>::to_float(xr[tid]);
      wh = Dtype<T>::to_float(weight[tid]);
    }
    if (tid < tail) {
      xt = Dtype<T>::to_float(xr[tail_at]);
      wt = Dtype<T>::to_float(weight[tail_at]);
    }
  }

  float sum = xh * xh + xt * xt;
#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    if (kZeroSlots || tid + k * nthreads < body) sum += sum_squares<T>(xv[k]);
  }
  const float inv_rms = rsqrtf(row_sum(sum) * inv_cols + eps);

#pragma unroll
  for (int k = 0; k < VPT; ++k) {
    const int i = tid + k * nthreads;
    if (i < body) {
      if constexpr (!kEarlyWeight) wv[k] = load_pack(wb + i * N, w_align);
      store_pack(yb + i * N, normalize<T>(xv[k], inv_rms, wv[k]), y_align);
    }
  }
  if constexpr (!kAligned) {
    if (tid < head) yr[tid] = Dtype<T>::from_float(xh * inv_rms * wh);
    if (tid < tail) yr[tail_at] = Dtype<T>::from_float(xt * inv_rms * wt);
  }
}

// R rows of an aligned launch at once, rows row, row + step, ... (those past the
// last row read zeros and store nothing), with the thread's weight packs wv
// already loaded: every load of the R rows goes out before the first reduction,
// and the R reductions are independent shuffle chains.
template <class T, int VPT, int R, bool kKeepX, class RowSum>
__device__ __forceinline__ void normalize_rows(const T* __restrict__ x, const uint4 (&wv)[VPT], T* __restrict__ y,
                                               int64_t rows, int64_t row, int step, int cols, float inv_cols,
                                               float eps, int tid, int nthreads, RowSum row_sum) {
  constexpr int N = kPerPack<T>;
  const int body = cols / N;
  uint4 xv[R][VPT];
#pragma unroll
  for (int j = 0; j < R; ++j) {
    const int64_t r = row + j * step;
    const T* xr = x + (r < rows ? r : rows - 1) * cols;  // keep the pointers inside the tensor
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int i = tid + k * nthreads;
      xv[j][k] = make_uint4(0u, 0u, 0u, 0u);
      if (r < rows && i < body)
        xv[j][k] = kKeepX ? load_keep_in_l2(xr + i * N) : load_pack<true>(xr + i * N, kPackBytes);
    }
  }
  float inv_rms[R];
#pragma unroll
  for (int j = 0; j < R; ++j) {
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < VPT; ++k) sum += sum_squares<T>(xv[j][k]);
    inv_rms[j] = sum;
  }
#pragma unroll
  for (int j = 0; j < R; ++j) inv_rms[j] = rsqrtf(row_sum(inv_rms[j]) * inv_cols + eps);
#pragma unroll
  for (int j = 0; j < R; ++j) {
    const int64_t r = row + j * step;
    if (r < rows) {
#pragma unroll
      for (int k = 0; k < VPT; ++k) {
        const int i = tid + k * nthreads;
        if (i < body) store_pack(y + r * cols + i * N, normalize<T>(xv[j][k], inv_rms[j], wv[k]), kPackBytes);
      }
    }
  }
}

// Short rows: a group of G lanes per row, no barrier. The groups of one warp
// take consecutive rows and leave the row loop together (the loop tests the
// warp's first row), so every full-warp shuffle has all 32 lanes; a group past
// the last row just contributes zeros.
// Blocks of 64 threads (2 to 64 rows): a block is retired and replaced at a
// finer grain than a 256-thread one, so fewer thread slots sit idle while the
// last rows of a block finish (H200, 256 MiB, % of a copy with 64 against 256
// threads in the same rounds: fp32 128 columns 99.1 / 97.2, 512 columns 99.5 /
// 98.1; bf16 769 columns 96.0 / 95.2). Exceptions (see launch_in_registers): many
// aligned 16-bit rows in groups of 16 lanes, and many peeled 16-bit rows of 32
// lanes, in blocks of 128. Threads per SM asked for,
// and the registers that leaves a thread: 1,024 (64) for up to 3 packs a lane,
// 768 (80) for 4. 16-bit rows of 1 or 2 packs a lane held to 40 registers (1,536
// threads) tied (H100, 128 and 512 columns, 40 paired rounds: 0.999-1.002).
// Aligned fp32 rows go two at a time per group (normalize_rows), in blocks of
// one warp, 32 per SM (the most an SM holds; 64 registers a thread). That is the
// shape torch.compile's kernel takes for 512 floats, and it was faster there
// (H200, 65,536 x 512 floats, % of a copy in the same rounds: 98.4 one row at a
// time in 64-thread blocks, 98.8 in 32-thread blocks, 99.9 two rows in 32-thread
// blocks at 768 threads per SM, 100.4 at 1,024; 128 floats: 99.2 against 99.1).
// The gain is smaller than one run's noise can settle: the notebook's run after
// it measured 98.1% against torch.compile's 99.9 (H200), and 99.4% against 99.8
// on an H100. 16-bit rows gained nothing from it (fp16 128 columns: 99.1 one row
// at a time, 98.2 two), so they keep one row per group.
template <class T, bool kAligned>
constexpr int kRowsAtOnce = kAligned && sizeof(T) == 4 ? 2 : 1;
template <class T, bool kAligned>
constexpr int kRowsBlockThreads = kRowsAtOnce<T, kAligned> > 1 ? 32 : 64;
template <class T, int VPT, bool kAligned>
constexpr int kRowsThreadsPerSm = kRowsAtOnce<T, kAligned> > 1 || VPT <= 3 ? 1024 : 768;

template <class T, int G, int VPT, bool kAligned, bool kKeepX, int THREADS>
__global__ void __launch_bounds__(THREADS, kRowsThreadsPerSm<T, VPT, kAligned> / THREADS)
rmsnorm_rows_kernel(const T* __restrict__ x, const T* __restrict__ weight, T* __restrict__ y,
                    int64_t rows, int cols, float inv_cols, float eps) {
  constexpr int R = kRowsAtOnce<T, kAligned>;
  constexpr int kGroups = THREADS / G;
  constexpr int kGroupsPerWarp = 32 / G;
  const int lane = threadIdx.x % G;
  const int group = threadIdx.x / G;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kGroups * R;
  auto row_sum = [](float v) { return group_sum<G>(v); };
  uint4 wv[R > 1 ? VPT : 1];  // the weight packs of a lane, loaded once (two-row path)
  if constexpr (R > 1) {
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
      const int i = lane + k * G;
      if (i < cols / kPerPack<T>) wv[k] = load_pack<true>(weight + i * kPerPack<T>, kPackBytes);
    }
  }
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kGroups * R + group;
       row - group % kGroupsPerWarp < rows; row += stride) {
    if constexpr (R > 1) {
      normalize_rows<T, VPT, R, kKeepX>(x, wv, y, rows, row, kGroups, cols, inv_cols, eps, lane, G, row_sum);
    } else {
      const bool active = row < rows;
      const int64_t r = active ? row : rows - 1;  // keep the pointers inside the tensor
      normalize_row<T, VPT, kAligned, true, kKeepX>(x + r * cols, weight, y + r * cols, cols, inv_cols, eps, lane,
                                                    G, active, row_sum);
    }
  }
}

// Longer rows: one block per row, VPT packs per thread, the row in registers,
// at most 512 threads (1,024 for kWide). How the blocks fit on an SM (launch_block picks):
//   kTwo:   two blocks per SM, 64 registers. With up to 4 packs a thread the
//           weight is loaded early: a launch of a few rows waits on latency.
//   kThree: fp32 blocks of 257-384 threads held to 56 registers, three per SM.
//   kDense: many rows of 4 aligned packs a thread. The weight is loaded after
//           the reduction, and the kernel is held to 32 registers (fp32) or 40
//           (16-bit): the registers of 2,048 or 1,536 threads per SM, where kTwo
//           fills 1,024. H200, 256 MiB, % of a copy against kTwo in the same
//           rounds: fp32 1,024 / 2,048 / 4,096 columns 100.4 / 99.8 / 99.2
//           against 98.4 / 98.2 / 97.7; fp16 8,192 99.2 against 97.9; bf16
//           8,192 98.7 against 97.8. For 32 rows of 8,192 floats it was 4.4 us
//           against 3.2: there the early weight wins.
//   kWide:  rows of 4,097 to 8,192 packs (fp32 16,388 to 32,768 columns, 16-bit
//           twice that): up to 1,024 threads of 8 packs, one block per SM, 64
//           registers, the weight loaded after the reduction. These rows used
//           to take the streaming kernel, which reads x twice. H200,
//           % of a copy in the same rounds, streaming -> this (torch.compile):
//           256 MiB, fp32 32,768 columns 69.0 -> 93.6 (94.2), fp32 24,576 73.1 ->
//           94.0 (92.8), fp16 65,536 67.5 -> 85.1 (63.6), bf16 65,536 67.6 ->
//           84.8 (63.7), fp16 40,000 82.3 -> 87.9 (68.9); CUDA graph, fp32 8 x
//           32,768 8.4 -> 5.8 us (5.6), fp16 32 x 65,536 10.2 -> 7.3 us (7.9).
//           H100: fp32 32,768 68.5 -> 96.3 (93.9), fp32 8 x 32,768 8.6 -> 5.8 us
//           (6.1); fp16 and bf16 65,536 from 68.5-68.6 to 95.2-95.4 (66.0), but
//           their rounds spread 5-14%: over 100 flushed rounds the fp16 launch
//           took 99 to 117 us (median 103) in no order, whole waves of rows (1,056)
//           did not narrow it, and fp32 rows of the same bytes, half the
//           arithmetic a pack, held within 1.5%, as did the copy. One block per
//           SM stops that SM's loads while it reduces and stores; how the SMs'
//           phases fall together changes from launch to launch.
// Cache hints on x, kept on one GPU (keep_x_in_l2). torch.compile's RMSNorm for
//     these rows (torch 2.11) is a loop of 512 threads at 24-32 registers that
//     reads x twice, the first time
//     with L1::evict_last and an L2 evict_last policy, the second evict_first;
//     on an H200 it runs 1-2% ahead of this kernel (ncu, one launch: fp32 8,192
//     x 4,096 61.3 against 62.3 us). Most of that is the hint: x loaded with
//     both evict_last hints here, H200 fp32 4,096 / 2,048 columns 97.5 -> 98.5 /
//     98.3 -> 100.0, fp16 8,192 98.0 -> 99.6, bf16 8,192 98.4 -> 99.4, fp16 128
//     99.0 -> 100.6 (torch.compile 98.1 / 99.4 / 100.1 / 100.0 / 100.7). But on an
//     H100 the same build loses 1.4-2.5 points (fp32 4,096 100.6 -> 98.5, fp16
//     8,192 100.7 -> 98.6; torch.compile 97.8). On both GPUs the L2 hint alone
//     does all of it and the L1 hint alone nothing, and it moves a plain copy
//     the same way: the copy's loads with the L2 hint, 256 MiB of floats, H200
//     101.3 -> 102.7% of the reference copy, H100 100.1 -> 97.9. So the gain
//     comes from how each GPU's L2 (full of dirty lines when a timing starts)
//     treats the reads, not from the kernel's design: launches past the L2 load
//     x with the L2 policy on a GPU like the H200 and without it on one like the
//     H100 (keep_x_in_l2). evict_first or L1::no_allocate on x: 1-3 points
//     slower (H200); in a CUDA graph (32 x 4,096 floats) every hint cost 1-2.5.
//     Peeled rows take it too (their body packs are 16-byte aligned): H200, 256
//     MiB, 40 paired rounds, the time without it over the time with it, bf16 /
//     fp16 / fp32: 5,125 columns 1.020 / 1.004 / 1.012, 769 columns 1.011 /
//     1.012 / 1.002 (a tie), bf16 2,047 columns 1.015.
// Measured and not kept (256 MiB, % of a copy in the same rounds, shipped -> tried):
//   * The same two-sweep loop in this file (2 packs a thread, 32 registers, x
//     re-read from L1): with the hints 95.5-100.7 (H200), without 92-98; one pack
//     a thread 71-94 (one load in flight).
//   * 2 packs a thread held in registers at 32 registers (four 512-thread blocks
//     per SM): fp16 and bf16 8,192 columns 84-89 against 97-98 (H200).
enum class Fit { kTwo, kThree, kDense, kWide };

template <class T, Fit F>
constexpr int kBlocksPerSm =
    F == Fit::kTwo ? 2 : F == Fit::kThree ? 3 : F == Fit::kWide ? 1 : sizeof(T) == 4 ? 4 : 3;

template <Fit F>
constexpr int kBlockThreads =
    F == Fit::kThree ? kThreeBlockThreads : F == Fit::kWide ? kWideBlockThreads : kMaxBlockThreads;

template <class T, int VPT, bool kAligned, Fit F, bool kKeepX>
__global__ void __launch_bounds__(kBlockThreads<F>, kBlocksPerSm<T, F>)
rmsnorm_block_kernel(const T* __restrict__ x, const T* __restrict__ weight, T* __restrict__ y,
                     int64_t rows, int cols, float inv_cols, float eps) {
  constexpr bool kEarly = F != Fit::kDense && VPT <= 4;
  __shared__ float slots[2][32];
  int parity = 0;
  // The row pointers advance by a per-launch constant, and the first row needs
  // no test (the grid never exceeds the rows): the first loads then wait on one
  // multiply of two launch constants, not on a 64-bit row * cols per pack
  // (H200, % of a copy in the same rounds: 32 rows of 4,096 floats 77 -> 79,
  // one row 78 -> 83).
  const T* xr = x + static_cast<int64_t>(blockIdx.x) * cols;
  T* yr = y + static_cast<int64_t>(blockIdx.x) * cols;
  const T* const x_end = x + rows * cols;
  do {
    normalize_row<T, VPT, kAligned, kEarly, kKeepX>(xr, weight, yr, cols, inv_cols, eps, threadIdx.x, blockDim.x,
                                                    true, [&](float v) {
                                                      return block_sum<F == Fit::kWide ? 32 : 16>(v, slots, parity);
                                                    });
    xr += static_cast<int64_t>(gridDim.x) * cols;
    yr += static_cast<int64_t>(gridDim.x) * cols;
    parity ^= 1;
  } while (xr < x_end);
}

// Rows too long for registers (more than 8,192 packs): two passes over x (the
// second mostly hits L2). Each pass loads several packs before using any (4 of x
// for the sum, 2 of x and 2 of the weight to normalize), so that many loads per
// thread are in flight at once; with one, the loop waited a full memory latency
// per pack. 256 MiB, % of a copy in the same rounds, one pack at a time -> this
// (torch.compile), fp32 65,536 columns: H200 51.2 -> 64.7 (62.2), H100 61.0 ->
// 66.5 (64.2).
// Held to two blocks per SM (64 registers): unrolling further spilled.
template <class T>
__global__ void __launch_bounds__(kMaxBlockThreads, 2)
rmsnorm_streaming_kernel(const T* __restrict__ x, const T* __restrict__ weight, T* __restrict__ y,
                         int64_t rows, int64_t cols, float inv_cols, float eps) {
  constexpr int N = kPerPack<T>;
  constexpr int kUnrollSum = 4, kUnrollNorm = 2;
  constexpr int64_t kStep = kMaxBlockThreads;
  __shared__ float slots[2][32];
  const int tid = threadIdx.x;
  int parity = 0;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x, parity ^= 1) {
    const T* xr = x + row * cols;
    T* yr = y + row * cols;
    const int64_t head = head_length(xr, cols);
    const int64_t body = (cols - head) / N;
    const int64_t tail_at = head + body * N + tid;  // this thread's tail element
    const bool has_head = tid < head, has_tail = tail_at < cols;
    const T* xb = xr + head;
    const int w_align = alignment_of(weight + head);
    const int y_align = alignment_of(yr + head);

    float sum = 0.0f;
    if (has_head) sum += Dtype<T>::to_float(xr[tid]) * Dtype<T>::to_float(xr[tid]);
    if (has_tail) sum += Dtype<T>::to_float(xr[tail_at]) * Dtype<T>::to_float(xr[tail_at]);
    for (int64_t i0 = tid; i0 < body; i0 += kUnrollSum * kStep) {
      uint4 xp[kUnrollSum];
#pragma unroll
      for (int u = 0; u < kUnrollSum; ++u)
        if (i0 + u * kStep < body) xp[u] = load_pack(xb + (i0 + u * kStep) * N, kPackBytes);
#pragma unroll
      for (int u = 0; u < kUnrollSum; ++u)
        if (i0 + u * kStep < body) sum += sum_squares<T>(xp[u]);
    }
    const float inv_rms = rsqrtf(block_sum(sum, slots, parity) * inv_cols + eps);

    for (int64_t i0 = tid; i0 < body; i0 += kUnrollNorm * kStep) {
      uint4 xp[kUnrollNorm], wp[kUnrollNorm];
#pragma unroll
      for (int u = 0; u < kUnrollNorm; ++u) {
        const int64_t i = i0 + u * kStep;
        if (i < body) {
          xp[u] = load_pack(xb + i * N, kPackBytes);
          wp[u] = load_pack(weight + head + i * N, w_align);
        }
      }
#pragma unroll
      for (int u = 0; u < kUnrollNorm; ++u) {
        const int64_t i = i0 + u * kStep;
        if (i < body) store_pack(yr + head + i * N, normalize<T>(xp[u], inv_rms, wp[u]), y_align);
      }
    }
    if (has_head)
      yr[tid] = Dtype<T>::from_float(Dtype<T>::to_float(xr[tid]) * inv_rms * Dtype<T>::to_float(weight[tid]));
    if (has_tail)
      yr[tail_at] = Dtype<T>::from_float(Dtype<T>::to_float(xr[tail_at]) * inv_rms *
                                         Dtype<T>::to_float(weight[tail_at]));
  }
}

// ---------------------------------------------------------------------------
// Launch helpers: one template instance per (lanes, packs per thread, aligned or not).

unsigned grid_for(int64_t work_items) {
  return static_cast<unsigned>(work_items < kMaxBlocks ? work_items : kMaxBlocks);
}

// Two launch choices differ between an H100 and an H200, each measured on both:
// x's L2 policy (keep_x_in_l2) and the block of short 16-bit rows
// (launch_in_registers). What tells the two apart is how many bytes the memory
// streams per SM per us: an H200 (4.8 TB/s over 132 SMs) 36.5 KB, an H100 (3.35
// TB/s) 25.4 KB. The peak bandwidth comes from the memory clock and bus width.
enum class Memory { kUnknown, kSlower, kFaster };  // kFaster: above kFastMemoryBytesPerSmPerUs

struct MemoryKind {
  Memory memory;
  int64_t l2;  // bytes
  int sms;
};

MemoryKind memory_kind() {
  static const MemoryKind kind = [] {  // once per process, which uses one kind of GPU
    int device = 0, clock_khz = 0, bus_bits = 0, sms = 0, l2 = 0;
    cudaError_t err = cudaGetDevice(&device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    if (err == cudaSuccess) err = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
    if (err != cudaSuccess || sms <= 0) {
      cudaGetLastError();  // unknown GPU: the shapes that are not tuned to either
      return MemoryKind{Memory::kUnknown, 0, 0};
    }
    // double data rate: two transfers per memory clock, bus_bits / 8 bytes each
    const double bytes_per_sm_per_us = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / sms * 1e-6;
    return MemoryKind{bytes_per_sm_per_us > kFastMemoryBytesPerSmPerUs ? Memory::kFaster : Memory::kSlower,
                      static_cast<int64_t>(l2), sms};
  }();
  return kind;
}

// Whether a launch loads x with an L2 evict_last policy: where the bytes moved
// exceed the L2 (a CUDA graph of a few rows lost 1-2.5 points with any hint) on
// the faster memory (an H200). The policy made this kernel 1-1.7% faster on an
// H200 (peeled rows 0.4-2.0%) and 1.4-2.5% slower on an H100 (2.1-2.6% at 128-4,096
// columns, 40 paired rounds), and moved a plain copy the same way (see "Cache hints
// on x" above enum class Fit): it is a property of each GPU's L2, not derived.
bool keep_x_in_l2(int64_t bytes_moved) {
  const MemoryKind kind = memory_kind();
  return kind.memory == Memory::kFaster && bytes_moved > kind.l2;
}


// The rows kernel of one shape: G lanes a group, VPT packs a lane, THREADS a block.
template <class T, int G, int VPT, bool kAligned, bool kKeepX, int THREADS>
void launch_rows_shape(const T* x, const T* w, T* y, int64_t rows, int cols, float inv_cols, float eps,
                       cudaStream_t s) {
  constexpr int kRowsPerBlock = THREADS / G * kRowsAtOnce<T, kAligned>;
  const unsigned grid = grid_for((rows + kRowsPerBlock - 1) / kRowsPerBlock);
  rmsnorm_rows_kernel<T, G, VPT, kAligned, kKeepX, THREADS><<<grid, THREADS, 0, s>>>(x, w, y, rows, cols, inv_cols,
                                                                                    eps);
}

// The rows kernel of G lanes for rows of `vpt` packs a lane.
template <class T, int G, bool kAligned, bool kKeepX, int THREADS = kRowsBlockThreads<T, kAligned>>
void launch_rows(int vpt, const T* x, const T* w, T* y, int64_t rows, int cols, float inv_cols, float eps,
                 cudaStream_t s) {
  if constexpr (sizeof(T) == 4 && G < 32) {
    // fp32 groups of 8 or 16 lanes hold at most 2 packs a lane (launch_in_registers);
    // their 3- and 4-pack kernels are not built (two rows of those spill).
    if (vpt > 2) {
      launch_rows<T, 32, kAligned, kKeepX>((cols / kPerPack<T> + 31) / 32, x, w, y, rows, cols, inv_cols, eps, s);
      return;
    }
  }
  // Groups of 1 or 2 lanes hold rows of that many packs: one pack a lane, vpt 1.
  constexpr bool kMorePacks = G > 2;
  constexpr bool kFourPacks = kMorePacks && (sizeof(T) != 4 || G == 32);
  switch (vpt) {
    case 1:
      launch_rows_shape<T, G, 1, kAligned, kKeepX, THREADS>(x, w, y, rows, cols, inv_cols, eps, s);
      break;
    case 2:
      if constexpr (kMorePacks)
        launch_rows_shape<T, G, 2, kAligned, kKeepX, THREADS>(x, w, y, rows, cols, inv_cols, eps, s);
      break;
    case 3:
      if constexpr (kFourPacks)
        launch_rows_shape<T, G, 3, kAligned, kKeepX, THREADS>(x, w, y, rows, cols, inv_cols, eps, s);
      break;
    default:
      if constexpr (kFourPacks)
        launch_rows_shape<T, G, 4, kAligned, kKeepX, THREADS>(x, w, y, rows, cols, inv_cols, eps, s);
      break;
  }
}

// A block per row, and the GPU hands out rows as blocks finish. A grid of only
// the resident blocks, each looping over rows (rows / blocks of them, or one
// more), was 3.5-6 points slower (H200, 256 MiB, % of a copy in the same rounds:
// fp16 8,192 columns 95.7 -> 91.6, fp32 4,096 97.7 -> 93.7, fp32 16,384 95.8 ->
// 89.9), likely because blocks that start together stay in step, loading at
// the same time and reducing at the same time. Peeled 16-bit rows keep 4 packs a
// thread at 64 registers: 2 or 8 packs lost 3-19 points at 4,100 and 5,125
// columns, and the kDense build (40 registers) on them gained nothing (H200).
template <class T, bool kAligned, bool kKeepX>
void launch_block(int vpt, int threads, const T* x, const T* w, T* y, int64_t rows, int cols, float inv_cols,
                  float eps, cudaStream_t s) {
  const unsigned grid = grid_for(rows);
  if (threads > kMaxBlockThreads) {  // rows of 4,097 to 8,192 packs (see Fit::kWide)
    rmsnorm_block_kernel<T, kMaxPacksPerThread, kAligned, Fit::kWide, kKeepX><<<grid, threads, 0, s>>>(
        x, w, y, rows, cols, inv_cols, eps);
    return;
  }
  // fp32 rows of 4,100 to 6,144 floats: a block of 257-384 threads at 4 packs each
  // takes 61 registers, so two blocks fit per SM: too few bytes in flight for an
  // H200 (fp32 5,125: 88-94% of a copy in four runs). Held to 56 registers, three
  // fit and none spill (101%); the 16-bit kernels would spill at 56.
  if constexpr (sizeof(T) == 4) {
    if (vpt == 4 && threads > 256 && threads <= kThreeBlockThreads) {
      rmsnorm_block_kernel<T, 4, kAligned, Fit::kThree, kKeepX><<<grid, threads, 0, s>>>(x, w, y, rows, cols,
                                                                                         inv_cols, eps);
      return;
    }
  }
  if constexpr (kAligned) {
    if (vpt == 4 && rows > kFewRows) {
      rmsnorm_block_kernel<T, 4, true, Fit::kDense, kKeepX><<<grid, threads, 0, s>>>(x, w, y, rows, cols,
                                                                                     inv_cols, eps);
      return;
    }
  }
  switch (vpt) {
    case 1:  // few 16-bit rows (launch_in_registers); not built for fp32, which takes 2 instead
      if constexpr (sizeof(T) == 2) {
        rmsnorm_block_kernel<T, 1, kAligned, Fit::kTwo, kKeepX><<<grid, threads, 0, s>>>(x, w, y, rows, cols,
                                                                                        inv_cols, eps);
        break;
      }
      [[fallthrough]];
    case 2:
      rmsnorm_block_kernel<T, 2, kAligned, Fit::kTwo, kKeepX><<<grid, threads, 0, s>>>(x, w, y, rows, cols,
                                                                                      inv_cols, eps);
      break;
    case 4:
      rmsnorm_block_kernel<T, 4, kAligned, Fit::kTwo, kKeepX><<<grid, threads, 0, s>>>(x, w, y, rows, cols,
                                                                                      inv_cols, eps);
      break;
    default:
      rmsnorm_block_kernel<T, 8, kAligned, Fit::kTwo, kKeepX><<<grid, threads, 0, s>>>(x, w, y, rows, cols,
                                                                                      inv_cols, eps);
      break;
  }
}

// Both register paths; the row holds at most kWideBlockThreads * kMaxPacksPerThread packs.
template <class T, bool kAligned, bool kKeepX>
void launch_in_registers(const T* x, const T* w, T* y, int64_t rows, int cols, float inv_cols, float eps,
                         cudaStream_t s) {
  const int packs = cols / kPerPack<T>;  // whole packs in a row, an upper bound on its body
  // A few aligned fp32 rows of more than kFewRowsMinPacks packs go to the block
  // path below, a row per block of 2 packs a thread. Their groups take two rows
  // each (kRowsAtOnce), built for many rows; a launch of a few is one wave, whose
  // time is latency, and there twice the lanes finish sooner. CUDA graph, groups
  // -> a block a row (torch.compile): H200 256 x 512 2.8 -> 2.3 us (2.2), 256 x
  // 128 2.2 -> 2.1 (2.0); H100 256 x 512 2.8 -> 2.4 (2.3), 256 x 128 2.2 -> 2.1
  // (2.0), 64 x 300 2.3 -> 2.1 (2.0). 16-bit groups hold one row and gain nothing
  // from it (bf16 128 x 1,024: H100 2.3 us in groups, 2.4 a block; H200 2.3 both;
  // fp16 1 x 1,024 the same either way; fp16 256 x 128, H200, 1.8 in groups, 1.9 a
  // block). fp32 rows of up to 16 packs were not measured as blocks and stay in
  // groups.
  const bool few_aligned = kAligned && sizeof(T) == 4 && rows <= kFewRows && packs > kFewRowsMinPacks;

  if (packs <= 32 * kMaxGroupPacks && !few_aligned) {  // short rows: several per block
    // The fewest lanes (8, 16 or 32) that hold the row at up to 2 packs a lane
    // for fp32 (see rmsnorm_rows_kernel), 4 for 16-bit types; 32 lanes take up to 4.
    // Many aligned rows of at most 8 packs (64 halves, 32 floats) take 4 lanes:
    // with 8, a row of 4 packs leaves half the lanes idle. H200, 256 MiB, % of a
    // copy with 8 lanes -> 4, same rounds: 32 columns bf16 77.0 -> 98.0, fp16
    // 82.3 -> 98.8; 16 floats 84.3 -> 98.4; 64 halves and 32 floats unchanged
    // (99.0 -> 99.2, 97.9 -> 98.3). Rows of 1 or 2 packs take a group of that
    // many lanes, a pack each (same rounds, 4 lanes -> 1 or 2: 8 bf16 columns 42.1
    // -> 98.6, 16 bf16 76.8 -> 97.4 and 77.8 -> 99.0, 16 fp16 83.4 -> 98.7, 4
    // floats 59.7 -> 98.7, 8 floats 84.8 -> 96.8 and 85.4 -> 97.4; torch.compile
    // 97.9-99.3). A few rows keep 8 lanes, as more threads finish sooner (32 rows
    // of 32 floats: 1.3 us with 8, 1.5 with 4), and so does the peeled path: a head
    // or tail element per lane.
    const int lane_packs = sizeof(T) == 4 ? 2 : kMaxGroupPacks;
    const bool many_aligned = kAligned && rows > kFewRows;
    const int g = many_aligned && packs <= 2 ? packs
                  : many_aligned && packs <= 8 ? 4
                  : packs <= 8 * lane_packs ? 8 : packs <= 16 * lane_packs ? 16 : 32;
    const int vpt = packs == 0 ? 1 : (packs + g - 1) / g;
    if constexpr (kAligned && sizeof(T) == 2) {
      // Many 16-bit rows of 33 to 64 packs take 32 lanes of one or two packs, in
      // blocks of 128; on an H100, rows of 9 to 16 packs take 16 lanes of one pack
      // in blocks of 512. 256 MiB, 40 paired rounds, 512 columns: the time of 16
      // lanes of 4 packs in blocks of 256 (the shape before) over this one's, H100
      // fp16 1.007, bf16 1.006, H200 1.000, 1.002; torch.compile's over this one's,
      // H100 0.999, 0.997 (ties; 0.992 and 0.992 against the old shape; 0.998 and
      // 0.995 in the H100 ladder at e2de41d9490e), H200 1.006, 1.003 (ties). On
      // the H100, 32 lanes in blocks of 64 tied with 128, in blocks of 256 lost
      // 1.0-1.2%, and 16 lanes in blocks of 128 lost 1.5%; 512-thread blocks at
      // 512 columns lost 2.4%. 128 columns (9 to 16 packs), the 64-thread launch's
      // time over the 512-thread one's, H100 fp16 1.011, bf16 1.016 (torch.compile
      // 1.005, 1.007); on an H200 that shape lost 7-9% of a copy (256-thread blocks
      // 3-5%), so it keeps 8 lanes of 2 packs in blocks of 64.
      // (One shape each, launched directly: launch_rows would build every packs-a-lane count.)
      if (many_aligned && g == 16)  // 33 to 64 packs: 2 packs a lane
        return launch_rows_shape<T, 32, 2, true, kKeepX, 128>(x, w, y, rows, cols, inv_cols, eps, s);
      if (many_aligned && packs > 8 && packs <= 16 && memory_kind().memory == Memory::kSlower)
        return launch_rows_shape<T, 16, 1, true, kKeepX, 512>(x, w, y, rows, cols, inv_cols, eps, s);
    }
    if constexpr (kAligned) {
      if (g == 1) return launch_rows<T, 1, true, kKeepX>(vpt, x, w, y, rows, cols, inv_cols, eps, s);
      if (g == 2) return launch_rows<T, 2, true, kKeepX>(vpt, x, w, y, rows, cols, inv_cols, eps, s);
      if (g == 4) return launch_rows<T, 4, true, kKeepX>(vpt, x, w, y, rows, cols, inv_cols, eps, s);
    }
    if constexpr (!kAligned && sizeof(T) == 2) {
      // Many peeled 16-bit rows of 65 to 128 packs (32 lanes) run in blocks of 128.
      // 256 MiB, 50 paired rounds, the time of 64-thread blocks over this one's:
      // H200 bf16 769 columns 1.005 and 1.011 (two cases in one run), fp16 769
      // 1.006, bf16 1,023 1.008; H100 0.998-0.999 (ties). Blocks of 256: H200
      // 0.986-0.996, H100 0.998-1.003. The same probe a session before: bf16 769
      // 1.014, fp16 769 0.999.
      if (g == 32 && rows > kFewRows)
        return launch_rows<T, 32, false, kKeepX, 128>(vpt, x, w, y, rows, cols, inv_cols, eps, s);
    }
    if (g == 8) launch_rows<T, 8, kAligned, kKeepX>(vpt, x, w, y, rows, cols, inv_cols, eps, s);
    else if (g == 16) launch_rows<T, 16, kAligned, kKeepX>(vpt, x, w, y, rows, cols, inv_cols, eps, s);
    else launch_rows<T, 32, kAligned, kKeepX>(vpt, x, w, y, rows, cols, inv_cols, eps, s);
    return;
  }
  // One block per row, at most 512 threads: the fewest packs per thread that fit,
  // starting from 4 for many rows (overlap) and, for few rows (latency), 1 for
  // 16-bit types and 2 for fp32 (a row of 4,096 floats on 1,024 threads of one
  // pack exceeds the block), except 4 for fp32 from kFewRowsWide rows up to one
  // row per SM. CUDA graph, 30-40 paired rounds (two contenders timing one kernel
  // differed by up to 0.9% in these runs; see GRAPH_CAPTURES in kernelbook.bench):
  // * 4,096 halves, 512 threads of one pack instead of 256 of two, time saved:
  //   H100 1 row fp16 8.5%, bf16 7.6%, 4 rows 3.3%, 32 rows 1.8% and 1.0%, 256
  //   rows fp16 0.8%; H200 1 row 4.5% and 5.0%, 4 rows 2.6%, 32 rows 1.7% and
  //   0.5%, 256 rows 0.6% and -0.3% (a tie).
  // * 4,096 floats, the time of 2 packs a thread (512 threads) over that of 4
  //   (256): H200 1 row 0.944-0.947, 2 rows 0.982, 4 0.989, 8 0.992, 16 1.001 and
  //   0.998, 32 1.004-1.005 (three runs), 64 1.007 and 1.005, 128 1.003 and 1.006,
  //   256 1.002 and 1.001; H100 1 row 0.950, 4 0.981, 16 0.998, 32 1.000, 64
  //   1.004, 256 0.986. Liger's RMSNorm (256 threads of 16 floats) was 0.3-1.1%
  //   ahead of 2 packs at 32 rows on the H200 in five runs, tied with 4 in two.
  const bool wide_few = sizeof(T) == 4 && rows >= kFewRowsWide && rows <= memory_kind().sms;
  int vpt = rows > kFewRows ? 4 : sizeof(T) == 2 ? 1 : wide_few ? 4 : 2;
  auto threads_for = [packs](int v) { return ((packs + v - 1) / v + 31) / 32 * 32; };
  while (vpt < kMaxPacksPerThread && threads_for(vpt) > kMaxBlockThreads) vpt *= 2;
  launch_block<T, kAligned, kKeepX>(vpt, threads_for(vpt), x, w, y, rows, cols, inv_cols, eps, s);
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kPackBytes == 0; }

template <class T>
cudaError_t launch(const T* x, const T* w, T* y, int64_t rows, int64_t cols, float eps, cudaStream_t s) {
  if (rows <= 0 || cols <= 0) return cudaSuccess;
  const float inv_cols = 1.0f / static_cast<float>(cols);  // mean = sum * inv_cols, no division on the GPU
  if (cols / kPerPack<T> > kWideBlockThreads * kMaxPacksPerThread) {
    rmsnorm_streaming_kernel<T><<<grid_for(rows), kMaxBlockThreads, 0, s>>>(x, w, y, rows, cols, inv_cols, eps);
  } else {
    const bool aligned = cols % kPerPack<T> == 0 && aligned16(x) && aligned16(w) && aligned16(y);
    const bool keep = keep_x_in_l2(2 * rows * cols * static_cast<int64_t>(sizeof(T)));
    const int c = static_cast<int>(cols);
    if (aligned && keep) launch_in_registers<T, true, true>(x, w, y, rows, c, inv_cols, eps, s);
    else if (aligned) launch_in_registers<T, true, false>(x, w, y, rows, c, inv_cols, eps, s);
    else if (keep) launch_in_registers<T, false, true>(x, w, y, rows, c, inv_cols, eps, s);
    else launch_in_registers<T, false, false>(x, w, y, rows, c, inv_cols, eps, s);
  }
  return cudaGetLastError();
}

}  // namespace

cudaError_t rmsnorm_half_forward(const float* x, const float* weight, float* y, int64_t rows, int64_t cols,
                                 float eps, cudaStream_t stream) {
  return launch<float>(x, weight, y, rows, cols, eps, stream);
}

cudaError_t rmsnorm_half_forward(const __half* x, const __half* weight, __half* y, int64_t rows, int64_t cols,
                                 float eps, cudaStream_t stream) {
  return launch<__half>(x, weight, y, rows, cols, eps, stream);
}

cudaError_t rmsnorm_half_forward(const __nv_bfloat16* x, const __nv_bfloat16* weight, __nv_bfloat16* y,
                                 int64_t rows, int64_t cols, float eps, cudaStream_t stream) {
  return launch<__nv_bfloat16>(x, weight, y, rows, cols, eps, stream);
}
