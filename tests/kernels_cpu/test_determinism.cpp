// Determinism of the fast paths: two runs give bitwise-identical results, and the kernels this
// folder writes (everything but the OpenBLAS product) give the same bits for 1, 2 and 3 threads,
// because their partitioning is fixed and no float reduction uses atomics.
#include <gtest/gtest.h>
#include <omp.h>

#include <vector>

#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/dropout.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/normalization.h"
#include "kernels/cpu/optimizer.h"
#include "kernels/cpu/quantize.h"
#include "kernels/cpu/reduction.h"
#include "tests/kernels_cpu/kernel_test_util.h"

namespace vramlab::kernels::cpu {
namespace {

using test_util::bitwise_equal;
using test_util::random_tokens;
using test_util::random_vector;

// Every gradient a training step accumulates, from the fast kernels, for one fixed input.
std::vector<std::vector<float>> run_backward_kernels() {
  const int64_t B = 2, T = 33, H = 4, Hkv = 2, D = 16, C = H * D, V = 131;
  const auto q = random_vector(B * T * H * D, 1), k = random_vector(B * T * Hkv * D, 2),
             v = random_vector(B * T * Hkv * D, 3), dout = random_vector(B * T * H * D, 4);
  std::vector<float> out(q.size()), preatt(B * H * T * T), att(preatt.size()), dpreatt(att.size());
  std::vector<float> dq(q.size()), dk(k.size()), dv(v.size());
  attention_forward(out.data(), preatt.data(), att.data(), q.data(), k.data(), v.data(), B, T, H,
                    Hkv, D);
  attention_backward(dq.data(), dk.data(), dv.data(), dpreatt.data(), dout.data(), q.data(),
                     k.data(), v.data(), att.data(), B, T, H, Hkv, D);
  // With attention dropout: the mask comes from each score's index, whatever thread computes it.
  const AttentionDropout dropout{0.2f, 99, 31};
  std::vector<float> out_dropped(q.size()), preatt_dropped(preatt.size()), att_dropped(att.size()),
      dpreatt_dropped(att.size()), dq_dropped(q.size()), dk_dropped(k.size()), dv_dropped(v.size());
  attention_forward(out_dropped.data(), preatt_dropped.data(), att_dropped.data(), q.data(),
                    k.data(), v.data(), B, T, H, Hkv, D, dropout);
  attention_backward(dq_dropped.data(), dk_dropped.data(), dv_dropped.data(),
                     dpreatt_dropped.data(), dout.data(), q.data(), k.data(), v.data(),
                     att_dropped.data(), B, T, H, Hkv, D, dropout);

  const auto x = random_vector(B * T * C, 5), weight = random_vector(C, 6),
             bias = random_vector(C, 7);
  std::vector<float> normed(x.size()), mean(B * T), rstd(B * T), dx(x.size()), dweight(C), dbias(C);
  layernorm_forward(normed.data(), mean.data(), rstd.data(), x.data(), weight.data(), bias.data(),
                    B * T, C);
  layernorm_backward(dx.data(), dweight.data(), dbias.data(), dout.data(), x.data(), weight.data(),
                     mean.data(), rstd.data(), B * T, C);

  const auto tokens = random_tokens(B * T, V, 8);
  std::vector<float> dwte(V * C), dwpe(T * C);
  embedding_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C, V);

  const auto logits = random_vector(B * T * V, 9, -10.0, 10.0);
  std::vector<float> losses(B * T), lse(B * T), dlogits(logits.size());
  const std::vector<float> dlosses(B * T, 1.0f / static_cast<float>(B * T));
  cross_entropy_forward(losses.data(), lse.data(), nullptr, logits.data(), tokens.data(), B * T, V,
                        V);
  cross_entropy_backward(dlogits.data(), dlosses.data(), logits.data(), lse.data(), tokens.data(),
                         B * T, V, V);

