// CSV quoting of the CSV renderers (csv.cc).
#pragma once

#include <string>
#include <string_view>

namespace pipelab::reports::detail {

/// Quotes a CSV field when it holds a comma, quote or newline (RFC 4180).
std::string csv_field(std::string_view s);

}  // namespace pipelab::reports::detail
