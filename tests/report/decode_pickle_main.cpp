// report_decode_pickle: decodes every FILE.pickle given with vramlab::snapshot::read_snapshot_file
// and writes the JSON beside it as FILE.decoded.json, for check_pickle_decode.py (which compares it
// with what Python pickled). Run: report_decode_pickle FILE.pickle...
#include <cstdio>
#include <exception>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "common/snapshot/snapshot_pickle.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: report_decode_pickle FILE.pickle...\n");
    return 2;
  }
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string path = argv[i];
      const nlohmann::json value = vramlab::snapshot::read_snapshot_file(path);
      std::ofstream(path.substr(0, path.size() - std::string(".pickle").size()) + ".decoded.json",
                    std::ios::binary)
          << value.dump();
    }
  } catch (const std::exception& error) {
    std::fprintf(stderr, "report_decode_pickle: %s\n", error.what());
    return 1;
  }
  return 0;
}
