// One decoder step of modelcore's KV-cache decoder: each row at its own position.
//
// The Python step makes about 90 ATen calls per token; at batch 1 their dispatch costs more
// than the arithmetic (docs/benchmarks.md). Here the projections are a matrix-vector product of
// our own for one or two rows and ATen's GEMM (MKL) for more, and everything between them
// (embedding, cache writes, attention of one query row over the cache and over the source,
// residuals, LayerNorm / RMSNorm, ReLU) is a plain loop over the rows. The Python path
// (modelcore/decoding/steppers.py) is the reference: tests compare the two.
#include <torch/extension.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <vector>

namespace {

constexpr int kWeightsPerLayer = 12;  // w_qkv b_qkv w_so b_so w_cq b_cq w_co b_co w1 b1 w2 b2
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

// out[b, h*dk : (h+1)*dk] = softmax(q . K[0..len_b)) V for every row b and head h.
// q rows are q_stride floats apart; K and V are (rows, heads, positions, dk) views whose last
// dimension is contiguous (a cache buffer with room for more positions, or a sliced source).
// When `weights` is not null it receives each row's attention weights: (B, H, width) floats,
// exact zeros past the row's length.
void attend(const float* q, int64_t q_stride, const torch::Tensor& K, const torch::Tensor& V,
            const std::vector<int64_t>& lengths, int64_t B, int64_t H, int64_t dk, float* out,
            float* weights = nullptr, int64_t width = 0) {
  const float* kp = K.data_ptr<float>();
  const float* vp = V.data_ptr<float>();
  const int64_t kb = K.stride(0), kh = K.stride(1), kj = K.stride(2);
  const int64_t vb = V.stride(0), vh = V.stride(1), vj = V.stride(2);
  const int64_t most = *std::max_element(lengths.begin(), lengths.end());
  at::parallel_for(0, B * H, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(most);
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / H, h = bh % H, len = lengths[b];
      const float* qv = q + b * q_stride + h * dk;
      const float* k = kp + b * kb + h * kh;
      const float* v = vp + b * vb + h * vh;
      float top = -INFINITY;
      for (int64_t j = 0; j < len; ++j) {
        const float* kr = k + j * kj;
        float s = 0.f;
        for (int64_t i = 0; i < dk; ++i) s += qv[i] * kr[i];
        scores[j] = s;
        top = s > top ? s : top;
      }
      float total = 0.f;
      for (int64_t j = 0; j < len; ++j) {
        scores[j] = std::exp(scores[j] - top);
        total += scores[j];
      }
      float* o = out + b * H * dk + h * dk;
      for (int64_t i = 0; i < dk; ++i) o[i] = 0.f;
      if (weights != nullptr) {
        float* kept = weights + (b * H + h) * width;
        for (int64_t j = 0; j < len; ++j) kept[j] = scores[j] / total;
        for (int64_t j = len; j < width; ++j) kept[j] = 0.f;
      }
      for (int64_t j = 0; j < len; ++j) {
        const float w = scores[j] / total;
        const float* vr = v + j * vj;
        for (int64_t i = 0; i < dk; ++i) o[i] += w * vr[i];
      }
    }
  });
}

// GCC builds the kernel below twice, for AVX2 + FMA (x86-64-v3) and for any x86-64, and picks
// one when the library loads: the build machine's CPU does not decide what the code may use.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define MODELCORE_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define MODELCORE_CLONES
#endif

// y[j] = b[j] + sum_i x[i] w_t[i, j] for the columns j in [begin, end) of one row.
MODELCORE_CLONES
void gemv_columns(const float* x, const float* w_t, const float* b, float* y, int64_t in, int64_t out,
                  int64_t begin, int64_t end, bool relu) {
  for (int64_t j = begin; j < end; ++j) y[j] = b[j];
  int64_t i = 0;
  for (; i + 4 <= in; i += 4) {  // four weight rows per pass over y: a quarter of the loads and stores of y
    const float x0 = x[i], x1 = x[i + 1], x2 = x[i + 2], x3 = x[i + 3];
    const float *w0 = w_t + i * out, *w1 = w0 + out, *w2 = w1 + out, *w3 = w2 + out;
    for (int64_t j = begin; j < end; ++j) y[j] += x0 * w0[j] + x1 * w1[j] + x2 * w2[j] + x3 * w3[j];
  }
  for (; i < in; ++i) {
    const float xi = x[i];
    const float* wr = w_t + i * out;
    for (int64_t j = begin; j < end; ++j) y[j] += xi * wr[j];
  }
  if (relu)
    for (int64_t j = begin; j < end; ++j) y[j] = y[j] > 0.f ? y[j] : 0.f;
}

