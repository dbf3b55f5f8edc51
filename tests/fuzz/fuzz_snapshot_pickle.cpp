// libFuzzer target: a snapshot pickle handed to `vramlab profile` (snapshot::decode_pickle,
// common/snapshot/snapshot_pickle.h), and its export back (encode_pickle). Contract: decode_pickle
// returns plain data or a UsageError (with the byte offset), within the documented bounds; what it
// returns exports with encode_pickle and re-imports as the same data.
//   build-fuzz/bin/fuzz_snapshot_pickle tests/fuzz/corpus/snapshot_pickle
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/snapshot/snapshot_pickle.h"
#include "tests/fuzz/fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vramlab;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  nlohmann::json imported;
  try {
    imported = snapshot::decode_pickle(bytes);
  } catch (const UsageError& error) {
    fuzz::check_usage_error(error);
    return 0;
  } catch (const std::exception& error) {
    fuzz::contract_broken(typeid(error).name(), error.what());
  }
  try {
    const std::string exported = snapshot::encode_pickle(imported);
    const nlohmann::json again = snapshot::decode_pickle(exported);
    // dump() compares NaN floats by their text ("null") rather than NaN != NaN.
    if (again.dump() != imported.dump())
      fuzz::contract_broken("export and re-import", again.dump() + " != " + imported.dump());
  } catch (const std::exception& error) {
    fuzz::contract_broken(typeid(error).name(), std::string("re-import: ") + error.what());
  }
  return 0;
}
