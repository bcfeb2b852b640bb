// One decoder step of modelcore's KV-cache decoder: each row at its own position.
//
// The Python step makes about 90 ATen calls per token; at batch 1 their dispatch costs more
// than the arithmetic (docs/benchmarks.md). Here the projections are our own kernel over weights
// packed once per model (pack_weight), and everything between them (embedding, cache writes,
// attention of one query row over the cache and over the source, residuals, LayerNorm / RMSNorm,
// ReLU) is a plain loop over the rows. The Python path (modelcore/decoding/steppers.py) is the
// reference: tests compare the two.
#include <torch/extension.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

namespace {

// The order of one layer's 12 tensors in decoder_step's `weights` (each matrix packed by pack_weight):
// written here only, and exported to Python as LAYER_WEIGHTS, whose names are LayerWeights' fields
// (modelcore/decoding/weights.py); native/packed.py packs the list in this order.
enum LayerWeight {
  kQkvW, kQkvB, kSelfOutW, kSelfOutB, kCrossQW, kCrossQB, kCrossOutW, kCrossOutB, kFf1W, kFf1B, kFf2W, kFf2B,
  kWeightsPerLayer
};
const char* const kLayerWeightNames[kWeightsPerLayer] = {
    "w_qkv", "b_qkv", "w_self_out", "b_self_out", "w_cross_q", "b_cross_q",
    "w_cross_out", "b_cross_out", "w_ff1", "b_ff1", "w_ff2", "b_ff2"};
constexpr int kNormsPerLayer = 3;

struct Norm {
  int64_t kind;  // 0 LayerNorm, 1 RMSNorm
  const float* weight;
  const float* bias;  // nullptr: none
  double eps;
};

// x[r] = norm(x[r]) for each of B rows of D floats, in place.
void apply_norm(float* x, int64_t B, int64_t D, const Norm& n) {
  for (int64_t r = 0; r < B; ++r) {
    float* row = x + r * D;
    double mean = 0.0;
    if (n.kind == 0) {
      for (int64_t i = 0; i < D; ++i) mean += row[i];
      mean /= D;
    }
    double var = 0.0;
    for (int64_t i = 0; i < D; ++i) {
      const double c = row[i] - mean;
      var += c * c;
    }
    const float inv = static_cast<float>(1.0 / std::sqrt(var / D + n.eps));
    const float m = static_cast<float>(mean);
    for (int64_t i = 0; i < D; ++i) {
      float v = (row[i] - m) * inv * n.weight[i];
      if (n.bias != nullptr) v += n.bias[i];
      row[i] = v;
    }
  }
}

// The kernels below are built three times: for AVX-512 (x86-64-v4), for AVX2 + FMA (x86-64-v3)
// and for any x86-64. kernels() picks one set once per process: the best this CPU runs, unless
// MODELCORE_ISA (or, without it, torch's own ATEN_CPU_CAPABILITY) asks for a lesser one, so that
// one machine measures every path (bench/decode.py --isa). GCC's target_clones would pick by the
// CPU alone, and its resolver reads no environment.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MODELCORE_V4 __attribute__((target("arch=x86-64-v4")))
#define MODELCORE_V3 __attribute__((target("arch=x86-64-v3")))
#define MODELCORE_X86 1
#else
#define MODELCORE_V4
#define MODELCORE_V3
#endif

// sum_i a[i] b[i], in 16 partial sums the compiler keeps in vector registers.
inline float dot(const float* __restrict a, const float* __restrict b, int64_t n) {
  float part[16] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int l = 0; l < 16; ++l) part[l] += a[i + l] * b[i + l];
  float s = 0.f;
  for (; i < n; ++i) s += a[i] * b[i];
  for (int l = 0; l < 16; ++l) s += part[l];
  return s;
}

// Attention of the query rows bh in [begin, end) (row b = bh / H, head h = bh % H), see attend().
__attribute__((always_inline)) inline void attend_rows(const float* q, int64_t q_stride, const float* kp, const int64_t* ks, const float* vp,
                 const int64_t* vs, const int64_t* lengths, int64_t H, int64_t dk, float* out, float* weights,
                 int64_t width, float* scores, int64_t begin, int64_t end) {
  for (int64_t bh = begin; bh < end; ++bh) {
    const int64_t b = bh / H, h = bh % H, len = lengths[b];
    const float* qv = q + b * q_stride + h * dk;
    const float* k = kp + b * ks[0] + h * ks[1];
    const float* v = vp + b * vs[0] + h * vs[1];
    float top = -INFINITY;
    for (int64_t j = 0; j < len; ++j) {
      const float s = dot(qv, k + j * ks[2], dk);
      scores[j] = s;
      top = s > top ? s : top;
    }
    float total = 0.f;
    for (int64_t j = 0; j < len; ++j) {
      scores[j] = std::exp(scores[j] - top);
      total += scores[j];
    }
    const float inv = 1.f / total;
    float* __restrict o = out + b * H * dk + h * dk;
    for (int64_t i = 0; i < dk; ++i) o[i] = 0.f;
    for (int64_t j = 0; j < len; ++j) {
      const float w = scores[j] * inv;
      const float* __restrict vr = v + j * vs[2];
      for (int64_t i = 0; i < dk; ++i) o[i] += w * vr[i];
    }
    if (weights != nullptr) {
      float* kept = weights + bh * width;
      for (int64_t j = 0; j < len; ++j) kept[j] = scores[j] * inv;
      for (int64_t j = len; j < width; ++j) kept[j] = 0.f;
    }
  }
}

