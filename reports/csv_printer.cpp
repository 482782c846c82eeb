// What/why: see csv_printer.hpp.
#include "reports/csv_printer.hpp"

namespace gaccum::reports {
namespace {

std::string quote(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace

std::string csv_field(const Cell& c) {
  switch (c.kind) {
    case Cell::Kind::empty:
      return "";
    case Cell::Kind::integer:
      return std::to_string(c.i);
    case Cell::Kind::real:
      return format_real(c.d);
    case Cell::Kind::text:
      return quote(c.s);
    case Cell::Kind::boolean:
      return c.b ? "true" : "false";
  }
  return "";
}

std::string print_csv(const std::vector<Row>& rows) {
  const auto& cols = columns();
  std::string out;
  out.reserve(64 + rows.size() * 256);
  for (std::size_t i = 0; i < cols.size(); ++i) {
    if (i) out += ',';
    out += cols[i].name;
  }
  out += '\n';
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < cols.size(); ++i) {
      if (i) out += ',';
      out += csv_field(cols[i].get(r));
    }
    out += '\n';
  }
  return out;
}

}  // namespace gaccum::reports
