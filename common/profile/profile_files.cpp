// write_profile: the files of one recording, each in the format of the tool that reads it.
#include "common/profile/profile_files.h"

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <system_error>

#include "common/platform/errors.h"
#include "common/profile/chrome_trace.h"
#include "common/profile/op_table.h"
#include "common/report/memory_timeline_html.h"
#include "common/snapshot/snapshot_pickle.h"

namespace vramlab::profile {
namespace {

// Names are the user's module paths and the C++ frames' functions: a byte that is not UTF-8 is
// replaced so the file stays valid JSON.
std::string json_text(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void write_text(const std::filesystem::path& path, const std::string& text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) throw UsageError("cannot write '" + path.string() + "'");
  file.write(text.data(), static_cast<std::streamsize>(text.size()));
  file.close();
  if (!file) throw UsageError("cannot write '" + path.string() + "' (disk full?)");
}

}  // namespace

ProfileFiles write_profile(const Recording& recording, const std::string& directory,
                           const std::string& title) {
  const std::filesystem::path dir(directory);
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  if (error || !std::filesystem::is_directory(dir))
    throw UsageError("cannot create the profile directory '" + directory + "'" +
                     (error ? " (" + error.message() + ")" : " (a file has that name)"));

  ProfileFiles files;
  files.snapshot_pickle = (dir / "snapshot.pickle").string();
  files.snapshot_json = (dir / "snapshot.json").string();
  files.trace_json = (dir / "trace.json").string();
  files.ops_table = (dir / "ops.txt").string();
  files.ops_json = (dir / "ops.json").string();
  files.timeline_html = (dir / "timeline.html").string();

  try {
    snapshot::write_snapshot_pickle(recording.snapshot, files.snapshot_pickle);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  write_text(files.snapshot_json, json_text(recording.snapshot));
  write_text(files.trace_json, json_text(chrome_trace(recording)));

  const std::vector<OpRow> by_op = op_table(recording, OpGrouping::op);
  const std::vector<OpRow> by_module = op_table(recording, OpGrouping::module);
  write_text(files.ops_table, "Per op (torch.profiler's key_averages(), sorted by self bytes):\n" +
                                  format_op_table(by_op, OpSort::self_bytes, 0) +
                                  "\nPer module and phase (sorted by self bytes):\n" +
                                  format_op_table(by_module, OpSort::self_bytes, 0));
  write_text(files.ops_json,
             json_text({{"by_op", op_table_json(by_op)}, {"by_module", op_table_json(by_module)}}));
  write_text(files.timeline_html, report::render_memory_timeline_html(recording.snapshot, title));
  return files;
}

}  // namespace vramlab::profile