// The same attention with the ISA's vectors held in registers (issue 49: the AVX2 path; AVX-512 and the
// baseline keep attend_rows above, whose results they were measured with). A row's scores take 8 keys at a
// time, one vector of sums per key over dk (8 independent chains of FMAs, where dot() ran one chain and a
// scalar reduction of 16 partial sums per key); the weighted sum of the values keeps up to 8 vectors of the
// output row in registers across all positions, where attend_rows loaded and stored the row at each one.
template <class V>
__attribute__((always_inline)) inline V load_vector(const float* p) {
  V v;
  __builtin_memcpy(&v, p, sizeof(V));  // unaligned: a head's dk floats start anywhere in a row
  return v;
}

template <class V>
__attribute__((always_inline)) inline float lanes_sum(V v) {
  constexpr int kLanes = sizeof(V) / sizeof(float);
  float a[kLanes];
  __builtin_memcpy(a, &v, sizeof(V));
  float s = 0.f;
  for (int l = 0; l < kLanes; ++l) s += a[l];
  return s;
}

// scores[j] = q . k_j for j in [0, len), keys k_j = k + j * k_step, dk floats each.
template <class V>
__attribute__((always_inline)) inline void query_scores(const float* __restrict q, const float* __restrict k,
                                                        int64_t k_step, int64_t len, int64_t dk,
                                                        float* __restrict scores) {
  constexpr int kLanes = sizeof(V) / sizeof(float);
  constexpr int kKeys = 8;
  const int64_t whole = dk - dk % kLanes;
  int64_t j = 0;
  for (; j + kKeys <= len; j += kKeys) {
    V acc[kKeys] = {};
    for (int64_t i = 0; i < whole; i += kLanes) {
      const V qv = load_vector<V>(q + i);
      for (int u = 0; u < kKeys; ++u) acc[u] += qv * load_vector<V>(k + (j + u) * k_step + i);
    }
    for (int u = 0; u < kKeys; ++u) {
      float s = lanes_sum(acc[u]);
      for (int64_t i = whole; i < dk; ++i) s += q[i] * k[(j + u) * k_step + i];
      scores[j + u] = s;
    }
  }
  for (; j < len; ++j) {
    V acc = {};
    for (int64_t i = 0; i < whole; i += kLanes) acc += load_vector<V>(q + i) * load_vector<V>(k + j * k_step + i);
    float s = lanes_sum(acc);
    for (int64_t i = whole; i < dk; ++i) s += q[i] * k[j * k_step + i];
    scores[j] = s;
  }
}

// out[0, NV vectors) = sum_j p[j] * v_j[0, NV vectors), the sums in registers.
template <class V, int NV>
__attribute__((always_inline)) inline void weighted_vectors(const float* __restrict p, const float* __restrict v,
                                                            int64_t v_step, int64_t len, float* __restrict out) {
  constexpr int kLanes = sizeof(V) / sizeof(float);
  V acc[NV] = {};
  for (int64_t j = 0; j < len; ++j) {
    const float w = p[j];
    for (int c = 0; c < NV; ++c) acc[c] += w * load_vector<V>(v + j * v_step + c * kLanes);
  }
  for (int c = 0; c < NV; ++c) __builtin_memcpy(out + c * kLanes, &acc[c], sizeof(V));
}

template <class V>
__attribute__((always_inline)) inline void weighted_sum(const float* __restrict p, const float* __restrict v,
                                                        int64_t v_step, int64_t len, int64_t dk, float* __restrict out) {
  constexpr int kLanes = sizeof(V) / sizeof(float);
  int64_t i = 0;
  for (; i + kLanes <= dk; ) {
    const int64_t vectors = std::min<int64_t>(8, (dk - i) / kLanes);
    switch (vectors) {
      case 1: weighted_vectors<V, 1>(p, v + i, v_step, len, out + i); break;
      case 2: weighted_vectors<V, 2>(p, v + i, v_step, len, out + i); break;
      case 3: weighted_vectors<V, 3>(p, v + i, v_step, len, out + i); break;
      case 4: weighted_vectors<V, 4>(p, v + i, v_step, len, out + i); break;
      case 5: weighted_vectors<V, 5>(p, v + i, v_step, len, out + i); break;
      case 6: weighted_vectors<V, 6>(p, v + i, v_step, len, out + i); break;
      case 7: weighted_vectors<V, 7>(p, v + i, v_step, len, out + i); break;
      default: weighted_vectors<V, 8>(p, v + i, v_step, len, out + i); break;
    }
    i += vectors * kLanes;
  }
  for (; i < dk; ++i) {
    float s = 0.f;
    for (int64_t j = 0; j < len; ++j) s += p[j] * v[j * v_step + i];
    out[i] = s;
  }
}

