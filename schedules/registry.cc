// The table of schedules. Adding a schedule = one generator file + one row here.
#include "pipelab/schedules/registry.h"

#include <algorithm>
#include <cctype>
#include <limits>
#include <optional>

#include "pipelab/base/error.h"
#include "pipelab/base/limits.h"

namespace pipelab {
namespace {

std::string normalize(std::string_view name) {
  std::string out;
  for (char c : name) out.push_back(c == '_' ? '-' : static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

}  // namespace

const std::vector<ScheduleInfo>& schedule_registry() {
  static const std::vector<ScheduleInfo> registry = {
      {.name = "gpipe",
       .aliases = {"GPipe", "fill-drain"},
       .summary = "all forwards, then all backwards; holds m activations",
       .constraints = "vp=1",
       .make = make_gpipe,
       .default_vp = 1,
       .fixed_vp = true,
       .splits_backward = false},
      {.name = "1f1b",
       .aliases = {"1F1B", "pipedream-flush", "one-f-one-b"},
       .summary = "one forward one backward (Megatron non-interleaved)",
       .constraints = "vp=1",
       .make = make_1f1b,
       .default_vp = 1,
       .fixed_vp = true,
       .splits_backward = false},
      {.name = "interleaved-1f1b",
       .aliases = {"interleaved", "interleaved1f1b", "Interleaved1F1B", "vpp", "virtual-pipeline"},
       .summary = "Megatron interleaved 1F1B: vp chunks per rank, bubble (P-1)(F+B)/vp",
       .constraints = "vp>=1; with vp>1: m>=pp, group in [pp, m], m % group == 0 or >= pp",
       .make = make_interleaved_1f1b,
       .default_vp = 2,
       .fixed_vp = false,
       .splits_backward = false},
      {.name = "looped-bfs",
       .aliases = {"loopedbfs", "LoopedBFS", "bfs"},
       .summary = "breadth-first: every microbatch through a chunk before the next",
       .constraints = "vp>=1",
       .make = make_looped_bfs,
       .default_vp = 2,
       .fixed_vp = false,
       .splits_backward = false},
      {.name = "zb-h1",
       .aliases = {"zbh1", "zb1p", "zero-bubble", "zero-bubble-h1", "InterleavedZeroBubble", "ZB1P"},
       .summary = "zero-bubble H1: split backward, W deferred; bubble (P-1)(F+B-2W) at 1F1B memory",
       .constraints = "vp>=1 (vp>1 = PyTorch interleaved ZB1P; then the interleaving rules apply)",
       .make = make_zb_h1,
       .default_vp = 1,
       .fixed_vp = false,
       .splits_backward = true},
      {.name = "zb-h2",
       .aliases = {"zbh2", "zb2p", "zero-bubble-h2", "ZB2P"},
       .summary = "zero-bubble H2: 2P-1 warm-up forwards, W at the tail; more memory, less bubble",
       .constraints = "vp=1",
       .make = make_zb_h2,
       .default_vp = 1,
       .fixed_vp = true,
       .splits_backward = true},
      {.name = "zb-v",
       .aliases = {"zbv", "v-schedule", "ZBVZeroBubble", "zb-v-schedule"},
       .summary = "zero-bubble V: 2 chunks per rank in V placement, zero bubble when F=I=W and m>=2P",
       .constraints = "vp=2 (V placement)",
       .make = make_zb_v,
       .default_vp = 2,
       .fixed_vp = true,
       .splits_backward = true},
      {.name = "dualpipe",
       .aliases = {"DualPipe"},
       .summary = "DeepSeek DualPipe: bidirectional, overlapped F&B units, 2x parameters",
       .constraints = "pp even, m even, m>=2*pp; 2 stages per rank",
       .make = make_dualpipe,
       .default_vp = 2,
       .fixed_vp = true,
       .splits_backward = true},
      {.name = "dualpipev",
       .aliases = {"DualPipeV", "dualpipe-v", "cut-in-half"},
       .summary = "DualPipeV: DualPipe cut in half, V placement, overlapped F&B units",
       .constraints = "m>=2*pp; vp=2 (V placement)",
       .make = make_dualpipev,
       .default_vp = 2,
       .fixed_vp = true,
       .splits_backward = true},
  };
  return registry;
}

const ScheduleInfo& find_schedule(std::string_view name) {
  const std::string key = normalize(name);
  for (const auto& info : schedule_registry()) {
    if (normalize(info.name) == key) return info;
    for (const auto& alias : info.aliases) {
      if (normalize(alias) == key) return info;
    }
  }
  throw InputError("unknown schedule \"" + std::string(name) + "\"; valid schedules: " + schedule_names());
}

std::string schedule_names() {
  std::string out;
  for (const auto& info : schedule_registry()) {
    if (!out.empty()) out += ", ";
    out += info.name;
  }
  return out;
}

Schedule make_schedule(std::string_view name, const ScheduleOptions& options) {
  const ScheduleInfo& info = find_schedule(name);
  ScheduleOptions o = options;
  if (o.vp == 0) o.vp = info.default_vp;
  if (o.pp < 1) throw ScheduleError(info.name + " needs pp >= 1, got " + std::to_string(o.pp));
  if (o.microbatches < 1) throw ScheduleError(info.name + " needs microbatches >= 1, got " + std::to_string(o.microbatches));
  if (o.vp < 1) throw ScheduleError(info.name + " needs vp >= 1, got " + std::to_string(o.vp));
  // Every (stage, microbatch) has an F, a backward and possibly a W: refuse sizes that would not fit
  // in memory rather than fail deep inside an allocation.
  // ZB-V pads every rank to max(m, 2P-1) microbatches, so count that.
  // Multiplied in 64 bits with a check: pp, vp and microbatches may each be up to 2^30 here.
  std::int64_t actions = 3;
  bool overflow = false;
  for (const std::int64_t factor : {std::int64_t{o.pp}, std::int64_t{o.vp}, std::max<std::int64_t>(o.microbatches, 2LL * o.pp - 1)}) {
    const std::optional<std::int64_t> next = limits::checked_mul(actions, factor);
    overflow = overflow || !next;
    actions = next.value_or(std::numeric_limits<std::int64_t>::max());
  }
  if (overflow || actions > kMaxScheduleActions) {
    throw ScheduleError(info.name + " with pp=" + std::to_string(o.pp) + ", vp=" + std::to_string(o.vp) + ", microbatches=" +
                        std::to_string(o.microbatches) + " has about " + (overflow ? std::string("2^63 or more") : std::to_string(actions)) +
                        " actions; the limit is " +
                        std::to_string(kMaxScheduleActions));
  }
  return info.make(o);
}

}  // namespace pipelab
