// Headless Chromium as a JavaScript checker for generated pages (see browser_check.h).
#include "tests/report/browser_check.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>

namespace vramlab::report::testing {
namespace {

constexpr std::string_view kErrorAttribute = "data-vramlab-js-error";

// Records the first uncaught error or unhandled promise rejection on <html> (as kErrorAttribute).
constexpr std::string_view kErrorListener = R"(
<script>
window.addEventListener('error', function (e) {
  document.documentElement.setAttribute('data-vramlab-js-error',
                                        String(e.message) + ' (line ' + e.lineno + ')');
});
window.addEventListener('unhandledrejection', function (e) {
  document.documentElement.setAttribute('data-vramlab-js-error',
                                        'unhandled rejection: ' + String(e.reason));
});
</script>
)";

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

ChromiumAvailability find_chromium() {
  if (std::system("chromium --version > /dev/null 2>&1") == 0) return ChromiumAvailability::kFound;
  const char* ci = std::getenv("CI");
  return ci != nullptr && *ci != '\0' ? ChromiumAvailability::kMissingInCi
                                      : ChromiumAvailability::kMissing;
}

BrowserRun run_in_chromium(const std::string& page, const std::string& directory) {
  namespace fs = std::filesystem;
  const fs::path dir = directory;
  fs::create_directories(dir);
  BrowserRun run;
  std::string instrumented = page;
  const size_t head = instrumented.find("<head>");
  if (head == std::string::npos) {
    run.error = "the page has no <head> to put the error listener in";
    return run;
  }
  instrumented.insert(head + 6, kErrorListener);
  const fs::path html = dir / "page.html";
  std::ofstream(html, std::ios::binary) << instrumented;
  run.command =
      "chromium --headless --no-sandbox --disable-gpu --no-first-run "
      "--user-data-dir='" +
      (dir / "profile").string() + "' --virtual-time-budget=5000 --dump-dom 'file://" +
      html.string() + "' > '" + (dir / "dom.html").string() + "' 2> '" +
      (dir / "chromium.log").string() + "'";
  run.ran = std::system(run.command.c_str()) == 0;
  const std::string dom = read_file(dir / "dom.html");
  const std::string marker = std::string(kErrorAttribute) + "=\"";
  const size_t at = dom.find(marker);
  if (at != std::string::npos) {
    const size_t start = at + marker.size();
    run.error = dom.substr(start, dom.find('"', start) - start);
  }
  for (size_t p = dom.find("class=\"card\""); p != std::string::npos;
       p = dom.find("class=\"card\"", p + 1))
    ++run.cards;
  run.dom = dom;
  return run;
}

std::string dom_attribute(const std::string& dom, const std::string& name) {
  const std::string marker = " " + name + "=\"";
  const size_t at = dom.find(marker);
  if (at == std::string::npos) return {};
  const size_t start = at + marker.size();
  const std::string raw = dom.substr(start, dom.find('"', start) - start);
  constexpr std::pair<std::string_view, std::string_view> kEntities[] = {
      {"&quot;", "\""},     {"&lt;", "<"},  {"&gt;", ">"},
      {"&nbsp;", "\u00a0"}, {"&#39;", "'"}, {"&amp;", "&"}};
  std::string value;
  for (size_t i = 0; i < raw.size();) {
    bool decoded = false;
    if (raw[i] == '&') {
      for (const auto& [entity, text] : kEntities) {
        if (raw.compare(i, entity.size(), entity) == 0) {
          value += text;
          i += entity.size();
          decoded = true;
          break;
        }
      }
    }
    if (!decoded) value += raw[i++];
  }
  return value;
}

}  // namespace vramlab::report::testing