template <class V>
__attribute__((always_inline)) inline void attend_rows_vector(const float* q, int64_t q_stride, const float* kp,
                                                              const int64_t* ks, const float* vp, const int64_t* vs,
                                                              const int64_t* lengths, int64_t H, int64_t dk, float* out,
                                                              float* weights, int64_t width, float* scores,
                                                              int64_t begin, int64_t end) {
  for (int64_t bh = begin; bh < end; ++bh) {
    const int64_t b = bh / H, h = bh % H, len = lengths[b];
    const float* qv = q + b * q_stride + h * dk;
    query_scores<V>(qv, kp + b * ks[0] + h * ks[1], ks[2], len, dk, scores);
    float top = -INFINITY;
    for (int64_t j = 0; j < len; ++j) top = scores[j] > top ? scores[j] : top;
    float total = 0.f;
    for (int64_t j = 0; j < len; ++j) {
      scores[j] = std::exp(scores[j] - top);
      total += scores[j];
    }
    const float inv = 1.f / total;
    for (int64_t j = 0; j < len; ++j) scores[j] *= inv;
    weighted_sum<V>(scores, vp + b * vs[0] + h * vs[1], vs[2], len, dk, out + b * H * dk + h * dk);
    if (weights != nullptr) {
      float* kept = weights + bh * width;
      for (int64_t j = 0; j < len; ++j) kept[j] = scores[j];
      for (int64_t j = len; j < width; ++j) kept[j] = 0.f;
    }
  }
}

// ---- projections through packed weights -------------------------------------------------------
//
// y = x W + b for x (M, K) and W (K, N), M up to a few dozen rows. MKL's GEMM copies W into its own
// blocked layout on every call (a fifth of a batch-16 step went to that copy here), and then runs
// its AVX2 kernel. pack_weight() makes that layout once per model: W in panels of 32 columns, each
// panel K rows of 32 contiguous floats (the last one zero-padded). A tile is up to MR rows of x
// times two of the ISA's vectors of one panel (32 columns with AVX-512, 16 with AVX2, 8 with SSE):
// MR x 2 sums stay in registers, each k loads two vectors of weights and broadcasts one value of
// each row. The vectors are the ISA's own width: a 16-float vector on AVX2 has no register of its
// own, and GCC kept such sums in memory (the AVX2 kernel ran 5-28x slower than addmm that way).
// The two threads split the panels.

constexpr int64_t kPanel = 32;
typedef float v16 __attribute__((vector_size(64)));  // 16 floats: one AVX-512 register
typedef float v8 __attribute__((vector_size(32)));   // 8 floats: one AVX2 register
typedef float v4 __attribute__((vector_size(16)));   // 4 floats: one SSE register

// Rows [0, MR) of x (rows x_stride apart) times 2 vectors of columns of one panel (w points at the
// first), plus bias, into y's ncols columns. KU independent sets of sums over alternating k keep the
// FMA pipes busy when MR is small.
template <class V, int MR, int KU>
__attribute__((always_inline)) inline void panel_tile(const float* __restrict x, int64_t x_stride, int64_t K,
                                                      const float* __restrict w, const float* __restrict bias,
                                                      int64_t ncols, float* __restrict y, int64_t y_stride, bool relu) {
  constexpr int kLanes = sizeof(V) / sizeof(float);
  V acc[KU][MR][2];
  for (int u = 0; u < KU; ++u)
    for (int m = 0; m < MR; ++m) acc[u][m][0] = acc[u][m][1] = V{};
  int64_t k = 0;
  for (; k + KU <= K; k += KU)
    for (int u = 0; u < KU; ++u) {
      const V w0 = *reinterpret_cast<const V*>(w + (k + u) * kPanel);
      const V w1 = *reinterpret_cast<const V*>(w + (k + u) * kPanel + kLanes);
      for (int m = 0; m < MR; ++m) {
        const float xv = x[m * x_stride + k + u];
        acc[u][m][0] += xv * w0;
        acc[u][m][1] += xv * w1;
      }
    }
  for (; k < K; ++k) {
    const V w0 = *reinterpret_cast<const V*>(w + k * kPanel);
    const V w1 = *reinterpret_cast<const V*>(w + k * kPanel + kLanes);
    for (int m = 0; m < MR; ++m) {
      const float xv = x[m * x_stride + k];
      acc[0][m][0] += xv * w0;
      acc[0][m][1] += xv * w1;
    }
  }
  alignas(64) float b[2 * kLanes] = {};  // vector loads below need the vector's alignment
  for (int64_t c = 0; c < ncols; ++c) b[c] = bias[c];
  const V b0 = *reinterpret_cast<const V*>(b), b1 = *reinterpret_cast<const V*>(b + kLanes);
  for (int m = 0; m < MR; ++m) {
    V s0 = acc[0][m][0] + b0, s1 = acc[0][m][1] + b1;
    for (int u = 1; u < KU; ++u) {
      s0 += acc[u][m][0];
      s1 += acc[u][m][1];
    }
    if (relu) {
      s0 = s0 > 0.f ? s0 : V{};
      s1 = s1 > 0.f ? s1 : V{};
    }
    float* out = y + m * y_stride;
    if (ncols == 2 * kLanes) {
      __builtin_memcpy(out, &s0, sizeof(s0));
      __builtin_memcpy(out + kLanes, &s1, sizeof(s1));
    } else {
      alignas(64) float tail[2 * kLanes];
      __builtin_memcpy(tail, &s0, sizeof(s0));
      __builtin_memcpy(tail + kLanes, &s1, sizeof(s1));
      for (int64_t c = 0; c < ncols; ++c) out[c] = tail[c];
    }
  }
}