  // Elementwise kernels over an odd length: with 1, 2 or 3 threads the chunk boundaries (and so
  // which elements fall in a vector body or a scalar remainder) move.
  const int64_t n = 100003;
  const auto a = random_vector(n, 10, -6.0, 6.0), g = random_vector(n, 11);
  std::vector<float> gelu(n), dgelu(n), swiglu(n), dgate(n), dup(n), param = g, adam_m(n),
                                                                     adam_v(n);
  gelu_forward(gelu.data(), a.data(), n);
  gelu_backward(dgelu.data(), a.data(), g.data(), n);
  swiglu_forward(swiglu.data(), a.data(), g.data(), n);
  swiglu_backward(dgate.data(), dup.data(), g.data(), a.data(), g.data(), n);
  adamw_update(param.data(), a.data(), adam_m.data(), adam_v.data(), n, AdamWHyperparameters{}, 1);
  std::vector<float> dropped(n), scales(static_cast<size_t>(int8_block_count(n, 7))), back(n);
  std::vector<int8_t> quantized(n);
  dropout_forward(dropped.data(), a.data(), n, 0.3f, 5, 1000);
  quantize_int8(quantized.data(), scales.data(), a.data(), n, 7);
  dequantize_int8(back.data(), quantized.data(), scales.data(), n, 7);
  // One scale for the whole tensor: the threads split the block itself.
  std::vector<int8_t> quantized_whole(n);
  std::vector<float> scale_whole(1), back_whole(n);
  quantize_int8(quantized_whole.data(), scale_whole.data(), a.data(), n, n);
  dequantize_int8(back_whole.data(), quantized_whole.data(), scale_whole.data(), n, n);

  std::vector<float> dbias_sum(C);
  bias_add_backward(dbias_sum.data(), dout.data(), B * T, C);
  const std::vector<float> norm = {static_cast<float>(l2_norm(dlogits.data(), B * T * V)),
                                   static_cast<float>(sum(dx.data(), B * T * C))};
  // The int8 values as floats (exact), so one comparison covers every buffer.
  const std::vector<float> quantized_values(quantized.begin(), quantized.end());
  const std::vector<float> quantized_whole_values(quantized_whole.begin(), quantized_whole.end());
  return {out,         att,         dq,
          dk,          dv,          dpreatt,
          normed,      dx,          dweight,
          dbias,       dwte,        dwpe,
          losses,      dlogits,     dbias_sum,
          norm,        out_dropped, dq_dropped,
          dk_dropped,  dv_dropped,  dropped,
          scales,      back,        quantized_values,
          scale_whole, back_whole,  quantized_whole_values};
}

void expect_identical(const std::vector<std::vector<float>>& a,
                      const std::vector<std::vector<float>>& b, const std::string& context) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); i++) {
    EXPECT_TRUE(bitwise_equal(context + ", buffer " + std::to_string(i), a[i], b[i]));
  }
}

TEST(Determinism, TwoRunsAreBitwiseIdentical) {
  expect_identical(run_backward_kernels(), run_backward_kernels(), "run 1 vs run 2");
}

TEST(Determinism, ResultsDoNotDependOnTheThreadCount) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const auto one = run_backward_kernels();
  omp_set_num_threads(2);
  const auto two = run_backward_kernels();
  omp_set_num_threads(3);
  const auto three = run_backward_kernels();
  omp_set_num_threads(saved);
  expect_identical(one, two, "1 vs 2 threads");
  expect_identical(one, three, "1 vs 3 threads");
}

TEST(Determinism, MatmulBackwardTwoRunsAreBitwiseIdentical) {
  const int64_t N = 96, C = 80, OC = 72;
  const auto inp = random_vector(N * C, 1), weight = random_vector(OC * C, 2),
             dout = random_vector(N * OC, 3);
  std::vector<std::vector<float>> runs;
  for (int run = 0; run < 2; run++) {
    std::vector<float> dinp(N * C), dweight(OC * C), dbias(OC), out(N * OC);
    matmul_forward(out.data(), inp.data(), weight.data(), dbias.data(), N, C, OC);
    matmul_backward(dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(),
                    weight.data(), N, C, OC);
    runs.insert(runs.end(), {out, dinp, dweight, dbias});
  }
  for (size_t i = 0; i < 4; i++) {
    EXPECT_TRUE(bitwise_equal("matmul buffer " + std::to_string(i), runs[i], runs[i + 4]));
  }
}

}  // namespace
}  // namespace vramlab::kernels::cpu