// x (B, in) @ w_t (in, out) + b (ReLU after it when asked). For one or two rows, a
// matrix-vector product that streams w_t once with its columns split between the threads:
// MKL's GEMM for so few rows moved the weights about 30 % slower here. From kGemmRows rows on,
// the GEMM.
constexpr int64_t kGemmRows = 3;

torch::Tensor project(const torch::Tensor& x, const torch::Tensor& w_t, const torch::Tensor& b, bool relu = false) {
  const int64_t B = x.size(0);
  if (B >= kGemmRows) return relu ? at::_addmm_activation(b, x, w_t, 1, 1, false) : torch::addmm(b, x, w_t);
  const int64_t in = w_t.size(0), out = w_t.size(1);
  torch::Tensor y = torch::empty({B, out}, x.options());
  const float* xp = x.data_ptr<float>();
  const float* wp = w_t.data_ptr<float>();
  const float* bp = b.data_ptr<float>();
  float* yp = y.data_ptr<float>();
  at::parallel_for(0, out, 128, [&](int64_t begin, int64_t end) {
    for (int64_t r = 0; r < B; ++r) gemv_columns(xp + r * in, wp, bp, yp + r * out, in, out, begin, end, relu);
  });
  return y;
}

}  // namespace

// tokens (B,), row r at position row_at[r] -> [logits (B, V)], plus, when capturing, this step's
// attention weights [self (L, B, H, T), cross (L, B, H, S)] (T = 1 + the largest position; zeros
// past each row's own length). Writes this step's keys/values into self_k/self_v.
std::vector<torch::Tensor> decoder_step(
    const torch::Tensor& tokens, const std::vector<int64_t>& row_at, const torch::Tensor& embedding,
    const torch::Tensor& positions,
    const std::vector<torch::Tensor>& weights, const std::vector<torch::Tensor>& norm_weights,
    const std::vector<torch::Tensor>& norm_biases, const std::vector<double>& norm_eps, int64_t norm_kind,
    const std::vector<torch::Tensor>& self_k, const std::vector<torch::Tensor>& self_v,
    const std::vector<torch::Tensor>& cross_k, const std::vector<torch::Tensor>& cross_v,
    const std::vector<int64_t>& src_lengths, const torch::Tensor& w_out, const torch::Tensor& b_out,
    int64_t n_heads, bool post, bool residual, bool capture) {
  const int64_t B = tokens.size(0), D = embedding.size(1), H = n_heads, dk = D / H;
  const int64_t L = static_cast<int64_t>(self_k.size());
  TORCH_CHECK(static_cast<int64_t>(weights.size()) == L * kWeightsPerLayer, "weights: 12 per layer");
  TORCH_CHECK(static_cast<int64_t>(norm_weights.size()) >= L * kNormsPerLayer, "norms: 3 per layer");
  auto norm = [&](int64_t i) {
    const auto& bias = norm_biases[i];
    return Norm{norm_kind, norm_weights[i].data_ptr<float>(), bias.defined() && bias.numel() ? bias.data_ptr<float>() : nullptr,
                norm_eps[i]};
  };
  TORCH_CHECK(L >= 1 && static_cast<int64_t>(row_at.size()) == B, "one position per row, one layer at least");
  TORCH_CHECK(tokens.scalar_type() == torch::kLong && tokens.is_contiguous(), "tokens: contiguous int64");
  TORCH_CHECK(static_cast<int64_t>(cross_k.size()) == L && static_cast<int64_t>(cross_v.size()) == L &&
                  static_cast<int64_t>(self_v.size()) == L && static_cast<int64_t>(src_lengths.size()) == B,
              "caches: one per layer, a source length per row");
  for (int64_t l = 0; l < L; ++l)
    TORCH_CHECK(self_k[l].size(0) >= B && self_v[l].size(0) >= B && cross_k[l].size(0) >= B && cross_v[l].size(0) >= B,
                "caches hold fewer rows than the step feeds");
  for (int64_t r = 0; r < B; ++r) {
    TORCH_CHECK(tokens.data_ptr<int64_t>()[r] >= 0 && tokens.data_ptr<int64_t>()[r] < embedding.size(0), "token id out of range");
    TORCH_CHECK(src_lengths[r] >= 1 && src_lengths[r] <= cross_k[0].size(2), "source length out of range");
  }
  const int64_t* ids = tokens.data_ptr<int64_t>();
  torch::Tensor x = torch::empty({B, D}, embedding.options());
  std::vector<int64_t> self_lengths(B);
  {
    const float* e = embedding.data_ptr<float>();
    float* xp = x.data_ptr<float>();
    for (int64_t r = 0; r < B; ++r) {
      TORCH_CHECK(row_at[r] >= 0 && row_at[r] < positions.size(0) && row_at[r] < self_k[0].size(2), "position out of range");
      const float* p = positions.data_ptr<float>() + row_at[r] * D;
      for (int64_t i = 0; i < D; ++i) xp[r * D + i] = e[ids[r] * D + i] + p[i];
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
  torch::Tensor attn = torch::empty({B, D}, x.options());
  torch::Tensor h = torch::empty({B, D}, x.options());  // a sublayer's input: x (Post-LN) or norm(x) (Pre-LN)

  // x <- x + y (or y alone without residuals), then the Post-LN norm.
  auto finish = [&](torch::Tensor& y, const Norm& n) {
    float* xp = x.data_ptr<float>();
    const float* yp = y.data_ptr<float>();
    if (residual)
      for (int64_t i = 0; i < B * D; ++i) xp[i] += yp[i];
    else
      std::copy(yp, yp + B * D, xp);
    if (post) apply_norm(xp, B, D, n);
  };
  auto input = [&](const Norm& n) -> torch::Tensor& {  // what a sublayer reads
    if (post) return x;
    h.copy_(x);
    apply_norm(h.data_ptr<float>(), B, D, n);
    return h;
  };

  for (int64_t l = 0; l < L; ++l) {
    const torch::Tensor* w = weights.data() + l * kWeightsPerLayer;
    const Norm n1 = norm(3 * l), n2 = norm(3 * l + 1), n3 = norm(3 * l + 2);
    // masked self-attention over the cache
    torch::Tensor qkv = project(input(n1), w[0], w[1]);  // (B, 3D): q | k | v, q pre-scaled
    const torch::Tensor &kc = self_k[l], &vc = self_v[l];
    float* kw = kc.data_ptr<float>();
    float* vw = vc.data_ptr<float>();
    const float* qp = qkv.data_ptr<float>();
    for (int64_t r = 0; r < B; ++r)
      for (int64_t hh = 0; hh < H; ++hh) {
        const float* kn = qp + r * 3 * D + D + hh * dk;
        const float* vn = qp + r * 3 * D + 2 * D + hh * dk;
        std::copy(kn, kn + dk, kw + r * kc.stride(0) + hh * kc.stride(1) + row_at[r] * kc.stride(2));
        std::copy(vn, vn + dk, vw + r * vc.stride(0) + hh * vc.stride(1) + row_at[r] * vc.stride(2));
      }
    attend(qp, 3 * D, kc, vc, self_lengths, B, H, dk, attn.data_ptr<float>(),
           capture ? self_weights[l].data_ptr<float>() : nullptr, T);
    torch::Tensor y = project(attn, w[2], w[3]);
    finish(y, n1);
    // cross-attention over the source
    torch::Tensor q = project(input(n2), w[4], w[5]);  // (B, D), pre-scaled
    attend(q.data_ptr<float>(), D, cross_k[l], cross_v[l], src_lengths, B, H, dk, attn.data_ptr<float>(),
           capture ? cross_weights[l].data_ptr<float>() : nullptr, S);
    y = project(attn, w[6], w[7]);
    finish(y, n2);
    // position-wise FFN
    torch::Tensor hidden = project(input(n3), w[8], w[9], /*relu=*/true);
    y = project(hidden, w[10], w[11]);
    finish(y, n3);
  }
  if (!post) apply_norm(x.data_ptr<float>(), B, D, norm(3 * L));  // Pre-LN's final norm
  torch::Tensor logits = project(x, w_out, b_out);
  if (capture) return {logits, self_weights, cross_weights};
  return {logits};
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  // The step touches tensors only: it lets go of the GIL, so the playground worker's other thread
  // sends the last step's frames while this one computes (arguments are converted before, and the
  // result after, with the GIL held).
  m.def("decoder_step", &decoder_step, "one KV-cache decoder step, each row at its own position",
        py::call_guard<py::gil_scoped_release>());
}
