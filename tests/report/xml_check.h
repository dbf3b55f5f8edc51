// Test helper: validates XML with python3's xml.etree (when python3 is on PATH).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace vramlab::report::testing {

/// Result of asking python3 to parse a document.
enum class XmlCheck { kValid, kInvalid, kNoPython };

/// \return whether python3 can be run.
inline bool python3_available() {
  return std::system("python3 -c 'pass' > /dev/null 2>&1") == 0;
}

/// Writes \p document to a temporary file and parses it with xml.etree.ElementTree.
inline XmlCheck check_xml_with_python(const std::string& document, const std::string& name) {
  if (!python3_available()) return XmlCheck::kNoPython;
  const std::string path = ::testing::TempDir() + "vramlab_" + name + ".xml";
  {
    std::ofstream file(path, std::ios::binary);
    file << document;
  }
  const std::string command =
      "python3 -c 'import sys, xml.etree.ElementTree as E; E.parse(sys.argv[1])' '" + path + "'";
  return std::system(command.c_str()) == 0 ? XmlCheck::kValid : XmlCheck::kInvalid;
}

}  // namespace vramlab::report::testing
