/// \file
/// \brief SavedActivations: the one store through which every module keeps tensors for its
/// backward, for one training step, with a per-layer activation policy.
///
/// A layer's policy says what it keeps between its forward and its backward:
/// - Recompute::none keeps everything it saved (the default);
/// - Recompute::selective drops the attention probabilities, recomputed inside the layer's
///   backward (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
///   Models", §5); under flash attention there are none to drop, so it keeps everything;
/// - Recompute::full drops everything but its output, and a run of `full` layers that starts at a
///   span start is one checkpointed span: only the output of its last layer is kept, and
///   the whole span's forward is re-run when the backward reaches it (Chen et al. 2016,
///   "Training Deep Nets with Sublinear Memory Cost", whose "segments" these spans are;
///   torch.utils.checkpoint).
/// The store holds the plan and does the bookkeeping; DecoderModel drops and recomputes by it.
///
/// Independently of recompute, what a layer keeps can be compressed (set_compression): each
/// compressible tensor becomes int8 with an fp32 absmax scale per tensor or per block of
/// kInt8ActivationBlock elements, once the forward is done with it, and is decompressed to fp32
/// before the backward that reads it (the scheme of a saved_tensors_hooks pack/unpack pair).
/// Every saved tensor is allocated with the category `activation` and the name "blocks.L.NAME"
/// (or "NAME" outside the blocks), so snapshots and OOM messages name it.
#pragma once

#include <cstdint>
#include <list>
#include <string>
#include <string_view>
#include <vector>

#include "common/dtype/dtype.h"
#include "common/memory/tensor.h"
#include "common/model/model_kinds.h"
#include "common/nn/runtime.h"
#include "common/recompute/activation_compression.h"
#include "common/recompute/recompute_schedule.h"

namespace vramlab::nn {

/// How kept activations are stored between a layer's forward and its backward.
using ActivationCompression = recompute::ActivationCompression;
using recompute::compressed_bytes;
using recompute::compression_name;
using recompute::kInt8ActivationBlock;
using recompute::parse_compression;

/// What a layer recomputes in backward instead of keeping (none, full, selective).
using Recompute = recompute::LayerRecompute;
/// The activation policy of one layer: what it recomputes and, for full recompute, whether it
/// starts a checkpointed span.
using LayerPolicy = recompute::LayerPlan;

/// One entry of SavedActivations::list().
struct SavedActivationInfo {
  std::string name;            ///< e.g. "att".
  bool compressed = false;     ///< held as int8 (bytes then counts the int8 values and scales).
  int64_t layer = -1;          ///< block index, -1 outside the blocks.
  std::vector<int64_t> shape;  ///< e.g. {B, H, T, T}.
  DType dtype = DType::f32;    ///< as given to save().
  int64_t bytes = 0;           ///< numel × element size, before the allocator's rounding.
};

/// The per-step store of saved activations.
class SavedActivations {
 public:
  /// \param runtime allocates the tensors; must outlive the store. \param layers ≥ 0 blocks,
  /// each with policy {none}.
  SavedActivations(Runtime& runtime, int64_t layers);

  /// Sets every layer's policy.
  /// \param plan one entry per layer. \throws vramlab::UsageError for a plan of the wrong length
  /// or a `full` layer that follows a layer of another policy without starting a span.
  void set_plan(std::vector<LayerPolicy> plan);
  /// \param layer in [-1, layers). \return the layer's policy ({none} outside the blocks).
  [[nodiscard]] const LayerPolicy& policy(int64_t layer) const;
  /// \return the per-layer plan.
  [[nodiscard]] const std::vector<LayerPolicy>& plan() const { return plan_; }
  /// \param layer a layer with Recompute::full. \return the first layer of its span.
  [[nodiscard]] int64_t span_first(int64_t layer) const;
  /// \param layer a layer with Recompute::full. \return whether it is the last of its span.
  [[nodiscard]] bool span_last(int64_t layer) const;

