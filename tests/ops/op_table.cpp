// The one table of the op harness: every op of the training runtime with its shapes, buffers and
// calls (double reference, CPU fast path, CUDA launcher and, for the ops a KernelBackend has, the
// backend call). Compiled twice: as is, its CUDA calls go to the emulated kernels
// (emulated_op_table); op_table_gpu.cpp includes it with VRAMLAB_CUDA_OPS_ABI = gpu so the same
// table drives the nvcc-built kernels (gpu_op_table). The backend calls are the same in both: the
// backend object decides what runs.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/nn/kernel_backend.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cuda/ops.h"
#include "tests/ops/op_harness.h"
#include "tests/sanitized_build.h"

#if !defined(VRAMLAB_OPS_TABLE_FUNCTION)
#define VRAMLAB_OPS_TABLE_FUNCTION emulated_op_table
#endif

namespace vramlab::ops_test {
namespace {

namespace cpu = kernels::cpu;
namespace cuda = kernels::cuda;
using kernels::cuda::KernelVersion;

// Sanitized builds run the fibers several times slower: drop the largest shapes there.
using vramlab::test_build::kSanitized;

constexpr double kRowTolerance = 1e-5;
constexpr double kLongSumTolerance = 2e-5;

// "N33_C257": each size as its name and value, joined by '_' (ostringstream: GCC 12 warns
// falsely on string literal + std::string temporaries under -O2).
std::string label(std::initializer_list<std::pair<const char*, int64_t>> sizes,
                  bool misaligned = false) {
  std::ostringstream text;
  const char* separator = "";
  for (const auto& [name, value] : sizes) {
    text << separator << name << value;
    separator = "_";
  }
  if (misaligned) text << "_misaligned";
  return text.str();
}

BufferSpec out(std::string name, int64_t count) {
  return {std::move(name), count, Dtype::f32, Init::normal, 1.0, true};
}
BufferSpec in(std::string name, int64_t count, double scale = 1.0) {
  return {std::move(name), count, Dtype::f32, Init::normal, scale, false};
}
BufferSpec positive(std::string name, int64_t count, bool compare = false) {
  return {std::move(name), count, Dtype::f32, Init::positive, 1.0, compare};
}
BufferSpec indices(std::string name, int64_t count) {
  return {std::move(name), count, Dtype::i32, Init::index_below_V, 1.0, false};
}
// Always f32, whatever the op's storage type (statistics, losses).
BufferSpec stat(BufferSpec spec) {
  spec.role = Role::stat;
  return spec;
}
// A parameter gradient: the op's type G.
BufferSpec param_grad(BufferSpec spec) {
  spec.role = Role::param_grad;
  return spec;
}
BufferSpec f64_out(std::string name) {
  return {std::move(name), 1, Dtype::f64, Init::normal, 1.0, true};
}

// Sizes below a warp, around it, not multiples of the block size, and one misaligned buffer set.
std::vector<Shape> flat_shapes() {
  std::vector<Shape> shapes;
  for (int64_t n : {0, 1, 7, 31, 33, 257, 1001}) {
    Shape s;
    s.label = label({{"n", n}});
    s.n = n;
    shapes.push_back(s);
  }
  Shape misaligned;
  misaligned.label = "n1027_misaligned";
  misaligned.n = 1027;
  misaligned.misaligned = true;
  shapes.push_back(misaligned);
  if (!kSanitized) {
    Shape large;
    large.label = "n70001";
    large.n = 70001;
    shapes.push_back(large);
  }
  return shapes;
}

Shape rows(int64_t N, int64_t C, bool misaligned = false) {
  Shape s;
  s.label = label({{"N", N}, {"C", C}}, misaligned);
  s.N = N;
  s.C = C;
  s.misaligned = misaligned;
  return s;
}

// C % 4 == 0 with aligned rows takes the float4 paths of the v2 kernels.
std::vector<Shape> row_shapes() {
  std::vector<Shape> shapes{rows(1, 1),    rows(3, 7),         rows(31, 33), rows(33, 257),
                            rows(129, 64), rows(9, 128, true), rows(2, 1000)};
  if (!kSanitized) shapes.push_back(rows(257, 129));
  return shapes;
}

std::vector<Shape> cross_entropy_shapes() {
  std::vector<Shape> shapes;
  for (auto [N, V, Vp] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{{1, 1, 1},
                                                                            {3, 7, 8},
                                                                            {31, 33, 36},
                                                                            {33, 257, 257},
                                                                            {129, 50, 64},
                                                                            {4, 1000, 1024},
                                                                            {5, 1001, 1001}}) {
    Shape s;
    s.label = label({{"N", N}, {"V", V}, {"Vp", Vp}});
    s.N = N;
    s.V = V;
    s.Vp = Vp;
    shapes.push_back(s);
  }
  return shapes;
}

// The KernelBackend has no padded vocabulary (its rows are V long): only the shapes with Vp == V
// run in the backend columns.
std::vector<Shape> unpadded_cross_entropy_shapes() {
  std::vector<Shape> shapes = cross_entropy_shapes();
  std::erase_if(shapes, [](const Shape& s) { return s.Vp != s.V; });
  return shapes;
}

std::vector<Shape> embedding_shapes() {
  std::vector<Shape> shapes;
  for (auto [B, T, C, V] : std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t>>{
           {1, 1, 1, 1}, {2, 3, 7, 5}, {2, 31, 33, 50}, {1, 129, 16, 3}, {3, 33, 257, 17}}) {
    Shape s;
    s.label = label({{"B", B}, {"T", T}, {"C", C}, {"V", V}});
    s.B = B;
    s.T = T;
    s.C = C;
    s.V = V;
    shapes.push_back(s);
  }
  return shapes;
}

std::vector<Shape> head_shapes(bool with_kv_groups) {
  std::vector<Shape> shapes;
  std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>> sizes{
      {1, 1, 1, 1, 2}, {1, 3, 2, 1, 4}, {2, 31, 4, 2, 8}, {1, 33, 3, 3, 16}};
  if (!kSanitized) sizes.emplace_back(1, 129, 2, 1, 8);
  for (auto [B, T, H, Hkv, D] : sizes) {
    Shape s;
    s.B = B;
    s.T = T;
    s.H = H;
    s.Hkv = with_kv_groups ? Hkv : H;
    s.D = D;
    s.label = with_kv_groups ? label({{"B", B}, {"T", T}, {"H", H}, {"Hkv", s.Hkv}, {"D", D}})
                             : label({{"B", B}, {"T", T}, {"H", H}, {"D", D}});
    shapes.push_back(s);
  }
  return shapes;
}

// The mask stream of every dropout op (the shapes vary p and the offset).
constexpr uint64_t kDropoutSeed = 0x5EED1234ull;

// A shape with dropout p (spelled \p p_text in the label) at a mask offset.
Shape with_dropout(Shape s, float p, const char* p_text, uint64_t offset) {
  s.dropout_p = p;
  s.dropout_offset = offset;
  std::ostringstream text;
  text << s.label << "_p" << p_text << "_offset" << offset;
  s.label = text.str();
  return s;
}

// Every flat size at p = 0.3 and an offset past 2^32 (the mask index is 64-bit), plus p = 0
// (a copy) and p = 0.9 (most elements dropped, scale 10).
std::vector<Shape> dropout_shapes() {
  std::vector<Shape> shapes;
  for (const Shape& s : flat_shapes())
    shapes.push_back(with_dropout(s, 0.3f, "0.3", 5000000029ull));
  Shape s;
  s.label = "n1001";
  s.n = 1001;
  shapes.push_back(with_dropout(s, 0.0f, "0", 7));
  shapes.push_back(with_dropout(s, 0.9f, "0.9", 7));
  return shapes;
}

// The attention shapes with dropout on the probabilities.
std::vector<Shape> attention_dropout_shapes() {
  std::vector<Shape> shapes;
  for (const Shape& s : head_shapes(true)) shapes.push_back(with_dropout(s, 0.25f, "0.25", 12345));
  shapes.push_back(with_dropout(head_shapes(true)[2], 0.9f, "0.9", 0));
  return shapes;
}

cpu::AttentionDropout attention_dropout(const Shape& s) {
  return {s.dropout_p, kDropoutSeed, s.dropout_offset};
}

// Flash attention: T odd and around both versions' tiles (v1: 64 rows and keys; v2: 16 query
// rows, 32 keys, 16-key backward tiles), grouped KV heads, D below, at and above a warp and not a
// multiple of 4, B > 1, the largest head size the CUDA kernels take, one misaligned set.
std::vector<Shape> flash_shapes() {
  std::vector<Shape> shapes;
  std::vector<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, bool>> sizes{
      {1, 1, 1, 1, 2, false},  {2, 7, 4, 2, 8, false},  {1, 33, 3, 3, 16, false},
      {2, 65, 4, 1, 5, false}, {1, 33, 2, 2, 33, true}, {1, 17, 2, 1, 256, false}};
  if (!kSanitized) sizes.emplace_back(1, 130, 2, 1, 36, false);
  for (auto [B, T, H, Hkv, D, misaligned] : sizes) {
    Shape s;
    s.B = B;
    s.T = T;
    s.H = H;
    s.Hkv = Hkv;
    s.D = D;
    s.misaligned = misaligned;
    s.label = label({{"B", B}, {"T", T}, {"H", H}, {"Hkv", Hkv}, {"D", D}}, misaligned);
    shapes.push_back(s);
  }
  return shapes;
}

std::vector<Shape> flash_dropout_shapes() {
  std::vector<Shape> shapes;
  for (const Shape& s : flash_shapes()) shapes.push_back(with_dropout(s, 0.25f, "0.25", 12345));
  shapes.push_back(with_dropout(flash_shapes()[3], 0.9f, "0.9", 5000000029ull));
  return shapes;
}

// The double reference of flash attention is the NAIVE attention (attention.h), which shares no
// code with the tiled kernels: out and att from attention_forward_reference, and lse from its
// score rows, lse = max + log Σ_{s ≤ t} exp(preatt[t, s] − max). att (B, H, T, T) is returned
// for the backward.
void flash_forward_by_naive_attention(const Shape& s, double* out, double* lse, const double* q,
                                      const double* k, const double* v, std::vector<double>& att) {
  const int64_t scores = s.B * s.H * s.T * s.T;
  std::vector<double> preatt(static_cast<std::size_t>(scores));  // (B, H, T, T)
  att.assign(static_cast<std::size_t>(scores), 0.0);
  cpu::attention_forward_reference<double>(out, preatt.data(), att.data(), q, k, v, s.B, s.T, s.H,
                                           s.Hkv, s.D, attention_dropout(s));
  for (int64_t row = 0; row < s.B * s.H * s.T; row++) {
    const int64_t t = row % s.T;
    const double* x = preatt.data() + row * s.T;  // (T)
    double max_value = -INFINITY, total = 0.0;
    for (int64_t u = 0; u <= t; u++) max_value = std::max(max_value, x[u]);
    for (int64_t u = 0; u <= t; u++) total += std::exp(x[u] - max_value);
    lse[row] = max_value + std::log(total);
  }
}

// The naive double gradients, and delta = rowsum(dout ∘ out) with the reference's out.
// Buffers as flash_backward_buffers.
void flash_backward_by_naive_attention(const Shape& s, const Args<double>& a) {
  std::vector<double> att;  // (B, H, T, T)
  flash_forward_by_naive_attention(s, a.f(8), a.f(9), a.f(5), a.f(6), a.f(7), att);
  std::vector<double> dpreatt(att.size());  // (B, H, T, T)
  cpu::attention_backward_reference<double>(a.f(0), a.f(1), a.f(2), dpreatt.data(), a.f(4), a.f(5),
                                            a.f(6), a.f(7), att.data(), s.B, s.T, s.H, s.Hkv, s.D,
                                            attention_dropout(s));
  for (int64_t row = 0; row < s.B * s.H * s.T; row++) {
    const int64_t t = row % s.T, h = row / s.T % s.H, b = row / (s.T * s.H);
    const int64_t at = ((b * s.T + t) * s.H + h) * s.D;
    double total = 0.0;
    for (int64_t d = 0; d < s.D; d++) total += a.f(4)[at + d] * a.f(8)[at + d];
    a.f(3)[row] = total;
  }
}

std::vector<BufferSpec> flash_forward_buffers(const Shape& s) {
  const int64_t qn = s.B * s.T * s.H * s.D, kvn = s.B * s.T * s.Hkv * s.D;
  return {out("out", qn), stat(out("lse", s.B * s.H * s.T)), in("q", qn, 2.0), in("k", kvn, 2.0),
          in("v", kvn)};
}

// out and lse are inputs of the backward that must belong to q, k, v (P = exp(S − lse) is only a
// probability for the true lse): every column first runs its own forward into them, the
// reference the naive one, so the backward columns check forward then backward.
std::vector<BufferSpec> flash_backward_buffers(const Shape& s) {
  const int64_t qn = s.B * s.T * s.H * s.D, kvn = s.B * s.T * s.Hkv * s.D;
  const int64_t rows = s.B * s.H * s.T;
  return {out("dq", qn),  out("dk", kvn),       out("dv", kvn),    stat(out("delta", rows)),
          in("dout", qn), in("q", qn, 2.0),     in("k", kvn, 2.0), in("v", kvn),
          in("out", qn),  stat(in("lse", rows))};
}

OpSpec flash_forward_op(std::string name, std::vector<Shape> shapes) {
  return {std::move(name),
          true,
          kLongSumTolerance,
          std::move(shapes),
          flash_forward_buffers,
          [](const Shape& s, const Args<double>& a) {
            std::vector<double> att;
            flash_forward_by_naive_attention(s, a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), att);
          },
          [](const Shape& s, const Args<float>& a) {
            cpu::flash_attention_forward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), s.B, s.T, s.H,
                                         s.Hkv, s.D, attention_dropout(s));
          },
          [](const Shape& s, const Args<float>& a, KernelVersion version) {
            cuda::flash_attention_forward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), s.B, s.T, s.H,
                                          s.Hkv, s.D, attention_dropout(s), version);
          },
          [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
            k.flash_attention_forward(v[0], v[1], v[2], v[3], v[4], s.B, s.T, s.H, s.Hkv, s.D,
                                      attention_dropout(s));
          }};
}

