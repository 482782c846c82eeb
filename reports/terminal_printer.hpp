// What: the terminal report: the headline, a compact ranked table (top N) with human units,
//       the one-paragraph recommendation, why the best pick is where it is, world-size
//       returns, learning rate, critical batch and notes. Plain ASCII, <= ~110 columns.
// Why: what a user reads first; details live in the CSV/JSON/HTML files it points to.
#pragma once

#include <string>

#include "reports/report_context.hpp"
#include "tuner/tuner.hpp"

namespace gaccum::reports {

std::string print_terminal(const tuner::TuneResult& result, const ReportContext& ctx);

}  // namespace gaccum::reports
