// What: unit tests for the hardening of the readers and searches against hostile input: the
//       JSON nesting limit and the strict reader without a deep copy (core/json_fields), checked
//       count arithmetic and flag limits (core/checked), plausibility of profile.json
//       (core/profile), and the bounded searches behind the tuner's suggested changes
//       (tuner/infeasibility) compared with a plain loop on small inputs and timed on huge ones.
// Why: each of these used to crash (stack overflow), hang (a loop up to the global batch) or
//      answer wrongly (a product wrapped around int64) with exit 0.
#include <catch2/catch.hpp>

#include <chrono>
#include <functional>
#include <fstream>
#include <limits>
#include <string>

#include "core/error.hpp"
#include "core/json_fields.hpp"
#include "core/profile.hpp"
#include "tests/unit/fake_cost_model.hpp"
#include "tuner/infeasibility.hpp"
#include "tuner/tuner.hpp"

using namespace gaccum;
using nlohmann::json;

namespace {

const std::string kSource = GACCUM_SOURCE_DIR;

// The message of the InputError `f` throws (one line), or "" when it throws none.
template <class F>
std::string input_error(F&& f) {
  try {
    f();
  } catch (const InputError& e) {
    std::string m = e.what();
    CHECK(m.find('\n') == std::string::npos);
    return m;
  }
  return "";
}

}  // namespace

TEST_CASE("JSON nested deeper than the limit is one InputError naming the file", "[json][harden]") {
  CHECK(json_nesting_depth("[]", 10) == 1);
  CHECK(json_nesting_depth(R"({"a": [[1], {"b": 2}]})", 10) == 3);
  // Brackets inside strings (and escaped quotes) do not count.
  CHECK(json_nesting_depth(R"(["[[[[", "\"[[[", {"k": "{{{{"}])", 10) == 2);
  CHECK(json_nesting_depth(std::string(100, '['), 10) == 11);  // stops counting past the limit

  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  auto msg = input_error([&] { (void)parse_json_text(deep, "deep.json"); });
  CHECK_THAT(msg, Catch::Contains("deep.json") && Catch::Contains("nested deeper than 512"));
  // Unbalanced (truncated) is refused before the parser sees it, with the same message.
  CHECK_THAT(input_error([&] { (void)parse_json_text(std::string(200000, '['), "t.json"); }),
             Catch::Contains("nested deeper than 512"));
  // 512 levels are fine.
  const std::string ok = std::string(512, '[') + std::string(512, ']');
  CHECK(parse_json_text(ok, "ok.json").is_array());
  CHECK_THAT(input_error([&] { (void)parse_json_text("[" + ok + "]", "x.json"); }), Catch::Contains("512"));
}

TEST_CASE("JsonFields refers to the document; a temporary is kept alive without a copy", "[json][harden]") {
  json doc = {{"a", 3}, {"inner", {{"b", 4}}}};
  JsonFields f(doc, "doc.json");
  CHECK(&f.raw() == &doc);  // no copy
  CHECK(&f.object("inner") == &doc.at("inner"));
  // From a temporary (e.g. parse_json_text's result): the reader owns it, and copies of the
  // reader share it.
  JsonFields g(parse_json_text(R"({"x": 7, "y": "s"})", "t.json"), "t.json");
  JsonFields h = g;
  CHECK(g.positive("x") == 7);
  CHECK(h.str("y") == "s");
  CHECK(&g.raw() == &h.raw());
  CHECK_THROWS_WITH(JsonFields(json::array(), "arr.json"), Catch::Contains("arr.json: expected a JSON object"));
}

