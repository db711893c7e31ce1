// Escaping for the HTML report's text and attributes (html.cc, and the charts of svg_charts.cc).
#pragma once

#include <string>
#include <string_view>

namespace pipelab::reports::detail {

/// Escapes & < > " ' for element text and attribute values.
std::string html_escape(std::string_view s);
/// An attribute value: html_escape.
inline std::string attr(std::string_view s) { return html_escape(s); }

}  // namespace pipelab::reports::detail
