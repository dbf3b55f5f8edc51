/// \file
/// \brief ParameterStore: all parameters of a model in one contiguous block (f32, or 16-bit)
/// (llm.c's layout), their gradients in a second block, and named views in
/// ModelConfig::parameters() order.
///
/// One block per role keeps the allocator's parameter bytes equal to 4 × parameter_count (up to
/// the allocator's 512-byte rounding of that one block), lets the optimizer update every tensor
/// with one kernel call, and zeroes all gradients with one fill.
///
/// **Sharded (ZeRO).** With a dist::ShardLayout the store is laid out in FSDP's padded units and
/// this rank holds (StoreSharding):
/// - `optimizer_states` (ZeRO-1): every parameter and gradient, padded; it updates its shards.
/// - `gradients` (ZeRO-2): every parameter; of the gradients only its shards (the local shard),
///   plus, during the backward, the full gradient of the units whose backward is running
///   (unit_grads(), filled by the modules, reduce-scattered into the shard by the strategy).
/// - `parameters` (ZeRO-3): only its shards of parameters and gradients; a unit's full parameters
///   exist while the strategy has gathered them (unit_values()), and the modules read them there.
/// Modules never see the difference: value() and grad() point wherever the tensor lives now, and
/// reading a tensor that is not there is an InternalError naming it.
///
/// **Parameter offload (ZeRO-Infinity).** A ZeRO-3 store may keep its shard on another runtime
/// (the host's): values() then lives there, the strategy copies a unit's shard to the device
/// before gathering it, and the offloaded optimizer updates the shard where it lies.
///
/// **Parameters on NVMe (ZeRO-Infinity's `offload_param.device: nvme`).** The shard may live in
/// files on a drive instead, one per unit: values() is then empty, and a unit's shard is in host
/// memory only between swap_in() and swap_out() (the strategy's fetch, the optimizer's update,
/// the initialisation), so the host holds a unit at a time, not the shard (Note [Parameters on
/// NVMe] in parameter_store.cpp).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/dist/shard_layout.h"
#include "common/memory/tensor.h"
#include "common/model/model_config.h"
#include "common/nn/nvme_drive.h"
#include "common/nn/runtime.h"

