// Finding the function definitions of a C++ file with a small scanner (see function_bodies.h):
// enough for the workbook's exercise files, not a C++ parser.
#include "tools/vramlab/commands/function_bodies.h"

#include <cctype>

namespace vramlab::cli {

namespace {

// The index just past a comment or literal starting at \p i, or \p i when none starts there.
size_t skip_comment_or_literal(const std::string& s, size_t i) {
  if (s.compare(i, 2, "//") == 0) {
    const size_t end = s.find('\n', i);
    return end == std::string::npos ? s.size() : end;
  }
  if (s.compare(i, 2, "/*") == 0) {
    const size_t end = s.find("*/", i + 2);
    return end == std::string::npos ? s.size() : end + 2;
  }
  if (s.compare(i, 2, "R\"") == 0) {  // raw string R"delim( ... )delim"
    const size_t open = s.find('(', i + 2);
    if (open == std::string::npos) return s.size();
    std::string close(1, ')');
    close.append(s, i + 2, open - i - 2);
    close.push_back('"');
    const size_t end = s.find(close, open);
    return end == std::string::npos ? s.size() : end + close.size();
  }
  if (s[i] == '"' || s[i] == '\'') {
    // A digit separator (1'000) is not a character literal.
    if (s[i] == '\'' && i > 0 && std::isxdigit(static_cast<unsigned char>(s[i - 1]))) return i + 1;
    for (size_t j = i + 1; j < s.size(); ++j) {
      if (s[j] == '\\') {
        ++j;
      } else if (s[j] == s[i] || s[j] == '\n') {
        return j + 1;
      }
    }
    return s.size();
  }
  return i;
}

bool at_line_start(const std::string& s, size_t i) {
  while (i > 0 && (s[i - 1] == ' ' || s[i - 1] == '\t')) --i;
  return i == 0 || s[i - 1] == '\n';
}

std::string collapse_spaces(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

bool starts_with_word(const std::string& text, const std::string& word) {
  return text.rfind(word, 0) == 0 && (text.size() == word.size() ||
                                      !std::isalnum(static_cast<unsigned char>(text[word.size()])));
}

// The name before the first top-level '(' of a signature, or "" when it has none: then it is not
// a function (a brace initializer, a class, an enum).
std::string function_name(const std::string& signature) {
  int angle = 0;
  for (size_t i = 0; i < signature.size(); ++i) {
    const char c = signature[i];
    if (c == '=' && angle == 0) return "";  // an initializer: x = {...}, or a lambda
    if (c == '<') ++angle;
    if (c == '>' && angle > 0) --angle;
    if (c != '(' || angle != 0) continue;
    size_t end = i;
    while (end > 0 && signature[end - 1] == ' ') --end;
    size_t start = end;
    while (start > 0 && (std::isalnum(static_cast<unsigned char>(signature[start - 1])) ||
                         signature[start - 1] == '_' || signature[start - 1] == ':' ||
                         signature[start - 1] == '~'))
      --start;
    return signature.substr(start, end - start);
  }
  return "";
}

}  // namespace

std::vector<FunctionDefinition> function_definitions(const std::string& source) {
  std::vector<FunctionDefinition> functions;
  std::string statement;  // the code since the last ';', '{' or '}' at namespace scope
  for (size_t i = 0; i < source.size();) {
    const size_t past = skip_comment_or_literal(source, i);
    if (past != i) {
      // A literal belongs to the statement; a comment does not.
      if (source[i] == '"' || source[i] == '\'' || source[i] == 'R')
        statement += source.substr(i, past - i);
      statement += ' ';
      i = past;
      continue;
    }
    const char c = source[i];
    if (c == '#' && at_line_start(source, i)) {  // a preprocessor line (continued by '\')
      size_t end = i;
      while ((end = source.find('\n', end)) != std::string::npos && end > 0 &&
             source[end - 1] == '\\')
        ++end;
      i = end == std::string::npos ? source.size() : end;
      continue;
    }
    if (c == ';' || c == '}') {
      statement.clear();
      ++i;
      continue;
    }
    if (c != '{') {
      statement += c;
      ++i;
      continue;
    }
    const std::string signature = collapse_spaces(statement);
    statement.clear();
    if (starts_with_word(signature, "namespace") || starts_with_word(signature, "extern")) {
      ++i;  // enter: its functions are at namespace scope too
      continue;
    }
    // Any other block is skipped whole; a function's body is kept.
    size_t depth = 0, j = i;
    for (; j < source.size(); ++j) {
      const size_t skip = skip_comment_or_literal(source, j);
      if (skip != j) {
        j = skip - 1;
        continue;
      }
      if (source[j] == '{') ++depth;
      if (source[j] == '}' && --depth == 0) break;
    }
    const std::string name = function_name(signature);
    const bool type = starts_with_word(signature, "class") ||
                      starts_with_word(signature, "struct") ||
                      starts_with_word(signature, "enum") || starts_with_word(signature, "union");
    if (!name.empty() && !type && j < source.size())
      functions.push_back({name, signature, source.substr(i + 1, j - i - 1)});
    i = j + 1;
  }
  return functions;
}

}  // namespace vramlab::cli
