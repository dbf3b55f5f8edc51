// Test support: loads a generated HTML page in headless Chromium and reports the first JavaScript
// error. An error listener put first in <head> writes any uncaught error or unhandled promise
// rejection into an attribute of <html>, which --dump-dom prints; the page's summary cards
// (class="card") show that its script ran to the end. Chromium runs with --no-sandbox because CI
// runs as root.
#pragma once

#include <cstddef>
#include <string>

namespace vramlab::report::testing {

/// What one page load in Chromium showed.
struct BrowserRun {
  bool ran = false;     ///< chromium exited 0.
  std::string error;    ///< the first JavaScript error (HTML-escaped), empty if none.
  size_t cards = 0;     ///< elements with class="card" in the final DOM.
  std::string command;  ///< the shell command, for failure messages.
  std::string dom;      ///< the final DOM as Chromium serialised it.
};

/// \return the value of the first attribute called \p name in \p dom, with the entities HTML
/// serialisation writes (amp, quot, lt, gt, nbsp, #39) decoded; "" if there is none. Pages and
/// injected test scripts report what they drew through such attributes.
std::string dom_attribute(const std::string& dom, const std::string& name);

/// Whether `chromium` is on PATH; if not, whether CI is set (then a test must fail, not skip).
enum class ChromiumAvailability { kFound, kMissing, kMissingInCi };

/// \return whether chromium can be run.
ChromiumAvailability find_chromium();

/// In a googletest test body: skips without chromium, fails instead when CI is set.
#define VRAMLAB_REQUIRE_CHROMIUM()                                                              \
  switch (::vramlab::report::testing::find_chromium()) {                                        \
    case ::vramlab::report::testing::ChromiumAvailability::kFound:                              \
      break;                                                                                    \
    case ::vramlab::report::testing::ChromiumAvailability::kMissingInCi:                        \
      FAIL() << "chromium (Debian package chromium) is missing, and CI is set: install it";     \
    case ::vramlab::report::testing::ChromiumAvailability::kMissing:                            \
      GTEST_SKIP() << "chromium (Debian package chromium) is not installed and CI is not set; " \
                      "in CI this test fails instead of skipping";                              \
  }

/// Loads \p page in headless Chromium (timers and animation frames get 5 s of virtual time).
/// \param page the HTML page. \param directory where the page, profile, DOM and log are written.
/// \return what the final DOM showed.
BrowserRun run_in_chromium(const std::string& page, const std::string& directory);

}  // namespace vramlab::report::testing