OpSpec flash_backward_op(std::string name, std::vector<Shape> shapes) {
  return {
      std::move(name),
      true,
      kLongSumTolerance,
      std::move(shapes),
      flash_backward_buffers,
      flash_backward_by_naive_attention,
      [](const Shape& s, const Args<float>& a) {
        const cpu::AttentionDropout dropout = attention_dropout(s);
        cpu::flash_attention_forward(a.f(8), a.f(9), a.f(5), a.f(6), a.f(7), s.B, s.T, s.H, s.Hkv,
                                     s.D, dropout);
        cpu::flash_attention_backward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), a.f(6),
                                      a.f(7), a.f(8), a.f(9), s.B, s.T, s.H, s.Hkv, s.D, dropout);
      },
      [](const Shape& s, const Args<float>& a, KernelVersion version) {
        const cpu::AttentionDropout dropout = attention_dropout(s);
        cuda::flash_attention_forward(a.f(8), a.f(9), a.f(5), a.f(6), a.f(7), s.B, s.T, s.H, s.Hkv,
                                      s.D, dropout, version);
        cuda::flash_attention_backward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), a.f(6),
                                       a.f(7), a.f(8), a.f(9), s.B, s.T, s.H, s.Hkv, s.D, dropout,
                                       version);
      },
      [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
        const cpu::AttentionDropout dropout = attention_dropout(s);
        k.flash_attention_forward(v[8], v[9], v[5], v[6], v[7], s.B, s.T, s.H, s.Hkv, s.D, dropout);
        k.flash_attention_backward(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], s.B,
                                   s.T, s.H, s.Hkv, s.D, dropout);
      }};
}