namespace vramlab::nn {

/// One named parameter tensor inside the store.
struct ParameterView {
  std::string name;            ///< e.g. "blocks.0.attn.qkv.weight".
  std::vector<int64_t> shape;  ///< e.g. {3C, C}.
  int64_t layer = -1;          ///< block index or -1.
  int64_t offset = 0;          ///< first element inside the (padded) store.
  int64_t numel = 0;           ///< number of elements.
  InitKind init{};             ///< how DecoderModel::initialise fills it (normal if unset).
  /// First element in the unpadded order of ModelConfig::parameters(): the index of the
  /// initialisation's random stream, so a padded store holds the same model as a plain one.
  int64_t logical_offset = 0;
  int64_t unit = 0;  ///< its dist::ShardLayout unit (0 in an unsharded store).
};

/// What this rank of a data-parallel group holds of the store (see the file comment).
enum class StoreSharding {
  none,              ///< everything, unpadded (one process, or DDP)
  optimizer_states,  ///< ZeRO-1
  gradients,         ///< ZeRO-2
  parameters,        ///< ZeRO-3
};

/// A part of the store this rank updates: what an optimizer steps, and where that part's
/// optimizer states sit in the rank's state buffers (of local_numel() elements).
struct LocalRange {
  /// (count) parameters (the 16-bit working copy under mixed precision)
  memory::TensorView values;
  memory::TensorView grads;   ///< (count) their reduced gradients
  int64_t state_offset = 0;   ///< first element of this range in the state buffers
  int64_t first_element = 0;  ///< index of its first element in the whole (padded) store
};

/// The part of one parameter tensor this rank holds (ZeRO-3: at most one contiguous piece).
struct LocalPart {
  memory::TensorView values;  ///< (count) flat, none when the rank holds none of the tensor
  int64_t first = 0;          ///< index of values' first element within the tensor
};

/// Where a ZeRO-2 store that keeps no gradient shard on the device sends each reduced shard
/// (ParameterStore::keep_gradient_shards_off_device): the offloaded optimizer, whose host memory
/// holds the shards (ZeRO-Offload).
class GradientShardSink {
 public:
  virtual ~GradientShardSink() = default;
  /// Takes unit \p unit's reduced gradient shard, (s_u) in device memory that is freed after the
  /// call: the sink copies it out (and calls record_stream for a copy still in flight).
  /// \p accumulate: add it to what the sink holds of the unit (a later micro-batch's) instead of
  /// replacing that.
  virtual void take_gradient_shard(int64_t unit, const memory::Tensor& shard, bool accumulate) = 0;
};

/// The parameters (category parameter) and gradients (category gradient) of one model.
class ParameterStore {
 public:
  /// Allocates the parameter block (uninitialised) and lays out \p specs in order.
  /// \param runtime must outlive the store. \param specs from ModelConfig::parameters().
  /// \param value_dtype the parameters' type (f32, or the 16-bit working copy of mixed
  /// precision). \param grad_dtype the gradients' type.
  /// \throws vramlab::memory::OutOfMemoryError when the device is full.
  ParameterStore(Runtime& runtime, const std::vector<ParameterSpec>& specs,
                 DType value_dtype = DType::f32, DType grad_dtype = DType::f32);
  /// A sharded store (see the file comment): zero-filled, so the padding stays zero.
  /// \param runtime must outlive the store. \param specs from ModelConfig::parameters().
  /// \param value_dtype the parameters' type. \param grad_dtype the gradients' type.
  /// \param layout the units over the data-parallel ranks (made from \p specs).
  /// \param rank this rank, in [0, layout.world_size()). \param sharding what the rank holds.
  /// \throws vramlab::UsageError for a rank out of range or a layout of other specs;
  /// vramlab::memory::OutOfMemoryError when the device is full.
  ParameterStore(Runtime& runtime, const std::vector<ParameterSpec>& specs, DType value_dtype,
                 DType grad_dtype, const dist::ShardLayout& layout, int64_t rank,
                 StoreSharding sharding);
  /// As the sharded constructor, with the local shard of parameters on \p values_runtime (a
  /// ZeRO-3 store with its parameters offloaded; see the file comment); gradients and gathered
  /// units stay on \p runtime. \param runtime must outlive the store. \param values_runtime
  /// likewise. \param specs as the sharded constructor's. \param value_dtype likewise.
  /// \param grad_dtype likewise. \param layout likewise. \param rank likewise.
  /// \param sharding likewise.
  /// \param values_on_nvme not null: the shard lives in files on this drive, made here, zero
  /// (see the file comment); \p values_runtime's memory holds a unit while it is swapped in.
  /// \throws vramlab::UsageError unless \p sharding is `parameters`;
  /// vramlab::memory::OutOfMemoryError when \p values_runtime is full; storage::StorageError
  /// when the drive refuses the path or cannot hold the files (none is left).
  ParameterStore(Runtime& runtime, Runtime& values_runtime, const std::vector<ParameterSpec>& specs,
                 DType value_dtype, DType grad_dtype, const dist::ShardLayout& layout, int64_t rank,
                 StoreSharding sharding, const NvmeDrive* values_on_nvme = nullptr);
  ~ParameterStore();
  /// Moves the store (the files go with it).
  ParameterStore(ParameterStore&&) noexcept;
  ParameterStore& operator=(ParameterStore&&) = delete;
  ParameterStore(const ParameterStore&) = delete;
  ParameterStore& operator=(const ParameterStore&) = delete;

  /// Linear search over the names; modules call it once, at construction. \throws std::logic_error
  /// if absent.
  [[nodiscard]] const ParameterView& find(std::string_view name) const;
  /// Lets optional parameters (biases, position table) be probed without a throw.
  [[nodiscard]] bool contains(std::string_view name) const;
  /// In layout order (ModelConfig::parameters()).
  [[nodiscard]] const std::vector<ParameterView>& views() const { return views_; }
  /// Parameter count (not bytes), padding excluded.
  [[nodiscard]] int64_t numel() const { return numel_; }

