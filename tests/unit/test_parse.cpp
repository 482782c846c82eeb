// Unit tests for core/parse: every accepted spelling and every rejection, by hand.
#include <catch2/catch.hpp>

#include "core/error.hpp"
#include "core/parse.hpp"

using namespace gaccum;

TEST_CASE("sizes use binary prefixes", "[parse]") {
  CHECK(parse_bytes("512", "x") == 512);
  CHECK(parse_bytes("4K", "x") == 4096);
  CHECK(parse_bytes("4KiB", "x") == 4096);
  CHECK(parse_bytes("1.5MiB", "x") == 1572864);
  CHECK(parse_bytes("20GiB", "x") == 20ull * 1024 * 1024 * 1024);
  CHECK(parse_bytes(" 2g ", "x") == 2147483648ull);
  CHECK_THROWS_AS(parse_bytes("", "x"), InputError);
  CHECK_THROWS_AS(parse_bytes("-1K", "x"), InputError);
  CHECK_THROWS_AS(parse_bytes("12Q", "x"), InputError);
  CHECK_THROWS_AS(parse_bytes("0.3B", "x"), InputError);
  CHECK_THROWS_AS(parse_bytes("99999999999T", "x"), InputError);
  CHECK_THROWS_WITH(parse_bytes("abc", "--memory-cap"), Catch::Contains("--memory-cap"));
}

TEST_CASE("fractions and memory caps", "[parse]") {
  CHECK(parse_fraction("90%", "x") == Approx(0.9));
  CHECK(parse_fraction("0.25", "x") == Approx(0.25));
  CHECK_THROWS_AS(parse_fraction("120%", "x"), InputError);
  auto cap = parse_memory_cap("50%", "--memory-cap");
  CHECK(cap.resolve(1000) == 500);
  auto abs = parse_memory_cap("1GiB", "--memory-cap");
  CHECK(abs.resolve(12345) == 1073741824ull);
  CHECK_THROWS_AS(parse_memory_cap("0", "--memory-cap"), InputError);
  CHECK_THROWS_AS(parse_memory_cap("0%", "--memory-cap"), InputError);
}

TEST_CASE("positive counts reject zero, negatives, fractions and overflow", "[parse]") {
  CHECK(parse_positive_count("8", "x") == 8);
  CHECK(parse_positive_count("+8", "x") == 8);
  CHECK(parse_positive_count("9223372036854775807", "x") == 9223372036854775807LL);
  CHECK_THROWS_AS(parse_positive_count("0", "x"), InputError);
  CHECK_THROWS_AS(parse_positive_count("-3", "x"), InputError);
  CHECK_THROWS_AS(parse_positive_count("2.5", "x"), InputError);
  CHECK_THROWS_AS(parse_positive_count("9223372036854775808", "x"), InputError);
  CHECK_THROWS_WITH(parse_positive_count("1e40", "--micro-batch"), Catch::Contains("--micro-batch"));
}

TEST_CASE("lists, ranges and sweeps", "[parse]") {
  CHECK(parse_count_list("1,2,4,8", "x") == std::vector<Count>{1, 2, 4, 8});
  CHECK_THROWS_AS(parse_count_list("1,,2", "x"), InputError);
  CHECK(parse_count_range("256-1024", "x") == std::pair<Count, Count>{256, 1024});
  CHECK_THROWS_AS(parse_count_range("1024-256", "x"), InputError);
  CHECK(parse_size_sweep("4K-64K*4", "x") == std::vector<Bytes>{4096, 16384, 65536});
  CHECK(parse_size_sweep("4K-256M*4", "x").size() == 9);  // 2^12, 2^14, ..., 2^28
  CHECK(parse_size_sweep("4K-256M*4", "x").back() == 256ull * 1024 * 1024);
  CHECK(parse_size_sweep("1K-3K+1K", "x") == std::vector<Bytes>{1024, 2048, 3072});
  CHECK(parse_size_sweep("1M", "x") == std::vector<Bytes>{1048576});
  CHECK(parse_size_sweep("4K,1M", "x") == std::vector<Bytes>{4096, 1048576});
  CHECK_THROWS_AS(parse_size_sweep("64K-4K*2", "x"), InputError);
  CHECK_THROWS_AS(parse_size_sweep("4K-64K*1", "x"), InputError);
}

TEST_CASE("durations", "[parse]") {
  CHECK(parse_seconds("60s", "x") == Approx(60));
  CHECK(parse_seconds("500ms", "x") == Approx(0.5));
  CHECK(parse_seconds("2m", "x") == Approx(120));
  CHECK(parse_seconds("1.5", "x") == Approx(1.5));
  CHECK_THROWS_AS(parse_seconds("soon", "x"), InputError);
  // At most 100 years: every timeout becomes int64 milliseconds and a steady_clock deadline, which
  // 99999999999999999999999d (8.64e27 s) overflowed into an instant "did not join within 8.64e+27 s".
  CHECK(parse_seconds("36525d", "x") == Approx(kMaxSeconds));
  CHECK_THROWS_WITH(parse_seconds("99999999999999999999999d", "--timeout"),
                    "--timeout: invalid value '99999999999999999999999d': expected a duration of at most 36525d (100 "
                    "years)");
  CHECK_THROWS_AS(parse_seconds("36526d", "x"), InputError);
  CHECK_THROWS_AS(parse_seconds("3155760001", "x"), InputError);
}

TEST_CASE("zero or a positive count", "[parse]") {
  CHECK(parse_count_or_zero("0", "--seed") == 0);
  CHECK(parse_count_or_zero("000", "--seed") == 0);
  CHECK(parse_count_or_zero("+0", "--seed") == 0);
  CHECK(parse_count_or_zero("17", "--seed") == 17);
  CHECK_THROWS_WITH(parse_count_or_zero("-1", "--seed"),
                    "--seed: invalid value '-1': expected 0 or a positive integer (got a negative number)");
  CHECK_THROWS_AS(parse_count_or_zero("", "--seed"), InputError);
  CHECK_THROWS_AS(parse_count_or_zero("1.5", "--seed"), InputError);
  CHECK_THROWS_AS(parse_count_or_zero("99999999999999999999", "--seed"), InputError);
}
