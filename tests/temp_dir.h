#pragma once
// A fresh directory under the test's temporary directory (GoogleTest's TempDir), removed with
// everything in it: where the tests of the NVMe tier and of what uses it put their files.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <filesystem>
#include <iterator>
#include <string>

namespace vramlab::test_build {

struct TempDir {
  TempDir() {
    std::string pattern = (std::filesystem::path(testing::TempDir()) / "vramlab-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp " << pattern;
    path = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// \return the entries in the directory now.
  [[nodiscard]] int64_t files() const {
    return std::distance(std::filesystem::directory_iterator(path),
                         std::filesystem::directory_iterator());
  }
  std::string path;
};

}  // namespace vramlab::test_build
