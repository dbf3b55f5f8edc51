// quantize_blockwise on a raw file, for bench/compare_bitsandbytes.py: reads little-endian f32
// values, quantises them with the dynamic map (kernels/cpu/optimizer_8bit.h), and writes the
// codes (one u8 per value) and the absmax (one little-endian f32 per block).
//
//   build/bin/quantize_blockwise_tool IN.f32 BLOCK signed|unsigned OUT_CODES.u8 OUT_ABSMAX.f32
//   build/bin/quantize_blockwise_tool --map signed|unsigned OUT_MAP.f32     the 256 codes
#include <cstdint>
#include <cstdio>
#include <exception>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "common/platform/errors.h"
#include "kernels/cpu/optimizer_8bit.h"

namespace {

using vramlab::UsageError;

bool parse_signed(const std::string& text) {
  if (text == "signed") return true;
  if (text == "unsigned") return false;
  throw UsageError("map must be 'signed' or 'unsigned', got '" + text + "'");
}

void write(const std::string& path, const void* data, size_t bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
  if (!out) throw UsageError("cannot write '" + path + "'");
}

int run(int argc, char** argv) {
  using namespace vramlab::kernels::cpu;
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 3 && args[0] == "--map") {
    const auto& code = dynamic_quantization_map(parse_signed(args[1]));
    write(args[2], code.data(), sizeof(float) * code.size());
    return 0;
  }
  if (args.size() != 5)
    throw UsageError(
        "usage: quantize_blockwise_tool IN.f32 BLOCK signed|unsigned CODES.u8 ABSMAX.f32, or "
        "--map signed|unsigned MAP.f32");
  std::ifstream in(args[0], std::ios::binary);
  if (!in) throw UsageError("cannot read '" + args[0] + "'");
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  if (bytes.size() % sizeof(float) != 0)
    throw UsageError("'" + args[0] + "' holds " + std::to_string(bytes.size()) +
                     " bytes, not a whole number of f32 values");
  const int64_t n = static_cast<int64_t>(bytes.size() / sizeof(float));
  std::vector<float> x(static_cast<size_t>(n));  // (n)
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(x.data()));
  size_t used = 0;
  int64_t block = 0;
  try {
    block = std::stoll(args[1], &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != args[1].size() || block < 1)
    throw UsageError("block must be a positive integer, got '" + args[1] + "'");
  const auto& code = dynamic_quantization_map(parse_signed(args[2]));
  std::vector<uint8_t> q(static_cast<size_t>(n));                                      // (n)
  std::vector<float> absmax(static_cast<size_t>(quantization_block_count(n, block)));  // (blocks)
  quantize_blockwise(q.data(), absmax.data(), x.data(), n, block, code);
  write(args[3], q.data(), q.size());
  write(args[4], absmax.data(), sizeof(float) * absmax.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const UsageError& error) {
    std::fprintf(stderr, "quantize_blockwise_tool: error: %s\n", error.what());
    return vramlab::kExitUsage;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "quantize_blockwise_tool: %s\n", error.what());
    return vramlab::kExitFailure;
  }
}