// Rows [0, MR) times one column block: 4 sets of sums over k for one row, 2 for two rows (8 of
// AVX2's 16 registers), one set for more rows.
template <class V, int MR>
__attribute__((always_inline)) inline void panel_rows(const float* x, int64_t K, const float* w, const float* bias,
                                                      int64_t ncols, float* y, int64_t N, bool relu) {
  if (MR == 1)
    panel_tile<V, MR, 4>(x, K, K, w, bias, ncols, y, N, relu);
  else if (MR == 2)
    panel_tile<V, MR, 2>(x, K, K, w, bias, ncols, y, N, relu);
  else
    panel_tile<V, MR, 1>(x, K, K, w, bias, ncols, y, N, relu);
}

// One row times a whole panel (kPanel columns: 4 vectors on AVX2), KU sets of sums over alternating k. With
// one row the projection only streams the weights: this reads each panel once, front to back, where the
// 2-vector tiles went over it twice, each time reading every other cache line (issue 49: 20-30% less time
// per call on the AVX2 host; AVX-512's 2-vector tile already spans the panel).
template <class V, int KU>
__attribute__((always_inline)) inline void panel_row_wide(const float* __restrict x, int64_t K,
                                                          const float* __restrict w, const float* __restrict bias,
                                                          int64_t ncols, float* __restrict y, bool relu) {
  constexpr int kLanes = sizeof(V) / sizeof(float);
  constexpr int kVectors = kPanel / kLanes;
  V acc[KU][kVectors];
  for (int u = 0; u < KU; ++u)
    for (int c = 0; c < kVectors; ++c) acc[u][c] = V{};
  int64_t k = 0;
  for (; k + KU <= K; k += KU)
    for (int u = 0; u < KU; ++u) {
      const float xv = x[k + u];
      for (int c = 0; c < kVectors; ++c) acc[u][c] += xv * *reinterpret_cast<const V*>(w + (k + u) * kPanel + c * kLanes);
    }
  for (; k < K; ++k) {
    const float xv = x[k];
    for (int c = 0; c < kVectors; ++c) acc[0][c] += xv * *reinterpret_cast<const V*>(w + k * kPanel + c * kLanes);
  }
  alignas(64) float b[kPanel] = {};
  for (int64_t c = 0; c < ncols; ++c) b[c] = bias[c];
  alignas(64) float out[kPanel];
  for (int c = 0; c < kVectors; ++c) {
    V s = acc[0][c] + *reinterpret_cast<const V*>(b + c * kLanes);
    for (int u = 1; u < KU; ++u) s += acc[u][c];
    if (relu) s = s > 0.f ? s : V{};
    __builtin_memcpy(out + c * kLanes, &s, sizeof(V));
  }
  for (int64_t c = 0; c < ncols; ++c) y[c] = out[c];
}

// Panels [begin, end) for all M rows, in tiles of at most MOST rows: MOST x 2 sums take 16 of
// AVX-512's 32 registers at 8 rows, 12 of AVX2's (or SSE's) 16 at 6 rows, leaving room for the
// weights and the broadcast value.
// WIDE: a single row (M == 1) takes panel_row_wide.
template <class V, int MOST, bool WIDE>
__attribute__((always_inline)) inline void packed_panels(const float* x, int64_t M, int64_t K, const float* packed,
                                                         const float* bias, float* y, int64_t N, bool relu,
                                                         int64_t begin, int64_t end) {
  static_assert(MOST >= 6 && MOST <= 8, "tiles of up to 6 to 8 rows");
  constexpr int64_t kBlock = 2 * sizeof(V) / sizeof(float);  // columns of one tile
  for (int64_t p = begin; p < end; ++p) {
    if (WIDE && M == 1) {
      panel_row_wide<V, 2>(x, K, packed + p * K * kPanel, bias + p * kPanel, std::min(kPanel, N - p * kPanel),
                           y + p * kPanel, relu);
      continue;
    }
    for (int64_t c0 = p * kPanel; c0 < std::min((p + 1) * kPanel, N); c0 += kBlock) {
      const float* w = packed + p * K * kPanel + (c0 - p * kPanel);
      const int64_t ncols = std::min(kBlock, N - c0);
      for (int64_t m = 0; m < M;) {
        const int64_t rows = std::min<int64_t>(MOST, M - m);
        const float* xr = x + m * K;
        float* yr = y + m * N + c0;
        switch (rows) {
          case 1: panel_rows<V, 1>(xr, K, w, bias + c0, ncols, yr, N, relu); break;
          case 2: panel_rows<V, 2>(xr, K, w, bias + c0, ncols, yr, N, relu); break;
          case 3: panel_rows<V, 3>(xr, K, w, bias + c0, ncols, yr, N, relu); break;
          case 4: panel_rows<V, 4>(xr, K, w, bias + c0, ncols, yr, N, relu); break;
          case 5: panel_rows<V, 5>(xr, K, w, bias + c0, ncols, yr, N, relu); break;
          case 6: panel_rows<V, 6>(xr, K, w, bias + c0, ncols, yr, N, relu); break;
          case 7: panel_rows<V, MOST < 7 ? MOST : 7>(xr, K, w, bias + c0, ncols, yr, N, relu); break;
          default: panel_rows<V, MOST>(xr, K, w, bias + c0, ncols, yr, N, relu); break;
        }
        m += rows;
      }
    }
  }
}

