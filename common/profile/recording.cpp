// Names of span kinds, as the Chrome trace's "cat" and the per-op table's Kind column print them.
#include "common/profile/recording.h"

namespace vramlab::profile {

std::string_view span_kind_name(SpanKind kind) {
  switch (kind) {
    case SpanKind::phase:
      return "phase";
    case SpanKind::module:
      return "module";
    case SpanKind::kernel:
      return "kernel";
  }
  return "kernel";
}

}  // namespace vramlab::profile
