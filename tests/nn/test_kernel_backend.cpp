// The typed boundary of the kernel backends: every backend refuses a view of the wrong dtype or
// size with an InternalError naming the op and the argument, before any kernel runs; the meta
// backend runs nothing but checks the same.
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/nn/cpu_kernel_backend.h"
#include "common/nn/cuda/cuda_kernel_backend.h"
#include "common/nn/meta_kernel_backend.h"
#include "common/nn/runtime.h"
#include "common/platform/errors.h"

namespace vramlab::nn {
namespace {

std::vector<std::unique_ptr<KernelBackend>> host_backends() {
  std::vector<std::unique_ptr<KernelBackend>> backends;
  backends.push_back(std::make_unique<CpuKernelBackend>());
  backends.push_back(make_emulated_cuda_kernel_backend());
  backends.push_back(make_meta_kernel_backend());
  return backends;
}

// The message of the InternalError `call` throws ("" if it throws none).
template <class Call>
std::string internal_error(Call call) {
  try {
    call();
  } catch (const InternalError& e) {
    return e.what();
  }
  return "";
}

TEST(KernelBackend, AWrongSizedOutputIsRefusedNamingTheOpAndTheArgument) {
  const int64_t N = 3, C = 5, OC = 7;
  std::vector<float> out(N * OC - 1), inp(N * C), weight(OC * C), bias(OC);
  const std::vector<float> before(out.size(), 0.0f);
  for (const auto& backend : host_backends()) {
    const std::string message = internal_error([&] {
      backend->linear_forward(TensorView(out.data(), DType::f32, {N * OC - 1}),
                              TensorView(inp.data(), DType::f32, {N, C}),
                              TensorView(weight.data(), DType::f32, {OC, C}),
                              TensorView(bias.data(), DType::f32, {OC}), N, C, OC);
    });
    EXPECT_NE(message.find("linear_forward: out is a f32 tensor (20) of 20 elements; the op needs "
                           "21 elements of f32"),
              std::string::npos)
        << kernel_kind_name(backend->kind()) << ": " << message;
    EXPECT_EQ(out, before) << "the kernel ran before the check";
  }
}

TEST(KernelBackend, TokensMustBeInt32AndActivationsFloat32) {
  const int64_t B = 2, T = 3, C = 4, V = 5;
  std::vector<float> out(B * T * C), wte(V * C), as_float_tokens(B * T), activations(B * T);
  std::vector<int32_t> tokens(B * T, 1);
  for (const auto& backend : host_backends()) {
    const std::string float_tokens = internal_error([&] {
      backend->embedding_forward(TensorView(out.data(), DType::f32, {B, T, C}),
                                 TensorView(as_float_tokens.data(), DType::f32, {B, T}),
                                 TensorView(wte.data(), DType::f32, {V, C}), TensorView(), B, T, C,
                                 V);
    });
    EXPECT_NE(float_tokens.find("embedding_forward: tokens is a f32 tensor"), std::string::npos)
        << float_tokens;
    const std::string int_output = internal_error([&] {
      backend->gelu_forward(TensorView(tokens.data(), DType::i32, {B * T}),
                            TensorView(activations.data(), DType::f32, {B * T}));
    });
    EXPECT_NE(int_output.find("gelu_forward: out is a i32 tensor"), std::string::npos)
        << int_output;
  }
}

TEST(KernelBackend, APositionTableLongerThanTheSequenceIsAcceptedAShorterOneIsNot) {
  const int64_t B = 1, T = 4, C = 2, V = 3;
  std::vector<float> out(B * T * C), wte(V * C, 1.0f), wpe(8 * C, 0.5f);
  std::vector<int32_t> tokens(B * T, 2);
  CpuKernelBackend cpu;
  cpu.embedding_forward(TensorView(out.data(), DType::f32, {B, T, C}),
                        TensorView(tokens.data(), DType::i32, {B, T}),
                        TensorView(wte.data(), DType::f32, {V, C}),
                        TensorView(wpe.data(), DType::f32, {8, C}), B, T, C, V);
  for (const float x : out) EXPECT_EQ(x, 1.5f);
  EXPECT_NE(internal_error([&] {
              cpu.embedding_forward(TensorView(out.data(), DType::f32, {B, T, C}),
                                    TensorView(tokens.data(), DType::i32, {B, T}),
                                    TensorView(wte.data(), DType::f32, {V, C}),
                                    TensorView(wpe.data(), DType::f32, {3, C}), B, T, C, V);
            }).find("wpe is a f32 tensor (3, 2) of 6 elements; the op needs at least 8"),
            std::string::npos);
}

TEST(KernelBackend, ADropoutProbabilityOutsideZeroToOneIsRefusedNamingTheOpAndP) {
  std::vector<float> x(8, 1.0f);
  const std::vector<float> before = x;
  const TensorView view(x.data(), DType::f32, {8});
  for (const auto& backend : host_backends()) {
    const std::string forward =
        internal_error([&] { backend->dropout_forward(view, view, 1.0f, 1, 0); });
    EXPECT_NE(forward.find("dropout_forward: dropout probability p = 1 must be in [0, 1)"),
              std::string::npos)
        << kernel_kind_name(backend->kind()) << ": " << forward;
    const std::string backward =
        internal_error([&] { backend->dropout_backward(view, view, -0.25f, 1, 0); });
    EXPECT_NE(backward.find("dropout_backward: dropout probability p = -0.25"), std::string::npos)
        << backward;
    // Attention checks its dropout before any view (here every view is wrong-sized).
    const std::string attention = internal_error([&] {
      backend->attention_forward(view, view, view, view, view, view, 1, 1, 1, 1, 1, {1.5f, 0, 0});
    });
    EXPECT_NE(attention.find("attention_forward: dropout probability p = 1.5"), std::string::npos)
        << attention;
    EXPECT_EQ(x, before) << "a kernel ran before the check";
  }
}

TEST(KernelBackend, QuantisedValuesMustBeInt8AndScalesOnePerBlock) {
  const int64_t n = 10, block = 4;  // 3 blocks, the last one of 2
  std::vector<float> x(n, 1.0f), scales(3), wrong_scales(2);
  std::vector<int8_t> q(n);
  std::vector<int32_t> q32(n);
  const TensorView xv(x.data(), DType::f32, {n}), qv(q.data(), DType::i8, {n}),
      sv(scales.data(), DType::f32, {3});
  for (const auto& backend : host_backends()) {
    EXPECT_EQ(internal_error([&] { backend->quantize_int8(qv, sv, xv, block); }), "");
    const std::string int32_q = internal_error(
        [&] { backend->quantize_int8(TensorView(q32.data(), DType::i32, {n}), sv, xv, block); });
    EXPECT_NE(int32_q.find("quantize_int8: q is a i32 tensor (10) of 10 elements; the op needs 10 "
                           "elements of i8"),
              std::string::npos)
        << int32_q;
    const std::string floor_scales = internal_error([&] {
      backend->dequantize_int8(xv, qv, TensorView(wrong_scales.data(), DType::f32, {2}), block);
    });
    EXPECT_NE(floor_scales.find("dequantize_int8: scales is a f32 tensor (2) of 2 elements; the op "
                                "needs 3 elements"),
              std::string::npos)
        << floor_scales;
    EXPECT_NE(internal_error([&] {
                backend->quantize_int8(qv, sv, xv, 0);
              }).find("quantize_int8: block = 0 must be >= 1"),
              std::string::npos);
  }
  EXPECT_EQ(qv.i8(), q.data());
  EXPECT_THROW((void)xv.i8(), InternalError);
}

// More than 2^31 elements: the checks count in 64 bits (meta views are addresses, never read).
TEST(KernelBackend, MetaAcceptsQuantisationAndDropoutBeyondTwoToThe31Elements) {
  const auto meta = make_meta_kernel_backend();
  const int64_t n = (int64_t{1} << 32) + 3, block = 1 << 20;
  auto* fake = reinterpret_cast<void*>(uintptr_t{1} << 40);
  const TensorView x(fake, DType::f32, {n}), q(fake, DType::i8, {n}),
      scales(fake, DType::f32, {4097});  // ceil((2^32 + 3) / 2^20)
  EXPECT_NO_THROW(meta->quantize_int8(q, scales, x, block));
  EXPECT_NO_THROW(meta->dequantize_int8(x, q, scales, block));
  EXPECT_NO_THROW(meta->dropout_forward(x, x, 0.1f, 1, uint64_t{1} << 63));
  EXPECT_THROW(meta->quantize_int8(q, TensorView(fake, DType::f32, {4096}), x, block),
               InternalError);
}

TEST(KernelBackend, AttentionWithoutAnOutputComputesTheProbabilitiesOnly) {
  const int64_t B = 1, T = 5, H = 2, D = 4;
  std::vector<float> q(B * T * H * D), k(q.size()), v(q.size()), out(q.size());
  for (size_t i = 0; i < q.size(); i++) {
    q[i] = 0.1f * static_cast<float>(i % 7);
    k[i] = 0.2f * static_cast<float>(i % 5);
    v[i] = static_cast<float>(i);
  }
  for (const auto& backend : host_backends()) {
    if (backend->kind() == KernelKind::meta) continue;
    std::vector<float> pre(B * H * T * T), att(pre.size()), pre_full(pre.size()),
        att_full(pre.size());
    const auto view = [](std::vector<float>& x, std::vector<int64_t> shape) {
      return TensorView(x.data(), DType::f32, std::move(shape));
    };
    backend->attention_forward(TensorView{}, view(pre, {B, H, T, T}), view(att, {B, H, T, T}),
                               view(q, {B, T, H, D}), view(k, {B, T, H, D}), view(v, {B, T, H, D}),
                               B, T, H, H, D);
    backend->attention_forward(view(out, {B, T, H, D}), view(pre_full, {B, H, T, T}),
                               view(att_full, {B, H, T, T}), view(q, {B, T, H, D}),
                               view(k, {B, T, H, D}), view(v, {B, T, H, D}), B, T, H, H, D);
    EXPECT_EQ(pre, pre_full) << kernel_kind_name(backend->kind());
    EXPECT_EQ(att, att_full) << kernel_kind_name(backend->kind());
  }
}

TEST(KernelBackend, MetaRunsNothingAndSumsToZero) {
  const auto meta = make_meta_kernel_backend();
  EXPECT_EQ(meta->kind(), KernelKind::meta);
  std::vector<float> x(16, 3.0f);
  const TensorView view(x.data(), DType::f32, {16});
  meta->fill_zero(view);
  meta->gelu_forward(view, view);
  bool generated = false;
  meta->fill_from_host(view, [&](float*, int64_t, int64_t) { generated = true; });
  EXPECT_FALSE(generated);
  EXPECT_EQ(meta->sum(view), 0.0);
  for (const float v : x) EXPECT_EQ(v, 3.0f);
}

TEST(KernelBackend, FillFromHostWritesEveryElementAcrossChunks) {
  const int64_t n = (int64_t{1} << 20) + 3;  // two chunks, the second of 3 elements
  std::vector<float> x(static_cast<size_t>(n), -1.0f);
  CpuKernelBackend cpu;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  cpu.fill_from_host(TensorView(x.data(), DType::f32, {n}),
                     [&](float* chunk, int64_t first, int64_t count) {
                       chunks.emplace_back(first, count);
                       for (int64_t i = 0; i < count; ++i)
                         chunk[i] = static_cast<float>((first + i) % 1000);
                     });
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[1], (std::pair<int64_t, int64_t>{int64_t{1} << 20, 3}));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(x[static_cast<size_t>(i)], (i % 1000)) << i;
}

}  // namespace
}  // namespace vramlab::nn