// ---- one set of kernels per ISA, chosen once ---------------------------------------------------

using PanelsFn = void (*)(const float*, int64_t, int64_t, const float*, const float*, float*, int64_t, bool, int64_t,
                          int64_t);
using AttendRowsFn = void (*)(const float*, int64_t, const float*, const int64_t*, const float*, const int64_t*,
                              const int64_t*, int64_t, int64_t, float*, float*, int64_t, float*, int64_t, int64_t);

#define MODELCORE_VARIANT(TARGET, SUFFIX, VECTOR, MOST, WIDE, ATTEND)                                              \
  TARGET void packed_panels_##SUFFIX(const float* x, int64_t M, int64_t K, const float* packed, const float* bias, \
                                     float* y, int64_t N, bool relu, int64_t begin, int64_t end) {                 \
    packed_panels<VECTOR, MOST, WIDE>(x, M, K, packed, bias, y, N, relu, begin, end);                              \
  }                                                                                                                \
  TARGET void attend_rows_##SUFFIX(const float* q, int64_t q_stride, const float* kp, const int64_t* ks,           \
                                   const float* vp, const int64_t* vs, const int64_t* lengths, int64_t H,          \
                                   int64_t dk, float* out, float* weights, int64_t width, float* scores,           \
                                   int64_t begin, int64_t end) {                                                   \
    ATTEND(q, q_stride, kp, ks, vp, vs, lengths, H, dk, out, weights, width, scores, begin, end);                 \
  }

// AVX-512 and the baseline run the kernels they were measured with; AVX2 the single-row panel tile and
// the attention in registers (issue 49).
MODELCORE_VARIANT(MODELCORE_V4, avx512, v16, 8, false, attend_rows)
MODELCORE_VARIANT(MODELCORE_V3, avx2, v8, 6, true, attend_rows_vector<v8>)
MODELCORE_VARIANT(, baseline, v4, 6, false, attend_rows)
#undef MODELCORE_VARIANT

struct Kernels {
  const char* isa;  // what isa() reports
  PanelsFn panels;
  AttendRowsFn attend_rows;
};
const Kernels kVariants[] = {
    {"avx512", packed_panels_avx512, attend_rows_avx512},
    {"avx2", packed_panels_avx2, attend_rows_avx2},
    {"baseline", packed_panels_baseline, attend_rows_baseline},
};

// The best variant this CPU runs: 0 AVX-512, 1 AVX2, 2 baseline.
int best_variant() {
#ifdef MODELCORE_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return 0;
  if (__builtin_cpu_supports("x86-64-v3")) return 1;
#endif
  return 2;
}

// The variant a name asks for ("avx512", "avx2", "baseline" or "default"; "" or "auto": the best),
// never one the CPU cannot run: asking for AVX-512 on an AVX2 CPU gives AVX2.
int variant_named(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  int asked = 0;
  if (name == "avx2")
    asked = 1;
  else if (name == "baseline" || name == "default")
    asked = 2;
  else
    TORCH_CHECK(name.empty() || name == "auto" || name == "avx512", "unknown ISA '", name,
                "': avx512, avx2, baseline or auto");
  return std::max(asked, best_variant());
}

// MODELCORE_ISA, else ATEN_CPU_CAPABILITY (forcing torch's kernels forces these too), else the CPU's best.
// A name torch knows and these kernels do not (zvector, vsx, sve256: other CPUs) leaves the choice to the CPU.
int variant_from_environment() {
  const char* ours = std::getenv("MODELCORE_ISA");
  if (ours != nullptr && *ours != '\0') return variant_named(ours);
  const char* torch_isa = std::getenv("ATEN_CPU_CAPABILITY");
  if (torch_isa != nullptr) {
    std::string name(torch_isa);
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    if (name == "avx512" || name == "avx2" || name == "default") return variant_named(name);
  }
  return best_variant();
}

std::atomic<int> chosen{-1};

const Kernels& kernels() {
  int v = chosen.load(std::memory_order_relaxed);
  if (v < 0) {
    v = variant_from_environment();
    chosen.store(v, std::memory_order_relaxed);
  }
  return kVariants[v];
}

std::string isa() { return kernels().isa; }

// Run the variant named from now on in this process (the tests run each one the CPU has); returns the one taken.
std::string use_isa(const std::string& name) {
  chosen.store(variant_named(name), std::memory_order_relaxed);
  return isa();
}

// out[b, h*dk : (h+1)*dk] = softmax(q . K[0..len_b)) V for every row b and head h.
// q rows are q_stride floats apart; K and V are (rows, heads, positions, dk) views whose last
// dimension is contiguous (a cache buffer with room for more positions, or a sliced source).
// When `weights` is not null it receives each row's attention weights: (B, H, width) floats,
// exact zeros past the row's length.
void attend(const float* q, int64_t q_stride, const torch::Tensor& K, const torch::Tensor& V,
            const std::vector<int64_t>& lengths, int64_t B, int64_t H, int64_t dk, float* out,
            float* weights = nullptr, int64_t width = 0) {
  TORCH_CHECK(K.stride(3) == 1 && V.stride(3) == 1, "keys and values: contiguous last dimension");
  const int64_t ks[3] = {K.stride(0), K.stride(1), K.stride(2)};
  const int64_t vs[3] = {V.stride(0), V.stride(1), V.stride(2)};
  const int64_t most = *std::max_element(lengths.begin(), lengths.begin() + B);
  at::parallel_for(0, B * H, 8, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(most);
    kernels().attend_rows(q, q_stride, K.data_ptr<float>(), ks, V.data_ptr<float>(), vs, lengths.data(), H, dk, out,
                          weights, width, scores.data(), begin, end);
  });
}

