// Megatron's microbatch-group table for interleaved pipelines.
#include "interleaved_table.h"

#include <algorithm>

#include "rank_builder.h"

namespace pipelab::detail {

std::vector<int> interleaved_chunk_order(int microbatches, int chunks, int group) {
  std::vector<int> order;
  order.reserve(static_cast<std::size_t>(microbatches) * chunks);
  for (int first = 0; first < microbatches; first += group) {
    // The last group takes every remaining microbatch.
    const int last = first + group >= microbatches ? microbatches : first + group;
    for (int c = 0; c < chunks; ++c) {
      for (int mb = first; mb < last; ++mb) order.push_back(c);
    }
    if (last == microbatches) break;
  }
  return order;
}

int check_interleaving(const std::string& name, int pp, int chunks, int microbatches, int group) {
  const int n = group > 0 ? group : pp;
  if (chunks <= 1) return n;
  require(microbatches >= pp, name + " needs microbatches >= pp=" + std::to_string(pp) + " when vp > 1, got " +
                                  std::to_string(microbatches));
  require(n >= pp, name + " needs microbatch group size >= pp=" + std::to_string(pp) + ", got " + std::to_string(n));
  require(n <= microbatches, name + " needs microbatch group size <= microbatches=" + std::to_string(microbatches) +
                                 ", got " + std::to_string(n));
  const int rest = microbatches % n;
  require(rest == 0 || rest >= pp,
          name + " needs microbatches % group (" + std::to_string(microbatches) + " % " + std::to_string(n) + " = " +
              std::to_string(rest) + ") to be 0 or >= pp=" + std::to_string(pp) + " (Megatron's interleaving rule)");
  return n;
}

InterleavedPlan make_interleaved_plan(const std::string& name, const ScheduleOptions& o, int default_vp) {
  InterleavedPlan p;
  p.v = o.vp > 0 ? o.vp : default_vp;
  p.group = check_interleaving(name, o.pp, p.v, o.microbatches, o.group_size);
  p.shape = make_shape(o.pp, o.pp * p.v, o.microbatches, Placement::Loop);
  p.chunk = interleaved_chunk_order(o.microbatches, p.v, p.group);
  p.total = o.microbatches * p.v;
  return p;
}

}  // namespace pipelab::detail
