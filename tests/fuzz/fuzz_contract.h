/// \file
/// \brief The contract every fuzz target checks: an input a user can hand vramlab either parses or
/// is refused with a vramlab::UsageError whose message names what was wrong. Anything else (another
/// exception type, an empty message, a crash, a leak, undefined behaviour, a hang) is a finding:
/// the target aborts with the exception's type and message, and libFuzzer saves the input.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <typeinfo>

#include "common/platform/errors.h"

namespace vramlab::fuzz {

/// Prints why the contract broke and aborts, so libFuzzer reports the input as a crash.
[[noreturn]] inline void contract_broken(const char* what, const std::string& detail) {
  std::fprintf(stderr, "vramlab fuzz contract broken: %s: %s\n", what, detail.c_str());
  std::abort();
}

/// A UsageError must say what was wrong (an empty message tells the user nothing), all of it:
/// what() is a C string, so a raw NUL would cut it short, and a raw escape sequence would drive the
/// terminal. UsageError shows control characters as `\xNN`; none but newline may remain.
/// \param error the refusal.
inline void check_usage_error(const UsageError& error) {
  const std::string_view message = error.what();
  if (message.empty()) contract_broken("UsageError", "empty message");
  for (const char c : message) {
    const auto byte = static_cast<unsigned char>(c);
    if ((byte < 0x20 && c != '\n') || byte == 0x7f)
      contract_broken("UsageError with a raw control character", std::string(message));
  }
}

/// Runs \p parse: a result or a UsageError is the contract; any other exception breaks it.
template <typename Parse>
void expect_parsed_or_usage_error(Parse&& parse) {
  try {
    parse();
  } catch (const UsageError& error) {
    check_usage_error(error);
  } catch (const std::exception& error) {
    contract_broken(typeid(error).name(), error.what());
  } catch (...) {
    contract_broken("exception", "not derived from std::exception");
  }
}

}  // namespace vramlab::fuzz
