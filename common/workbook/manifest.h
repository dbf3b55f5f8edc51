/// \file
/// \brief Lesson manifests (lessons/NN-name/manifest.json): the lesson, its binary and its
/// exercises in order, with their files, tests, requirements, hints, known-wrong variants and doc
/// snippets. CMake reads the same file (exercises/workbook.cmake); exercises/README.md documents
/// every key.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace vramlab::workbook {

/// A known-wrong implementation kept beside a reference: verify checks that the test meant to
/// catch it fails. Its file is a patch against the reference (solutions/NN/wrong/X.patch, applied
/// when it builds) or, where it rewrites most of the function, a whole source file. The file's
/// header says the mistake and the test: in a patch the lines before the diff, in a source file
/// its leading comment:
///
///     Mistake: counts Adam as one state
///     Caught by: BytesPerParam.SomeTest
struct WrongVariant {
  std::string name;       ///< short name, part of the target name, e.g. "no_master_copy".
  std::string file;       ///< path relative to the repository root (.patch or a source file).
  std::string mistake;    ///< the mistake it makes, in words (from the file's header).
  std::string caught_by;  ///< the test that must fail for it, "Suite.Name" (from the header).
  /// True when the file is a patch against the reference.
  [[nodiscard]] bool is_patch() const;
};

/// The header of a wrong variant's file.
struct WrongVariantHeader {
  std::string mistake;    ///< "" when the header has no "Mistake:" line.
  std::string caught_by;  ///< "" when the header has no "Caught by:" line.
};

/// Reads the "Mistake:" (continued on lines that start with a space) and "Caught by:" lines of a
/// wrong variant's header: the lines before "--- " in a patch, the leading `//` comment of a
/// source file. \p text is the file's text.
WrongVariantHeader parse_wrong_variant_header(std::string_view text, bool is_patch);

/// A documentation snippet: `//! [name]` markers in a compiled source whose lines the exercises
/// page copies into a code block (tests/docs/check_pages.py keeps the copy equal to the source).
struct Snippet {
  std::string file;  ///< path relative to the repository root.
  std::string name;  ///< the marker name.
};

/// One exercise of a lesson.
struct Exercise {
  std::string id;                          ///< e.g. "01.1" (lesson id, dot, number).
  std::string lesson_id;                   ///< e.g. "01".
  std::string title;                       ///< one line.
  std::string stub;                        ///< the learner's file (exercises/…).
  std::string reference;                   ///< the reference solution (solutions/…).
  std::string api;                         ///< the header shared by stub and reference.
  std::vector<std::string> tests;          ///< test sources (at least one).
  std::string test_filter = "*";           ///< GoogleTest filter selecting this exercise's tests.
  std::vector<std::string> requires_list;  ///< "cpu" or "cuda".
  /// The hints' Markdown file (exercises/NN-name/hints/STUB.md): a "## Hint N" section per
  /// level. It sits beside the stub, not on the docs site: the last hint nearly gives the answer.
  std::string hints_file;
  std::vector<std::string> hints;          ///< three levels, gentle to explicit (from hints_file).
  std::vector<WrongVariant> wrong;         ///< known-wrong variants.
  std::vector<Snippet> snippets;           ///< doc snippets that must exist.
  /// True when requires_list names "cuda".
  [[nodiscard]] bool needs_gpu() const;
  /// \return the target stem, "ex_01_1" for "01.1".
  [[nodiscard]] std::string target_stem() const;
  /// \return the test target linking the learner's code, "test_ex_01_1_mine".
  [[nodiscard]] std::string mine_test_target() const;
  /// \return the test target linking the reference, "test_ex_01_1_ref".
  [[nodiscard]] std::string reference_test_target() const;
  /// \return "test_ex_01_1_wrong_<variant>".
  [[nodiscard]] std::string wrong_test_target(std::string_view variant) const;
};

/// One lesson: its manifest.
struct Lesson {
  std::string id;                          ///< e.g. "01".
  std::string title;                       ///< e.g. "Memory breakdown".
  std::string dir;                         ///< e.g. "lessons/01-memory-breakdown".
  std::vector<std::string> requires_list;  ///< "cpu", "cuda", "mpi".
  std::string binary;                      ///< the lesson binary's target ("" if none).
  std::string exercises_page;              ///< the exercises' docs page ("" if none).
  std::vector<Exercise> exercises;         ///< in order.
};

/// Every lesson of a checkout, in order of their folders.
struct Workbook {
  std::vector<Lesson> lessons;  ///< sorted by folder name.
  /// \param id e.g. "01.1".
  /// \throws vramlab::UsageError "unknown exercise '01.9' (known: 01.1, 01.2, 01.3)".
  [[nodiscard]] const Exercise& exercise(std::string_view id) const;
  /// \param id e.g. "01" or "1" or "01-memory-breakdown".
  /// \throws vramlab::UsageError "unknown lesson 'ID' (known: …)".
  [[nodiscard]] const Lesson& lesson(std::string_view id) const;
  /// \return every exercise of every lesson, in order.
  [[nodiscard]] std::vector<const Exercise*> all_exercises() const;
  /// Resolves what a command was asked about: an exercise id ("01.1") or a lesson ("01").
  /// \return the exercises, in order.
  /// \throws vramlab::UsageError when it names neither.
  [[nodiscard]] std::vector<const Exercise*> select(std::string_view selector) const;
};

/// The hints of a hints file, in order: each "## Hint N" section's text (N = 1, 2, … in order),
/// its lines joined, its paragraphs separated by a blank line, Markdown's backslash escapes
/// undone outside code spans (the text is printed in a terminal). \p where names the file.
/// \throws vramlab::UsageError for a section out of order or text before the first section.
std::vector<std::string> parse_hints_markdown(std::string_view text, const std::string& where);

/// Decodes one manifest.
/// \p dir is the lesson folder relative to the repository root.
/// \throws vramlab::UsageError naming the lesson folder and the missing or malformed key.
Lesson parse_lesson_manifest(const nlohmann::json& manifest, const std::string& dir);

/// Reads every lessons/*/manifest.json under \p repo_root, each exercise's hints file and each
/// wrong variant's header (a missing file leaves them empty: verify reports the file).
/// \throws vramlab::UsageError for a manifest that does not parse (naming the file).
Workbook load_workbook(const std::filesystem::path& repo_root);

}  // namespace vramlab::workbook