// W (K, N), row-major -> (panels, K, 32): the layout project() reads.
torch::Tensor pack_weight(const torch::Tensor& w) {
  TORCH_CHECK(w.dim() == 2 && w.scalar_type() == torch::kFloat && w.device().is_cpu(), "pack_weight: a 2-d float32 CPU tensor");
  const torch::Tensor c = w.contiguous();
  const int64_t K = c.size(0), N = c.size(1), P = (N + kPanel - 1) / kPanel;
  torch::Tensor packed = torch::zeros({P, K, kPanel}, c.options());
  const float* src = c.data_ptr<float>();
  float* dst = packed.data_ptr<float>();
  for (int64_t p = 0; p < P; ++p)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < kPanel && p * kPanel + j < N; ++j) dst[(p * K + k) * kPanel + j] = src[k * N + p * kPanel + j];
  return packed;
}

// y (M, N) = x (M, K) @ W + b, rows contiguous, W given packed (pack_weight); ReLU after it when asked.
void project_into(const float* x, int64_t M, int64_t K, const torch::Tensor& packed, const torch::Tensor& b, float* y,
                  bool relu = false) {
  const int64_t N = b.size(0);
  TORCH_CHECK(packed.dim() == 3 && packed.size(1) == K && packed.size(2) == kPanel &&
                  packed.size(0) == (N + kPanel - 1) / kPanel && b.is_contiguous(),
              "projection: x (M, K), packed (ceil(N / 32), K, 32), b (N,)");
  TORCH_CHECK(packed.is_contiguous() && reinterpret_cast<uintptr_t>(packed.data_ptr<float>()) % 64 == 0,
              "projection: packed weights must be pack_weight's own tensor (contiguous, 64-byte aligned)");
  const float* wp = packed.data_ptr<float>();
  const float* bp = b.data_ptr<float>();
  const PanelsFn panels = kernels().panels;
  at::parallel_for(0, packed.size(0), 1, [&](int64_t begin, int64_t end) {
    panels(x, M, K, wp, bp, y, N, relu, begin, end);
  });
}

// x (M, K) @ W + b as a new tensor (the module's `linear`).
torch::Tensor project(const torch::Tensor& x, const torch::Tensor& packed, const torch::Tensor& b, bool relu = false) {
  TORCH_CHECK(x.dim() == 2 && x.is_contiguous(), "projection: x (M, K), contiguous");
  torch::Tensor y = torch::empty({x.size(0), b.size(0)}, x.options());
  project_into(x.data_ptr<float>(), x.size(0), x.size(1), packed, b, y.data_ptr<float>(), relu);
  return y;
}

// A step's intermediate rows, kept by each calling thread from one step to the next, so that a step allocates
// only the tensors it returns (issue 49: its 20-odd torch::empty calls took about 5 % of a batch-1 step).
float* scratch(std::vector<float>& rows, int64_t floats) {
  if (static_cast<int64_t>(rows.size()) < floats) rows.resize(floats);
  return rows.data();
}

}  // namespace