namespace vramlab::nn {
namespace {

TEST(Runtime, CopiesBetweenHostAndDeviceAreCountedInBytesAndCopies) {
  for (const char* device : {"sim:64MiB", "meta"}) {
    Runtime runtime(memory::parse_device(device));
    const Tensor t = runtime.allocate({250, 4}, DType::f32, memory::MemoryCategory::other, "t");
    std::vector<float> host(1000, 2.5f), back(1000, 0.0f);
    runtime.copy_to_device(t, host.data());
    runtime.copy_to_device(t.view(10, {90}), host.data());
    runtime.copy_to_host(back.data(), t);
    runtime.copy_to_device(t.view(0, {0}), host.data());  // nothing moves, nothing is counted
    const TransferStats& s = runtime.transfer_stats();
    EXPECT_EQ(s.host_to_device_bytes, 4000 + 360) << device;
    EXPECT_EQ(s.host_to_device_copies, 2) << device;
    EXPECT_EQ(s.device_to_host_bytes, 4000) << device;
    EXPECT_EQ(s.device_to_host_copies, 1) << device;
    EXPECT_GE(s.host_to_device_seconds, 0.0);
    if (runtime.kernel_kind() != KernelKind::meta) {
      EXPECT_EQ(back, host) << device;
    }
  }
}

}  // namespace
}  // namespace vramlab::nn
