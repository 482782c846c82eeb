// What/why: see structured_text.hpp.
#include "check/structured_text.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <limits>
#include <set>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"

namespace gaccum::check {
namespace {

using nlohmann::json;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// ---- JSON ------------------------------------------------------------------------------------

json parse_json(const std::string& text, const std::string& what) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  std::vector<bool> is_object;              // open containers, innermost last
  auto cb = [&](int /*depth*/, json::parse_event_t ev, json& parsed) {
    switch (ev) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        is_object.push_back(ev == json::parse_event_t::object_start);
        if (is_object.size() > std::size_t(kMaxDepth))
          throw InputError(fmt::format("{}: nested deeper than {} levels", what, kMaxDepth));
        if (is_object.back()) keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!is_object.empty()) {
          if (is_object.back()) keys.pop_back();
          is_object.pop_back();
        }
        break;
      case json::parse_event_t::key:
        if (!keys.empty() && parsed.is_string() && !keys.back().insert(parsed.get<std::string>()).second)
          throw InputError(fmt::format("{}: duplicate key '{}'", what, parsed.get<std::string>()));
        break;
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  try {
    return json::parse(text, cb);
  } catch (const json::exception& e) {
    // parse_error, and out_of_range for numbers beyond double ("1e999").
    std::string msg = e.what();
    auto pos = msg.find("] ");
    if (pos != std::string::npos) msg = msg.substr(pos + 2);
    throw InputError(fmt::format("{}: not valid JSON: {}", what, msg));
  }
}

// ---- YAML ------------------------------------------------------------------------------------

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// YAML 1.2 core schema float: [-+]? ( . [0-9]+ | [0-9]+ ( . [0-9]* )? ) ( [eE] [-+]? [0-9]+ )?
bool looks_float(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++int_digits;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == s.size();
}

json plain_scalar(const std::string& s) {
  if (s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL") return nullptr;
  if (s == "true" || s == "True" || s == "TRUE") return true;
  if (s == "false" || s == "False" || s == "FALSE") return false;
  std::string_view v = s;
  const bool neg = !v.empty() && v.front() == '-';
  std::string_view digits = (!v.empty() && (v.front() == '-' || v.front() == '+')) ? v.substr(1) : v;
  if (all_digits(digits)) {
    // Integers as JSON would read them: int64, else uint64, else a (non-integral) double, so
    // a 20-digit number reads "does not fit in 64 bits" exactly like the same JSON number.
    if (neg) {
      std::int64_t i = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), i);
      if (ec == std::errc() && p == v.data() + v.size()) return i;
    } else {
      std::uint64_t u = 0;
      auto [p, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), u);
      if (ec == std::errc() && p == digits.data() + digits.size()) return u;
    }
    return std::strtod(s.c_str(), nullptr);
  }
  if (looks_float(v)) {
    double d = std::strtod(s.c_str(), nullptr);
    if (std::isfinite(d)) return d;
  }
  return s;  // .inf / .nan and everything else stay text
}

struct YamlToJson {
  const std::string& what;
  long nodes = 0;

  json convert(const YAML::Node& n, int depth) {
    if (depth > kMaxDepth) throw InputError(fmt::format("{}: nested deeper than {} levels", what, kMaxDepth));
    if (++nodes > kMaxNodes)
      throw InputError(fmt::format("{}: more than {} values (after expanding aliases)", what, kMaxNodes));
    switch (n.Type()) {
      case YAML::NodeType::Undefined:
      case YAML::NodeType::Null:
        return nullptr;
      case YAML::NodeType::Scalar:
        // Tag "!" marks a quoted scalar (always a string); "?" a plain one (typed by content).
        return n.Tag() == "!" ? json(n.Scalar()) : plain_scalar(n.Scalar());
      case YAML::NodeType::Sequence: {
        json a = json::array();
        for (const auto& item : n) a.push_back(convert(item, depth + 1));
        return a;
      }
      case YAML::NodeType::Map: {
        json o = json::object();
        for (const auto& kv : n) {
          if (!kv.first.IsScalar())
            throw InputError(fmt::format("{}: a mapping key must be a plain name, not a {}", what,
                                         kv.first.IsSequence() ? "list" : "mapping"));
          const std::string key = kv.first.Scalar();
          if (o.contains(key)) throw InputError(fmt::format("{}: duplicate key '{}'", what, key));
          o[key] = convert(kv.second, depth + 1);
        }
        return o;
      }
    }
    return nullptr;
  }
};

