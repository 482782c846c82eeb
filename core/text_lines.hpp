// What: the last non-empty line of a multi-line message, trimmed, and the first line as is
//       (header-only).
// Why: LibTorch and TorchScript errors put the error itself on the last line after a traceback;
//      the CLI and the TorchScript workload both report that line alone, in one line. Our own
//      messages and c10d's put it on the first line: the CLI's error line, check's JSON error and
//      comm/'s c10d errors keep that one.
#pragma once

#include <string>
#include <string_view>

namespace gaccum {

inline std::string last_nonempty_line(std::string_view text) {
  std::string_view last;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const auto nl = text.find('\n', pos);
    std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    const auto b = line.find_first_not_of(" \t\r");
    if (b != std::string_view::npos) last = line.substr(b, line.find_last_not_of(" \t\r") - b + 1);
    if (nl == std::string_view::npos) break;
    pos = nl + 1;
  }
  return std::string(last.empty() ? text : last);
}

// Everything before the first '\n' (all of `text` when it has none), untrimmed.
inline std::string first_line(std::string_view text) { return std::string(text.substr(0, text.find('\n'))); }

}  // namespace gaccum
