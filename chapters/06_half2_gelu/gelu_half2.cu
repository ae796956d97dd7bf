// Chapter 06 — half2 GELU: two values per instruction, computed in fp32, at copy speed
//
//   erf form  (approximate='none'):  y = 0.5 x (1 + erf(x / sqrt 2))  =  0.5 x erfc(-x / sqrt 2)
//   tanh form (approximate='tanh'):  y = 0.5 x (1 + tanh(u))          =  x / (1 + exp(-2u)),
//                                     u = sqrt(2 / pi) (x + 0.044715 x^3)
//
// What this stage adds over chapter 05: the first half-precision chapter and the
// first elementwise op. Every element is read once and written once, so the job is
// moving bytes, and what is left to teach is how wide each access is. fp16 and
// bf16 values travel in pairs (__half2, __nv_bfloat162: two values in one 32-bit
// register) and in 16-byte packs of four pairs (8 halves per LDG.E.128/STG.E.128);
// fp32 uses float2 and 4-float packs. Each pair is widened to float2, GELU is
// computed in fp32, and the pair is rounded back with one conversion.
//
// Variants, side by side (the `variant` argument):
//   0  scalar     one element per thread: 2-byte accesses for fp16/bf16
//   1  pairs      two elements per access: __half2 / __nv_bfloat162 (4 bytes), float2 (8)
//   2  packs      16-byte packs (8 halves or 4 floats), one or two packs in flight per
//                 thread, as the GPU's memory and the dtype need (see pack_shape); inputs under
//                 2^16 packs (1 MiB) take one 8-byte pack a thread, from there to 2^17
//                 one 16-byte pack (see kSmallVectors)
//   3  half math  fp16, tanh form only: the trap. Packs like variant 2, but the math is
//                 __half2 arithmetic with tanh(u) = (e^2u - 1)/(e^2u + 1) through h2exp,
//                 as naive "f16" GELU kernels do. Kept inaccurate on purpose: 1 + tanh(u)
//                 cancels (GELU(-3) comes out as -0.00293 instead of -0.00364) and e^2u
//                 overflows fp16 above x ~ 4.1, giving inf/inf = NaN. Some public
//                 kernels clamp the input at about +-11 instead (ln 65504 = 11.09),
//                 which makes GELU(20) = 11.09; nothing in this file clamps.
// Grid: one step per thread, so a large input is many waves of short blocks (2-8 KiB
// each for variants 2 and 3); the scalar kernel's grid is capped at 2^20 blocks, and
// a grid-stride loop covers anything beyond.
// Variants 1-3 need x and y aligned to the access width: a shared misalignment (a
// view starting 2 bytes into its allocation) peels a scalar head until aligned, then
// runs the vector body and a scalar tail; different misalignments of x and y fall
// back to the scalar kernel. No access leaves [x, x + n) or [y, y + n). So a caller
// allocates y as far past a 16-byte boundary as x (x = t[1:] of rows of odd length).
//
// Semantics (torch's F.gelu): load, widen to fp32, compute in fp32, round once to the
// output dtype (round to nearest even). Written for accuracy, with no clamping:
//   * erf form through erfc, never 1 + erf: 1 + erf(t) cancels to 0 in the negative
//     tail, erfc stays accurate relative to its own tiny value.
//   * tanh form as x * sigmoid(2u) with exp(-2|u|) <= 1: exp never overflows and
//     1 + tanh(u) is never formed, so the negative tail keeps its tiny values.
//   * u = sqrt(2/pi) x (1 + 0.044715 x^2): x^3 is never formed; for huge |x| the
//     result is x (x > 0) or -0 (x < 0), never NaN.
//   * NaN -> NaN, +inf -> +inf, -inf -> -0 (not -inf * 0 = NaN).
//   * Neither form calls erfcf/tanhf: at copy speed each element gets only ~20 fp32
//     instructions (fp16 on an H200), and erfcf alone is ~40 (66% of a copy on an
//     H100). The erf form uses fitted erfc approximations, one for half outputs and
//     a more precise one for fp32 (see gelu_erf_half and gelu_erf_fp32).
// Accuracy against a float64 evaluation of the same formula (checked exhaustively,
// every fp16, bf16 and fp32 input, during development): fp16 and bf16 within 1 ulp
// everywhere, subnormal results included. fp32: erf form within 6.8 ulp (ulp: the
// fp32 spacing at |y|, 2^-149 below FLT_MIN; every fp32 input, H100 and H200);
// tanh form within 4 ulp for x > -2,
// while in its negative tail the fp32 rounding of u is magnified by exp(2u):
// relative error ~2|u| x 4e-7, up to 3e-5 (250 ulp) near x = -10.
//
// Limits: any n >= 0 (64-bit offsets; n > 2^31 is fine). x and y are contiguous and
// aligned to their element type. y may equal x (in place: each element is read, then
// written, by the same thread), but must not otherwise overlap x.
//
// Build alone:   nvcc -std=c++17 -arch=sm_90 -c gelu_half2.cu
// Measured:      pack kernel, % of the copy of x in the same rounds (kernelbook.bench), rows
//                of 4,096 at 256 MiB / 1 GiB moved. NVIDIA H200, 2026-11-24, code 6e0bff884767
//                (two packs a thread, fp32 one in blocks of 128; copy ~3,910-3,935 / 4,205-4,210
//                GB/s; chapter notebook): erf form fp16 98.8 / 99.1%, bf16 98.8 / 99.0%, fp32
//                100.2 / 100.2%; tanh form fp16 100.4 / 99.3%, bf16 100.0 / 99.3%, fp32 100.4 /
//                100.1%. NVIDIA H100, 2026-11-24, code dc1bf953b184 (one pack a thread in blocks
//                of 512; copy ~2,845-2,880 / 2,990 GB/s; book/results/gelu-h100.json): 100.2-100.7%
//                in every dtype and both forms.