  /// \p view must come from this store. \return the values, with the parameter's shape.
  /// \throws vramlab::InternalError under ZeRO-3 when the tensor's unit is not gathered.
  [[nodiscard]] memory::TensorView value(const ParameterView& view) const {
    if (sharding_ != StoreSharding::parameters) return values_.view(view.offset, view.shape);
    return unit_slice(unit_values_, view, "parameters");
  }
  /// As value(), into the gradients; call ensure_grads() first if they may be released.
  /// \throws vramlab::InternalError under ZeRO-2/3 when the tensor's unit has no full gradient.
  [[nodiscard]] memory::TensorView grad(const ParameterView& view) const {
    if (sharding_ == StoreSharding::none || sharding_ == StoreSharding::optimizer_states)
      return grads_.view(view.offset, view.shape);
    return unit_slice(unit_grads_, view, "gradient");
  }
  /// \return the parameter block: (numel) unsharded, (padded numel) under ZeRO-1/2, this rank's
  /// local shard (shard numel) under ZeRO-3; empty with the parameters on NVMe.
  [[nodiscard]] const Tensor& values() const { return values_; }
  /// \return the parameters' dtype (values() may be empty).
  [[nodiscard]] DType value_dtype() const { return value_dtype_; }
  /// \return the gradient block, shaped as values() for none and ZeRO-1, the local shard under
  /// ZeRO-2/3; empty when gradients are released.
  [[nodiscard]] const Tensor& grads() const { return grads_; }

  /// \return what this rank holds.
  [[nodiscard]] StoreSharding sharding() const { return sharding_; }
  /// \return the runtime whose memory holds values(): the store's own, or the host's when the
  /// parameters are offloaded.
  [[nodiscard]] Runtime& values_runtime() const { return *values_runtime_; }
  /// \return true when values() lives on another runtime than the gradients (parameter offload).
  [[nodiscard]] bool values_offloaded() const { return values_runtime_ != &runtime_; }
  /// \return the gradients' dtype (grads() may be empty).
  [[nodiscard]] DType grad_dtype() const { return grad_dtype_; }
  /// \return the units (a single unpadded unit per layer when unsharded: dist::ShardLayout with
  /// one rank).
  [[nodiscard]] const dist::ShardLayout& layout() const { return layout_; }
  /// \return this rank's index in the data-parallel group (0 unsharded).
  [[nodiscard]] int64_t rank() const { return rank_; }
  /// \return elements this rank updates: numel() unsharded, the local shard's otherwise.
  [[nodiscard]] int64_t local_numel() const;
  /// \return the parts this rank updates (one unsharded, one per unit sharded), in state order.
  /// The gradients must exist, or be off the device (each range's grads is then none).
  [[nodiscard]] std::vector<LocalRange> local_ranges() const;
  /// \return this rank's shard of unit \p unit's values, (shard numel of the unit).
  /// \throws vramlab::InternalError with the parameters on NVMe when the unit is not swapped in.
  [[nodiscard]] memory::TensorView local_values(int64_t unit) const;

