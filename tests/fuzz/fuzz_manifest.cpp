// libFuzzer target: a lesson manifest (lessons/NN-name/manifest.json,
// common/workbook/manifest.h). Contract: text that is not JSON is refused by load_workbook()'s
// check (nlohmann's parser, not fuzzed here); JSON is decoded into a Lesson or refused with a
// UsageError naming the key, never a nlohmann::json exception; a decoded lesson's exercises give
// their target names and the workbook finds each by id.
//   build-fuzz/bin/fuzz_manifest tests/fuzz/corpus/manifest
#include <cstddef>
#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/workbook/manifest.h"
#include "tests/fuzz/fuzz_contract.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace vramlab;
  const nlohmann::json manifest = nlohmann::json::parse(data, data + size, nullptr,
                                                        /*allow_exceptions=*/false);
  if (manifest.is_discarded()) return 0;
  fuzz::expect_parsed_or_usage_error([&] {
    workbook::Workbook book;
    book.lessons.push_back(workbook::parse_lesson_manifest(manifest, "lessons/99-fuzz"));
    for (const workbook::Exercise* exercise : book.all_exercises()) {
      if (book.exercise(exercise->id).id != exercise->id)
        fuzz::contract_broken("exercise", "not found by its id");
      (void)exercise->needs_gpu();
      (void)exercise->mine_test_target();
      (void)exercise->reference_test_target();
      for (const auto& wrong : exercise->wrong) (void)exercise->wrong_test_target(wrong.name);
    }
    (void)book.select(book.lessons.front().id);
  });
  return 0;
}
