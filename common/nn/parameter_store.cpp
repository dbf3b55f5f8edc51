// ParameterStore: one block of parameters, one of gradients, named views; sharded under ZeRO
// (see parameter_store.h).
#include "common/nn/parameter_store.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "common/memory/memory_category.h"
#include "common/model/checked_int.h"
#include "common/platform/errors.h"

namespace vramlab::nn {

namespace {

std::vector<ParameterView> make_views(const std::vector<ParameterSpec>& specs,
                                      const dist::ShardLayout& layout) {
  std::vector<ParameterView> views;
  int64_t logical = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const ParameterSpec& spec = specs[i];
    ParameterView view{spec.name,    spec.shape, spec.layer, layout.tensor_offsets()[i],
                       spec.numel(), spec.init};
    view.logical_offset = logical;
    view.unit = layout.unit_of_tensor(static_cast<int64_t>(i));
    logical += spec.numel();
    views.push_back(std::move(view));
  }
  return views;
}

bool sharded_gradients(StoreSharding s) {
  return s == StoreSharding::gradients || s == StoreSharding::parameters;
}

}  // namespace

ParameterStore::ParameterStore(Runtime& runtime, const std::vector<ParameterSpec>& specs,
                               DType value_dtype, DType grad_dtype)
    : runtime_(runtime),
      values_runtime_(&runtime),
      value_dtype_(value_dtype),
      grad_dtype_(grad_dtype),
      layout_(specs, 1) {
  views_ = make_views(specs, layout_);
  numel_ = layout_.numel();
  values_ =
      runtime_.allocate({numel_}, value_dtype, memory::MemoryCategory::parameter, "parameters");
}

ParameterStore::ParameterStore(Runtime& runtime, const std::vector<ParameterSpec>& specs,
                               DType value_dtype, DType grad_dtype, const dist::ShardLayout& layout,
                               int64_t rank, StoreSharding sharding)
    : ParameterStore(runtime, runtime, specs, value_dtype, grad_dtype, layout, rank, sharding) {}

ParameterStore::ParameterStore(Runtime& runtime, Runtime& values_runtime,
                               const std::vector<ParameterSpec>& specs, DType value_dtype,
                               DType grad_dtype, const dist::ShardLayout& layout, int64_t rank,
                               StoreSharding sharding, const NvmeDrive* values_on_nvme)
    : runtime_(runtime),
      values_runtime_(&values_runtime),
      value_dtype_(value_dtype),
      grad_dtype_(grad_dtype),
      layout_(layout),
      rank_(rank),
      sharding_(sharding) {
  if (rank < 0 || rank >= layout.world_size())
    throw UsageError("rank " + std::to_string(rank) + " outside [0, " +
                     std::to_string(layout.world_size()) + ")");
  if (static_cast<int64_t>(specs.size()) != static_cast<int64_t>(layout.tensor_offsets().size()))
    throw UsageError("the shard layout was made for " +
                     std::to_string(layout.tensor_offsets().size()) + " tensors, not " +
                     std::to_string(specs.size()));
  views_ = make_views(specs, layout_);
  numel_ = layout_.numel();
  if (sharding_ == StoreSharding::none && layout_.padded_numel() != numel_)
    throw UsageError("an unsharded store cannot be padded (use a layout of one rank)");
  if (values_offloaded() && sharding_ != StoreSharding::parameters)
    throw UsageError(
        "only a ZeRO-3 store keeps its parameters on another runtime (parameter offload needs "
        "--zero 3)");
  unit_values_.resize(layout_.units().size());
  unit_grads_.resize(layout_.units().size());
  if (values_on_nvme != nullptr) {
    if (!values_offloaded())
      throw UsageError(
          "the parameters go to NVMe from the host: --offload-param-device nvme "
          "needs the parameters offloaded (--offload both)");
    make_nvme_files(*values_on_nvme);
    return;
  }
  const int64_t held =
      sharding_ == StoreSharding::parameters ? layout_.shard_numel() : layout_.padded_numel();
  values_ = values_runtime_->zeros(
      {held}, memory::MemoryCategory::parameter,
      sharding_ == StoreSharding::parameters ? "parameters (shard)" : "parameters", value_dtype);
}

