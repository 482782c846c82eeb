// What/why: see parse.hpp. Every error message is one line: field, value, what is expected.
#include "core/parse.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"

namespace gaccum {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

[[noreturn]] void fail(std::string_view field, std::string_view text, std::string_view expected) {
  throw InputError(fmt::format("{}: invalid value '{}': expected {}", field, text, expected));
}

// Parses a finite non-negative decimal number (no sign, no exponent) and returns the rest.
std::optional<double> leading_number(std::string_view s, std::string_view& rest) {
  size_t i = 0;
  bool digits = false, dot = false;
  while (i < s.size()) {
    char c = s[i];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      digits = true;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
    ++i;
  }
  if (!digits) return std::nullopt;
  double v = std::strtod(std::string(s.substr(0, i)).c_str(), nullptr);
  if (!std::isfinite(v)) return std::nullopt;
  rest = s.substr(i);
  return v;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

Bytes parse_bytes(std::string_view text, std::string_view field) {
  auto s = trim(text);
  std::string_view rest;
  auto num = leading_number(s, rest);
  if (!num) fail(field, text, "a size such as 512MiB, 20GiB, 4K or 1048576");
  std::string unit = lower(trim(rest));
  double mult = 1;
  if (unit.empty() || unit == "b") {
    mult = 1;
  } else if (unit == "k" || unit == "kb" || unit == "kib") {
    mult = double(KiB);
  } else if (unit == "m" || unit == "mb" || unit == "mib") {
    mult = double(MiB);
  } else if (unit == "g" || unit == "gb" || unit == "gib") {
    mult = double(GiB);
  } else if (unit == "t" || unit == "tb" || unit == "tib") {
    mult = double(GiB) * 1024.0;
  } else {
    fail(field, text, "a size unit B, K, M, G or T (binary: 1K = 1024 bytes)");
  }
  double bytes = *num * mult;
  if (bytes >= 1.8e19) fail(field, text, "a size below 16 EiB");
  double rounded = std::floor(bytes + 0.5);
  if (std::fabs(rounded - bytes) > 1e-6 * std::max(1.0, bytes))
    fail(field, text, "a whole number of bytes");
  return static_cast<Bytes>(rounded);
}

double parse_fraction(std::string_view text, std::string_view field) {
  auto s = trim(text);
  std::string_view rest;
  auto num = leading_number(s, rest);
  if (!num) fail(field, text, "a fraction such as 90% or 0.9");
  rest = trim(rest);
  double v = *num;
  if (rest == "%") {
    v /= 100.0;
  } else if (!rest.empty()) {
    fail(field, text, "a fraction such as 90% or 0.9");
  }
  if (v < 0 || v > 1) fail(field, text, "a fraction between 0% and 100%");
  return v;
}

Seconds parse_seconds(std::string_view text, std::string_view field) {
  auto s = trim(text);
  std::string_view rest;
  auto num = leading_number(s, rest);
  if (!num) fail(field, text, "a duration such as 60s, 500ms or 2m");
  std::string unit = lower(trim(rest));
  double mult = 1;
  if (unit.empty() || unit == "s") {
    mult = 1;
  } else if (unit == "ms") {
    mult = 1e-3;
  } else if (unit == "us") {
    mult = 1e-6;
  } else if (unit == "m" || unit == "min") {
    mult = 60;
  } else if (unit == "h") {
    mult = 3600;
  } else if (unit == "d") {
    mult = 86400;
  } else {
    fail(field, text, "a duration unit us, ms, s, m, h or d");
  }
  const double seconds = *num * mult;
  if (!(seconds <= kMaxSeconds)) fail(field, text, "a duration of at most 36525d (100 years)");
  return seconds;
}

Count parse_positive_count(std::string_view text, std::string_view field) {
  auto s = trim(text);
  if (s.empty()) fail(field, text, "a positive integer");
  if (s.front() == '-') fail(field, text, "a positive integer (got a negative number)");
  if (s.front() == '+') s.remove_prefix(1);
  Count v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range) fail(field, text, "an integer below 2^63");
  if (ec != std::errc() || ptr != s.data() + s.size()) fail(field, text, "a positive integer");
  if (v <= 0) fail(field, text, "a positive integer (at least 1)");
  return v;
}

Count parse_count_or_zero(std::string_view text, std::string_view field) {
  auto s = trim(text);
  if (!s.empty() && s.front() == '-') fail(field, text, "0 or a positive integer (got a negative number)");
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  if (!s.empty() && s.find_first_not_of('0') == std::string_view::npos) return 0;
  return parse_positive_count(text, field);
}

std::vector<Count> parse_count_list(std::string_view text, std::string_view field) {
  std::vector<Count> out;
  std::string_view s = trim(text);
  if (s.empty()) fail(field, text, "a comma-separated list of positive integers such as 1,2,4");
  while (true) {
    auto comma = s.find(',');
    out.push_back(parse_positive_count(s.substr(0, comma), field));
    if (comma == std::string_view::npos) break;
    s = s.substr(comma + 1);
  }
  return out;
}

std::pair<Count, Count> parse_count_range(std::string_view text, std::string_view field) {
  auto s = trim(text);
  auto dash = s.find('-', 1);
  if (dash == std::string_view::npos) fail(field, text, "a range such as 256-1024");
  Count lo = parse_positive_count(s.substr(0, dash), field);
  Count hi = parse_positive_count(s.substr(dash + 1), field);
  if (lo > hi) fail(field, text, "a range whose lower end is not above its upper end");
  return {lo, hi};
}

std::vector<Bytes> parse_size_sweep(std::string_view text, std::string_view field) {
  // "4K-256M*4": geometric from 4K to 256M, factor 4. "4K-1M+4K": arithmetic. "1M": one size.
  // "4K,1M,25M": explicit list.
  auto s = trim(text);
  if (s.find(',') != std::string_view::npos) {
    std::vector<Bytes> out;
    while (true) {
      auto comma = s.find(',');
      out.push_back(parse_bytes(s.substr(0, comma), field));
      if (comma == std::string_view::npos) break;
      s = s.substr(comma + 1);
    }
    return out;
  }
  auto dash = s.find('-');
  if (dash == std::string_view::npos) return {parse_bytes(s, field)};
  auto lo = parse_bytes(s.substr(0, dash), field);
  auto tail = s.substr(dash + 1);
  auto op = tail.find_first_of("*+");
  Bytes hi = parse_bytes(tail.substr(0, op), field);
  if (lo == 0 || lo > hi) fail(field, text, "a sweep MIN-MAX*FACTOR with 0 < MIN <= MAX, e.g. 4K-256M*4");
  std::vector<Bytes> out;
  if (op == std::string_view::npos || tail[op] == '*') {
    Count factor = op == std::string_view::npos ? 2 : parse_positive_count(tail.substr(op + 1), field);
    if (factor < 2) fail(field, text, "a geometric factor of at least 2");
    for (Bytes v = lo; v <= hi; v *= static_cast<Bytes>(factor)) {
      out.push_back(v);
      if (v > std::numeric_limits<Bytes>::max() / static_cast<Bytes>(factor)) break;
    }
  } else {
    Bytes step = parse_bytes(tail.substr(op + 1), field);
    if (step == 0) fail(field, text, "a positive step");
    if ((hi - lo) / step > 4096) fail(field, text, "at most 4096 sizes in a sweep");
    for (Bytes v = lo; v <= hi; v += step) out.push_back(v);
  }
  return out;
}

Bytes MemoryCap::resolve(Bytes device_memory) const {
  if (absolute) return *absolute;
  if (fraction) return static_cast<Bytes>(std::floor(*fraction * double(device_memory)));
  return device_memory;
}

std::string MemoryCap::to_string() const {
  if (absolute) return format_bytes(*absolute);
  if (fraction) return fmt::format("{:g}% of device memory", *fraction * 100);
  return "device memory";
}

MemoryCap parse_memory_cap(std::string_view text, std::string_view field) {
  auto s = trim(text);
  MemoryCap cap;
  if (!s.empty() && s.back() == '%') {
    cap.fraction = parse_fraction(s, field);
    if (*cap.fraction <= 0) fail(field, text, "a fraction above 0%");
  } else {
    cap.absolute = parse_bytes(s, field);
    if (*cap.absolute == 0) fail(field, text, "a size above 0 bytes");
  }
  return cap;
}

std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || std::string_view("_./:=,@%+-").find(ch) != std::string_view::npos;
  });
  if (plain) return s;
  std::string q = "'";
  for (char ch : s) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return q + "'";
}

}  // namespace gaccum