// RoPE at a position offset (as in a continued sequence) for the kernels' columns; the
// KernelBackend always starts at position 0, so its columns run the same sizes at offset 0.
std::vector<Shape> rope_shapes(int64_t position_offset) {
  std::vector<Shape> shapes = head_shapes(false);
  for (Shape& s : shapes) {
    s.position_offset = position_offset;
    if (position_offset != 0) s.label += "_offset" + std::to_string(position_offset);
  }
  return shapes;
}

std::vector<Shape> optimizer_shapes() {
  std::vector<Shape> shapes;
  for (auto [n, step, misaligned] :
       std::vector<std::tuple<int64_t, int64_t, bool>>{{1, 1, false},
                                                       {7, 2, false},
                                                       {33, 10, false},
                                                       {1001, 3, false},
                                                       {1027, 4, true},
                                                       {4099, 1000, false}}) {
    Shape s;
    s.label = label({{"n", n}, {"step", step}}, misaligned);
    s.n = n;
    s.step = step;
    s.misaligned = misaligned;
    shapes.push_back(s);
  }
  return shapes;
}

// SGD also without momentum (no buffer: the backend gets the "none" view, the kernels nullptr).
std::vector<Shape> sgd_shapes() {
  std::vector<Shape> shapes = optimizer_shapes();
  for (auto [n, step, misaligned] : std::vector<std::tuple<int64_t, int64_t, bool>>{
           {1, 1, false}, {33, 2, false}, {1027, 3, true}}) {
    Shape s;
    s.label = label({{"n", n}, {"step", step}}, misaligned) + "_no_momentum";
    s.n = n;
    s.step = step;
    s.misaligned = misaligned;
    s.no_momentum = true;
    shapes.push_back(s);
  }
  return shapes;
}

// Adam-mini: C elements per block, N blocks (C = 1 is AdamW with one v per element).
std::vector<Shape> adam_mini_shapes() {
  std::vector<Shape> shapes;
  for (auto [C, N, step, misaligned] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, bool>>{{1, 7, 1, false},
                                                                {33, 1, 2, false},
                                                                {7, 33, 10, false},
                                                                {1007, 3, 3, false},
                                                                {256, 5, 4, true},
                                                                {300, 4, 1000, false}}) {
    Shape s;
    s.label = label({{"C", C}, {"N", N}, {"step", step}}, misaligned);
    s.C = C;
    s.N = N;
    s.step = step;
    s.misaligned = misaligned;
    shapes.push_back(s);
  }
  return shapes;
}

// Adafactor: an N × C matrix (factored), or a vector of C (N = 1) factored or not.
std::vector<Shape> adafactor_shapes() {
  std::vector<Shape> shapes;
  for (auto [N, C, step, unfactored, misaligned] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, bool, bool>>{{1, 1, 1, false, false},
                                                                      {7, 33, 1, false, false},
                                                                      {1, 257, 2, false, false},
                                                                      {33, 7, 10, false, false},
                                                                      {64, 129, 100, false, true},
                                                                      {1, 1, 1, true, false},
                                                                      {1, 1001, 3, true, false},
                                                                      {1, 1027, 100, true, true}}) {
    Shape s;
    s.label =
        label({{"N", N}, {"C", C}, {"step", step}}, misaligned) + (unfactored ? "_unfactored" : "");
    s.N = N;
    s.C = C;
    s.step = step;
    s.unfactored = unfactored;
    s.misaligned = misaligned;
    shapes.push_back(s);
  }
  return shapes;
}

std::vector<Shape> matmul_shapes() {
  std::vector<Shape> shapes;
  // Without a bias (dbias untouched) and without dinp (the first layer's input) too.
  for (auto [N, C, OC, no_bias, no_dinp] :
       std::vector<std::tuple<int64_t, int64_t, int64_t, bool, bool>>{{1, 1, 1, false, false},
                                                                      {3, 7, 5, false, false},
                                                                      {33, 31, 17, false, false},
                                                                      {64, 257, 33, false, false},
                                                                      {3, 7, 5, true, false},
                                                                      {33, 31, 17, true, true},
                                                                      {31, 9, 13, false, true}}) {
    Shape s;
    s.label = label({{"N", N}, {"C", C}, {"OC", OC}});
    if (no_bias) s.label += "_no_bias";
    if (no_dinp) s.label += "_no_dinp";
    s.N = N;
    s.C = C;
    s.V = OC;
    s.no_bias = no_bias;
    s.no_dinp = no_dinp;
    shapes.push_back(s);
  }
  return shapes;
}

constexpr float kScale = 0.37f;
// The KernelBackend's layernorm/rmsnorm epsilon (kernel_backend.h): the raw kernels run with it
// too, so one reference serves every column.
constexpr float kEps = 1e-5f;
// Not the kernels' default base (10000), so a call that drops theta shows.
constexpr double kTheta = 500000.0;
constexpr int64_t kPositionOffset = 3;

// An optional buffer the shape leaves out: the "none" view for the backend, nullptr for kernels.
memory::TensorView none_if(bool none, const memory::TensorView& view) {
  return none ? memory::TensorView{} : view;
}
template <class Real>
Real* null_if(bool none, Real* pointer) {
  return none ? nullptr : pointer;
}

cpu::AdamWHyperparameters adamw_hyperparameters() {
  cpu::AdamWHyperparameters hp;
  hp.learning_rate = 0.05f;
  hp.weight_decay = 0.1f;
  return hp;
}

cpu::LionHyperparameters lion_hyperparameters() {
  cpu::LionHyperparameters hp;
  hp.learning_rate = 0.01f;
  hp.weight_decay = 0.1f;
  return hp;
}

cpu::AdafactorHyperparameters adafactor_hyperparameters() {
  cpu::AdafactorHyperparameters hp;
  hp.learning_rate = 0.05f;
  hp.weight_decay = 0.1f;
  return hp;
}

// SGD: momentum 0.9; Nesterov on even steps, so both forms run.
constexpr float kSgdLearningRate = 0.05f, kSgdMomentum = 0.9f, kSgdWeightDecay = 0.01f;
float sgd_momentum(const Shape& s) {
  return s.no_momentum ? 0.0f : kSgdMomentum;
}

