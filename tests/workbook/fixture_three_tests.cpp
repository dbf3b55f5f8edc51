// A real GoogleTest binary for test_gtest_report: its second test fails, and its third writes the
// file named by VRAMLAB_FIXTURE_RAN, so a test can see whether the run went past the failure.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>

TEST(Fixture, Passes) {
  EXPECT_EQ(1 + 1, 2);
}

TEST(Fixture, Fails) {
  EXPECT_EQ(1 + 1, 3) << "the failure a wrong variant shows";
}

TEST(Fixture, RunsAfterTheFailure) {
  if (const char* path = std::getenv("VRAMLAB_FIXTURE_RAN")) std::ofstream(path) << "ran\n";
}