// tokens: B ids, row r at position row_at[r] -> [logits (B, V)], plus, when capturing, this step's
// attention weights [self (L, B, H, T), cross (L, B, H, S)] (T = 1 + the largest position; zeros
// past each row's own length). Writes this step's keys/values into self_k/self_v. Every weight
// matrix (the layers' and w_out) comes packed by pack_weight().
std::vector<torch::Tensor> decoder_step(
    const std::vector<int64_t>& tokens, const std::vector<int64_t>& row_at, const torch::Tensor& embedding,
    const torch::Tensor& positions,
    const std::vector<torch::Tensor>& weights, const std::vector<torch::Tensor>& norm_weights,
    const std::vector<torch::Tensor>& norm_biases, const std::vector<double>& norm_eps, int64_t norm_kind,
    const std::vector<torch::Tensor>& self_k, const std::vector<torch::Tensor>& self_v,
    const std::vector<torch::Tensor>& cross_k, const std::vector<torch::Tensor>& cross_v,
    const std::vector<int64_t>& src_lengths, const torch::Tensor& w_out, const torch::Tensor& b_out,
    int64_t n_heads, bool post, bool residual, bool capture) {
  const int64_t B = static_cast<int64_t>(tokens.size()), D = embedding.size(1), H = n_heads, dk = D / H;
  const int64_t L = static_cast<int64_t>(self_k.size());
  TORCH_CHECK(static_cast<int64_t>(weights.size()) == L * kWeightsPerLayer, "weights: 12 per layer");
  TORCH_CHECK(static_cast<int64_t>(norm_weights.size()) >= L * kNormsPerLayer, "norms: 3 per layer");
  auto norm = [&](int64_t i) {
    const auto& bias = norm_biases[i];
    return Norm{norm_kind, norm_weights[i].data_ptr<float>(), bias.defined() && bias.numel() ? bias.data_ptr<float>() : nullptr,
                norm_eps[i]};
  };
  TORCH_CHECK(L >= 1 && static_cast<int64_t>(row_at.size()) == B, "one position per row, one layer at least");
  TORCH_CHECK(static_cast<int64_t>(cross_k.size()) == L && static_cast<int64_t>(cross_v.size()) == L &&
                  static_cast<int64_t>(self_v.size()) == L && static_cast<int64_t>(src_lengths.size()) == B,
              "caches: one per layer, a source length per row");
  for (int64_t l = 0; l < L; ++l)
    TORCH_CHECK(self_k[l].size(0) >= B && self_v[l].size(0) >= B && cross_k[l].size(0) >= B && cross_v[l].size(0) >= B,
                "caches hold fewer rows than the step feeds");
  for (int64_t r = 0; r < B; ++r) {
    TORCH_CHECK(tokens[r] >= 0 && tokens[r] < embedding.size(0), "token id out of range");
    TORCH_CHECK(src_lengths[r] >= 1 && src_lengths[r] <= cross_k[0].size(2), "source length out of range");
  }
  const int64_t F = weights[kFf1B].size(0);  // d_ff
  thread_local std::vector<float> x_rows, h_rows, attn_rows, qkv_rows, q_rows, y_rows, hidden_rows;
  float* x = scratch(x_rows, B * D);  // the residual stream
  float* h = scratch(h_rows, B * D);  // a sublayer's input: x (Post-LN) or norm(x) (Pre-LN)
  float* attn = scratch(attn_rows, B * D);
  float* qkv = scratch(qkv_rows, B * 3 * D);
  float* q = scratch(q_rows, B * D);
  float* y = scratch(y_rows, B * D);
  float* hidden = scratch(hidden_rows, B * F);
  std::vector<int64_t> self_lengths(B);
  {
    const float* e = embedding.data_ptr<float>();
    for (int64_t r = 0; r < B; ++r) {
      TORCH_CHECK(row_at[r] >= 0 && row_at[r] < positions.size(0) && row_at[r] < self_k[0].size(2), "position out of range");
      const float* p = positions.data_ptr<float>() + row_at[r] * D;
      for (int64_t i = 0; i < D; ++i) x[r * D + i] = e[tokens[r] * D + i] + p[i];
      self_lengths[r] = row_at[r] + 1;
    }
  }
  const int64_t T = *std::max_element(self_lengths.begin(), self_lengths.end());
  const int64_t S = cross_k.empty() ? 0 : cross_k[0].size(2);
  torch::Tensor self_weights, cross_weights;
  if (capture) {
    self_weights = torch::empty({L, B, H, T}, embedding.options());
    cross_weights = torch::empty({L, B, H, S}, embedding.options());
  }

  // x <- x + y (or y alone without residuals), then the Post-LN norm.
  auto finish = [&](const Norm& n) {
    if (residual)
      for (int64_t i = 0; i < B * D; ++i) x[i] += y[i];
    else
      std::copy(y, y + B * D, x);
    if (post) apply_norm(x, B, D, n);
  };
  auto input = [&](const Norm& n) -> const float* {  // what a sublayer reads
    if (post) return x;
    std::copy(x, x + B * D, h);
    apply_norm(h, B, D, n);
    return h;
  };

  for (int64_t l = 0; l < L; ++l) {
    const torch::Tensor* w = weights.data() + l * kWeightsPerLayer;
    const Norm n1 = norm(3 * l), n2 = norm(3 * l + 1), n3 = norm(3 * l + 2);
    // masked self-attention over the cache
    project_into(input(n1), B, D, w[kQkvW], w[kQkvB], qkv);  // (B, 3D): q | k | v, q pre-scaled
    const torch::Tensor &kc = self_k[l], &vc = self_v[l];
    float* kw = kc.data_ptr<float>();
    float* vw = vc.data_ptr<float>();
    for (int64_t r = 0; r < B; ++r)
      for (int64_t hh = 0; hh < H; ++hh) {
        const float* kn = qkv + r * 3 * D + D + hh * dk;
        const float* vn = qkv + r * 3 * D + 2 * D + hh * dk;
        std::copy(kn, kn + dk, kw + r * kc.stride(0) + hh * kc.stride(1) + row_at[r] * kc.stride(2));
        std::copy(vn, vn + dk, vw + r * vc.stride(0) + hh * vc.stride(1) + row_at[r] * vc.stride(2));
      }
    attend(qkv, 3 * D, kc, vc, self_lengths, B, H, dk, attn, capture ? self_weights[l].data_ptr<float>() : nullptr, T);
    project_into(attn, B, D, w[kSelfOutW], w[kSelfOutB], y);
    finish(n1);
    // cross-attention over the source
    project_into(input(n2), B, D, w[kCrossQW], w[kCrossQB], q);  // (B, D), pre-scaled
    attend(q, D, cross_k[l], cross_v[l], src_lengths, B, H, dk, attn,
           capture ? cross_weights[l].data_ptr<float>() : nullptr, S);
    project_into(attn, B, D, w[kCrossOutW], w[kCrossOutB], y);
    finish(n2);
    // position-wise FFN
    project_into(input(n3), B, D, w[kFf1W], w[kFf1B], hidden, /*relu=*/true);
    project_into(hidden, B, F, w[kFf2W], w[kFf2B], y);
    finish(n3);
  }
  if (!post) apply_norm(x, B, D, norm(3 * L));  // Pre-LN's final norm
  torch::Tensor logits = torch::empty({B, b_out.size(0)}, embedding.options());
  project_into(x, B, D, w_out, b_out, logits.data_ptr<float>());
  if (capture) return {logits, self_weights, cross_weights};
  return {logits};
}

