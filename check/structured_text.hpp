// What: reads the text of a job file or a DeepSpeed config into a JSON value: JSON (strict:
//       duplicate keys are errors, as DeepSpeed's loader treats them) or YAML 1.2 (core schema:
//       plain scalars that look like integers / floats / true / false / null become those;
//       quoted scalars stay strings), with limits on nesting depth and size.
// Why: one reader for both formats, so the strict field readers (core/json_fields.hpp) and
//      their one-line errors apply to YAML job files exactly as to JSON ones; every malformed
//      input is an InputError naming the file, never a crash (fuzzed: tests/fuzz/).
// Limits: nesting depth kMaxDepth, kMaxNodes values after YAML alias expansion, kMaxYamlBytes of
// YAML text; one YAML document (trailing text after it is an error).
#pragma once

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace gaccum::check {

enum class TextFormat { json, yaml, detect };

inline constexpr int kMaxDepth = 64;
inline constexpr long kMaxNodes = 100000;
inline constexpr std::size_t kMaxYamlBytes = std::size_t(1) << 20;  // 1 MiB

// "json" or "yaml" from a path's extension (.json / .yaml / .yml); detect otherwise.
TextFormat format_of_path(const std::string& path);

// `what` names the source in errors, e.g. "job.yaml". detect: JSON when the first
// non-blank character is '{' or '[', YAML otherwise. InputError on any problem.
nlohmann::json parse_structured_text(const std::string& text, TextFormat format, const std::string& what);

// Stable 64-bit hash of a parsed document (its canonical JSON: keys sorted), 16 hex digits.
std::string canonical_hash(const nlohmann::json& doc);

}  // namespace gaccum::check
