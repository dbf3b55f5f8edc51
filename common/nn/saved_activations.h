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
/// Independently of recompute, where and how a kept tensor lives until its backward is the
/// store's ActivationStorage (activation_storage.h; set_storage): the model calls the seam once per
/// layer (pack_after_forward, unpack_for_backward, unpack_span_input) and the storage packs each
/// packable tensor once the forward is done with it and unpacks it before the backward reads it,
/// as a saved_tensors_hooks pack/unpack pair does (in place, int8 with absmax scales, or in pinned
/// host memory: activation offload).
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
#include "common/nn/activation_storage.h"
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
  bool packed = false;         ///< held in its storage's packed form (bytes then counts that).
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
  /// \p packable false keeps the tensor as it is whatever the storage (the norms' per-token
  /// statistics: few bytes, and every gradient element of the layer depends on them).
  Tensor& save(int64_t layer, std::string_view name, std::vector<int64_t> shape, DType dtype,
               bool packable = true);
  /// save() in the activation type (activation_dtype()), packable.
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
  /// name is saved, or it is packed (unpack it first).
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

  /// Sets where and how kept tensors live from now on (in place by default). \p storage must not
  /// change while anything is packed.
  void set_storage(std::unique_ptr<ActivationStorage> storage);
  /// \return the storage set_storage gave.
  [[nodiscard]] const ActivationStorage& storage() const { return *storage_; }

  // ---- the seam, once per layer -------------------------------------------------------------
  /// Layer \p layer's forward is done with what it saved: packs all of it except its output
  /// (saved::residual3, the next reader's input), and the output of layer − 1, which only this
  /// layer read. \p layer == layers() is the head, which packs the last layer's output.
  /// \throws memory::OutOfMemoryError when full.
  void pack_after_forward(int64_t layer);
  /// Layer \p layer's backward runs next: unpacks what it saved and its input (the output of
  /// layer − 1), and prefetches what the backward of layer − 1 will unpack (and, when layer − 1
  /// ends a recomputed span, the span's input, which its re-run forward reads first). \p layer ==
  /// layers() is the head, whose input is the last layer's output.
  /// \throws memory::OutOfMemoryError.
  void unpack_for_backward(int64_t layer);
  /// The span that starts at layer \p first is recomputed next: unpacks its input (the output of
  /// \p first − 1; nothing for layer 0, whose input is never packed).
  void unpack_span_input(int64_t first);
  /// Packs tensor \p name of \p layer (packing the packed form first, then freeing the tensor).
  /// Does nothing when the tensor is absent, not packable, already packed, or the storage keeps
  /// it in place. \throws memory::OutOfMemoryError when full.
  void pack(int64_t layer, std::string_view name);
  /// Brings tensor \p name of \p layer back if it is packed (else nothing).
  /// \throws memory::OutOfMemoryError when full.
  void unpack(int64_t layer, std::string_view name);
  /// \return the number of layers the store was made for.
  [[nodiscard]] int64_t layers() const { return static_cast<int64_t>(plan_.size()); }

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
    Tensor buffer;  // the tensor as saved; empty while packed
    uint64_t order = 0;
    bool packable = true;
    std::unique_ptr<PackedActivation> packed;  // the storage's form, while packed
    std::vector<int64_t> shape;                // as saved: what unpack restores
    DType dtype = DType::f32;                  // as saved
    [[nodiscard]] int64_t bytes() const {
      return buffer.bytes() + (packed != nullptr ? packed->bytes() : 0);
    }
  };
  Entry& entry(int64_t layer, std::string_view name);
  // Packs (unpacks) every tensor of `layer` except `except` (all of them).
  void pack_layer(int64_t layer, std::string_view except);
  void unpack_layer(int64_t layer);
  void prefetch_layer(int64_t layer);
  void prefetch_entry(Entry& entry);  // asks the storage to bring it back if packed
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
  std::unique_ptr<ActivationStorage> storage_;
};

}  // namespace vramlab::nn
