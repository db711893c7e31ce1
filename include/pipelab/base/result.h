// Result<T>: a value or a located error, for parsers that must never throw on bad bytes (so a fuzzer
// can drive them) and for APIs where failure is an ordinary outcome.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace pipelab {

/// Where and why input was rejected. line/column are 1-based; 0 means "not applicable".
struct ParseError {
  std::string message;
  int line = 0;
  int column = 0;

  std::string to_string() const {
    if (line == 0) return message;
    return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": " + message;
  }
};

template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}            // NOLINT: implicit by design
  Result(ParseError error) : v_(std::move(error)) {}   // NOLINT: implicit by design

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  const T& value() const& { return std::get<0>(v_); }
  T& value() & { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  const ParseError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, ParseError> v_;
};

}  // namespace pipelab
