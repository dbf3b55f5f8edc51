// Tests of exercise 06.4 (flash attention's tile sizes, causal tile counts, working set and saved
// bytes). They run against your code (`vramlab check 06.4`) and against the reference (ctest:
// test_ex_06_4_ref).
// Expectations: the FlashAttention paper's own block sizes (M = 65536 and 98304 elements, d = 64
// and 128; N = 1024 gives T_r = 16, T_c = 4); for random M and d, the smallest B_c with
// 4·d·B_c ≥ M, found by search; the causal grid classified entry by entry (small T) or tile by
// tile from each tile's corner positions (T up to 131072); the working set as a table of named
// buffers; the extra bytes counted in double (exact below 2^53) at real sizes (T = 131072,
// H = 64, B = 8: 16 TiB of probabilities against 256 MiB of lse). Every value is exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "common/platform/errors.h"
#include "common/workbook/comparison.h"
#include "common/workbook/expect.h"
#include "lessons/06-flash-attention/api/tile_budget.h"

namespace vramlab::lesson06 {
namespace {

using workbook::Comparison;
using workbook::Unit;

std::string md(int64_t m, int64_t d) {
  return "M=" + std::to_string(m) + " d=" + std::to_string(d);
}

TEST(TileBudget, TheFlashAttentionPapersBlockSizesAndTileCounts) {
  Comparison bc("B_c (key/value tile rows)", Unit::kNumber);
  Comparison br("B_r (query tile rows)", Unit::kNumber);
  const int64_t paper[][4] = {
      {65536, 64, 256, 64}, {65536, 128, 128, 128}, {98304, 64, 384, 64}, {98304, 128, 192, 128}};
  for (const auto& [m, d, key_rows, query_rows] : paper) {
    const BlockSizes got = fa1_block_sizes(m, d);
    bc.add(md(m, d), static_cast<double>(key_rows), static_cast<double>(got.key_rows));
    br.add(md(m, d), static_cast<double>(query_rows), static_cast<double>(got.query_rows));
  }
  VRAMLAB_EXPECT_PASSES(bc);
  VRAMLAB_EXPECT_PASSES(br);
  const TileGrid grid = causal_tile_grid(1024, fa1_block_sizes(65536, 64));
  Comparison tiles("T_r and T_c at N=1024, d=64, M=65536", Unit::kNumber);
  tiles.add("T_r", 16, static_cast<double>(grid.query_tiles));
  tiles.add("T_c", 4, static_cast<double>(grid.key_tiles));
  VRAMLAB_EXPECT_PASSES(tiles);
}

TEST(TileBudget, BlockSizesForRandomBudgetsRoundUpAndCapTheQueryTileAtD) {
  std::mt19937_64 rng(641);
  Comparison bc("B_c = smallest b with 4 d b >= M", Unit::kNumber);
  Comparison br("B_r = min(B_c, d)", Unit::kNumber);
  std::uniform_int_distribution<int64_t> m_dist(1, 300000);
  const int64_t dims[] = {1, 3, 16, 64, 80, 96, 128, 256};
  for (int trial = 0; trial < 400; ++trial) {
    const int64_t d = dims[trial % 8];
    // Every fourth budget is an exact multiple of 4d, where rounding does not matter.
    int64_t m = m_dist(rng);
    if (trial % 4 == 0) m = std::max<int64_t>(1, m / (4 * d)) * 4 * d;
    int64_t b = m / (4 * d);
    while (4 * d * b < m) ++b;
    while (b > 1 && 4 * d * (b - 1) >= m) --b;
    const BlockSizes got = fa1_block_sizes(m, d);
    bc.add(md(m, d), static_cast<double>(b), static_cast<double>(got.key_rows));
    br.add(md(m, d), static_cast<double>(std::min(b, d)), static_cast<double>(got.query_rows));
  }
  VRAMLAB_EXPECT_PASSES(bc);
  VRAMLAB_EXPECT_PASSES(br);
}

// The grid from each tile's corners: visible entries exist when the tile's first key ≤ its last
// query, and every entry is visible when its last key ≤ its first query.
TileGrid grid_from_corners(int64_t T, int64_t Br, int64_t Bc) {
  TileGrid g;
  for (int64_t q0 = 0; q0 < T; q0 += Br) {
    ++g.query_tiles;
    const int64_t q1 = std::min(q0 + Br, T) - 1;
    for (int64_t k0 = 0; k0 < T; k0 += Bc) {
      const int64_t k1 = std::min(k0 + Bc, T) - 1;
      if (k0 > q1)
        ++g.skipped;
      else if (k1 <= q0)
        ++g.full;
      else
        ++g.partial;
    }
  }
  g.key_tiles = T == 0 ? 0 : (T - 1) / Bc + 1;
  return g;
}

// The grid entry by entry (small T): a tile is skipped, full or partial by what its entries are.
TileGrid grid_from_entries(int64_t T, int64_t Br, int64_t Bc) {
  TileGrid g;
  for (int64_t q0 = 0; q0 < T; q0 += Br) {
    ++g.query_tiles;
    for (int64_t k0 = 0; k0 < T; k0 += Bc) {
      int64_t visible = 0, entries = 0;
      for (int64_t t = q0; t < std::min(q0 + Br, T); ++t)
        for (int64_t u = k0; u < std::min(k0 + Bc, T); ++u) {
          ++entries;
          visible += u <= t ? 1 : 0;
        }
      if (visible == 0)
        ++g.skipped;
      else if (visible == entries)
        ++g.full;
      else
        ++g.partial;
    }
  }
  for (int64_t k0 = 0; k0 < T; k0 += Bc) ++g.key_tiles;
  return g;
}

struct GridChecks {
  Comparison query_tiles{"T_r (query tiles)", Unit::kNumber};
  Comparison key_tiles{"T_c (key/value tiles)", Unit::kNumber};
  Comparison full{"full tiles (no mask needed)", Unit::kNumber};
  Comparison partial{"partial tiles (on the diagonal, masked per entry)", Unit::kNumber};
  Comparison skipped{"skipped tiles (entirely above the diagonal)", Unit::kNumber};

