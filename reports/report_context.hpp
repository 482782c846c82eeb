// What: facts about a tune run that are not in the TuneResult: the tool version, when it ran,
//       the command line, and the identity of what the model was built from (profile path,
//       creation time, host, library versions; or the spec file).
// Why: the JSON and HTML reports must say what produced them; the CLI fills this, tests fill it
//      with fixed values so golden files stay stable.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace gaccum::reports {

struct ReportContext {
  std::string tool_version;
  std::string generated_utc;                         // ISO 8601
  std::string command;                               // as typed, for reproduction
  nlohmann::json source = nlohmann::json::object();  // {"kind": "profile", "path": ..., ...}
  std::string deepspeed_config;  // tune --deepspeed-config: where the completed config is written ("" if none)
  std::string next_command;      // the command to run next on the pick (validate, or check for a spec); "" none
};

}  // namespace gaccum::reports