ParameterStore::~ParameterStore() = default;
ParameterStore::ParameterStore(ParameterStore&&) noexcept = default;

// Note [Parameters on NVMe]
// ZeRO-Infinity (Rajbhandari et al., SC21, §5; DeepSpeed's `offload_param.device: nvme`, its
// AsyncPartitionedParameterSwapper) keeps each rank's 16-bit parameter partition on NVMe and
// reads a sub-module's partition into a pinned buffer just before its all-gather. Here each
// unit's shard has a file, made (zero) with the store; a unit comes into host memory for three
// users and leaves after: the initialisation (written unit by unit, so the host never holds the
// shard), the strategy's fetch (read, copied to the device, freed once the compute stream has
// waited for that copy: Note [Parameter fetch]), and the optimizer's update (read only when the
// update reads the parameters, written back after it: Note [Optimizer states on NVMe]). The
// callers put the drive's time on the clock; the store moves the bytes.
struct ParameterStore::NvmeShards {
  NvmeDrive drive;
  std::unique_ptr<storage::NvmeTier> tier;  // null on meta
  std::vector<int64_t> files;               // (units) the tier's file of each unit
  std::vector<memory::TensorView> in;       // (units) a unit's shard while swapped in, else none
  std::vector<Tensor> owned;                // (units) the memory of `in` when swap_in made it
  int64_t file_bytes = 0;
  int64_t read_bytes = 0;
  int64_t write_bytes = 0;
};

void ParameterStore::make_nvme_files(const NvmeDrive& drive) {
  auto shards = std::make_unique<NvmeShards>();
  shards->drive = drive;
  shards->tier = open_drive(*values_runtime_, drive, "--offload-param-device");
  shards->in.resize(layout_.units().size());
  shards->owned.resize(layout_.units().size());
  try {
    for (size_t u = 0; u < layout_.units().size(); ++u) {
      const int64_t bytes = checked_mul(layout_.units()[u].shard_numel,
                                        static_cast<int64_t>(dtype_size_bytes(value_dtype_)),
                                        "parameter shard bytes");
      if (shards->tier)
        shards->files.push_back(
            shards->tier->create("parameters." + layout_.units()[u].name, bytes));
      shards->file_bytes =
          checked_add(shards->file_bytes, storage::nvme_aligned_bytes(bytes), "NVMe bytes");
    }
  } catch (...) {
    if (shards->tier) shards->tier->remove_files();  // a drive too small: none is left
    throw;
  }
  nvme_ = std::move(shards);
}

const NvmeDrive& ParameterStore::nvme_drive() const {
  if (!nvme_) throw std::logic_error("parameter store: the parameters are not on NVMe");
  return nvme_->drive;
}

memory::TensorView ParameterStore::swap_in(int64_t unit, bool read) {
  if (!nvme_) throw std::logic_error("parameter store: swap_in without the parameters on NVMe");
  if (swapped_in(unit)) throw std::logic_error("parameter store: unit swapped in twice");
  const dist::ShardUnit& u = layout_.units().at(static_cast<size_t>(unit));
  Tensor shard =
      read ? values_runtime_->allocate({u.shard_numel}, value_dtype_,
                                       memory::MemoryCategory::parameter, "parameters (from NVMe)")
           : values_runtime_->zeros({u.shard_numel}, memory::MemoryCategory::parameter,
                                    "parameters (from NVMe)", value_dtype_);  // (s_u)
  const memory::TensorView view = swap_in(unit, read, shard.view());
  nvme_->owned[static_cast<size_t>(unit)] = std::move(shard);
  return view;
}