#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cfloat>
#include <cstdint>
#include <cstring>

namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 1 << 20;  // scalar kernel's grid cap; its grid-stride loop covers the rest
constexpr int kPackBytes = 16;           // variant 2 and 3 access width
constexpr int kBlockBytes = 4096;        // what a block of variant 2 or 3 reads per step
constexpr int kWideBlockBytes = 8192;    // the same past the L2 at one pack a thread (see launch_vector)
constexpr int kNarrowBlockBytes = 2048;  // the same for fp32 past the L2 on a two-pack GPU (ditto)

constexpr float kLog2eOver2 = 0.72134751f;      // log2(e) / 2
constexpr float kInv2Sqrt2 = 0.35355339f;       // 1 / (2 sqrt 2)
constexpr float kTanhScale = 2.3022082f;        // 2 log2(e) sqrt(2/pi): 2u log2(e) = kTanhScale x (1 + c x^2)
constexpr float kCubic = 0.044715f;
constexpr float kSqrt2OverPi = 0.79788456f;     // sqrt(2/pi), for the half-math trap

// ---------------------------------------------------------------- fp32 math --

// Bare PTX approximations: the compiler wraps 1/d, __fdividef and exp2f/__expf in
// guards for subnormal operands and results (3-4 instructions each). Where the
// operands can not need them, one MUFU instruction does; at 2 bytes per element
// those instructions decide whether the erf form runs at copy speed.
__device__ __forceinline__ float rcp_ge1(float d) {  // 1/d for d >= 1 or +inf, within 1 ulp
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(d));
  return r;
}
__device__ __forceinline__ float exp2_ftz(float v) {  // 2^v, 2 ulp; 0 below 2^-126
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(v));
  return r;
}
__device__ __forceinline__ float relu_nan(float x) {  // max(x, -0): NaN -> NaN, -0 -> -0; one FMNMX.NAN
  float r;
  asm("max.NaN.f32 %0, %1, 0f80000000;" : "=f"(r) : "f"(x));
  return r;
}

// erf form, 0.5 x erfc(-x/sqrt 2), written as x h for x <= 0 and x (1 - h) for x > 0
// with h = 0.5 erfc(a), a = |x|/sqrt 2 >= 0. erfcf costs ~40 instructions, which at
// copy speed makes the kernel compute-bound (fp16: 66% of a copy on an H100; fp32:
// 79% on an H200). Both paths below use the shape of Numerical Recipes' erfcc,
//     erfc(a) = t exp(-a^2 + P(t)),   t = 1 / (1 + a/2) in [0, 1],
// with P a polynomial interpolating ln(erfc(a) e^(a^2) / t) at Chebyshev nodes of
// t in [0, 1], i.e. for all a >= 0. The coefficients are this file's own fits.