  /// Allocates and registers a tensor to keep for backward.
  /// \p layer is a block index or -1; \p name is unique within the layer.
  /// \return the buffer to fill (valid until it is released or the store cleared).
  /// \throws vramlab::memory::OutOfMemoryError when the device is full; std::logic_error when
  /// the name is already saved in that layer or the layer is out of range.
  /// \p compressible false keeps the tensor exact under compression (the norms' per-token
  /// statistics: few bytes, and every gradient element of the layer depends on them).
  Tensor& save(int64_t layer, std::string_view name, std::vector<int64_t> shape, DType dtype,
               bool compressible = true);
  /// save() in the activation type (activation_dtype()), compressible.
  Tensor& save(int64_t layer, std::string_view name, std::vector<int64_t> shape) {
    return save(layer, name, std::move(shape), activation_dtype_, true);
  }
  /// Sets the type activations are saved in from now on (f32 by default; bf16 or f16 under the
  /// 16-bit precisions, common/amp/precision_policy.h).
  void set_activation_dtype(DType dtype) { activation_dtype_ = dtype; }
  /// \return the type set_activation_dtype gave.
  [[nodiscard]] DType activation_dtype() const { return activation_dtype_; }
  /// Sets which attention kernel the layers' forward runs from now on (naive by default): a flash
  /// layer saves lse (B, H, T) f32 instead of att (B, H, T, T). The backward reads it back, so a
  /// step's backward always matches the forward that filled the store.
  void set_attention(AttentionKind attention) { attention_ = attention; }
  /// \return the kind set_attention gave.
  [[nodiscard]] AttentionKind attention() const { return attention_; }
  /// The buffer save(\p layer, \p name) returned. \throws std::logic_error when nothing of that
  /// name is saved, or it is compressed (decompress it first).
  [[nodiscard]] const Tensor& get(int64_t layer, std::string_view name) const;
  /// \return whether \p layer holds a tensor named \p name.
  [[nodiscard]] bool contains(int64_t layer, std::string_view name) const;
  /// Frees one tensor. \throws std::logic_error when nothing of that name is saved.
  void release(int64_t layer, std::string_view name);
  /// Frees everything \p layer saved except the tensor named \p keep.
  void release_all_except(int64_t layer, std::string_view keep);
  /// Frees everything \p layer (or -1) saved; called after the layer's backward.
  void release_layer(int64_t layer);
  /// Frees everything (end of a step, or unwinding from an error).
  void clear();

  /// Records where layer \p layer's dropout masks started in its latest forward (its backward
  /// regenerates them from there; a replayed recompute starts there again).
  void set_rng_offset(int64_t layer, uint64_t offset) { rng_offsets_[slot(layer) - 1] = offset; }
  /// \return what set_rng_offset recorded for \p layer (0 before any).
  [[nodiscard]] uint64_t rng_offset(int64_t layer) const { return rng_offsets_[slot(layer) - 1]; }

  /// Sets how kept tensors are compressed from now on (none by default).
  void set_compression(ActivationCompression compression) { compression_ = compression; }
  /// \return the mode set_compression gave.
  [[nodiscard]] ActivationCompression compression() const { return compression_; }
  /// Replaces tensor \p name of \p layer by its int8 form (allocating that first, then freeing
  /// the fp32 one). Does nothing when compression is off, the tensor is absent, not compressible,
  /// not fp32 or already compressed. \throws memory::OutOfMemoryError when full.
  void compress(int64_t layer, std::string_view name);
  /// compress() for every tensor of \p layer except \p except.
  void compress_layer(int64_t layer, std::string_view except);
  /// Brings tensor \p name of \p layer back to fp32 if it is compressed (else nothing).
  /// \throws memory::OutOfMemoryError when full.
  void decompress(int64_t layer, std::string_view name);
  /// decompress() for every tensor of \p layer.
  void decompress_layer(int64_t layer);

  /// \return every saved tensor, in the order they were saved.
  [[nodiscard]] std::vector<SavedActivationInfo> list() const;
  /// \return requested bytes of the saved tensors (the allocator's rounding excluded).
  [[nodiscard]] int64_t bytes() const { return bytes_; }
  /// \return the most bytes() has been since the store was made: the step's activation peak as
  /// the plan's model counts it (requested bytes, no allocator rounding or unsplit blocks).
  [[nodiscard]] int64_t peak_bytes() const { return peak_bytes_; }

 private:
  DType activation_dtype_ = DType::f32;
  AttentionKind attention_ = AttentionKind::naive;
  struct Entry {
    std::string name;
    Tensor buffer;  // the fp32 (or other dtype) tensor; empty while compressed
    uint64_t order = 0;
    bool compressible = true;
    Tensor quantized;          // i8, same shape, while compressed
    Tensor scales;             // f32 (one per tensor or per block), while compressed
    DType dtype = DType::f32;  // as saved: what decompress restores
    [[nodiscard]] bool compressed() const { return !quantized.empty(); }
    [[nodiscard]] int64_t bytes() const {
      return buffer.bytes() + quantized.bytes() + scales.bytes();
    }
  };
  Entry& entry(int64_t layer, std::string_view name);
  [[nodiscard]] int64_t block_of(const Tensor& tensor) const;
  [[nodiscard]] size_t slot(int64_t layer) const;

  Runtime& runtime_;
  std::vector<LayerPolicy> plan_;      // (layers)
  std::vector<uint64_t> rng_offsets_;  // (layers)
  // (layers + 1): slot 0 is layer -1. A list, because releasing one tensor must leave the
  // references save() returned for the others valid.
  std::vector<std::list<Entry>> slots_;
  uint64_t next_order_ = 0;
  int64_t bytes_ = 0;
  int64_t peak_bytes_ = 0;
  ActivationCompression compression_ = ActivationCompression::none;
};

}  // namespace vramlab::nn
