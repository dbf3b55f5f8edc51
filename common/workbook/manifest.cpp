// Lesson manifests (see manifest.h and exercises/README.md).
#include "common/workbook/manifest.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iterator>
#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/platform/errors.h"
#include "common/platform/printable.h"

namespace vramlab::workbook {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string text_at(const json& object, const char* key, const std::string& where) {
  if (!object.contains(key) || !object.at(key).is_string())
    throw UsageError(where + ": \"" + key + "\" must be a string");
  return object.at(key).get<std::string>();
}

// \p key's string, or \p fallback when the key is absent; any other value is refused by name.
std::string optional_text_at(const json& object, const char* key, const char* fallback,
                             const std::string& where) {
  return object.contains(key) ? text_at(object, key, where) : std::string(fallback);
}

std::vector<std::string> texts_at(const json& object, const char* key, const std::string& where) {
  std::vector<std::string> texts;
  if (!object.contains(key)) return texts;
  if (!object.at(key).is_array()) throw UsageError(where + ": \"" + key + "\" must be a list");
  for (const auto& item : object.at(key)) {
    if (!item.is_string()) throw UsageError(where + ": \"" + key + "\" must list strings");
    texts.push_back(item.get<std::string>());
  }
  return texts;
}

// A file's text, or nothing when it cannot be read (verify names a missing file).
std::optional<std::string> text_of(const fs::path& file) {
  std::ifstream in(file);
  if (!in || !fs::is_regular_file(file)) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  for (size_t start = 0; start < text.size();) {
    const size_t end = std::min(text.find('\n', start), text.size());
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string joined_ids(const std::vector<std::string>& ids) {
  std::string text;
  for (const auto& id : ids) text += (text.empty() ? "" : ", ") + id;
  return text.empty() ? "none" : text;
}

}  // namespace

std::vector<std::string> parse_hints_markdown(std::string_view text, const std::string& where) {
  std::vector<std::string> hints;
  std::vector<std::string> paragraphs;  // of the section being read
  bool blank_before = false;
  const auto finish = [&] {
    if (hints.empty()) return;
    std::string joined;
    for (const auto& paragraph : paragraphs) joined += (joined.empty() ? "" : "\n\n") + paragraph;
    hints.back() = joined;
    paragraphs.clear();
  };
  for (const std::string_view line : lines_of(text)) {
    if (line.starts_with("## ")) {
      finish();
      const std::string expected = "## Hint " + std::to_string(hints.size() + 1);
      if (line != expected)
        throw UsageError(where + ": the heading '" + platform::printable(std::string(line)) +
                         "' should be '" + expected + "'");
      hints.emplace_back();
      blank_before = true;
      continue;
    }
    if (line.starts_with("# ")) continue;  // the page's title
    if (line.find_first_not_of(' ') == std::string_view::npos) {
      blank_before = true;
      continue;
    }
    if (hints.empty()) continue;  // the introduction, before the first hint
    // Markdown's escapes (\* \< \\) undone outside `code spans`.
    std::string plain;
    bool in_code = false;
    for (size_t i = 0; i < line.size(); ++i) {
      if (line[i] == '`') in_code = !in_code;
      if (!in_code && line[i] == '\\' && i + 1 < line.size() &&
          std::ispunct(static_cast<unsigned char>(line[i + 1])))
        ++i;
      plain += line[i];
    }
    if (blank_before || paragraphs.empty())
      paragraphs.push_back(plain);
    else
      paragraphs.back() += " " + plain;
    blank_before = false;
  }
  finish();
  return hints;
}

bool WrongVariant::is_patch() const {
  return file.ends_with(".patch");
}

WrongVariantHeader parse_wrong_variant_header(std::string_view text, bool is_patch) {
  WrongVariantHeader header;
  std::string* continued = nullptr;  // the field a line starting with a space continues
  for (std::string_view line : lines_of(text)) {
    if (is_patch) {
      if (line.starts_with("--- ")) break;
    } else {
      if (!line.starts_with("//")) break;
      line.remove_prefix(line.starts_with("// ") ? 3 : 2);
    }
    const auto field = [&](std::string_view key, std::string& into) {
      if (!line.starts_with(key)) return false;
      line.remove_prefix(key.size());
      into = std::string(line.substr(std::min(line.find_first_not_of(' '), line.size())));
      continued = &into;
      return true;
    };
    if (field("Mistake:", header.mistake) || field("Caught by:", header.caught_by)) continue;
    if (continued != nullptr && line.starts_with(' ') &&
        line.find_first_not_of(' ') != std::string_view::npos) {
      *continued += " " + std::string(line.substr(line.find_first_not_of(' ')));
    } else {
      continued = nullptr;
    }
  }
  return header;
}

bool Exercise::needs_gpu() const {
  return std::find(requires_list.begin(), requires_list.end(), "cuda") != requires_list.end();
}

std::string Exercise::target_stem() const {
  std::string stem = "ex_" + id;
  std::replace(stem.begin(), stem.end(), '.', '_');
  return stem;
}

std::string Exercise::mine_test_target() const {
  return "test_" + target_stem() + "_mine";
}

std::string Exercise::reference_test_target() const {
  return "test_" + target_stem() + "_ref";
}

std::string Exercise::wrong_test_target(std::string_view variant) const {
  return "test_" + target_stem() + "_wrong_" + std::string(variant);
}

Lesson parse_lesson_manifest(const json& manifest, const std::string& dir) {
  const std::string where = dir + "/manifest.json";
  if (!manifest.is_object()) throw UsageError(where + ": not a JSON object");
  Lesson lesson;
  lesson.dir = dir;
  lesson.id = text_at(manifest, "id", where);
  lesson.title = optional_text_at(manifest, "title", "", where);
  lesson.requires_list = texts_at(manifest, "requires", where);
  lesson.binary = optional_text_at(manifest, "binary", "", where);
  lesson.exercises_page = optional_text_at(manifest, "exercises_page", "", where);
  if (manifest.contains("exercises") && !manifest.at("exercises").is_array())
    throw UsageError(where + ": \"exercises\" must be a list");
  for (const auto& item : manifest.value("exercises", json::array())) {
    Exercise ex;
    ex.id = text_at(item, "id", where);
    const std::string ex_where = where + " exercise " + ex.id;
    if (ex.id.rfind(lesson.id + ".", 0) != 0)
      throw UsageError(ex_where + ": the id must start with the lesson id '" + lesson.id + ".'");
    ex.lesson_id = lesson.id;
    ex.title = text_at(item, "title", ex_where);
    ex.stub = text_at(item, "stub", ex_where);
    ex.reference = text_at(item, "reference", ex_where);
    ex.api = text_at(item, "api", ex_where);
    ex.tests = texts_at(item, "tests", ex_where);
    ex.test_filter = optional_text_at(item, "test_filter", "*", ex_where);
    ex.requires_list = texts_at(item, "requires", ex_where);
    if (item.contains("hints")) ex.hints_file = text_at(item, "hints", ex_where);
    for (const auto& w : item.value("wrong", json::array())) {
      WrongVariant variant;
      variant.name = text_at(w, "name", ex_where);
      variant.file = text_at(w, "file", ex_where);
      ex.wrong.push_back(std::move(variant));
    }
    for (const auto& s : item.value("snippets", json::array()))
      ex.snippets.push_back({text_at(s, "file", ex_where), text_at(s, "name", ex_where)});
    lesson.exercises.push_back(std::move(ex));
  }
  return lesson;
}

Workbook load_workbook(const fs::path& repo_root) {
  Workbook workbook;
  const fs::path root = repo_root / "lessons";
  if (!fs::is_directory(root)) return workbook;
  std::vector<fs::path> dirs;
  for (const auto& entry : fs::directory_iterator(root))
    if (entry.is_directory() && fs::exists(entry.path() / "manifest.json"))
      dirs.push_back(entry.path());
  std::sort(dirs.begin(), dirs.end());
  for (const auto& dir : dirs) {
    const fs::path file = dir / "manifest.json";
    std::ifstream in(file);
    const json manifest = json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (manifest.is_discarded()) throw UsageError(file.string() + " is not valid JSON");
    workbook.lessons.push_back(
        parse_lesson_manifest(manifest, "lessons/" + dir.filename().string()));
    for (auto& ex : workbook.lessons.back().exercises) {
      if (const auto text = text_of(repo_root / ex.hints_file); text && !ex.hints_file.empty())
        ex.hints = parse_hints_markdown(*text, ex.hints_file);
      for (auto& variant : ex.wrong) {
        const auto text = text_of(repo_root / variant.file);
        if (!text) continue;
        auto header = parse_wrong_variant_header(*text, variant.is_patch());
        variant.mistake = std::move(header.mistake);
        variant.caught_by = std::move(header.caught_by);
      }
    }
  }
  return workbook;
}

const Exercise& Workbook::exercise(std::string_view id) const {
  std::vector<std::string> known;
  for (const auto& lesson : lessons)
    for (const auto& ex : lesson.exercises) {
      if (ex.id == id) return ex;
      known.push_back(ex.id);
    }
  throw UsageError("unknown exercise '" + std::string(id) + "' (known: " + joined_ids(known) + ")");
}

const Lesson& Workbook::lesson(std::string_view id) const {
  std::vector<std::string> known;
  for (const auto& lesson : lessons) {
    const std::string folder = lesson.dir.substr(lesson.dir.find('/') + 1);
    const bool short_match =
        id.size() == 1 && lesson.id.size() == 2 && lesson.id[0] == '0' && lesson.id[1] == id[0];
    if (lesson.id == id || folder == id || short_match) return lesson;
    known.push_back(lesson.id);
  }
  throw UsageError("unknown lesson '" + std::string(id) + "' (known: " + joined_ids(known) + ")");
}

std::vector<const Exercise*> Workbook::all_exercises() const {
  std::vector<const Exercise*> all;
  for (const auto& lesson : lessons)
    for (const auto& ex : lesson.exercises) all.push_back(&ex);
  return all;
}

std::vector<const Exercise*> Workbook::select(std::string_view selector) const {
  if (selector.find('.') != std::string_view::npos) return {&exercise(selector)};
  std::vector<const Exercise*> chosen;
  for (const auto& ex : lesson(selector).exercises) chosen.push_back(&ex);
  return chosen;
}

}  // namespace vramlab::workbook