// fp16/bf16 outputs: degree 6, in log2 units, relative error of erfc 2.4e-5 (fit)
// plus up to 1.3e-5 near x = -13 (the rounding of x^2). An fp16 ulp is 1e-3, a bf16
// ulp 8e-3: all 65,536 fp16 and bf16 inputs round within 1 ulp of float64 (fp16:
// 492 of them off by one, bf16: 8). The constant term carries -1 (the 0.5 of h)
// and +64: 2^-64 t 2^(... + 64) keeps bf16's subnormal results (down to 1e-40)
// that ex2.approx.ftz alone would flush. ~18 instructions.
__device__ __forceinline__ float gelu_erf_half(float x) {
  const float t = rcp_ge1(fmaf(fabsf(x), kInv2Sqrt2, 1.0f));
  float q = 0.13044028f;
  q = fmaf(q, t, -0.121314198f);
  q = fmaf(q, t, -0.409586549f);
  q = fmaf(q, t, 0.270565569f);
  q = fmaf(q, t, 0.510962546f);
  q = fmaf(q, t, 1.44473183f);
  q = fmaf(q, t, 61.174202f);  // at t = 1 (x = 0) q is exactly 63: h = 0.5
  const float h = (t * 5.42101086e-20f) * exp2_ftz(fmaf(-x * kLog2eOver2, x, q));  // 2^-64 t 2^q'
  // -inf becomes -FLT_MAX so that -inf * 0 gives -0, not NaN; NaN x makes h NaN.
  return fmaxf(x, -FLT_MAX) * (x <= 0.0f ? h : 1.0f - h);
}

// fp32 outputs: y = max(x, 0) - a h for both signs (a = |x|), with
//     a h = v 2^E,   v = a t = a / (K0 + K1 a) in [0, 0.73],   E = P(v) - Lf a^2,
// Lf the fp32 rounding of log2(e)/2 and P a degree-9 polynomial, a minimax fit of
// log2(a h / v) + Lf a^2 for a in [0, 14.4] (so P also absorbs Lf's rounding), exact at v = 0.
// This is erfcc's shape with the polynomial in v = a t instead of t: the rounding of t then
// moves y by at most its own size (d ln y / d ln t = 1 at x = 0, 0.06 near |x| = 12, where in
// t it would be 2.5 and 1.2), and Horner's rounding vanishes at x = 0. K0 puts P/2 in
// [-0.43, 0.42], where an fp32 rounding costs at most 2^-26.
// 2^E is e * e with e = 2^(E/2) from ex2.approx.ftz: E/2 >= -82 for a <= 15, so e never
// flushes and a subnormal y comes from the last FFMA alone (2^E itself would flush below
// 2^-126). E/2 is carried as hh + lo: u = a Lf/2 and its exact remainder (an FFMA),
// hh = fma(-a, u, P/2), and what rounding hh drops comes back as P/2 - fma(a, u, hh), exact
// (Sterbenz) up to ulp(P/2)/2; e e (1 + 2 ln2 lo) = 2^E. Without lo, the fp32 rounding of an
// exponent near -60 would cost up to ~45 ulp. ex2's error (~2 ulp) counts twice. Checked on
// every fp32 input (H100 and H200): within 6.8 ulp where |y| > 1e-37 (x > -13), 6.3 ulp down
// to FLT_MIN, 4.2e-45 absolute below. ~25 instructions, 2 of them MUFU (rcp, ex2).
__device__ __forceinline__ float gelu_erf_fp32(float x) {
  const float a = fabsf(x) > 15.0f ? 15.0f : fabsf(x);  // y(-15) rounds to -0; NaN stays NaN
  const float v = a * rcp_ge1(fmaf(a, 1.13701165f, 3.55872178f));  // a / (K0 + K1 a)
  float q = -0.425906479f;                                         // P/2, Horner in v
  q = fmaf(q, v, 1.25291717f);
  q = fmaf(q, v, -1.17083132f);
  q = fmaf(q, v, 0.275118679f);
  q = fmaf(q, v, -0.151636526f);
  q = fmaf(q, v, 0.273358792f);
  q = fmaf(q, v, 0.296722382f);
  q = fmaf(q, v, -0.202663288f);
  q = fmaf(q, v, -1.22805047f);
  q = fmaf(q, v, 0.415679574f);      // q(0) = log2(K0 / 2) / 2 to 1e-13: h(0) = 1/2
  const float u = a * 0.360673755f;  // a Lf/2
  const float nu = fmaf(-a, 0.360673755f, u);     // u - a Lf/2, exact
  const float hh = fmaf(-a, u, q);                // E/2, rounded
  const float lo = fmaf(a, nu, q - fmaf(a, u, hh));  // E/2 - hh
  const float e = exp2_ftz(hh);
  const float A = fmaf(v * 1.38629436f, lo, v);   // v (1 + 2 ln2 lo)
  return fmaf(-(A * e), e, relu_nan(x));          // max(x, -0) - v 2^E: -inf -> -0, +inf, NaN
}

