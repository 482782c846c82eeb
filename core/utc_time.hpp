// What: the current time as an ISO-8601 UTC string, e.g. "2026-11-29T23:37:43Z".
// Why: profile.json, validation.json and tune results stamp when they were measured; one
//      spelling everywhere.
#pragma once

#include <string>

namespace gaccum {

std::string utc_now();

}  // namespace gaccum
