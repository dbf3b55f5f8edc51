// The main of a fuzz target in the normal (g++) build: feeds every file named on the command line,
// or found in a directory named there, to LLVMFuzzerTestOneInput once, so the suite checks the
// target's contract (fuzz_contract.h) on its seed corpus and on every input the fuzz stage found
// (tests/fuzz/CMakeLists.txt). Fuzzing itself needs clang's libFuzzer: tools/fuzz.sh.
//   build/tests/bin/fuzz_replay_trace tests/fuzz/corpus/trace
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

// Sorted, so a failing run names the same input first every time.
std::vector<fs::path> inputs_of(const fs::path& path) {
  std::vector<fs::path> files;
  if (fs::is_directory(path)) {
    for (const fs::directory_entry& entry : fs::directory_iterator(path))
      if (entry.is_regular_file()) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
  } else {
    files.push_back(path);
  }
  return files;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  std::size_t replayed = 0;
  for (int a = 1; a < argc; ++a) {
    std::error_code error;
    if (!fs::exists(argv[a], error)) {
      std::fprintf(stderr, "%s: no such file or directory: %s\n", argv[0], argv[a]);
      return 2;
    }
    for (const fs::path& file : inputs_of(argv[a])) {
      std::ifstream in(file, std::ios::binary);
      const std::vector<char> bytes{std::istreambuf_iterator<char>(in),
                                    std::istreambuf_iterator<char>()};
      if (!in.eof() && in.fail()) {
        std::fprintf(stderr, "%s: cannot read %s\n", argv[0], file.c_str());
        return 2;
      }
      // A broken contract aborts inside the call; name the input first.
      std::fprintf(stderr, "replaying %s (%zu bytes)\n", file.c_str(), bytes.size());
      LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  }
  std::printf("replayed %zu inputs\n", replayed);
  return replayed > 0 ? 0 : 1;
}