// tanh form: x * sigmoid(2u) = x / (1 + exp(-2u)). With e = exp(-2|u|) in [0, 1]:
// sigmoid(2u) = 1 / (1 + e) for x >= 0 (u has the sign of x) and e / (1 + e) for
// x < 0, so exp never overflows and 1 + tanh(u) is never formed (it cancels for
// x < 0). ~16 instructions.
__device__ __forceinline__ float gelu_tanh(float x) {
  const float v = (kTanhScale * x) * fmaf(kCubic * x, x, 1.0f);  // 2u log2(e); +-inf for huge |x|
  const float e = exp2f(-fabsf(v));                               // exp(-2|u|)
  const float r = rcp_ge1(1.0f + e);
  const float s = x >= 0.0f ? r : e * r;                          // NaN x -> NaN s
  return fmaxf(x, -FLT_MAX) * s;                                  // -inf * 0 -> -0 (see above)
}

// APPROX 0: erf form, 1: tanh form. HALF_OUT: the result is rounded to fp16/bf16.
template <int APPROX, bool HALF_OUT>
__device__ __forceinline__ float gelu(float x) {
  if (APPROX == 1) return gelu_tanh(x);
  return HALF_OUT ? gelu_erf_half(x) : gelu_erf_fp32(x);
}

// ------------------------------------------------------------ conversions --
// Intrinsics only: torch builds with __CUDA_NO_HALF_OPERATORS__,
// __CUDA_NO_HALF_CONVERSIONS__, __CUDA_NO_BFLOAT16_CONVERSIONS__ and
// __CUDA_NO_HALF2_OPERATORS__, so no implicit casts and no +, * on halves.

template <typename T> struct PairOf;
template <> struct PairOf<float> { using type = float2; };
template <> struct PairOf<__half> { using type = __half2; };
template <> struct PairOf<__nv_bfloat16> { using type = __nv_bfloat162; };

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

__device__ __forceinline__ float2 to_float2(float2 v) { return v; }
__device__ __forceinline__ float2 to_float2(__half2 v) { return __half22float2(v); }
// A bf16 is the top half of an fp32: one shift and one mask for the pair, where
// the intrinsic extracts each half first.
__device__ __forceinline__ float2 to_float2(__nv_bfloat162 v) {
  unsigned u;
  memcpy(&u, &v, sizeof(u));
  return make_float2(__uint_as_float(u << 16), __uint_as_float(u & 0xffff0000u));
}

template <typename T> __device__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename P> __device__ P from_float2(float2 v);
template <> __device__ __forceinline__ float2 from_float2<float2>(float2 v) { return v; }
template <> __device__ __forceinline__ __half2 from_float2<__half2>(float2 v) { return __floats2half2_rn(v.x, v.y); }
template <> __device__ __forceinline__ __nv_bfloat162 from_float2<__nv_bfloat162>(float2 v) {
  return __floats2bfloat162_rn(v.x, v.y);
}

// -------------------------------------------------------------------- ops --
// An op maps one element (scalar) or one pair (pair); the kernels only move data.

// The chapter's op: widen to fp32, GELU, round once.
template <typename T, int APPROX>
struct Fp32Math {
  using Pair = typename PairOf<T>::type;
  static constexpr int kMinThreadsPerSm = 2048;  // <= 32 registers: full occupancy
  static constexpr bool kHalfOut = sizeof(T) == 2;
  static __device__ __forceinline__ T scalar(T v) { return from_float<T>(gelu<APPROX, kHalfOut>(to_float(v))); }
  static __device__ __forceinline__ Pair pair(Pair v) {
    const float2 f = to_float2(v);
    return from_float2<Pair>(make_float2(gelu<APPROX, kHalfOut>(f.x), gelu<APPROX, kHalfOut>(f.y)));
  }
};

