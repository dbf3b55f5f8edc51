/// \file
/// \brief The colour of each memory category, as PyTorch's memory profiler draws them, shared by
/// the SVG plots and the HTML memory timeline so one category looks the same everywhere.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vramlab::report {

/// CSS colour name of a memory category, following torch.profiler's memory timeline:
/// parameter darkgreen, optimizer_state goldenrod, input black, temporary mediumpurple,
/// activation red, gradient mediumblue, autograd_detail royalblue, anything else grey.
/// \p category is case-insensitive ("parameter", "GRADIENT", ...).
std::string category_colour(std::string_view category);

/// The categories in PyTorch's drawing order (bottom of a stack first):
/// parameter, optimizer_state, input, temporary, activation, gradient, autograd_detail, other.
/// Lower case, as category_name() prints them.
const std::vector<std::string>& category_order();

/// A palette for series that are not memory categories (measured vs estimated, several runs).
/// \return a hex colour; the palette repeats, so \p index may be any value.
std::string series_colour(size_t index);

}  // namespace vramlab::report
