// What: report.html: ONE self-contained page (no scripts, no external URLs, no web fonts; inline
//       CSS; charts as inline SVG from svg_chart.hpp; a Content-Security-Policy that forbids
//       loading anything): the recommendation, why the top picks are where they are, throughput
//       vs accum_steps (one line per world_size), peak memory vs micro_batch with the cap and
//       limit lines, the step-time breakdown of the top picks, every-step vs overlap, the
//       throughput-vs-world_size Pareto front, LR and critical-batch guidance, the inputs and the
//       table of evaluated configs. Readable at 1280 px and printable (@media print).
// Why: the report people forward; it must open anywhere (air-gapped clusters included) and
//      cannot phone home.
#pragma once

#include <string>

#include "reports/report_context.hpp"
#include "tuner/tuner.hpp"

namespace gaccum::reports {

inline constexpr const char* kHtmlCsp = "default-src 'none'; style-src 'unsafe-inline'; img-src data:";
inline constexpr std::size_t kHtmlMaxTableRows = 500;  // the CSV has every row

std::string print_html(const tuner::TuneResult& result, const ReportContext& ctx);

}  // namespace gaccum::reports