// The trap (variant 3): tanh form in fp16 arithmetic, no widening. Not fixed on
// purpose; see the top comment. 0.5 x (1 + (e - 1)/(e + 1)), e = exp(2u).
struct HalfMathTanh {
  using Pair = __half2;
  static constexpr int kMinThreadsPerSm = 0;  // no occupancy demand: __h2div wants ~40 registers
  static __device__ __forceinline__ __half scalar(__half x) {
    const __half one = __float2half_rn(1.0f);
    const __half x3 = __hmul(__hmul(x, x), x);
    const __half u = __hmul(__float2half_rn(kSqrt2OverPi), __hfma(__float2half_rn(kCubic), x3, x));
    const __half e = hexp(__hmul(__float2half_rn(2.0f), u));
    const __half th = __hdiv(__hsub(e, one), __hadd(e, one));
    return __hmul(__hmul(__float2half_rn(0.5f), x), __hadd(one, th));
  }
  static __device__ __forceinline__ __half2 pair(__half2 x) {
    const __half2 one = __float2half2_rn(1.0f);
    const __half2 x3 = __hmul2(__hmul2(x, x), x);
    const __half2 u = __hmul2(__float2half2_rn(kSqrt2OverPi), __hfma2(__float2half2_rn(kCubic), x3, x));
    const __half2 e = h2exp(__hmul2(__float2half2_rn(2.0f), u));
    const __half2 th = __h2div(__hsub2(e, one), __hadd2(e, one));
    return __hmul2(__hmul2(__float2half2_rn(0.5f), x), __hadd2(one, th));
  }
};

// ---------------------------------------------------------------- kernels --

// What one vector access moves. Loads and stores go through these plain integer
// vectors: a struct of four __half2 (each a struct itself) is copied as four
// 32-bit accesses, a uint4 as one LDG/STG.E.128.
template <int BYTES> struct Raw;
template <> struct Raw<4> { using type = unsigned int; };
template <> struct Raw<8> { using type = uint2; };
template <> struct Raw<16> { using type = uint4; };

// The same BYTES bytes seen as pairs (type punning through a union, which CUDA
// supports).
template <typename Pair, int BYTES>
union Pack {
  typename Raw<BYTES>::type raw;
  Pair p[BYTES / sizeof(Pair)];
};

template <typename Op, int BYTES>
__device__ __forceinline__ typename Raw<BYTES>::type apply(typename Raw<BYTES>::type raw) {
  Pack<typename Op::Pair, BYTES> v;
  v.raw = raw;
#pragma unroll
  for (int k = 0; k < static_cast<int>(BYTES / sizeof(typename Op::Pair)); ++k) v.p[k] = Op::pair(v.p[k]);
  return v.raw;
}

// Variant 0, and the fallback when x and y are misaligned differently.
// No __restrict__: y may equal x.
template <typename Op, typename T>
__global__ void __launch_bounds__(kThreads)
gelu_scalar_kernel(const T* x, T* y, int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride)
    y[i] = Op::scalar(x[i]);
}

// Variants 1-3. Block b owns the K * THREADS consecutive vectors from
// b * K * THREADS on; its thread t takes vectors t, t + THREADS, ... of them,
// each a coalesced warp-wide access, all K loads issued before the first store
// so that their latencies overlap. One step per thread: the grid covers the
// input, with no grid-stride loop (its loop test and second copy of the body
// cost a launch of one wave 1-3%; see kSmallVectors).
// WHOLE: x is BYTES-aligned and n is a whole number of blocks' vectors, so there
// is no head, no tail and no bounds test at all. Otherwise elements [0, head)
// are a scalar head that brings x + head (and y + head: same misalignment) to a
// BYTES boundary, then come nvec whole vectors, then a scalar tail of fewer than
// one vector; head and tail go to the first threads of block 0.
// No __restrict__: y may equal x.
template <typename Op, typename T, int BYTES, int K, int THREADS, bool WHOLE>
__global__ void __launch_bounds__(THREADS, Op::kMinThreadsPerSm / THREADS)
gelu_vector_kernel(const T* x, T* y, int64_t n, int64_t head) {
  using V = typename Raw<BYTES>::type;
  constexpr int kPerVec = BYTES / static_cast<int>(sizeof(T));
  if constexpr (WHOLE) head = 0;
  const int64_t nvec = (n - head) / kPerVec;
  const V* xv = reinterpret_cast<const V*>(x + head);
  V* yv = reinterpret_cast<V*>(y + head);

  const int64_t first = static_cast<int64_t>(blockIdx.x) * (K * THREADS) + threadIdx.x;
  V v[K];
#pragma unroll
  for (int k = 0; k < K; ++k)
    if (WHOLE || first + k * THREADS < nvec) v[k] = xv[first + k * THREADS];
#pragma unroll
  for (int k = 0; k < K; ++k)
    if (WHOLE || first + k * THREADS < nvec) yv[first + k * THREADS] = apply<Op, BYTES>(v[k]);

  if constexpr (!WHOLE) {
    const int64_t tid = static_cast<int64_t>(blockIdx.x) * THREADS + threadIdx.x;
    const int64_t tail = head + nvec * kPerVec;
    if (tid < head) y[tid] = Op::scalar(x[tid]);
    if (tid < n - tail) y[tail + tid] = Op::scalar(x[tail + tid]);
  }
}

