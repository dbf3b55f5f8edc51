/// \file
/// \brief The vocabulary of how a model is trained: one enum per technique choice (precision,
/// loss scaling, optimizer, attention kernel, activation storage, ZeRO stage), each with the
/// spelling its flag, its JSON and the lessons' tables use, and a parser that names a bad value.
///
/// These are the only definitions of the technique enums. The runtime (amp, checkpoint, nn, dist,
/// optim, train) and the estimator both read them from here, so a run and its estimate name a
/// technique the same way, and the estimator needs nothing of the runtime to say which one it
/// counts. The folders that used to define them re-export the names they use.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace vramlab::plan {

/// Training precision (`--precision`).
enum class Precision {
  fp32,        ///< everything in fp32.
  bf16,        ///< pure bf16: parameters, gradients and optimizer states in bf16, no master copy.
  mixed_fp16,  ///< fp16 parameters and gradients, fp32 master weights and optimizer states.
  mixed_bf16,  ///< bf16 parameters and gradients, fp32 master weights and optimizer states.
};

/// Every precision, in the order lessons list them.
inline constexpr Precision kAllPrecisions[] = {Precision::fp32, Precision::bf16,
                                               Precision::mixed_bf16, Precision::mixed_fp16};

/// Parses "fp32", "bf16", "mixed-fp16", "mixed-bf16".
/// \param name the text. \return the precision.
/// \throws vramlab::UsageError "unknown precision 'NAME' (expected one of: ...)".
Precision parse_precision(std::string_view name);
/// \param precision a precision. \return its name as parse_precision accepts it.
std::string_view precision_name(Precision precision);
/// \return every name parse_precision accepts, in listing order.
std::vector<std::string> precision_names();
/// \param precision a precision. \return true for mixed_fp16 and mixed_bf16.
bool is_mixed(Precision precision);

/// The kinds of loss scaling (`--loss-scale`).
enum class LossScaleKind {
  dynamic,  ///< GradScaler: start at 2^16, back off on inf/NaN, grow after clean steps
  fixed,    ///< one scale for the whole run (DeepSpeed's "loss_scale": S); inf steps are skipped
  none,     ///< no scaling and no check (what fp16 without a scaler does)
};

/// A parsed `--loss-scale`.
struct LossScaleSpec {
  LossScaleKind kind = LossScaleKind::none;  ///< which kind
  double value = 1.0;                        ///< the scale of `static:S`

  bool operator==(const LossScaleSpec&) const = default;  ///< field by field
};

/// Parses "dynamic", "static:S" (S a finite number > 0, e.g. 1024 or 2^10 written as 1024) or
/// "none". \throws vramlab::UsageError naming the text otherwise.
LossScaleSpec parse_loss_scale(std::string_view text);
/// \return the spelling parse_loss_scale accepts, e.g. "static:1024".
std::string loss_scale_name(const LossScaleSpec& spec);

/// The optimizer (`--optimizer`).
enum class Optimizer {
  sgd,           ///< plain SGD: no state.
  sgd_momentum,  ///< SGD with momentum: one state.
  adamw,         ///< AdamW: two states (m, v).
  adamw_8bit,    ///< bitsandbytes block-wise 8-bit AdamW: two 8-bit states + fp32 absmax per block.
  lion,          ///< Lion: one state (momentum).
  adam_mini,     ///< Adam-mini: full m, one v per parameter block.
  adafactor,     ///< Adafactor (torch.optim.Adafactor): factored second moment, no m.
};

/// Parses "sgd", "sgd-momentum", "adamw", "adamw-8bit", "lion", "adam-mini", "adafactor".
/// \throws vramlab::UsageError "unknown optimizer 'NAME' (expected one of: ...)".
Optimizer parse_optimizer(std::string_view name);
/// \param optimizer an optimizer. \return its name as parse_optimizer accepts it.
std::string_view optimizer_name(Optimizer optimizer);
/// \return every name parse_optimizer accepts, in listing order.
std::vector<std::string> optimizer_names();

/// The settings of 8-bit AdamW that decide which tensors are quantized and in how many blocks
/// (`--block-size`, `--min-8bit-size`, `--fp32-embeddings`), bitsandbytes' defaults.
struct EightBitOptions {
  int64_t block_size = 256;      ///< B: bitsandbytes' optimizers since PR #1365 (2048 before).
  int64_t min_8bit_size = 4096;  ///< smaller tensors keep fp32 states (bitsandbytes' default).
  bool fp32_embeddings = false;  ///< the embedding tables keep fp32 states (stable embedding).

  /// \throws vramlab::UsageError naming the value: block_size < 1 or min_8bit_size < 0.
  void validate() const;

  bool operator==(const EightBitOptions&) const = default;  ///< field by field
};

/// How the attention core computes causal softmax(q·kᵀ/√D)·v (`--attention`), a runtime choice
/// rather than an architectural one (the weights and the outputs are the same), like PyTorch's
/// scaled_dot_product_attention backends.
enum class AttentionKind {
  naive,  ///< materialises the (B, H, T, T) probabilities and saves them for backward.
  flash,  ///< FlashAttention (Dao et al. 2022): tiles, saves only the (B, H, T) log-sum-exp.
};

/// \param attention an attention kind. \return "naive" or "flash".
std::string_view attention_kind_name(AttentionKind attention);
/// \param text "naive" or "flash". \return the kind.
/// \throws vramlab::UsageError "unknown attention 'TEXT' (expected naive or flash)".
AttentionKind parse_attention_kind(std::string_view text);
/// \return every name parse_attention_kind accepts.
std::vector<std::string> attention_kind_names();

/// How kept activations are stored between a layer's forward and its backward
/// (`--compress-activations`).
enum class ActivationCompression : unsigned char {
  none,        ///< fp32 as computed
  int8,        ///< int8 with one absmax scale per tensor (scale = max|x| / 127)
  int8_block,  ///< int8 with one absmax scale per block (recompute::kInt8ActivationBlock)
};

/// \return "none", "int8" or "int8-block". \param compression the mode.
std::string_view compression_name(ActivationCompression compression);
/// \param text "none", "int8" or "int8-block". \return the mode.
/// \throws vramlab::UsageError naming \p text and the choices.
ActivationCompression parse_compression(std::string_view text);
/// \return every name parse_compression accepts.
std::vector<std::string> compression_names();

/// ZeRO's stages (Rajbhandari et al. 2020), stage 0 being plain data parallelism (DDP) (`--zero`).
enum class ZeroStage : int64_t {
  ddp = 0,               ///< replicated model states, gradients all-reduced
  optimizer_states = 1,  ///< P_os: optimizer states (master weights included) sharded
  gradients = 2,         ///< P_os+g: gradients reduce-scattered as the backward goes, sharded
  parameters = 3,        ///< P_os+g+p: parameters sharded too, gathered per unit around use
};

/// \param stage 0 to 3. \return the stage. \throws vramlab::UsageError naming the value.
ZeroStage zero_stage_from_int(int64_t stage);
/// \return "ddp", "zero1", "zero2" or "zero3".
std::string_view zero_stage_name(ZeroStage stage);
/// \param text "ddp", "zero1", "zero2" or "zero3". \return the stage.
/// \throws vramlab::UsageError naming \p text and the choices.
ZeroStage parse_zero_stage_name(std::string_view text);

}  // namespace vramlab::plan
