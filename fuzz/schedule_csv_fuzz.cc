// Fuzz target: PyTorch pipelining CSV in both forms (parse_csv compute_only and compute_comms, and
// the sniffing parse_schedule). A schedule that parses is validated, rendered and simulated as
// the JSON target does, and its rows round-trip through to_csv.
#include "fuzz_support.h"
#include "schedule_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pipelab;
  const std::string_view text = fuzz::as_text(data, size);
  for (const CsvFormat format : {CsvFormat::ComputeOnly, CsvFormat::ComputeComms}) {
    const Result<Schedule> parsed = parse_csv(text, format, "fuzz.csv");
    if (!parsed) {
      fuzz::require(!parsed.error().message.empty(), "a parse error carries a message");
      continue;
    }
    const Schedule& s = parsed.value();
    // Trailing newlines end the last row, so a last rank without actions cannot be written back.
    if (!s.ranks.back().empty()) {
      const Result<Schedule> again = parse_csv(to_csv(s), format, "fuzz.csv");
      fuzz::require(again.ok() && again.value().ranks == s.ranks, "to_csv output parses back to the same rows");
    }
    fuzz::check_schedule(s);
  }
  (void)parse_schedule(text, "fuzz");
  return 0;
}
