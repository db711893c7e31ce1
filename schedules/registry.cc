// The table of schedules. Adding a schedule = one generator file + one row here.
#include "pipelab/schedules/registry.h"

#include <algorithm>
#include <cctype>

#include "pipelab/base/error.h"

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
      {"gpipe", {"GPipe", "fill-drain"}, "all forwards, then all backwards; holds m activations",
       "vp=1", make_gpipe, 1, true, false},
      {"1f1b", {"1F1B", "pipedream-flush", "one-f-one-b"}, "one forward one backward (Megatron non-interleaved)",
       "vp=1", make_1f1b, 1, true, false},
      {"interleaved-1f1b", {"interleaved1f1b", "Interleaved1F1B", "vpp", "virtual-pipeline"},
       "Megatron interleaved 1F1B: vp chunks per rank, bubble (P-1)(F+B)/vp",
       "vp>=1; with vp>1: m>=pp, group in [pp, m], m % group == 0 or >= pp", make_interleaved_1f1b, 2, false, false},
      {"looped-bfs", {"loopedbfs", "LoopedBFS", "bfs"}, "breadth-first: every microbatch through a chunk before the next",
       "vp>=1", make_looped_bfs, 2, false, false},
      {"zb-h1", {"zbh1", "zb1p", "zero-bubble", "zero-bubble-h1", "InterleavedZeroBubble", "ZB1P"},
       "zero-bubble H1: split backward, W deferred; bubble (P-1)(F+B-2W) at 1F1B memory",
       "vp>=1 (vp>1 = PyTorch interleaved ZB1P; then the interleaving rules apply)", make_zb_h1, 1, false, true},
      {"zb-h2", {"zbh2", "zb2p", "zero-bubble-h2", "ZB2P"},
       "zero-bubble H2: 2P-1 warm-up forwards, W at the tail; more memory, less bubble", "vp=1", make_zb_h2, 1, true,
       true},
      {"zb-v", {"zbv", "v-schedule", "ZBVZeroBubble", "zb-v-schedule"},
       "zero-bubble V: 2 chunks per rank in V placement, zero bubble when F=I=W and m>=2P", "vp=2 (V placement)",
       make_zb_v, 2, true, true},
      {"dualpipe", {"DualPipe"}, "DeepSeek DualPipe: bidirectional, overlapped F&B units, 2x parameters",
       "pp even, m even, m>=2*pp; 2 stages per rank", make_dualpipe, 2, true, true},
      {"dualpipev", {"DualPipeV", "dualpipe-v", "cut-in-half"},
       "DualPipeV: DualPipe cut in half, V placement, overlapped F&B units", "m>=2*pp; vp=2 (V placement)",
       make_dualpipev, 2, true, true},
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
  const long long actions = 3LL * o.pp * o.vp * std::max(o.microbatches, 2 * o.pp - 1);
  if (actions > kMaxScheduleActions) {
    throw ScheduleError(info.name + " with pp=" + std::to_string(o.pp) + ", vp=" + std::to_string(o.vp) + ", microbatches=" +
                        std::to_string(o.microbatches) + " has about " + std::to_string(actions) + " actions; the limit is " +
                        std::to_string(kMaxScheduleActions));
  }
  return info.make(o);
}

}  // namespace pipelab