memory::TensorView ParameterStore::swap_in(int64_t unit, bool read, memory::TensorView buffer) {
  if (!nvme_) throw std::logic_error("parameter store: swap_in without the parameters on NVMe");
  if (swapped_in(unit)) throw std::logic_error("parameter store: unit swapped in twice");
  const dist::ShardUnit& u = layout_.units().at(static_cast<size_t>(unit));
  if (buffer.dtype() != value_dtype_ || buffer.numel() < u.shard_numel)
    throw std::logic_error("parameter store: a swap buffer smaller than unit " + u.name);
  const memory::TensorView shard = buffer.slice(0, {u.shard_numel});  // (s_u)
  if (read) {
    if (nvme_->tier)
      nvme_->tier->read(nvme_->files[static_cast<size_t>(unit)], shard.data(), local_bytes(unit));
    nvme_->read_bytes += local_bytes(unit);
  }
  nvme_->in[static_cast<size_t>(unit)] = shard;
  return shard;
}

void ParameterStore::swap_out(int64_t unit, bool write) {
  if (!swapped_in(unit)) throw std::logic_error("parameter store: swap_out of a unit not in");
  const auto u = static_cast<size_t>(unit);
  const memory::TensorView shard = nvme_->in[u];
  Tensor owned = std::move(nvme_->owned[u]);  // freed on return, written or not
  nvme_->owned[u] = Tensor();
  nvme_->in[u] = memory::TensorView();
  if (!write) return;
  if (nvme_->tier) nvme_->tier->write(nvme_->files[u], shard.data(), local_bytes(unit));
  nvme_->write_bytes += local_bytes(unit);
}

bool ParameterStore::swapped_in(int64_t unit) const {
  return nvme_ && !nvme_->in.at(static_cast<size_t>(unit)).none();
}

int64_t ParameterStore::local_bytes(int64_t unit) const {
  return layout_.units().at(static_cast<size_t>(unit)).shard_numel *
         static_cast<int64_t>(dtype_size_bytes(value_dtype_));
}

std::vector<unsigned char> ParameterStore::read_values() {
  if (!nvme_) {
    std::vector<unsigned char> bytes(static_cast<size_t>(values_.bytes()));
    values_runtime_->copy_to_host(bytes.data(), values_);
    return bytes;
  }
  const auto element = static_cast<int64_t>(dtype_size_bytes(value_dtype_));
  std::vector<unsigned char> bytes(static_cast<size_t>(layout_.shard_numel() * element));
  for (size_t u = 0; u < layout_.units().size(); ++u) {
    const auto unit = static_cast<int64_t>(u);
    const memory::TensorView shard = swap_in(unit);
    values_runtime_->copy_to_host(bytes.data() + layout_.units()[u].shard_offset * element, shard);
    swap_out(unit, false);
  }
  return bytes;
}

int64_t ParameterStore::nvme_file_bytes() const {
  return nvme_ ? nvme_->file_bytes : 0;
}
int64_t ParameterStore::nvme_read_bytes() const {
  return nvme_ ? nvme_->read_bytes : 0;
}
int64_t ParameterStore::nvme_write_bytes() const {
  return nvme_ ? nvme_->write_bytes : 0;
}
const storage::NvmeTier* ParameterStore::nvme_tier() const {
  return nvme_ ? nvme_->tier.get() : nullptr;
}

const ParameterView& ParameterStore::find(std::string_view name) const {
  for (const ParameterView& v : views_)
    if (v.name == name) return v;
  throw std::logic_error("parameter store: no parameter named '" + std::string(name) + "'");
}

bool ParameterStore::contains(std::string_view name) const {
  for (const ParameterView& v : views_)
    if (v.name == name) return true;
  return false;
}

memory::TensorView ParameterStore::unit_slice(const std::vector<Tensor>& slots,
                                              const ParameterView& view, const char* what) const {
  const Tensor& unit = slots[static_cast<size_t>(view.unit)];
  const dist::ShardUnit& u = layout_.units()[static_cast<size_t>(view.unit)];
  if (unit.empty())
    throw InternalError(std::string("the ") + what + " of " + view.name + " were used while unit " +
                        u.name + " was not gathered (ZeRO)");
  return unit.view(view.offset - u.offset, view.shape);
}

int64_t ParameterStore::local_numel() const {
  return sharding_ == StoreSharding::none ? numel_ : layout_.shard_numel();
}