// Receives parse events and ignores them: used to ask the parser whether anything follows the
// first document.
class IgnoreEvents : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}
};

// Deepest [ / { nesting, counting brackets inside quotes too (an over-estimate is harmless).
int flow_depth(const std::string& text) {
  int depth = 0, most = 0;
  for (char c : text) {
    if (c == '[' || c == '{') most = std::max(most, ++depth);
    if ((c == ']' || c == '}') && depth > 0) --depth;
  }
  return most;
}

json parse_yaml(const std::string& text, const std::string& what) {
  if (text.size() > kMaxYamlBytes)
    throw InputError(fmt::format("{}: {} bytes is too large for a YAML job file (at most {})", what, text.size(),
                                 kMaxYamlBytes));
  // Checked before yaml-cpp sees the text: it recurses once per flow level.
  if (flow_depth(text) > kMaxDepth) throw InputError(fmt::format("{}: nested deeper than {} levels", what, kMaxDepth));
  YAML::Node doc;
  try {
    // Not YAML::LoadAll: yaml-cpp 0.7 loops forever, allocating, on input such as "{}," (its
    // parser reports an endless run of empty documents; jbeder/yaml-cpp#1040, fixed upstream in
    // PR #1319). Load parses the first document; a second, bounded parse asks whether anything
    // follows it.
    doc = YAML::Load(text);
    std::istringstream in(text);
    YAML::Parser parser(in);
    IgnoreEvents ignore;
    parser.HandleNextDocument(ignore);
    if (parser.HandleNextDocument(ignore))
      throw InputError(fmt::format("{}: more than one YAML document ('---'), or text after the document; a job file "
                                   "holds one",
                                   what));
  } catch (const YAML::Exception& e) {
    throw InputError(
        fmt::format("{}: not valid YAML: {} at line {}, column {}", what, e.msg, e.mark.line + 1, e.mark.column + 1));
  }
  try {
    YamlToJson c{what};
    return c.convert(doc, 0);
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}: not valid YAML: {}", what, e.msg));
  }
}

}  // namespace

TextFormat format_of_path(const std::string& path) {
  const std::string p = lower(path);
  if (ends_with(p, ".json")) return TextFormat::json;
  if (ends_with(p, ".yaml") || ends_with(p, ".yml")) return TextFormat::yaml;
  return TextFormat::detect;
}

json parse_structured_text(const std::string& text, TextFormat format, const std::string& what) {
  // Files come through read_text_file, which refuses what is not UTF-8; text from elsewhere is held
  // to the same rule, so no value carries bytes that JSON output cannot write.
  if (const std::size_t i = first_invalid_utf8(text); i != std::string_view::npos)
    throw InputError(fmt::format("{}: not valid UTF-8 (byte {} is 0x{:02X}): save it as UTF-8", what, i,
                                 static_cast<unsigned char>(text[i])));
  if (format == TextFormat::detect) {
    format = TextFormat::yaml;
    for (char c : text) {
      if (std::isspace(static_cast<unsigned char>(c))) continue;
      if (c == '{' || c == '[') format = TextFormat::json;
      break;
    }
  }
  return format == TextFormat::json ? parse_json(text, what) : parse_yaml(text, what);
}

std::string canonical_hash(const json& doc) {
  // `replace`: YAML scalars may hold bytes that are not UTF-8; hashing must not throw on them.
  return hex64(fnv1a64(doc.dump(-1, ' ', false, json::error_handler_t::replace)));
}

}  // namespace gaccum::check