// What BatchDecoder's choices read from a step's logits (B, V), float32 (batch.py's step_scores, whose Python
// computes the same): -inf written at `banned` in every row and at `eos` in `eos_rows` (in place), then
// logp = log_softmax(logits), the `width` largest of each row, best first, and, when `entropy`, each row's
// sum of entr(exp(logp)). The same ATen calls as the Python, so every number is the same bit for bit; here
// they are one call from Python instead of eight, with the lists built in C++ (issue 49: right after a step has
// read its 12 MB of weights, the eight took 51 µs at batch 1 and this call 36, one thread, AVX2 forced).
py::tuple scores(const torch::Tensor& logits, const std::vector<int64_t>& banned, int64_t eos,
                 const std::vector<int64_t>& eos_rows, int64_t width, bool entropy) {
  TORCH_CHECK(logits.dim() == 2 && logits.scalar_type() == torch::kFloat && logits.is_contiguous() &&
                  logits.device().is_cpu(), "scores: contiguous (B, V) float32 CPU logits");
  const int64_t B = logits.size(0), V = logits.size(1);
  TORCH_CHECK(width >= 1 && width <= V, "scores: width in [1, V]");
  for (int64_t id : banned) TORCH_CHECK(id >= 0 && id < V, "scores: banned id out of range");
  TORCH_CHECK(eos >= 0 && eos < V, "scores: eos id out of range");
  for (int64_t r : eos_rows) TORCH_CHECK(r >= 0 && r < B, "scores: row out of range");
  torch::Tensor logp, top_values, top_ids, entropies;
  {
    py::gil_scoped_release release;
    float* x = logits.data_ptr<float>();
    const float inf = -std::numeric_limits<float>::infinity();
    for (int64_t r = 0; r < B; ++r)
      for (int64_t id : banned) x[r * V + id] = inf;
    for (int64_t r : eos_rows) x[r * V + eos] = inf;
    logp = at::log_softmax(logits, -1);
    std::tie(top_values, top_ids) = at::topk(logp, width);
    if (entropy) entropies = at::special_entr(at::exp(logp)).sum(-1);
  }
  const float* values = top_values.data_ptr<float>();
  const int64_t* ids = top_ids.data_ptr<int64_t>();
  py::list top_logp(B), top(B), entropy_list(entropy ? B : 0);
  for (int64_t r = 0; r < B; ++r) {
    py::list row_logp(width), row_ids(width);
    for (int64_t k = 0; k < width; ++k) {
      row_logp[k] = py::float_(values[r * width + k]);  // float32 widens exactly, as tolist() does
      row_ids[k] = py::int_(ids[r * width + k]);
    }
    top_logp[r] = std::move(row_logp);
    top[r] = std::move(row_ids);
    if (entropy) entropy_list[r] = py::float_(entropies.data_ptr<float>()[r]);
  }
  return py::make_tuple(logp, top_logp, top, entropy_list);
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  // The step touches tensors only: it lets go of the GIL, so the playground worker's other thread
  // sends the last step's frames while this one computes (arguments are converted before, and the
  // result after, with the GIL held).
  // Keyword-only: 20 arguments are called by name (native/packed.py), never by position.
  m.def("decoder_step", &decoder_step, "one KV-cache decoder step, each row at its own position", py::kw_only(),
        py::arg("tokens"), py::arg("row_at"), py::arg("embedding"), py::arg("positions"), py::arg("weights"),
        py::arg("norm_weights"), py::arg("norm_biases"), py::arg("norm_eps"), py::arg("norm_kind"), py::arg("self_k"),
        py::arg("self_v"), py::arg("cross_k"), py::arg("cross_v"), py::arg("src_lengths"), py::arg("w_out"),
        py::arg("b_out"), py::arg("n_heads"), py::arg("post"), py::arg("residual"), py::arg("capture"),
        py::call_guard<py::gil_scoped_release>());
  py::tuple names(static_cast<size_t>(kWeightsPerLayer));
  for (int i = 0; i < kWeightsPerLayer; ++i) names[i] = kLayerWeightNames[i];
  m.attr("LAYER_WEIGHTS") = names;
  m.def("isa", &isa, "the kernels' ISA in this process: avx512, avx2 or baseline");
  m.def("use_isa", &use_isa, "run the kernels built for this ISA (avx512, avx2, baseline, auto; at most the CPU's)",
        py::arg("name"));
  m.def("pack_weight", &pack_weight, "W (in, out) in the panel layout the step's projections read");
  m.def("scores", &scores, "a step's logits banned in place, then (logp, top log-probabilities, top ids, entropies)",
        py::arg("logits"), py::arg("banned"), py::arg("eos"), py::arg("eos_rows"), py::arg("width"),
        py::arg("entropy"));
  m.def("linear", &project, "x @ W + b (ReLU after it when relu) with W packed by pack_weight",
        py::arg("x"), py::arg("packed"), py::arg("b"), py::arg("relu") = false);
}
