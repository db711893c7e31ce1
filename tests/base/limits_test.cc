// Tests for include/pipelab/base/limits.h and the bounds base's readers enforce with it: checked
// products, saturated times, the JSON nesting limit (before parsing, located) and the file-size
// limit (checked before reading a regular file and while reading anything else).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <limits>
#include <string>

#include "pipelab/base/file_io.h"
#include "pipelab/base/json_reader.h"
#include "pipelab/base/limits.h"

namespace pipelab {
namespace {

using ::testing::HasSubstr;
constexpr std::int64_t kInt64Max = std::numeric_limits<std::int64_t>::max();

TEST(CheckedArithmetic, ReportsOverflowInsteadOfWrapping) {
  EXPECT_EQ(limits::checked_mul(1 << 20, 1 << 20), std::int64_t{1} << 40);
  EXPECT_FALSE(limits::checked_mul(std::int64_t{1} << 32, std::int64_t{1} << 32).has_value());
  EXPECT_FALSE(limits::checked_mul(kInt64Max, -2).has_value());
  EXPECT_EQ(limits::checked_add(kInt64Max - 1, 1), kInt64Max);
  EXPECT_FALSE(limits::checked_add(kInt64Max, 1).has_value());
}

TEST(CheckedArithmetic, ProductWithinNamesTheProductAndTheLimit) {
  EXPECT_EQ(limits::product_within({4, 4, 1, 4}, limits::kMaxWorldSize, "world size", "4*4*1*4"), 64);
  try {
    limits::product_within({std::int64_t{1} << 40, std::int64_t{1} << 40, 3}, limits::kMaxWorldSize, "world size tp*pp*cp", "2^40*2^40*3");
    FAIL() << "expected the product to be refused";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "world size tp*pp*cp = 2^40*2^40*3 exceeds the limit of 1048576");
  }
}

TEST(SaturatedNs, RoundsInRangeAndSaturatesOutside) {
  EXPECT_EQ(limits::saturated_ns(1234.4), 1234);
  EXPECT_EQ(limits::saturated_ns(-2.6), -3);
  EXPECT_EQ(limits::saturated_ns(1e300), limits::kMaxDurationNs + 1);
  EXPECT_EQ(limits::saturated_ns(-1e300), -(limits::kMaxDurationNs + 1));
  EXPECT_EQ(limits::saturated_ns(std::numeric_limits<double>::infinity()), limits::kMaxDurationNs + 1);
  EXPECT_EQ(limits::saturated_ns(std::numeric_limits<double>::quiet_NaN()), limits::kMaxDurationNs + 1);
}

std::string nested(int depth, const std::string& inside = "1") {
  return std::string(static_cast<std::size_t>(depth), '[') + inside + std::string(static_cast<std::size_t>(depth), ']');
}

TEST(JsonDepth, NestingUpToTheLimitParsesAndDeeperIsRefusedWithItsPlace) {
  EXPECT_TRUE(parse_json_document(nested(limits::kMaxJsonDepth)).ok());
  const Result<nlohmann::json> deep = parse_json_document("{\"a\":\n " + nested(10000) + "}");
  ASSERT_FALSE(deep.ok());
  EXPECT_EQ(deep.error().line, 2);
  EXPECT_EQ(deep.error().column, 65);  // the 64th '[' on the line is the 65th level
  EXPECT_THAT(deep.error().message, HasSubstr("arrays and objects nested deeper than 64 levels"));
  EXPECT_THAT([] { parse_json_text(nested(65), "deep.json"); },
              ::testing::ThrowsMessage<InputError>(HasSubstr("deep.json: invalid JSON: at line 1, column 65")));
}

TEST(JsonDepth, BracketsInsideStringsAreNotNesting) {
  const std::string text = "{\"name\": \"" + std::string(1000, '[') + "\\\"" + std::string(1000, '{') + "\"}";
  const Result<nlohmann::json> doc = parse_json_document(text);
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ(doc.value()["name"].get<std::string>().size(), 2001u);
}

// A key twice in one object is refused (readers disagree on which value wins); the same key in
// sibling or nested objects is not a repeat. Result files are read keeping the last, unchecked.
TEST(JsonKeys, AKeyTwiceInOneObjectIsRefused) {
  EXPECT_TRUE(parse_json_document(R"({"a": {"n": 1}, "b": {"n": 2}, "c": [{"n": 3}, {"n": 4}], "n": {"n": 5}})").ok());
  for (const char* text : {R"({"num_layers": 4, "num_layers": 8})", R"({"a": [{"x": 1, "y": 2, "x": 3}]})",
                           R"({"a": {"b": {}, "c": 1}, "a": 2})"}) {
    const Result<nlohmann::json> doc = parse_json_document(text);
    ASSERT_FALSE(doc.ok()) << text;
    EXPECT_THAT(doc.error().message, HasSubstr("appears twice in one object")) << text;
  }
  EXPECT_THAT([] { parse_json_text(R"({"hidden_size": 1, "hidden_size": 2})", "m.json"); },
              ::testing::ThrowsMessage<InputError>(HasSubstr("m.json: invalid JSON: key 'hidden_size' appears twice in one object")));
  const Result<nlohmann::json> last = parse_json_document(R"({"n": 4, "n": 8})", DuplicateKeys::kKeepLast);
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last.value()["n"], 8);
}

TEST(ReadTextFile, RefusesFilesOverTheLimitBeforeOrWhileReading) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "pipelab_limits_test";
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "ten_bytes.txt").string();
  write_text_file(file, "0123456789");
  EXPECT_EQ(read_text_file(file, "file", 10), "0123456789");
  EXPECT_THAT([&] { read_text_file(file, "model file", 9); },
              ::testing::ThrowsMessage<InputError>(HasSubstr("model file '" + file + "' is 10 bytes; pipelab reads files of at most 9 bytes")));
  // Not a regular file: its size is unknown, so reading stops once past the limit.
  EXPECT_THAT([] { read_text_file("/dev/zero", "schedule file", 1 << 20); },
              ::testing::ThrowsMessage<InputError>(HasSubstr("'/dev/zero' holds more than 1048576 bytes")));
  EXPECT_THAT([&] { read_text_file(dir.string(), "result"); }, ::testing::ThrowsMessage<InputError>(HasSubstr("it is a directory")));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pipelab
