// What: the verdict of one check, shared by the pre-launch gate (check/) and the runner's
//       validation checks (runner/), with one traits table: the label the tables print and the
//       word the JSON records carry.
//         pass  "PASS"  check JSON "PASS", validation.json "pass", validate prints "PASS"
//         warn  "WARN"  "WARN", "warn", "WARN"
//         fail  "FAIL"  "FAIL", "fail", "FAIL"
//         skip  "SKIP"  "SKIP", "n/a",  "n/a"  (not applicable to this run, e.g. no partial window,
//                                              or a control that cannot discriminate on this
//                                              input; the check's detail gives the reason)
//       validate's checks use pass, fail and skip only: PASS, FAIL or n/a with its reason.
// Why: one name per verdict instead of "pass"/"fail" strings in one place and an enum in another.
#pragma once

#include <optional>
#include <string_view>

namespace gaccum {

enum class Status { pass, warn, fail, skip };

struct StatusTraits {
  Status status;
  std::string_view label;   // printed tables and check's JSON
  std::string_view record;  // validation.json
  std::string_view run;     // validate's printed check lines
};

inline constexpr StatusTraits kStatusTraits[] = {
    {Status::pass, "PASS", "pass", "PASS"},
    {Status::warn, "WARN", "warn", "WARN"},
    {Status::fail, "FAIL", "fail", "FAIL"},
    {Status::skip, "SKIP", "n/a", "n/a"},
};

constexpr const StatusTraits& traits(Status s) {
  return kStatusTraits[static_cast<int>(s)];
}
constexpr std::string_view to_string(Status s) {
  return traits(s).label;
}
constexpr std::string_view record_name(Status s) {
  return traits(s).record;
}
inline std::optional<Status> status_from_record(std::string_view word) {
  for (const auto& t : kStatusTraits)
    if (t.record == word) return t.status;
  return std::nullopt;
}

}  // namespace gaccum
