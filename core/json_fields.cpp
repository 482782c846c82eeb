// What/why: see json_fields.hpp.
#include "core/json_fields.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/parse.hpp"

namespace gaccum {

using nlohmann::json;

JsonFields::JsonFields(const json& obj, std::string path) : obj_(&obj), path_(std::move(path)) {
  if (!obj_->is_object()) throw InputError(fmt::format("{}: expected a JSON object, got {}", path_, obj_->type_name()));
}

JsonFields::JsonFields(json&& obj, std::string path)
    : owned_(std::make_shared<const json>(std::move(obj))), obj_(owned_.get()), path_(std::move(path)) {
  if (!obj_->is_object()) throw InputError(fmt::format("{}: expected a JSON object, got {}", path_, obj_->type_name()));
}

bool JsonFields::has(const std::string& key) const { return obj_->contains(key) && !obj_->at(key).is_null(); }

const json& JsonFields::need(const std::string& key) {
  seen_.insert(key);
  if (!has(key)) throw InputError(fmt::format("{}: missing required field '{}'", path_, key));
  return obj_->at(key);
}

const json& JsonFields::any(const std::string& key) { return need(key); }

std::string JsonFields::str(const std::string& key) {
  const auto& v = need(key);
  if (!v.is_string()) throw InputError(fmt::format("{}: expected a string, got {}", child(key), v.type_name()));
  return v.get<std::string>();
}

std::optional<std::string> JsonFields::opt_str(const std::string& key) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return str(key);
}

double JsonFields::num(const std::string& key) {
  const auto& v = need(key);
  if (!v.is_number()) throw InputError(fmt::format("{}: expected a number, got {}", child(key), v.type_name()));
  double d = v.get<double>();
  if (!std::isfinite(d)) throw InputError(fmt::format("{}: expected a finite number", child(key)));
  return d;
}

std::optional<double> JsonFields::opt_num(const std::string& key) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return num(key);
}

static Count to_count(const json& v, const std::string& where) {
  if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if (u > static_cast<std::uint64_t>(std::numeric_limits<Count>::max()))
      throw InputError(fmt::format("{}: {} does not fit in 64 bits", where, u));
    return static_cast<Count>(u);
  }
  if (v.is_number_integer()) return v.get<Count>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::fabs(d) >= 9.2e18) throw InputError(fmt::format("{}: {} does not fit in 64 bits", where, v.dump()));
    throw InputError(fmt::format("{}: expected an integer, got {}", where, v.dump()));
  }
  if (v.is_string()) {
    // Accept "8" but not "8.5"; the same rules as flags.
    return parse_positive_count(v.get<std::string>(), where);
  }
  throw InputError(fmt::format("{}: expected an integer, got {}", where, v.type_name()));
}

Count JsonFields::count(const std::string& key) {
  Count c = to_count(need(key), child(key));
  if (c < 0) throw InputError(fmt::format("{}: expected a non-negative integer, got {}", child(key), c));
  return c;
}

Count JsonFields::positive(const std::string& key) {
  Count c = to_count(need(key), child(key));
  if (c < 1) throw InputError(fmt::format("{}: expected a positive integer (at least 1), got {}", child(key), c));
  return c;
}

std::optional<Count> JsonFields::opt_positive(const std::string& key) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return positive(key);
}

Bytes JsonFields::bytes(const std::string& key) {
  const auto& v = need(key);
  if (v.is_string()) return parse_bytes(v.get<std::string>(), child(key));
  if (v.is_number_unsigned()) return v.get<std::uint64_t>();
  if (v.is_number_integer()) {
    auto i = v.get<std::int64_t>();
    if (i < 0) throw InputError(fmt::format("{}: expected a size in bytes, got a negative number {}", child(key), i));
    return static_cast<Bytes>(i);
  }
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (d < 0 || d >= 1.8e19 || d != std::floor(d))
      throw InputError(fmt::format("{}: expected a whole number of bytes, got {}", child(key), v.dump()));
    return static_cast<Bytes>(d);
  }
  throw InputError(fmt::format("{}: expected a size (bytes or a string like \"2GiB\"), got {}", child(key), v.type_name()));
}

std::optional<Bytes> JsonFields::opt_bytes(const std::string& key) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return bytes(key);
}

bool JsonFields::boolean(const std::string& key) {
  const auto& v = need(key);
  if (!v.is_boolean()) throw InputError(fmt::format("{}: expected true or false, got {}", child(key), v.type_name()));
  return v.get<bool>();
}

std::optional<bool> JsonFields::opt_boolean(const std::string& key) {
  seen_.insert(key);
  if (!has(key)) return std::nullopt;
  return boolean(key);
}

const json& JsonFields::array(const std::string& key) {
  const auto& v = need(key);
  if (!v.is_array()) throw InputError(fmt::format("{}: expected an array, got {}", child(key), v.type_name()));
  return v;
}

std::vector<double> JsonFields::num_list(const std::string& key) {
  std::vector<double> out;
  const auto& a = array(key);
  for (size_t i = 0; i < a.size(); ++i) {
    if (!a[i].is_number()) throw InputError(fmt::format("{}[{}]: expected a number", child(key), i));
    out.push_back(a[i].get<double>());
  }
  return out;
}

std::vector<Count> JsonFields::count_list(const std::string& key) {
  std::vector<Count> out;
  const auto& a = array(key);
  for (size_t i = 0; i < a.size(); ++i) out.push_back(to_count(a[i], fmt::format("{}[{}]", child(key), i)));
  return out;
}

std::vector<Bytes> JsonFields::bytes_list(const std::string& key) {
  std::vector<Bytes> out;
  const auto& a = array(key);
  for (size_t i = 0; i < a.size(); ++i) {
    Count c = to_count(a[i], fmt::format("{}[{}]", child(key), i));
    if (c < 0) throw InputError(fmt::format("{}[{}]: expected a size in bytes", child(key), i));
    out.push_back(static_cast<Bytes>(c));
  }
  return out;
}

const json& JsonFields::object(const std::string& key) {
  const auto& v = need(key);
  if (!v.is_object()) throw InputError(fmt::format("{}: expected an object, got {}", child(key), v.type_name()));
  return v;
}

const json* JsonFields::opt_object(const std::string& key) {
  seen_.insert(key);
  if (!has(key)) return nullptr;
  return &object(key);
}

std::vector<std::string> JsonFields::unknown_keys() const {
  std::vector<std::string> out;
  for (auto it = obj_->begin(); it != obj_->end(); ++it)
    if (!seen_.count(it.key())) out.push_back(it.key());
  return out;
}

int json_nesting_depth(const std::string& text, int limit) {
  int depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest > limit) return limit + 1;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

json parse_json_text(const std::string& text, const std::string& what) {
  if (json_nesting_depth(text, kMaxJsonDepth) > kMaxJsonDepth)
    throw InputError(fmt::format("{}: JSON nested deeper than {} levels (arrays/objects); not a file this tool reads",
                                 what, kMaxJsonDepth));
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ..."; a
    // number beyond double ("1e999") is an out_of_range.406, bad input all the same.
    std::string msg = e.what();
    auto pos = msg.find("] ");
    if (pos != std::string::npos) msg = msg.substr(pos + 2);
    throw InputError(fmt::format("{}: not valid JSON: {}", what, msg));
  }
}

}  // namespace gaccum