// ---------------------------------------------------------------- launchers --

// Blocks for the scalar kernel's n elements: one step per thread, as for the
// vector kernel, so a large input is hundreds of waves of short blocks that the
// hardware schedules as SMs free up (like chapter 05's copy reference). Capped at
// kMaxBlocks; beyond that the grid-stride loop takes several steps. On an H100 a
// grid of a few waves per SM with longer loops measured 70-94% of a copy (worst
// at 1.33 waves), this form 98%.
unsigned grid_for(int64_t n) {
  const int64_t want = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(want < 1 ? 1 : (want < kMaxBlocks ? want : kMaxBlocks));
}

template <typename Op, typename T>
cudaError_t launch_scalar(const T* x, T* y, int64_t n, cudaStream_t stream) {
  gelu_scalar_kernel<Op, T><<<grid_for(n), kThreads, 0, stream>>>(x, y, n);
  return cudaGetLastError();
}

// Packs each thread of variants 2 and 3 loads before its first store. Little's
// law: to stream at bandwidth B with a memory latency L, about B x L bytes must be
// in flight. One 16-byte pack per thread at full occupancy (2,048 threads) is
// 32 KiB per SM. With L = 1 us, an H100 SXM (3.35 TB/s over 132 SMs: 25.4 KB per
// SM) needs one pack a thread, an H200 (4.81 TB/s: 36.5 KB) two. Measured at 256
// MiB and 1 GiB moved, % of a copy in the same rounds (fp16, bf16, fp32, both
// forms): H100, one pack 99.6-100.3 against 98.6-99.5 with two; H200, two packs
// 97.0-98.6 against 88.9-95.5 with one (but fp32 tanh: 98.4 against 99.1); that
// was the grid-stride form of the kernel, which read a thread's two packs a grid
// apart; the one-step form keeps it for 16-bit data (fp32: see launch_vector).
// The 1 us is the figure that separates those two GPUs, not a measured latency.
// Inputs that stay in L2 take two (H100, 16 MiB moved in a CUDA graph: 98.6%
// against 96.5%). The peak bandwidth comes from the memory clock and bus width.
struct MemoryFit {
  int packs;   // for inputs larger than the L2
  int64_t l2;  // bytes
};

MemoryFit query_memory_fit() {
  int device = 0, clock_khz = 0, bus_bits = 0, sms = 0, threads = 0, l2 = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&threads, cudaDevAttrMaxThreadsPerMultiProcessor, device);
  if (err == cudaSuccess) err = cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device);
  if (err != cudaSuccess || sms <= 0 || threads <= 0) {
    cudaGetLastError();  // unknown GPU: two packs, within a few points of the best on either
    return {2, 0};
  }
  // double data rate: two transfers per memory clock, bus_bits / 8 bytes each
  const double bytes_per_sm_per_us = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / sms * 1e-6;
  return {bytes_per_sm_per_us > static_cast<double>(threads) * kPackBytes ? 2 : 1, l2};
}

// The shape of a pack launch: packs a thread and block size (see launch_vector).
enum class PackShape {
  kTwo,      // two packs a thread, blocks of 128: inputs in the L2; 16-bit past it on an H200
  kOneWide,  // one pack, blocks of 512: past the L2 on a one-pack GPU (an H100)
  kOne,      // one pack, blocks of 128: fp32 past the L2 on a two-pack GPU (an H200)
};

PackShape pack_shape(int64_t bytes_moved, int element_bytes) {
  static const MemoryFit fit = query_memory_fit();  // once per process, which uses one kind of GPU
  if (bytes_moved <= fit.l2) return PackShape::kTwo;
  if (fit.packs == 1) return PackShape::kOneWide;
  return element_bytes == 4 ? PackShape::kOne : PackShape::kTwo;
}

