// What: CSV of report rows: a header of column names (units in the names) and one line per
//       row, RFC 4180 quoting, reals with 6 significant digits, empty cells for "none".
// Why: the format spreadsheets and pandas read; the column order is the stable order of
//      columns() in row.hpp.
#pragma once

#include <string>
#include <vector>

#include "reports/row.hpp"

namespace gaccum::reports {

std::string print_csv(const std::vector<Row>& rows);
std::string csv_field(const Cell& cell);

}  // namespace gaccum::reports
