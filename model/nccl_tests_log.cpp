// What/why: see nccl_tests_log.hpp.
#include "model/nccl_tests_log.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>
#include <sstream>

#include <fmt/format.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"

namespace gaccum::model {

const char* to_string(NcclTestsOp op) {
  switch (op) {
    case NcclTestsOp::all_reduce:
      return "all_reduce";
    case NcclTestsOp::reduce_scatter:
      return "reduce_scatter";
    case NcclTestsOp::all_gather:
      return "all_gather";
  }
  return "all_reduce";
}

std::optional<NcclTestsOp> parse_nccl_tests_op(const std::string& s) {
  std::string k;
  for (char c : s)
    if (c != '_' && c != '-') k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (k.size() > 4 && k.compare(k.size() - 4, 4, "perf") == 0) k.resize(k.size() - 4);
  if (k == "allreduce") return NcclTestsOp::all_reduce;
  if (k == "reducescatter") return NcclTestsOp::reduce_scatter;
  if (k == "allgather") return NcclTestsOp::all_gather;
  return std::nullopt;
}

double busbw_factor(NcclTestsOp op, Count n) {
  if (n < 1) return 0;
  const double f = double(n - 1) / double(n);
  return op == NcclTestsOp::all_reduce ? 2 * f : f;
}

std::vector<std::string> NcclTestsLog::hosts() const {
  std::vector<std::string> out;
  for (const auto& r : ranks)
    if (std::find(out.begin(), out.end(), r.host) == out.end()) out.push_back(r.host);
  return out;
}

Count NcclTestsLog::ranks_per_node() const {
  const auto hs = hosts();
  if (hs.empty()) return 0;
  Count first = 0;
  for (const auto& h : hs) {
    const auto n = static_cast<Count>(
        std::count_if(ranks.begin(), ranks.end(), [&](const NcclTestsRank& r) { return r.host == h; }));
    if (first == 0) first = n;
    if (n != first)
      throw InputError(
          fmt::format("{}: host {} holds {} ranks and host {} holds {}: the hierarchical model needs the "
                      "same number of GPUs on every node",
                      path, hs.front(), first, h, n));
  }
  return first;
}

namespace {

std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

bool all_digits(const std::string& s) {
  return !s.empty() &&
         std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// Bytes per element of an nccl-tests type name (0: unknown).
Bytes type_size(const std::string& t) {
  if (t == "float" || t == "int32" || t == "uint32" || t == "int" || t == "float32") return 4;
  if (t == "half" || t == "bfloat16" || t == "float16" || t == "bf16") return 2;
  if (t == "double" || t == "int64" || t == "uint64" || t == "float64") return 8;
  if (t == "int8" || t == "uint8" || t == "char" || t == "f8e4m3" || t == "f8e5m2") return 1;
  return 0;
}

struct Columns {
  int size = -1, count = -1, type = -1, redop = -1;
  int time[2] = {-1, -1}, algbw[2] = {-1, -1}, busbw[2] = {-1, -1}, wrong[2] = {-1, -1};
  std::size_t needed = 0;  // tokens a row must have (through the out-of-place busbw / #wrong)
};

Columns read_columns(const std::vector<std::string>& names) {
  Columns c;
  int seen_time = 0, seen_alg = 0, seen_bus = 0, seen_wrong = 0;
  for (int i = 0; i < static_cast<int>(names.size()); ++i) {
    const auto& n = names[static_cast<std::size_t>(i)];
    if (n == "size")
      c.size = i;
    else if (n == "count")
      c.count = i;
    else if (n == "type")
      c.type = i;
    else if (n == "redop")
      c.redop = i;
    else if (n == "time" && seen_time < 2)
      c.time[seen_time++] = i;
    else if (n == "algbw" && seen_alg < 2)
      c.algbw[seen_alg++] = i;
    else if (n == "busbw" && seen_bus < 2)
      c.busbw[seen_bus++] = i;
    else if ((n == "#wrong" || n == "wrong") && seen_wrong < 2)
      c.wrong[seen_wrong++] = i;
  }
  c.needed =
      static_cast<std::size_t>(std::max({c.size, c.count, c.type, c.time[0], c.algbw[0], c.busbw[0], c.wrong[0]}) + 1);
  return c;
}

double number(const std::string& tok, const std::string& where, const std::string& column) {
  char* end = nullptr;
  const double v = std::strtod(tok.c_str(), &end);
  if (end == tok.c_str() || *end != '\0' || !(v >= 0))
    throw InputError(
        fmt::format("{}: column '{}' holds '{}', not a non-negative number; pass the log as nccl-tests "
                    "printed it",
                    where, column, tok));
  return v;
}

}  // namespace

NcclTestsLog parse_nccl_tests_log(const std::string& text, const std::string& path, std::optional<NcclTestsOp> op) {
  NcclTestsLog log;
  log.path = path;
  std::optional<NcclTestsOp> header_op;
  std::optional<Columns> cols;
  int headers = 0, header_line = 0;
  // "#  Rank  0 Group  0 Pid  1887 on   worker-1 device  0 [0x8d] NVIDIA H100 80GB HBM3"
  static const std::regex rank_re(
      R"(^#?\s*Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s*(.*?)\s*$)");
  static const std::regex mpi_prefix(R"(^\[\d+,\d+\]<std(?:out|err)>:)");
  std::istringstream in(text);
  std::string raw;
  int lineno = 0;
  while (std::getline(in, raw)) {
    ++lineno;
    const std::string where = fmt::format("{}:{}", path, lineno);
    std::string line = std::regex_replace(raw, mpi_prefix, "", std::regex_constants::format_first_only);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    const bool hash = line[first] == '#';
    const std::string body = hash ? line.substr(first + 1) : line.substr(first);
    auto toks = split_ws(body);
    if (toks.empty()) continue;
    if (toks[0] == "nThread") {
      if (++headers > 1)
        throw InputError(
            fmt::format("{}: a second test header (first at line {}): every process ran its own test, as "
                        "nccl-tests built without MPI=1 do under mpirun; rebuild with `make MPI=1` and run "
                        "again, or pass one test per file",
                        where, header_line));
      header_line = lineno;
      continue;
    }
    if (toks.size() >= 4 && toks[0] == "Collective" && toks[1] == "test" && toks[2] == "starting:") {
      header_op = parse_nccl_tests_op(toks[3]);
      continue;
    }
    std::smatch m;
    if (std::regex_match(line, m, rank_re) || std::regex_match(body, m, rank_re)) {
      NcclTestsRank r;
      r.rank = std::atoi(m[1].str().c_str());
      r.host = m[2].str();
      r.device = std::atoi(m[3].str().c_str());
      r.device_name = m[4].str();
      r.line = lineno;
      for (const auto& o : log.ranks)
        if (o.rank == r.rank)
          throw InputError(
              fmt::format("{}: rank {} is listed twice (first at line {}): every process ran its own "
                          "test, as nccl-tests built without MPI=1 do under mpirun; rebuild with `make "
                          "MPI=1`",
                          where, r.rank, o.line));
      log.ranks.push_back(r);
      continue;
    }
    if (toks.size() >= 3 && toks[0] == "size" && toks[1] == "count") {
      cols = read_columns(toks);
      if (cols->size < 0 || cols->count < 0 || cols->type < 0 || cols->time[0] < 0 || cols->algbw[0] < 0 ||
          cols->busbw[0] < 0)
        throw InputError(
            fmt::format("{}: a table header without size, count, type, time, algbw and busbw columns; "
                        "pass the log as nccl-tests printed it",
                        where));
      continue;
    }
    if (hash || !cols || !all_digits(toks[0])) continue;  // comments, NCCL INFO lines, anything else
    const auto& c = *cols;
    if (toks.size() < c.needed)
      throw InputError(
          fmt::format("{}: a table row with {} columns where the header has at least {}; pass the log "
                      "as nccl-tests printed it (not cut or wrapped)",
                      where, toks.size(), c.needed));
    NcclTestsRow row;
    row.line = lineno;
    row.size = static_cast<Bytes>(number(toks[static_cast<std::size_t>(c.size)], where, "size"));
    row.count = static_cast<Count>(number(toks[static_cast<std::size_t>(c.count)], where, "count"));
    row.type = toks[static_cast<std::size_t>(c.type)];
    if (c.redop >= 0) row.redop = toks[static_cast<std::size_t>(c.redop)];
    row.time = number(toks[static_cast<std::size_t>(c.time[0])], where, "time") * 1e-6;
    row.algbw_GBps = number(toks[static_cast<std::size_t>(c.algbw[0])], where, "algbw");
    row.busbw_GBps = number(toks[static_cast<std::size_t>(c.busbw[0])], where, "busbw");
    for (int k = 0; k < 2; ++k) {
      const int w = c.wrong[k];
      if (w < 0 || static_cast<std::size_t>(w) >= toks.size()) continue;
      const auto& tok = toks[static_cast<std::size_t>(w)];
      if (tok == "N/A") continue;
      if (!all_digits(tok))
        throw InputError(fmt::format(
            "{}: column '#wrong' holds '{}', not a count; pass the log as nccl-tests printed it", where, tok));
      if (std::atoll(tok.c_str()) > 0)
        throw InputError(
            fmt::format("{}: {} wrong elements at size {} ({}): the collective returned wrong data, so "
                        "its times are not a measurement; fix the fabric and run nccl-tests again",
                        where, tok, row.size, k == 0 ? "out-of-place" : "in-place"));
    }
    if (c.time[1] >= 0 && static_cast<std::size_t>(c.time[1]) < toks.size())
      row.time_in_place = number(toks[static_cast<std::size_t>(c.time[1])], where, "time") * 1e-6;
    if (row.size == 0 || row.time <= 0) continue;  // the zero-byte rows some versions print
    log.rows.push_back(row);
  }
  if (log.ranks.empty())
    throw InputError(
        fmt::format("{}: no '# Rank N ... on HOST device D' lines: the log's header is missing; pass the "
                    "whole output of the test (its '# Using devices' block names the ranks and hosts)",
                    path));
  std::sort(log.ranks.begin(), log.ranks.end(),
            [](const NcclTestsRank& a, const NcclTestsRank& b) { return a.rank < b.rank; });
  for (std::size_t i = 0; i < log.ranks.size(); ++i)
    if (log.ranks[i].rank != static_cast<int>(i))
      throw InputError(
          fmt::format("{}: rank {} is missing from the '# Using devices' block ({} ranks listed); pass the "
                      "whole output",
                      path, i, log.ranks.size()));
  if (log.rows.empty())
    throw InputError(
        fmt::format("{}: no result rows (size count type ... time algbw busbw) with a size above 0; pass "
                    "the output of a finished test",
                    path));
  (void)log.ranks_per_node();  // the same number of ranks on every host

  const Count n = log.world_size();
  // What the rows say: count x sizeof(type) == size (allreduce) or x n == size (per-rank count).
  const auto& big = *std::max_element(log.rows.begin(), log.rows.end(),
                                      [](const NcclTestsRow& a, const NcclTestsRow& b) { return a.size < b.size; });
  const Bytes elem = type_size(big.type);
  std::optional<NcclTestsOp> from_rows;
  std::string rows_why;
  if (elem > 0 && big.count * elem == big.size && n > 1) {
    from_rows = NcclTestsOp::all_reduce;
    rows_why = fmt::format("count x {} = size", elem);
    if (big.redop == "none")
      throw InputError(
          fmt::format("{}:{}: redop 'none' with count x {} = size: a broadcast or reduce log, which the "
                      "cluster fit does not use; give all_reduce_perf, reduce_scatter_perf or "
                      "all_gather_perf output",
                      path, big.line, elem));
  } else if (elem > 0 && big.count * elem * static_cast<Bytes>(n) == big.size) {
    from_rows = big.redop == "none" ? NcclTestsOp::all_gather : NcclTestsOp::reduce_scatter;
    rows_why = fmt::format("count x {} x {} ranks = size, redop {}", elem, n, big.redop.empty() ? "?" : big.redop);
  }
  if (op) {
    log.op = *op;
    log.op_from = "given with the file";
  } else if (header_op) {
    log.op = *header_op;
    log.op_from = "the log's 'Collective test starting' line";
  } else if (from_rows && (*from_rows == NcclTestsOp::all_reduce || !big.redop.empty())) {
    log.op = *from_rows;
    log.op_from = rows_why;
  } else {
    throw InputError(
        fmt::format("{}: cannot tell which collective this log measured (type '{}', size {}, count {}, "
                    "{} ranks); name it with the file: --nccl-tests all_reduce:{} (or reduce_scatter:, "
                    "all_gather:)",
                    path, big.type, big.size, big.count, n, path));
  }
  if (from_rows && n > 1 && (*from_rows == NcclTestsOp::all_reduce) != (log.op == NcclTestsOp::all_reduce))
    throw InputError(
        fmt::format("{}:{}: the rows ({}) contradict the collective {} ({}); name the right one with the "
                    "file, e.g. --nccl-tests {}:{}",
                    path, big.line, rows_why, to_string(log.op), log.op_from, to_string(*from_rows), path));
  return log;
}

NcclTestsLog load_nccl_tests_log(const std::string& path, std::optional<NcclTestsOp> op) {
  return parse_nccl_tests_log(read_text_file(path, "--nccl-tests"), path, op);
}

}  // namespace gaccum::model
