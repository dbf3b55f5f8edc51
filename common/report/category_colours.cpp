// Memory-category colours (PyTorch profiler's) and a neutral series palette.
#include "common/report/category_colours.h"

#include <array>
#include <cctype>

namespace vramlab::report {

std::string category_colour(std::string_view category) {
  std::string lower;
  lower.reserve(category.size());
  for (const char c : category)
    lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "parameter") return "darkgreen";
  if (lower == "optimizer_state") return "goldenrod";
  if (lower == "input") return "black";
  if (lower == "temporary") return "mediumpurple";
  if (lower == "activation") return "red";
  if (lower == "gradient") return "mediumblue";
  if (lower == "autograd_detail") return "royalblue";
  return "grey";
}

const std::vector<std::string>& category_order() {
  static const std::vector<std::string> kOrder = {
      "parameter",  "optimizer_state", "input",           "temporary",
      "activation", "gradient",        "autograd_detail", "other"};
  return kOrder;
}

std::string series_colour(size_t index) {
  // Colour-blind-friendly (Okabe-Ito) palette.
  static constexpr std::array<const char*, 8> kPalette = {
      "#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"};
  return kPalette[index % kPalette.size()];
}

}  // namespace vramlab::report
