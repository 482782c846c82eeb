// What: a GitHub-flavoured Markdown table of report rows (all columns, or a chosen subset in
//       the given order), numbers right-aligned, plus the recommendation above it.
// Why: pasteable into an issue or a PR; the same row schema as every other printer.
#pragma once

#include <string>
#include <vector>

#include "reports/report_context.hpp"
#include "reports/row.hpp"

namespace gaccum::reports {

// Unknown names in `column_names` are an InputError; empty means all columns.
std::string print_markdown_table(const std::vector<Row>& rows, const std::vector<std::string>& column_names = {});
// "# gaccum-tune: <workload>", the recommendation paragraph and the ranked top-N table.
std::string print_markdown(const tuner::TuneResult& result, const ReportContext& ctx);

// The compact column set shared by the terminal and Markdown summaries.
const std::vector<std::string>& summary_columns();

}  // namespace gaccum::reports