// A small input (fewer than kSmallVectors 16-byte packs, 2 MiB) is latency,
// not bandwidth: every thread's load, math and store form one chain, and the
// launch ends when the slowest chain does. Below 2^16 packs each thread takes one
// 8-byte pack (2 floats or 4 halves) in blocks of 512 elements, so every SM gets
// work and each thread's chain of math is short; from 2^16 packs, one 16-byte
// pack in blocks of 256. What a thread does besides the math shows at this size.
// H200, CUDA graph, 32 x 4,096 halves in 8-byte packs, blocks of 128: 2.02-2.03
// us with the grid-stride loop this kernel had before, 1.99 without it, 1.96 as
// WHOLE (torch.compile 1.99). Before -> now, same rounds (torch.compile): erf
// form 32 x 4,096 floats 2.06 -> 2.01 us (2.16; one element a thread before),
// halves 1.98 -> 1.92 (1.95), bf16 2.00 -> 1.93 (2.08); tanh form floats 2.06 ->
// 1.99 (2.59); erf form 64 x 4,096 floats 2.37 -> 2.23 (2.26), 128 x 4,096 halves
// 2.41 -> 2.26 (2.48). Wider shapes lost at 32 x 4,096: one 16-byte pack a
// thread took 2.11-2.12 us in fp32, two in blocks of 128 2.18-2.63 (fp32, fp16).
constexpr int64_t kSmallVectors = 1 << 17;

// gelu_vector_kernel over n elements, the first `head` of them the scalar head:
// the WHOLE kernel where there is no head and n fills whole blocks, else the
// one with the bounds tests and the scalar head and tail.
template <typename Op, typename T, int BYTES, int K, int THREADS>
cudaError_t launch_vector_kernel(const T* x, T* y, int64_t n, int64_t head, cudaStream_t stream) {
  constexpr int64_t kPerVec = BYTES / sizeof(T);
  constexpr int64_t kVectorsPerBlock = static_cast<int64_t>(K) * THREADS;
  const int64_t nvec = (n - head) / kPerVec;
  int64_t blocks = (nvec + kVectorsPerBlock - 1) / kVectorsPerBlock;
  if (blocks < 1) blocks = 1;                          // a head and tail alone
  if (blocks > 0x7fffffff) return cudaErrorInvalidValue;  // beyond grid.x: over 2^40 elements
  if (head == 0 && n % (kVectorsPerBlock * kPerVec) == 0)
    gelu_vector_kernel<Op, T, BYTES, K, THREADS, true><<<blocks, THREADS, 0, stream>>>(x, y, n, 0);
  else
    gelu_vector_kernel<Op, T, BYTES, K, THREADS, false><<<blocks, THREADS, 0, stream>>>(x, y, n, head);
  return cudaGetLastError();
}

