// What: strict readers for JSON objects: required/optional fields with the JSON path in errors,
//       and a list of keys the reader did not consume (to warn about unknown keys).
// Why: every file we read (profile, cluster, spec, job, DeepSpeed config) must fail with one line
//      that names the field, never with nlohmann's "type must be number, but is string".
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.hpp"

namespace gaccum {

class JsonFields {
 public:
  // `path` names the object in messages, e.g. "profile.json: hardware".
  JsonFields(const nlohmann::json& obj, std::string path);

  const nlohmann::json& raw() const { return obj_; }
  const std::string& path() const { return path_; }
  bool has(const std::string& key) const;

  std::string str(const std::string& key);
  std::optional<std::string> opt_str(const std::string& key);
  double num(const std::string& key);
  std::optional<double> opt_num(const std::string& key);
  // Integers: exact, within int64 (or uint64 for bytes); floats like 2.5 are rejected.
  Count count(const std::string& key);           // >= 0
  Count positive(const std::string& key);        // >= 1
  std::optional<Count> opt_positive(const std::string& key);
  Bytes bytes(const std::string& key);           // a number of bytes or a size string "2GiB"
  std::optional<Bytes> opt_bytes(const std::string& key);
  bool boolean(const std::string& key);
  std::optional<bool> opt_boolean(const std::string& key);
  std::vector<double> num_list(const std::string& key);
  std::vector<Count> count_list(const std::string& key);
  std::vector<Bytes> bytes_list(const std::string& key);
  const nlohmann::json& object(const std::string& key);
  const nlohmann::json* opt_object(const std::string& key);
  const nlohmann::json& array(const std::string& key);
  const nlohmann::json& any(const std::string& key);

  // Keys present in the object that no accessor asked for.
  std::vector<std::string> unknown_keys() const;
  std::string child(const std::string& key) const { return path_ + "." + key; }

 private:
  const nlohmann::json& need(const std::string& key);
  const nlohmann::json obj_;
  std::string path_;
  std::set<std::string> seen_;
};

// Parses text as JSON; ProfileError-like InputError "<what>: not valid JSON at byte N: ...".
nlohmann::json parse_json_text(const std::string& text, const std::string& what);

}  // namespace gaccum