std::vector<OpSpec> make_table() {
  std::vector<OpSpec> t;

  // ---- elementwise ----
  t.push_back({"residual_forward", false, kElementwiseTolerance, flat_shapes(),
               [](const Shape& s) {
                 return std::vector{out("out", s.n), in("a", s.n), in("b", s.n)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::residual_forward_reference<double>(a.f(0), a.f(1), a.f(2), s.n);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::residual_forward(a.f(0), a.f(1), a.f(2), s.n);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::residual_forward(a.f(0), a.f(1), a.f(2), s.n);
               },
               [](const Shape&, const Views& v, const nn::KernelBackend& k) {
                 k.residual_forward(v[0], v[1], v[2]);
               }});
  t.push_back({"residual_backward", false, kElementwiseTolerance, flat_shapes(),
               [](const Shape& s) {
                 return std::vector{out("da", s.n), out("db", s.n), in("dout", s.n)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::residual_backward_reference<double>(a.f(0), a.f(1), a.f(2), s.n);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::residual_backward(a.f(0), a.f(1), a.f(2), s.n);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::residual_backward(a.f(0), a.f(1), a.f(2), s.n);
               }});
  t.push_back({"bias_add_forward", false, kElementwiseTolerance, row_shapes(),
               [](const Shape& s) {
                 return std::vector{out("x", s.N * s.C), in("bias", s.C)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::bias_add_forward_reference<double>(a.f(0), a.f(1), s.N, s.C);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::bias_add_forward(a.f(0), a.f(1), s.N, s.C);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::bias_add_forward(a.f(0), a.f(1), s.N, s.C);
               }});
  t.push_back({"bias_add_backward", false, kRowTolerance, row_shapes(),
               [](const Shape& s) {
                 return std::vector{out("dbias", s.C), in("dout", s.N * s.C)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::bias_add_backward_reference<double>(a.f(0), a.f(1), s.N, s.C);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::bias_add_backward(a.f(0), a.f(1), s.N, s.C);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::bias_add_backward(a.f(0), a.f(1), s.N, s.C);
               }});
  t.push_back({"scale_forward", false, kElementwiseTolerance, flat_shapes(),
               [](const Shape& s) {
                 return std::vector{out("out", s.n), in("inp", s.n)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::scale_forward_reference<double>(a.f(0), a.f(1), kScale, s.n);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::scale_forward(a.f(0), a.f(1), kScale, s.n);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::scale_forward(a.f(0), a.f(1), kScale, s.n);
               }});
  t.push_back({"scale_backward", false, kElementwiseTolerance, flat_shapes(),
               [](const Shape& s) {
                 return std::vector{out("dinp", s.n), in("dout", s.n)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::scale_backward_reference<double>(a.f(0), a.f(1), kScale, s.n);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::scale_backward(a.f(0), a.f(1), kScale, s.n);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::scale_backward(a.f(0), a.f(1), kScale, s.n);
               }});

  // ---- activations (inputs spread over [-6, 6] so both tails of the curves are exercised) ----
  // ---- dropout (the mask is a function of the index: the same bits on every backend) ----
  t.push_back(
      {"dropout_forward", false, kElementwiseTolerance, dropout_shapes(),
       [](const Shape& s) {
         return std::vector{out("out", s.n), in("inp", s.n)};
       },
       [](const Shape& s, const Args<double>& a) {
         cpu::dropout_forward_reference<double>(a.f(0), a.f(1), s.n, s.dropout_p, kDropoutSeed,
                                                s.dropout_offset);
       },
       [](const Shape& s, const Args<float>& a) {
         cpu::dropout_forward(a.f(0), a.f(1), s.n, s.dropout_p, kDropoutSeed, s.dropout_offset);
       },
       [](const Shape& s, const Args<float>& a, KernelVersion) {
         cuda::dropout_forward(a.f(0), a.f(1), s.n, s.dropout_p, kDropoutSeed, s.dropout_offset);
       },
       [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
         k.dropout_forward(v[0], v[1], s.dropout_p, kDropoutSeed, s.dropout_offset);
       }});
  // dinp starts random: a backward that accumulated instead of writing would fail.
  t.push_back(
      {"dropout_backward", false, kElementwiseTolerance, dropout_shapes(),
       [](const Shape& s) {
         return std::vector{out("dinp", s.n), in("dout", s.n)};
       },
       [](const Shape& s, const Args<double>& a) {
         cpu::dropout_backward_reference<double>(a.f(0), a.f(1), s.n, s.dropout_p, kDropoutSeed,
                                                 s.dropout_offset);
       },
       [](const Shape& s, const Args<float>& a) {
         cpu::dropout_backward(a.f(0), a.f(1), s.n, s.dropout_p, kDropoutSeed, s.dropout_offset);
       },
       [](const Shape& s, const Args<float>& a, KernelVersion) {
         cuda::dropout_backward(a.f(0), a.f(1), s.n, s.dropout_p, kDropoutSeed, s.dropout_offset);
       },
       [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
         k.dropout_backward(v[0], v[1], s.dropout_p, kDropoutSeed, s.dropout_offset);
       }});

  t.push_back({"gelu_forward", false, kElementwiseTolerance, flat_shapes(),
               [](const Shape& s) {
                 return std::vector{out("out", s.n), in("inp", s.n, 3.0)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::gelu_forward_reference<double>(a.f(0), a.f(1), s.n);
               },
               [](const Shape& s, const Args<float>& a) { cpu::gelu_forward(a.f(0), a.f(1), s.n); },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::gelu_forward(a.f(0), a.f(1), s.n);
               },
               [](const Shape&, const Views& v, const nn::KernelBackend& k) {
                 k.gelu_forward(v[0], v[1]);
               }});
  t.push_back({"gelu_backward", false, kElementwiseTolerance, flat_shapes(),
               [](const Shape& s) {
                 return std::vector{out("dinp", s.n), in("inp", s.n, 3.0), in("dout", s.n)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::gelu_backward_reference<double>(a.f(0), a.f(1), a.f(2), s.n);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::gelu_backward(a.f(0), a.f(1), a.f(2), s.n);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::gelu_backward(a.f(0), a.f(1), a.f(2), s.n);
               },
               [](const Shape&, const Views& v, const nn::KernelBackend& k) {
                 k.gelu_backward(v[0], v[1], v[2]);
               }});
  t.push_back({"silu_forward", false, kElementwiseTolerance, flat_shapes(),
               [](const Shape& s) {
                 return std::vector{out("out", s.n), in("inp", s.n, 3.0)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::silu_forward_reference<double>(a.f(0), a.f(1), s.n);
               },
               [](const Shape& s, const Args<float>& a) { cpu::silu_forward(a.f(0), a.f(1), s.n); },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::silu_forward(a.f(0), a.f(1), s.n);
               }});
  t.push_back({"silu_backward", false, kElementwiseTolerance, flat_shapes(),
               [](const Shape& s) {
                 return std::vector{out("dinp", s.n), in("inp", s.n, 3.0), in("dout", s.n)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::silu_backward_reference<double>(a.f(0), a.f(1), a.f(2), s.n);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::silu_backward(a.f(0), a.f(1), a.f(2), s.n);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::silu_backward(a.f(0), a.f(1), a.f(2), s.n);
               }});
  t.push_back({"swiglu_forward", false, kElementwiseTolerance, flat_shapes(),
               [](const Shape& s) {
                 return std::vector{out("out", s.n), in("gate", s.n, 3.0), in("up", s.n)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::swiglu_forward_reference<double>(a.f(0), a.f(1), a.f(2), s.n);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::swiglu_forward(a.f(0), a.f(1), a.f(2), s.n);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::swiglu_forward(a.f(0), a.f(1), a.f(2), s.n);
               },
               [](const Shape&, const Views& v, const nn::KernelBackend& k) {
                 k.swiglu_forward(v[0], v[1], v[2]);
               }});
  t.push_back({"swiglu_backward", false, kElementwiseTolerance, flat_shapes(),
               [](const Shape& s) {
                 return std::vector{out("dgate", s.n), out("dup", s.n), in("dout", s.n),
                                    in("gate", s.n, 3.0), in("up", s.n)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::swiglu_backward_reference<double>(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4),
                                                        s.n);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::swiglu_backward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), s.n);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::swiglu_backward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), s.n);
               },
               [](const Shape&, const Views& v, const nn::KernelBackend& k) {
                 k.swiglu_backward(v[0], v[1], v[2], v[3], v[4]);
               }});

  // ---- normalization (inputs offset by a large scale so the mean matters) ----
  t.push_back(
      {"layernorm_forward", true, kRowTolerance, row_shapes(),
       [](const Shape& s) {
         return std::vector{out("out", s.N * s.C),  stat(out("mean", s.N)),
                            stat(out("rstd", s.N)), in("inp", s.N * s.C, 4.0),
                            in("weight", s.C),      in("bias", s.C)};
       },
       [](const Shape& s, const Args<double>& a) {
         cpu::layernorm_forward_reference<double>(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5),
                                                  s.N, s.C, kEps);
       },
       [](const Shape& s, const Args<float>& a) {
         cpu::layernorm_forward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), s.N, s.C, kEps);
       },
       [](const Shape& s, const Args<float>& a, KernelVersion v) {
         cuda::layernorm_forward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), s.N, s.C, kEps, v);
       },
       [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
         k.layernorm_forward(v[0], v[1], v[2], v[3], v[4], v[5], s.N, s.C);
       }});
  t.push_back({"layernorm_backward", true, kRowTolerance, row_shapes(),
               [](const Shape& s) {
                 return std::vector{out("dinp", s.N * s.C),        param_grad(out("dweight", s.C)),
                                    param_grad(out("dbias", s.C)), in("dout", s.N * s.C),
                                    in("inp", s.N * s.C),          in("weight", s.C),
                                    stat(in("mean", s.N, 0.1)),    stat(positive("rstd", s.N))};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::layernorm_backward_reference<double>(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4),
                                                           a.f(5), a.f(6), a.f(7), s.N, s.C);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::layernorm_backward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), a.f(6),
                                         a.f(7), s.N, s.C);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion v) {
                 cuda::layernorm_backward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), a.f(6),
                                          a.f(7), s.N, s.C, v);
               },
               [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
                 k.layernorm_backward(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], s.N, s.C);
               }});
  t.push_back({"rmsnorm_forward", true, kRowTolerance, row_shapes(),
               [](const Shape& s) {
                 return std::vector{out("out", s.N * s.C), stat(out("rstd", s.N)),
                                    in("inp", s.N * s.C, 4.0), in("weight", s.C)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::rmsnorm_forward_reference<double>(a.f(0), a.f(1), a.f(2), a.f(3), s.N, s.C,
                                                        kEps);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::rmsnorm_forward(a.f(0), a.f(1), a.f(2), a.f(3), s.N, s.C, kEps);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion v) {
                 cuda::rmsnorm_forward(a.f(0), a.f(1), a.f(2), a.f(3), s.N, s.C, kEps, v);
               },
               [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
                 k.rmsnorm_forward(v[0], v[1], v[2], v[3], s.N, s.C);
               }});
  t.push_back({"rmsnorm_backward", true, kRowTolerance, row_shapes(),
               [](const Shape& s) {
                 return std::vector{out("dinp", s.N * s.C), param_grad(out("dweight", s.C)),
                                    in("dout", s.N * s.C),  in("inp", s.N * s.C),
                                    in("weight", s.C),      stat(positive("rstd", s.N))};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::rmsnorm_backward_reference<double>(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4),
                                                         a.f(5), s.N, s.C);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::rmsnorm_backward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), s.N, s.C);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion v) {
                 cuda::rmsnorm_backward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), s.N, s.C,
                                        v);
               },
               [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
                 k.rmsnorm_backward(v[0], v[1], v[2], v[3], v[4], v[5], s.N, s.C);
               }});

  // ---- softmax (logits with standard deviation 10: the max subtraction matters) ----
  t.push_back(
      {"softmax_forward", true, kRowTolerance, row_shapes(),
       [](const Shape& s) {
         return std::vector{out("out", s.N * s.C), in("inp", s.N * s.C, 10.0)};
       },
       [](const Shape& s, const Args<double>& a) {
         cpu::softmax_forward_reference<double>(a.f(0), a.f(1), s.N, s.C);
       },
       [](const Shape& s, const Args<float>& a) { cpu::softmax_forward(a.f(0), a.f(1), s.N, s.C); },
       [](const Shape& s, const Args<float>& a, KernelVersion v) {
         cuda::softmax_forward(a.f(0), a.f(1), s.N, s.C, v);
       }});
  t.push_back({"softmax_backward", true, kRowTolerance, row_shapes(),
               [](const Shape& s) {
                 return std::vector{out("dinp", s.N * s.C), in("dout", s.N * s.C),
                                    positive("out", s.N * s.C)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::softmax_backward_reference<double>(a.f(0), a.f(1), a.f(2), s.N, s.C);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::softmax_backward(a.f(0), a.f(1), a.f(2), s.N, s.C);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion v) {
                 cuda::softmax_backward(a.f(0), a.f(1), a.f(2), s.N, s.C, v);
               }});

  // ---- fused softmax + cross-entropy ----
  t.push_back(
      {"cross_entropy_forward", true, kRowTolerance, cross_entropy_shapes(),
       [](const Shape& s) {
         return std::vector{stat(out("losses", s.N)), stat(out("logsumexp", s.N)),
                            out("probs", s.N * s.Vp), in("logits", s.N * s.Vp, 4.0),
                            indices("targets", s.N)};
       },
       [](const Shape& s, const Args<double>& a) {
         cpu::cross_entropy_forward_reference<double>(a.f(0), a.f(1), a.f(2), a.f(3), a.i32(4), s.N,
                                                      s.V, s.Vp);
       },
       [](const Shape& s, const Args<float>& a) {
         cpu::cross_entropy_forward(a.f(0), a.f(1), a.f(2), a.f(3), a.i32(4), s.N, s.V, s.Vp);
       },
       [](const Shape& s, const Args<float>& a, KernelVersion v) {
         cuda::cross_entropy_forward(a.f(0), a.f(1), a.f(2), a.f(3), a.i32(4), s.N, s.V, s.Vp, v);
       },
       [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
         k.cross_entropy_forward(v[0], v[1], v[2], v[3], v[4], s.N, s.V);
       },
       unpadded_cross_entropy_shapes()});
  t.push_back(
      {"cross_entropy_backward", false, kRowTolerance, cross_entropy_shapes(),
       [](const Shape& s) {
         return std::vector{out("dlogits", s.N * s.Vp), in("dlosses", s.N),
                            in("logits", s.N * s.Vp), in("logsumexp", s.N),
                            indices("targets", s.N)};
       },
       [](const Shape& s, const Args<double>& a) {
         cpu::cross_entropy_backward_reference<double>(a.f(0), a.f(1), a.f(2), a.f(3), a.i32(4),
                                                       s.N, s.V, s.Vp);
       },
       [](const Shape& s, const Args<float>& a) {
         cpu::cross_entropy_backward(a.f(0), a.f(1), a.f(2), a.f(3), a.i32(4), s.N, s.V, s.Vp);
       },
       [](const Shape& s, const Args<float>& a, KernelVersion) {
         cuda::cross_entropy_backward(a.f(0), a.f(1), a.f(2), a.f(3), a.i32(4), s.N, s.V, s.Vp);
       }});

  // dlogits from the saved probabilities, written (the nn layer's mean-loss backward).
  t.push_back({"cross_entropy_dlogits", false, kElementwiseTolerance, cross_entropy_shapes(),
               [](const Shape& s) {
                 return std::vector{out("dlogits", s.N * s.Vp), in("probs", s.N * s.Vp),
                                    indices("targets", s.N)};
               },
               [](const Shape& s, const Args<double>& a) {
                 const double scale = 1.0 / static_cast<double>(s.N);
                 for (int64_t row = 0; row < s.N; ++row)
                   for (int64_t i = 0; i < s.V; ++i)
                     a.f(0)[row * s.Vp + i] =
                         scale * (a.f(1)[row * s.Vp + i] - (i == a.i32(2)[row] ? 1.0 : 0.0));
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::cross_entropy_dlogits(a.f(0), a.f(1), a.i32(2), s.N, s.V, s.Vp,
                                            1.0f / static_cast<float>(s.N));
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::cross_entropy_dlogits(a.f(0), a.f(1), a.i32(2), s.N, s.V, s.Vp,
                                             1.0f / static_cast<float>(s.N));
               },
               [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
                 k.cross_entropy_dlogits(v[0], v[1], v[2], s.N, s.V,
                                         1.0f / static_cast<float>(s.N));
               },
               unpadded_cross_entropy_shapes()});

  // ---- embedding (small V: many positions share a token, so the backward sums collide) ----
  t.push_back({"embedding_forward", false, kElementwiseTolerance, embedding_shapes(),
               [](const Shape& s) {
                 return std::vector{out("out", s.B * s.T * s.C), indices("tokens", s.B * s.T),
                                    in("wte", s.V * s.C), in("wpe", s.T * s.C)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::embedding_forward_reference<double>(a.f(0), a.i32(1), a.f(2), a.f(3), s.B,
                                                          s.T, s.C, s.V);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::embedding_forward(a.f(0), a.i32(1), a.f(2), a.f(3), s.B, s.T, s.C, s.V);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::embedding_forward(a.f(0), a.i32(1), a.f(2), a.f(3), s.B, s.T, s.C, s.V);
               },
               [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
                 k.embedding_forward(v[0], v[1], v[2], v[3], s.B, s.T, s.C, s.V);
               }});
  t.push_back({"embedding_backward", false, kRowTolerance, embedding_shapes(),
               [](const Shape& s) {
                 return std::vector{param_grad(out("dwte", s.V * s.C)),
                                    param_grad(out("dwpe", s.T * s.C)), in("dout", s.B * s.T * s.C),
                                    indices("tokens", s.B * s.T)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::embedding_backward_reference<double>(a.f(0), a.f(1), a.f(2), a.i32(3), s.B,
                                                           s.T, s.C, s.V);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::embedding_backward(a.f(0), a.f(1), a.f(2), a.i32(3), s.B, s.T, s.C, s.V);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::embedding_backward(a.f(0), a.f(1), a.f(2), a.i32(3), s.B, s.T, s.C, s.V);
               },
               [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
                 k.embedding_backward(v[0], v[1], v[2], v[3], s.B, s.T, s.C, s.V);
               }});

  // ---- RoPE ----
  t.push_back({"rope_forward", false, kRowTolerance, rope_shapes(kPositionOffset),
               [](const Shape& s) {
                 const int64_t n = s.B * s.T * s.H * s.D;
                 return std::vector{out("out", n), in("inp", n)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::rope_forward_reference<double>(a.f(0), a.f(1), s.B, s.T, s.H, s.D, kTheta,
                                                     s.position_offset);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::rope_forward(a.f(0), a.f(1), s.B, s.T, s.H, s.D, kTheta, s.position_offset);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::rope_forward(a.f(0), a.f(1), s.B, s.T, s.H, s.D, kTheta, s.position_offset);
               },
               [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
                 k.rope_forward(v[0], v[1], s.B, s.T, s.H, s.D, kTheta);
               },
               rope_shapes(0)});
  t.push_back({"rope_backward", false, kRowTolerance, rope_shapes(kPositionOffset),
               [](const Shape& s) {
                 const int64_t n = s.B * s.T * s.H * s.D;
                 return std::vector{out("dinp", n), in("dout", n)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::rope_backward_reference<double>(a.f(0), a.f(1), s.B, s.T, s.H, s.D, kTheta,
                                                      s.position_offset);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::rope_backward(a.f(0), a.f(1), s.B, s.T, s.H, s.D, kTheta, s.position_offset);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::rope_backward(a.f(0), a.f(1), s.B, s.T, s.H, s.D, kTheta, s.position_offset);
               },
               [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
                 k.rope_backward(v[0], v[1], s.B, s.T, s.H, s.D, kTheta);
               },
               rope_shapes(0)});

  // ---- naive causal attention with grouped KV heads ----
  t.push_back({"attention_forward", false, kLongSumTolerance, head_shapes(true),
               [](const Shape& s) {
                 const int64_t qn = s.B * s.T * s.H * s.D, kvn = s.B * s.T * s.Hkv * s.D;
                 const int64_t scores = s.B * s.H * s.T * s.T;
                 return std::vector{out("out", qn),   out("preatt", scores), out("att", scores),
                                    in("q", qn, 2.0), in("k", kvn, 2.0),     in("v", kvn)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::attention_forward_reference<double>(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4),
                                                          a.f(5), s.B, s.T, s.H, s.Hkv, s.D);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::attention_forward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), s.B, s.T,
                                        s.H, s.Hkv, s.D);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::attention_forward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), s.B, s.T,
                                         s.H, s.Hkv, s.D);
               },
               [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
                 k.attention_forward(v[0], v[1], v[2], v[3], v[4], v[5], s.B, s.T, s.H, s.Hkv, s.D);
               }});
  t.push_back({"attention_backward", false, kLongSumTolerance, head_shapes(true),
               [](const Shape& s) {
                 const int64_t qn = s.B * s.T * s.H * s.D, kvn = s.B * s.T * s.Hkv * s.D;
                 const int64_t scores = s.B * s.H * s.T * s.T;
                 return std::vector{
                     out("dq", qn),          out("dk", kvn), out("dv", kvn),
                     out("dpreatt", scores), in("dout", qn), in("q", qn),
                     in("k", kvn),           in("v", kvn),   positive("att", scores)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::attention_backward_reference<double>(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4),
                                                           a.f(5), a.f(6), a.f(7), a.f(8), s.B, s.T,
                                                           s.H, s.Hkv, s.D);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::attention_backward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), a.f(6),
                                         a.f(7), a.f(8), s.B, s.T, s.H, s.Hkv, s.D);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::attention_backward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), a.f(6),
                                          a.f(7), a.f(8), s.B, s.T, s.H, s.Hkv, s.D);
               },
               [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
                 k.attention_backward(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], s.B,
                                      s.T, s.H, s.Hkv, s.D);
               }});

  // ---- attention with dropout on the probabilities, and the probabilities-only forward ----
  t.push_back({"attention_forward_dropout", false, kLongSumTolerance, attention_dropout_shapes(),
               [](const Shape& s) {
                 const int64_t qn = s.B * s.T * s.H * s.D, kvn = s.B * s.T * s.Hkv * s.D;
                 const int64_t scores = s.B * s.H * s.T * s.T;
                 return std::vector{out("out", qn),   out("preatt", scores), out("att", scores),
                                    in("q", qn, 2.0), in("k", kvn, 2.0),     in("v", kvn)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::attention_forward_reference<double>(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4),
                                                          a.f(5), s.B, s.T, s.H, s.Hkv, s.D,
                                                          attention_dropout(s));
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::attention_forward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), s.B, s.T,
                                        s.H, s.Hkv, s.D, attention_dropout(s));
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::attention_forward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), s.B, s.T,
                                         s.H, s.Hkv, s.D, attention_dropout(s));
               },
               [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
                 k.attention_forward(v[0], v[1], v[2], v[3], v[4], v[5], s.B, s.T, s.H, s.Hkv, s.D,
                                     attention_dropout(s));
               }});
  t.push_back(
      {"attention_backward_dropout", false, kLongSumTolerance, attention_dropout_shapes(),
       [](const Shape& s) {
         const int64_t qn = s.B * s.T * s.H * s.D, kvn = s.B * s.T * s.Hkv * s.D;
         const int64_t scores = s.B * s.H * s.T * s.T;
         return std::vector{out("dq", qn),          out("dk", kvn), out("dv", kvn),
                            out("dpreatt", scores), in("dout", qn), in("q", qn),
                            in("k", kvn),           in("v", kvn),   positive("att", scores)};
       },
       [](const Shape& s, const Args<double>& a) {
         cpu::attention_backward_reference<double>(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5),
                                                   a.f(6), a.f(7), a.f(8), s.B, s.T, s.H, s.Hkv,
                                                   s.D, attention_dropout(s));
       },
       [](const Shape& s, const Args<float>& a) {
         cpu::attention_backward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), a.f(6), a.f(7),
                                 a.f(8), s.B, s.T, s.H, s.Hkv, s.D, attention_dropout(s));
       },
       [](const Shape& s, const Args<float>& a, KernelVersion) {
         cuda::attention_backward(a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), a.f(5), a.f(6), a.f(7),
                                  a.f(8), s.B, s.T, s.H, s.Hkv, s.D, attention_dropout(s));
       },
       [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
         k.attention_backward(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], s.B, s.T, s.H,
                              s.Hkv, s.D, attention_dropout(s));
       }});
  // out = none: only preatt and att (what a recompute of the probabilities needs).
  t.push_back({"attention_forward_probabilities_only", false, kLongSumTolerance, head_shapes(true),
               [](const Shape& s) {
                 const int64_t qn = s.B * s.T * s.H * s.D, kvn = s.B * s.T * s.Hkv * s.D;
                 const int64_t scores = s.B * s.H * s.T * s.T;
                 return std::vector{out("preatt", scores), out("att", scores), in("q", qn, 2.0),
                                    in("k", kvn, 2.0), in("v", kvn)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::attention_forward_reference<double>(nullptr, a.f(0), a.f(1), a.f(2), a.f(3),
                                                          a.f(4), s.B, s.T, s.H, s.Hkv, s.D);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::attention_forward(nullptr, a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), s.B, s.T,
                                        s.H, s.Hkv, s.D);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion) {
                 cuda::attention_forward(nullptr, a.f(0), a.f(1), a.f(2), a.f(3), a.f(4), s.B, s.T,
                                         s.H, s.Hkv, s.D);
               },
               [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
                 k.attention_forward(memory::TensorView{}, v[0], v[1], v[2], v[3], v[4], s.B, s.T,
                                     s.H, s.Hkv, s.D);
               }});

  // ---- flash attention (tiled, no (B, H, T, T) tensor), against the naive reference ----
  t.push_back(flash_forward_op("flash_attention_forward", flash_shapes()));
  t.push_back(flash_backward_op("flash_attention_backward", flash_shapes()));
  t.push_back(flash_forward_op("flash_attention_forward_dropout", flash_dropout_shapes()));
  t.push_back(flash_backward_op("flash_attention_backward_dropout", flash_dropout_shapes()));

  // ---- reductions (double results) ----
  t.push_back(
      {"sum", true, kElementwiseTolerance, flat_shapes(),
       [](const Shape& s) {
         return std::vector{f64_out("sum"), in("x", s.n)};
       },
       [](const Shape& s, const Args<double>& a) {
         *a.f64(0) = cpu::sum_reference<double>(a.f(1), s.n);
       },
       [](const Shape& s, const Args<float>& a) { *a.f64(0) = cpu::sum(a.f(1), s.n); },
       [](const Shape& s, const Args<float>& a, KernelVersion v) {
         cuda::sum(a.f64(0), a.f(1), s.n, v);
       },
       [](const Shape&, const Views& v, const nn::KernelBackend& k) { *v.f64(0) = k.sum(v[1]); }});
  t.push_back(
      {"sum_of_squares", true, kElementwiseTolerance, flat_shapes(),
       [](const Shape& s) {
         return std::vector{f64_out("sum_of_squares"), in("x", s.n)};
       },
       [](const Shape& s, const Args<double>& a) {
         *a.f64(0) = cpu::sum_of_squares_reference<double>(a.f(1), s.n);
       },
       [](const Shape& s, const Args<float>& a) { *a.f64(0) = cpu::sum_of_squares(a.f(1), s.n); },
       [](const Shape& s, const Args<float>& a, KernelVersion v) {
         cuda::sum_of_squares(a.f64(0), a.f(1), s.n, v);
       }});

  // ---- optimizers ----
  t.push_back({"adamw_update", true, kElementwiseTolerance, optimizer_shapes(),
               [](const Shape& s) {
                 return std::vector{out("param", s.n), in("grad", s.n), out("m", s.n),
                                    positive("v", s.n, true)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::adamw_update_reference<double>(a.f(0), a.f(1), a.f(2), a.f(3), s.n,
                                                     adamw_hyperparameters(), s.step);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::adamw_update(a.f(0), a.f(1), a.f(2), a.f(3), s.n, adamw_hyperparameters(),
                                   s.step);
               },
               [](const Shape& s, const Args<float>& a, KernelVersion v) {
                 cuda::adamw_update(a.f(0), a.f(1), a.f(2), a.f(3), s.n, adamw_hyperparameters(),
                                    s.step, v);
               },
               [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
                 k.adamw_update(v[0], v[1], v[2], v[3], {}, adamw_hyperparameters(),
                                {.step = s.step});
               }});
  t.push_back(
      {"sgd_update", false, kElementwiseTolerance, sgd_shapes(),
       [](const Shape& s) {
         return std::vector{out("param", s.n), in("grad", s.n), out("momentum_buffer", s.n)};
       },
       [](const Shape& s, const Args<double>& a) {
         cpu::sgd_update_reference<double>(a.f(0), a.f(1), null_if(s.no_momentum, a.f(2)), s.n,
                                           kSgdLearningRate, sgd_momentum(s), kSgdWeightDecay,
                                           s.step % 2 == 0);
       },
       [](const Shape& s, const Args<float>& a) {
         cpu::sgd_update(a.f(0), a.f(1), null_if(s.no_momentum, a.f(2)), s.n,
                         {.learning_rate = kSgdLearningRate,
                          .momentum = sgd_momentum(s),
                          .weight_decay = kSgdWeightDecay,
                          .nesterov = s.step % 2 == 0});
       },
       [](const Shape& s, const Args<float>& a, KernelVersion) {
         cuda::sgd_update(a.f(0), a.f(1), null_if(s.no_momentum, a.f(2)), s.n,
                          {.learning_rate = kSgdLearningRate,
                           .momentum = sgd_momentum(s),
                           .weight_decay = kSgdWeightDecay,
                           .nesterov = s.step % 2 == 0});
       },
       [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
         k.sgd_update(v[0], v[1], none_if(s.no_momentum, v[2]), {},
                      {.learning_rate = kSgdLearningRate,
                       .momentum = sgd_momentum(s),
                       .weight_decay = kSgdWeightDecay,
                       .nesterov = s.step % 2 == 0},
                      {});
       }});

  // The low-memory optimizers: the typed launchers on f32 storage with a multiplier of 1 (the
  // storage columns of test_ops_storage.cpp and tests/kernels_cuda cover the other types).
  t.push_back({"lion_update", true, kElementwiseTolerance, optimizer_shapes(),
               [](const Shape& s) {
                 return std::vector{out("param", s.n), in("grad", s.n), out("m", s.n)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::lion_update_reference<double>(a.f(0), a.f(1), a.f(2), s.n,
                                                    lion_hyperparameters());
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::lion_update<float, float, float, bf16_t>(a.f(0), a.f(1), a.f(2), nullptr, s.n,
                                                               lion_hyperparameters(),
                                                               {.grad_multiplier = 1.0f});
               },
               [](const Shape& s, const Args<float>& a, KernelVersion v) {
                 cuda::lion_update<float, float, float>(a.f(0), a.f(1), a.f(2), nullptr,
                                                        DType::bf16, s.n, lion_hyperparameters(),
                                                        {.grad_multiplier = 1.0f}, v);
               },
               [](const Shape&, const Views& v, const nn::KernelBackend& k) {
                 k.lion_update(v[0], v[1], v[2], {}, lion_hyperparameters(), {});
               }});
  t.push_back(
      {"adam_mini_update", true, kElementwiseTolerance, adam_mini_shapes(),
       [](const Shape& s) {
         return std::vector{out("param", s.N * s.C), in("grad", s.N * s.C), out("m", s.N * s.C),
                            positive("v", s.N, true)};
       },
       [](const Shape& s, const Args<double>& a) {
         cpu::adam_mini_update_reference<double>(a.f(0), a.f(1), a.f(2), a.f(3), s.C, s.N,
                                                 adamw_hyperparameters(), s.step);
       },
       [](const Shape& s, const Args<float>& a) {
         cpu::adam_mini_update<float, float, float, bf16_t>(
             a.f(0), a.f(1), a.f(2), a.f(3), nullptr, s.C, s.N, adamw_hyperparameters(),
             {.step = s.step, .grad_multiplier = 1.0f});
       },
       [](const Shape& s, const Args<float>& a, KernelVersion v) {
         cuda::adam_mini_update<float, float, float>(a.f(0), a.f(1), a.f(2), a.f(3), nullptr,
                                                     DType::bf16, s.C, s.N, adamw_hyperparameters(),
                                                     {.step = s.step, .grad_multiplier = 1.0f}, v);
       },
       [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
         k.adam_mini_update(v[0], v[1], v[2], v[3], {}, s.C, adamw_hyperparameters(),
                            {.step = s.step});
       }});
  t.push_back({"adafactor_update", true, kElementwiseTolerance, adafactor_shapes(),
               [](const Shape& s) {
                 return std::vector{out("param", s.N * s.C), in("grad", s.N * s.C),
                                    positive("row_var", s.unfactored ? s.C : s.N, true),
                                    positive("col_var", s.unfactored ? 0 : s.C, true)};
               },
               [](const Shape& s, const Args<double>& a) {
                 cpu::adafactor_update_reference<double>(
                     a.f(0), a.f(1), a.f(2), null_if(s.unfactored, a.f(3)), s.N, s.C, !s.unfactored,
                     adafactor_hyperparameters(), s.step);
               },
               [](const Shape& s, const Args<float>& a) {
                 cpu::adafactor_update<float, float, float, bf16_t>(
                     a.f(0), a.f(1), a.f(2), null_if(s.unfactored, a.f(3)), nullptr, s.N, s.C,
                     !s.unfactored, adafactor_hyperparameters(),
                     {.step = s.step, .grad_multiplier = 1.0f});
               },
               [](const Shape& s, const Args<float>& a, KernelVersion v) {
                 cuda::adafactor_update<float, float, float>(
                     a.f(0), a.f(1), a.f(2), null_if(s.unfactored, a.f(3)), nullptr, DType::bf16,
                     s.N, s.C, !s.unfactored, adafactor_hyperparameters(),
                     {.step = s.step, .grad_multiplier = 1.0f}, v);
               },
               [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
                 k.adafactor_update(v[0], v[1], v[2], none_if(s.unfactored, v[3]), {}, s.N, s.C,
                                    !s.unfactored, adafactor_hyperparameters(), {.step = s.step});
               }});

  // ---- GEMM (shape.V holds OC) ----
  t.push_back(
      {"matmul_forward", false, kLongSumTolerance, matmul_shapes(),
       [](const Shape& s) {
         return std::vector{out("out", s.N * s.V), in("inp", s.N * s.C), in("weight", s.V * s.C),
                            in("bias", s.V)};
       },
       [](const Shape& s, const Args<double>& a) {
         cpu::matmul_forward_reference<double>(a.f(0), a.f(1), a.f(2), null_if(s.no_bias, a.f(3)),
                                               s.N, s.C, s.V);
       },
       [](const Shape& s, const Args<float>& a) {
         cpu::matmul_forward(a.f(0), a.f(1), a.f(2), null_if(s.no_bias, a.f(3)), s.N, s.C, s.V);
       },
       [](const Shape& s, const Args<float>& a, KernelVersion) {
         cuda::matmul_forward(a.f(0), a.f(1), a.f(2), null_if(s.no_bias, a.f(3)), s.N, s.C, s.V);
       },
       [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
         k.linear_forward(v[0], v[1], v[2], none_if(s.no_bias, v[3]), s.N, s.C, s.V);
       }});
  t.push_back(
      {"matmul_backward", false, kLongSumTolerance, matmul_shapes(),
       [](const Shape& s) {
         return std::vector{out("dinp", s.N * s.C),        param_grad(out("dweight", s.V * s.C)),
                            param_grad(out("dbias", s.V)), in("dout", s.N * s.V),
                            in("inp", s.N * s.C),          in("weight", s.V * s.C)};
       },
       [](const Shape& s, const Args<double>& a) {
         cpu::matmul_backward_reference<double>(null_if(s.no_dinp, a.f(0)), a.f(1),
                                                null_if(s.no_bias, a.f(2)), a.f(3), a.f(4), a.f(5),
                                                s.N, s.C, s.V);
       },
       [](const Shape& s, const Args<float>& a) {
         cpu::matmul_backward(null_if(s.no_dinp, a.f(0)), a.f(1), null_if(s.no_bias, a.f(2)),
                              a.f(3), a.f(4), a.f(5), s.N, s.C, s.V);
       },
       [](const Shape& s, const Args<float>& a, KernelVersion) {
         cuda::matmul_backward(null_if(s.no_dinp, a.f(0)), a.f(1), null_if(s.no_bias, a.f(2)),
                               a.f(3), a.f(4), a.f(5), s.N, s.C, s.V);
       },
       [](const Shape& s, const Views& v, const nn::KernelBackend& k) {
         k.linear_backward(none_if(s.no_dinp, v[0]), v[1], none_if(s.no_bias, v[2]), v[3], v[4],
                           v[5], s.N, s.C, s.V);
       }});
  return t;
}

}  // namespace

const std::vector<OpSpec>& VRAMLAB_OPS_TABLE_FUNCTION() {
  static const std::vector<OpSpec> table = make_table();
  return table;
}

}  // namespace vramlab::ops_test
