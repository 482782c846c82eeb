// What: the field reader of the run record's JSON (runner/run_record.cpp, rank_record.cpp): a
//       missing or mistyped field is an InputError naming its path, e.g. "run.measured.peak_memory".
// Why: the record's one reader; internal to runner/.
#pragma once

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace gaccum::runner::record {

using nlohmann::json;

struct Reader {
  const json& j;
  std::string what;
  const json& at(const char* key) const {
    if (!j.is_object() || !j.contains(key)) throw InputError(fmt::format("{}: missing \"{}\"", what, key));
    return j[key];
  }
  bool has(const char* key) const { return j.is_object() && j.contains(key) && !j[key].is_null(); }
  template <class T>
  T get(const char* key) const {
    try {
      return at(key).get<T>();
    } catch (const json::exception&) {
      throw InputError(fmt::format("{}.{}: unexpected type ({})", what, key, at(key).dump()));
    }
  }
  template <class T>
  T get_or(const char* key, T fallback) const {
    return has(key) ? get<T>(key) : fallback;
  }
  Reader child(const char* key) const { return Reader{at(key), what + "." + key}; }
  Reader item(const char* key, std::size_t i) const {
    return Reader{at(key).at(i), fmt::format("{}.{}[{}]", what, key, i)};
  }
  std::size_t size(const char* key) const { return at(key).size(); }
};

}  // namespace gaccum::runner::record