memory::TensorView ParameterStore::local_values(int64_t unit) const {
  const dist::ShardUnit& u = layout_.units().at(static_cast<size_t>(unit));
  if (nvme_) {
    const memory::TensorView& in = nvme_->in[static_cast<size_t>(unit)];
    if (in.none())
      throw InternalError("the parameters of unit " + u.name +
                          " were used while on NVMe (not swapped in)");
    return in;
  }
  if (sharding_ == StoreSharding::parameters) return values_.view(u.shard_offset, {u.shard_numel});
  return values_.view(u.offset + rank_ * u.shard_numel, {u.shard_numel});
}

memory::TensorView ParameterStore::local_grads(int64_t unit) const {
  if (grads_.empty()) throw std::logic_error("parameter store: no gradients to shard");
  const dist::ShardUnit& u = layout_.units().at(static_cast<size_t>(unit));
  if (sharded_gradients(sharding_)) return grads_.view(u.shard_offset, {u.shard_numel});
  return grads_.view(u.offset + rank_ * u.shard_numel, {u.shard_numel});
}

std::vector<LocalRange> ParameterStore::local_ranges() const {
  if (grads_.empty() && shard_sink_ == nullptr)
    throw std::logic_error("parameter store: no gradients to update from");
  if (sharding_ == StoreSharding::none) return {LocalRange{values_.view(), grads_.view(), 0, 0}};
  std::vector<LocalRange> ranges;
  for (size_t u = 0; u < layout_.units().size(); ++u) {
    const auto unit = static_cast<int64_t>(u);
    const dist::ShardUnit& shard = layout_.units()[u];
    ranges.push_back(
        LocalRange{nvme_ && !swapped_in(unit) ? memory::TensorView() : local_values(unit),
                   shard_sink_ != nullptr ? memory::TensorView() : local_grads(unit),
                   shard.shard_offset, shard.offset + rank_ * shard.shard_numel});
  }
  return ranges;
}

LocalPart ParameterStore::local_part(const ParameterView& view) const {
  if (sharding_ != StoreSharding::parameters)
    return LocalPart{values_.view(view.offset, {view.numel}), 0};
  // The tensor's elements within its unit, intersected with this rank's shard of the unit.
  const dist::ShardUnit& u = layout_.units()[static_cast<size_t>(view.unit)];
  const int64_t begin = view.offset - u.offset, end = begin + view.numel;
  const int64_t shard_begin = rank_ * u.shard_numel, shard_end = shard_begin + u.shard_numel;
  const int64_t first = std::max(begin, shard_begin), last = std::min(end, shard_end);
  if (first >= last) return LocalPart{};
  if (nvme_)
    return LocalPart{local_values(view.unit).slice(first - shard_begin, {last - first}),
                     first - begin};
  return LocalPart{values_.view(u.shard_offset + (first - shard_begin), {last - first}),
                   first - begin};
}

Tensor& ParameterStore::unit_values(int64_t unit) {
  return unit_values_.at(static_cast<size_t>(unit));
}

Tensor& ParameterStore::unit_grads(int64_t unit) {
  return unit_grads_.at(static_cast<size_t>(unit));
}

void ParameterStore::keep_gradient_shards_off_device(GradientShardSink& sink) {
  if (!sharded_gradients(sharding_))
    throw std::logic_error(
        "parameter store: only a ZeRO-2 or ZeRO-3 store keeps its gradient shards off "
        "the device");
  grads_.reset();
  shard_sink_ = &sink;
}

void ParameterStore::ensure_grads() {
  if (!grads_.empty() || shard_sink_ != nullptr) return;
  const int64_t held = sharding_ == StoreSharding::none ? numel_
                       : sharded_gradients(sharding_)   ? layout_.shard_numel()
                                                        : layout_.padded_numel();
  grads_ =
      runtime_.zeros({held}, memory::MemoryCategory::gradient,
                     sharded_gradients(sharding_) ? "gradients (shard)" : "gradients", grad_dtype_);
}

void ParameterStore::zero_grad(bool set_to_none) {
  if (set_to_none) {
    grads_.reset();
  } else if (!grads_.empty()) {
    runtime_.fill_zero(grads_);
  }
}

}  // namespace vramlab::nn
