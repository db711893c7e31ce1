// The HTML report's stylesheet and script, compiled in from reports/assets/report.css and
// report.js (reports/embed_assets.cmake), so a report is one file with nothing to fetch.
#pragma once

#include <string_view>

namespace pipelab::reports::detail {

std::string_view report_css();
std::string_view report_js();

}  // namespace pipelab::reports::detail