  /// \return true when the shard lives in files on NVMe (the file comment).
  [[nodiscard]] bool values_on_nvme() const { return nvme_ != nullptr; }
  /// \return the drive, as given. Only with values_on_nvme().
  [[nodiscard]] const NvmeDrive& nvme_drive() const;
  /// Brings unit \p unit's shard into host memory (values_runtime(), category parameter).
  /// \param unit the unit. \param read false: zeros instead of the file's contents (the caller
  /// overwrites all of it). \return the shard, (shard numel of the unit), also what local_values()
  /// gives until swap_out. \throws std::logic_error unless on NVMe and the unit is out;
  /// memory::OutOfMemoryError; storage::StorageError (the unit stays out).
  memory::TensorView swap_in(int64_t unit, bool read = true);
  /// As swap_in(), into \p buffer (the caller's, at least the unit's shard, \p read or not: its
  /// contents are then the caller's), which allocates nothing. \param unit the unit.
  /// \param read false: \p buffer's contents stand. \param buffer the memory.
  /// \return the shard, a view of \p buffer. \throws as swap_in(), but for memory.
  memory::TensorView swap_in(int64_t unit, bool read, memory::TensorView buffer);
  /// Frees unit \p unit's shard from host memory (a caller's buffer stays the caller's), first
  /// writing it to its file if \p write. \param unit the unit. \param write whether to.
  /// \throws std::logic_error unless swapped in; storage::StorageError (the unit is out, and its
  /// file holds what it held before or a partial write: the caller cannot go on from it).
  void swap_out(int64_t unit, bool write);
  /// \return whether unit \p unit is in host memory now.
  [[nodiscard]] bool swapped_in(int64_t unit) const;
  /// \return bytes of unit \p unit's shard (what a swap moves).
  [[nodiscard]] int64_t local_bytes(int64_t unit) const;
  /// \return bytes of the files on the drive, each rounded up to storage::kNvmeAlignment (counted
  /// the same on meta, where no file is made); 0 unless on NVMe.
  [[nodiscard]] int64_t nvme_file_bytes() const;
  /// \return the shards' bytes swap_in read and swap_out wrote so far (initialisation included).
  [[nodiscard]] int64_t nvme_read_bytes() const;
  /// \return see nvme_read_bytes().
  [[nodiscard]] int64_t nvme_write_bytes() const;
  /// \return this rank's parameters' bytes, laid out as values() (whole, padded or the local
  /// shard): from the device, the host, or the files unit by unit (through host memory, one unit
  /// at a time). \throws memory::OutOfMemoryError, storage::StorageError.
  [[nodiscard]] std::vector<unsigned char> read_values();
  /// \return the tier holding the files; null on meta or unless on NVMe.
  [[nodiscard]] const storage::NvmeTier* nvme_tier() const;
  /// \return this rank's shard of unit \p unit's gradients (they must exist).
  [[nodiscard]] memory::TensorView local_grads(int64_t unit) const;
  /// \return the part of \p view's tensor this rank holds in values() (what initialisation fills).
  [[nodiscard]] LocalPart local_part(const ParameterView& view) const;
  /// ZeRO-3: unit \p unit's full parameters (padded), empty when not gathered; the strategy
  /// allocates and releases them. \return the slot.
  [[nodiscard]] Tensor& unit_values(int64_t unit);
  /// ZeRO-2/3: unit \p unit's full gradient (padded) during its backward, else empty. \return
  /// the slot.
  [[nodiscard]] Tensor& unit_grads(int64_t unit);

  /// ZeRO-2 or 3 with the optimizer offloaded: the local gradient shard lives with \p sink, not on
  /// the device, so the device holds gradients only while a unit's backward runs. ensure_grads()
  /// then allocates nothing, grads() stays empty, local_ranges() gives ranges without gradients,
  /// and the data-parallel strategy hands each reduced shard to \p sink, which must outlive the
  /// store. \throws std::logic_error unless the store is a ZeRO-2 or ZeRO-3 store.
  void keep_gradient_shards_off_device(GradientShardSink& sink);
  /// \return the sink of keep_gradient_shards_off_device(), or null.
  [[nodiscard]] GradientShardSink* gradient_shard_sink() const { return shard_sink_; }

  /// Makes sure a zeroed gradient block exists (allocates it if it was released): the whole
  /// store's, or the local shard's under ZeRO-2/3; nothing when the shards are off the device.
  /// \throws vramlab::memory::OutOfMemoryError when the device is full.
  void ensure_grads();
  /// Clears the gradients before the next backward.
  /// \param set_to_none true: free the gradient block (PyTorch's zero_grad(set_to_none=True));
  /// false: keep it and fill it with zeros.
  void zero_grad(bool set_to_none);

 private:
  memory::TensorView unit_slice(const std::vector<Tensor>& slots, const ParameterView& view,
                                const char* what) const;

  struct NvmeShards;  // the files and the swapped-in units (parameter_store.cpp)
  void make_nvme_files(const NvmeDrive& drive);

  Runtime& runtime_;
  Runtime* values_runtime_;  // where values_ lives: &runtime_ unless offloaded
  DType value_dtype_;
  DType grad_dtype_;
  dist::ShardLayout layout_;
  int64_t rank_ = 0;
  StoreSharding sharding_ = StoreSharding::none;
  std::vector<ParameterView> views_;
  int64_t numel_ = 0;
  Tensor values_;                    // (numel | padded numel | shard numel) see values()
  Tensor grads_;                     // (numel | padded numel | shard numel) see grads(), or empty
  std::vector<Tensor> unit_values_;  // ZeRO-3, per unit: (padded unit numel) while gathered
  std::vector<Tensor> unit_grads_;   // ZeRO-2/3, per unit: (padded unit numel) during its backward
  GradientShardSink* shard_sink_ = nullptr;  // ZeRO-2/3 offloaded: where the shards live
  std::unique_ptr<NvmeShards> nvme_;         // the parameters on NVMe, else null
};

}  // namespace vramlab::nn
