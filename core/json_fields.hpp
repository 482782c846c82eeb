// What: strict readers for JSON objects: required/optional fields with the JSON path in errors,
//       and a list of keys the reader did not consume (to warn about unknown keys).
// Why: every file we read (profile, cluster, spec, job, DeepSpeed config) must fail with one line
//      that names the field, never with nlohmann's "type must be number, but is string".
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/units.hpp"

namespace gaccum {

class JsonFields {
 public:
  // `path` names the object in messages, e.g. "profile.json: hardware". The reader refers to
  // `obj` (no copy: copying a deeply nested document recurses once per level); `obj` must outlive
  // it. A temporary is moved into storage the reader owns instead (a move is O(1)).
  JsonFields(const nlohmann::json& obj, std::string path);
  JsonFields(nlohmann::json&& obj, std::string path);

  const nlohmann::json& raw() const { return *obj_; }
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
  std::shared_ptr<const nlohmann::json> owned_;  // set only when built from a temporary
  const nlohmann::json* obj_;
  std::string path_;
  std::set<std::string> seen_;
};

// Deepest nesting of arrays/objects parse_json_text accepts. nlohmann's parser itself is
// iterative, but copying, comparing or dumping a document recurses once per level, and a few
// hundred thousand levels overflow the stack; no file we read needs more than a dozen.
inline constexpr int kMaxJsonDepth = 512;

// Parses text as JSON; ProfileError-like InputError "<what>: not valid JSON at byte N: ...",
// or "<what>: JSON nested deeper than 512 levels" (checked before parsing).
nlohmann::json parse_json_text(const std::string& text, const std::string& what);
// The deepest nesting of arrays/objects in `text`, brackets inside strings not counted; stops
// counting once `limit` is exceeded (returns limit + 1). Malformed text gives some depth; the
// parser reports the syntax error.
int json_nesting_depth(const std::string& text, int limit);

}  // namespace gaccum