// Variant 1 (BYTES: one pair) and variants 2-3 (BYTES = kPackBytes).
template <typename Op, typename T, int BYTES>
cudaError_t launch_vector(const T* x, T* y, int64_t n, cudaStream_t stream) {
  const std::uintptr_t mx = reinterpret_cast<std::uintptr_t>(x) % BYTES;
  const std::uintptr_t my = reinterpret_cast<std::uintptr_t>(y) % BYTES;
  if (mx != my || mx % sizeof(T) != 0) return launch_scalar<Op>(x, y, n, stream);
  int64_t head = mx == 0 ? 0 : static_cast<int64_t>((BYTES - mx) / sizeof(T));
  if (head > n) head = n;
  if constexpr (BYTES != kPackBytes) {
    return launch_vector_kernel<Op, T, BYTES, 1, kThreads>(x, y, n, head, stream);
  } else {
    const int64_t nvec = (n - head) / (BYTES / static_cast<int64_t>(sizeof(T)));
    if (nvec < kSmallVectors / 2) {
      constexpr int kHalfPack = BYTES / 2;  // x + head is BYTES-aligned, so kHalfPack-aligned too
      constexpr int kThreadsFor512 = 512 / (kHalfPack / static_cast<int>(sizeof(T)));
      return launch_vector_kernel<Op, T, kHalfPack, 1, kThreadsFor512>(x, y, n, head, stream);
    }
    if (nvec < kSmallVectors)
      return launch_vector_kernel<Op, T, BYTES, 1, kBlockBytes / BYTES>(x, y, n, head, stream);
    // Past the L2, each round's time over the time of the shape replaced, in the
    // same round (median over the rounds; 95% intervals below 1):
    // * one pack a thread (an H100), blocks of 512 instead of 256: 0.996-0.998 at 1
    //   GiB (fp16/bf16/fp32 tanh, bf16 erf; 60 rounds), which moved bf16 tanh from
    //   0.2% behind torch's F.gelu to 0.2% ahead; blocks of 128: 0.9996-1.0024.
    // * fp32 on an H200, one pack in blocks of 256 instead of two in blocks of 128:
    //   0.996 at 1 GiB in both forms (40 rounds), where torch.compile's erf form had
    //   been 0.3% ahead; 256 MiB 0.999 (a tie). In fp16 the same shape lost 5%, and
    //   blocks of 512 lost 1-2% in fp32, as did two packs in blocks of 256 (3-4%).
    //   Blocks of 128 instead of 256, two runs (40 and 60 rounds): 1 GiB erf form
    //   0.997 and 0.996, tanh 1.000; 256 MiB erf 0.997 and 0.993, tanh 0.995. Two of
    //   those six intervals lie wholly below 1, none above: a gain no larger than two
    //   contenders timing one kernel can differ by (kernelbook.bench), kept as it
    //   never measured slower.
    switch (pack_shape(2 * n * static_cast<int64_t>(sizeof(T)), sizeof(T))) {
      case PackShape::kOneWide:
        return launch_vector_kernel<Op, T, BYTES, 1, kWideBlockBytes / BYTES>(x, y, n, head, stream);
      case PackShape::kOne:
        return launch_vector_kernel<Op, T, BYTES, 1, kNarrowBlockBytes / BYTES>(x, y, n, head, stream);
      default:
        return launch_vector_kernel<Op, T, BYTES, 2, kBlockBytes / (2 * BYTES)>(x, y, n, head, stream);
    }
  }
}

// Variants 0-2 of the fp32-math op.
template <typename T, int APPROX>
cudaError_t launch_fp32_math(const T* x, T* y, int64_t n, int variant, cudaStream_t stream) {
  using Op = Fp32Math<T, APPROX>;
  switch (variant) {
    case 0: return launch_scalar<Op>(x, y, n, stream);
    case 1: return launch_vector<Op, T, sizeof(typename Op::Pair)>(x, y, n, stream);
    default: return launch_vector<Op, T, kPackBytes>(x, y, n, stream);
  }
}

template <typename T>
cudaError_t gelu_dispatch(const T* x, T* y, int64_t n, int approximate, int variant, cudaStream_t stream) {
  if (approximate != 0 && approximate != 1) return cudaErrorInvalidValue;
  if (variant < 0 || variant > 2) return cudaErrorInvalidValue;  // variant 3: fp16 overload only
  if (n <= 0) return cudaSuccess;
  return approximate == 0 ? launch_fp32_math<T, 0>(x, y, n, variant, stream)
                          : launch_fp32_math<T, 1>(x, y, n, variant, stream);
}

}  // namespace

// y = GELU(x) for n contiguous elements.
//   approximate: 0 = erf form ('none'), 1 = tanh form ('tanh')
//   variant: 0 = one element per thread, 1 = pairs (half2 / bfloat162 / float2),
//            2 = 16-byte packs, 3 = half math (fp16 and tanh form only)
// Returns cudaErrorInvalidValue for any other approximate/variant combination,
// cudaSuccess without a launch for n <= 0, else the launch's cudaGetLastError().
// y may equal x; it must not otherwise overlap x.
cudaError_t gelu_forward(const float* x, float* y, int64_t n, int approximate, int variant,
                         cudaStream_t stream) {
  return gelu_dispatch(x, y, n, approximate, variant, stream);
}

cudaError_t gelu_forward(const __half* x, __half* y, int64_t n, int approximate, int variant,
                         cudaStream_t stream) {
  if (variant != 3) return gelu_dispatch(x, y, n, approximate, variant, stream);
  if (approximate != 1) return cudaErrorInvalidValue;  // the trap exists for the tanh form only
  if (n <= 0) return cudaSuccess;
  return launch_vector<HalfMathTanh, __half, kPackBytes>(x, y, n, stream);
}

cudaError_t gelu_forward(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t n, int approximate,
                         int variant, cudaStream_t stream) {
  return gelu_dispatch(x, y, n, approximate, variant, stream);
}