  void add(const TileGrid& expected, int64_t T, int64_t Br, int64_t Bc) {
    const TileGrid got = causal_tile_grid(T, BlockSizes{Bc, Br});
    const std::string where =
        "T=" + std::to_string(T) + " B_r=" + std::to_string(Br) + " B_c=" + std::to_string(Bc);
    query_tiles.add(where, static_cast<double>(expected.query_tiles),
                    static_cast<double>(got.query_tiles));
    key_tiles.add(where, static_cast<double>(expected.key_tiles),
                  static_cast<double>(got.key_tiles));
    full.add(where, static_cast<double>(expected.full), static_cast<double>(got.full));
    partial.add(where, static_cast<double>(expected.partial), static_cast<double>(got.partial));
    skipped.add(where, static_cast<double>(expected.skipped), static_cast<double>(got.skipped));
  }
  void expect_passes() const {
    VRAMLAB_EXPECT_PASSES(query_tiles);
    VRAMLAB_EXPECT_PASSES(key_tiles);
    VRAMLAB_EXPECT_PASSES(full);
    VRAMLAB_EXPECT_PASSES(partial);
    VRAMLAB_EXPECT_PASSES(skipped);
  }
};

//! [test]
TEST(TileBudget, CausalGridCountedEntryByEntryForOddLengthsAndTiles) {
  std::mt19937_64 rng(642);
  std::uniform_int_distribution<int64_t> t_dist(0, 150), b_dist(1, 40);
  GridChecks checks;
  for (int trial = 0; trial < 300; ++trial) {
    const int64_t T = t_dist(rng), Br = b_dist(rng), Bc = b_dist(rng);
    checks.add(grid_from_entries(T, Br, Bc), T, Br, Bc);
  }
  for (const int64_t T : {1, 2, 64, 65, 127})
    for (const int64_t b : {1, 2, 64, 200}) checks.add(grid_from_entries(T, b, b), T, b, b);
  checks.expect_passes();
}
//! [test]

TEST(TileBudget, CausalGridAtLongSequencesFromTheTilesCorners) {
  GridChecks checks;
  const int64_t cases[][3] = {{131072, 64, 256},  {131072, 128, 128}, {131071, 64, 384},
                              {100003, 192, 128}, {8192, 1, 4096},    {65537, 4096, 3}};
  for (const auto& [T, Br, Bc] : cases) checks.add(grid_from_corners(T, Br, Bc), T, Br, Bc);
  checks.expect_passes();
}

TEST(TileBudget, WorkingSetOfOneTileStepIsTheSumOfItsBuffers) {
  std::mt19937_64 rng(643);
  std::uniform_int_distribution<int64_t> b_dist(1, 512), d_dist(1, 256);
  Comparison bytes("working set of one tile step (bytes)", Unit::kBytes);
  struct Buffer {
    const char* name;
    int64_t elements;
    int64_t bytes_per_element;
  };
  for (int trial = 0; trial < 200; ++trial) {
    const int64_t br = b_dist(rng), bc = b_dist(rng), d = d_dist(rng);
    const int64_t element_bytes = int64_t{1} << (trial % 4);  // 1, 2, 4, 8
    const std::vector<Buffer> buffers = {{"Q_i", br * d, element_bytes},
                                         {"K_j", bc * d, element_bytes},
                                         {"V_j", bc * d, element_bytes},
                                         {"O_i (f32 accumulator)", br * d, 4},
                                         {"m", br, 4},
                                         {"l", br, 4},
                                         {"S_ij (f32 scores)", br * bc, 4}};
    int64_t expected = 0;
    for (const auto& b : buffers) expected += b.elements * b.bytes_per_element;
    bytes.add(
        "B_r=" + std::to_string(br) + " B_c=" + std::to_string(bc) + " d=" + std::to_string(d) +
            " element bytes " + std::to_string(element_bytes),
        static_cast<double>(expected),
        static_cast<double>(tile_step_working_set_bytes(BlockSizes{bc, br}, d, element_bytes)));
  }
  // FlashAttention's A100 example: M = 65536, d = 64 in bf16.
  bytes.add("FA1 blocks at M=65536 d=64 bf16",
            (64 * 64 + 2 * 256 * 64) * 2.0 + (64 * 64 + 2 * 64 + 64 * 256) * 4.0,
            static_cast<double>(tile_step_working_set_bytes(fa1_block_sizes(65536, 64), 64, 2)));
  VRAMLAB_EXPECT_PASSES(bytes);
}

TEST(TileBudget, ExtraBytesNaiveAgainstFlashAtRealSizesIn64Bits) {
  std::mt19937_64 rng(644);
  Comparison naive("naive extra bytes B H T T bytes (P)", Unit::kBytes);
  Comparison flash("flash extra bytes B H T 4 (lse)", Unit::kBytes);
  auto add = [&](int64_t b, int64_t h, int64_t t, int64_t e) {
    const AttentionExtraBytes got = attention_extra_bytes(b, h, t, e);
    const std::string where = "B=" + std::to_string(b) + " H=" + std::to_string(h) +
                              " T=" + std::to_string(t) + " element bytes " + std::to_string(e);
    const double bh = static_cast<double>(b) * static_cast<double>(h);
    naive.add(where, bh * static_cast<double>(t) * static_cast<double>(t) * static_cast<double>(e),
              static_cast<double>(got.naive));
    flash.add(where, bh * static_cast<double>(t) * 4.0, static_cast<double>(got.flash));
  };
  add(8, 64, 131072, 2);  // 2^44 B = 16 TiB of probabilities, 2^28 B = 256 MiB of lse
  add(1, 32, 8192, 4);    // the seeds' "8192 x 8192 x 4 bytes = 256 MB per head" x 32 heads
  add(1, 1, 65536, 2);    // T·T = 2^32: wraps to 0 in 32 bits
  add(1, 1, 46341, 1);    // T·T just past 2^31
  add(0, 16, 4096, 2);
  add(4, 16, 0, 2);
  std::uniform_int_distribution<int64_t> small(1, 64), t_dist(1, 300000);
  for (int trial = 0; trial < 200; ++trial) add(small(rng), small(rng), t_dist(rng), 2);
  VRAMLAB_EXPECT_PASSES(naive);
  VRAMLAB_EXPECT_PASSES(flash);
}

template <typename F>
void expect_usage_error_naming(const std::string& call, const std::string& value, F f) {
  try {
    f();
    ADD_FAILURE() << call << " accepted " << value;
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find(value), std::string::npos)
        << call << ": the message should name " << value << ": " << e.what();
  }
}

TEST(TileBudget, RejectsBadInputAndByteCountsPast64BitsNamingTheValue) {
  expect_usage_error_naming("fa1_block_sizes(0, 64)", "0", [] { fa1_block_sizes(0, 64); });
  expect_usage_error_naming("fa1_block_sizes(65536, -3)", "-3", [] { fa1_block_sizes(65536, -3); });
  expect_usage_error_naming("causal_tile_grid(-5, ...)", "-5", [] {
    causal_tile_grid(-5, BlockSizes{64, 64});
  });
  expect_usage_error_naming("causal_tile_grid(100, B_c = 0)", "0", [] {
    causal_tile_grid(100, BlockSizes{0, 64});
  });
  expect_usage_error_naming("tile_step_working_set_bytes(element bytes 0)", "0", [] {
    tile_step_working_set_bytes(BlockSizes{64, 64}, 64, 0);
  });
  expect_usage_error_naming("attention_extra_bytes(B = -2)", "-2",
                            [] { attention_extra_bytes(-2, 8, 1024, 2); });
  // 1024 · 1024 · 2^31 · 2^31 · 2 = 2^83 bytes: no int64_t holds it (any message will do).
  expect_usage_error_naming("attention_extra_bytes(T = 2^31)", "",
                            [] { attention_extra_bytes(1024, 1024, int64_t{1} << 31, 2); });
}

}  // namespace
}  // namespace vramlab::lesson06
