// Fuzz target: Megatron's pipeline-layout string (parse_pipeline_layout). A layout that parses is
// written back in Megatron's compressed form, which must parse to the same layout.
#include "fuzz_support.h"
#include "pipelab/profiles/pipeline_layout.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pipelab;
  const Result<PipelineLayout> parsed = parse_pipeline_layout(fuzz::as_text(data, size));
  if (!parsed) {
    fuzz::require(!parsed.error().message.empty(), "a parse error carries a message");
    return 0;
  }
  const Result<PipelineLayout> again = parse_pipeline_layout(parsed.value().to_megatron());
  fuzz::require(again.ok() && again.value() == parsed.value(), "to_megatron output parses back to the same layout");
  return 0;
}
