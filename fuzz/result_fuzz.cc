// Fuzz target: result JSON as `pipelab report` reads it (load_result over parse_json_text, keeping the
// last of a repeated key as result files are read), then
// every renderer (Markdown, HTML, CSV, Chrome trace, terminal summary) on what loaded.
#include <nlohmann/json.hpp>

#include "fuzz_support.h"
#include "pipelab/base/json_reader.h"
#include "pipelab/reports/render.h"
#include "pipelab/reports/result.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pipelab;
  fuzz::refusing_bad_input([&] {
    const std::vector<reports::ReportInput> inputs = {
        reports::load_result(parse_json_text(fuzz::as_text(data, size), "fuzz.json", DuplicateKeys::kKeepLast), "fuzz")};
    for (const reports::Format format : {reports::Format::Markdown, reports::Format::Html, reports::Format::SummaryCsv, reports::Format::TimelineCsv,
                                         reports::Format::Trace}) {
      fuzz::require(!reports::render(inputs, format).empty(), "a report is not empty");
    }
    (void)reports::render_summary_text(inputs);
  });
  return 0;
}
