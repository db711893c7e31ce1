// Chrome trace event format (JSON object form), readable by Perfetto and chrome://tracing: one
// complete ("X") event per timeline event, pid = rank (offset per timeline), tid = stream.
#include <algorithm>
#include <ostream>
#include <sstream>

#include "table_model.h"
#include "pipelab/reports/render.h"

namespace pipelab::reports {

using nlohmann::json;

// Streams as trace threads: tid = the Stream's value (compute 0, send 1, recv 2, collective 3);
// a GPU run's kernels and copies (CUPTI) on one more thread under them; a simulated MoE run's
// phases on another.
constexpr int kNumStreams = static_cast<int>(Stream::Collective) + 1;
constexpr int kDeviceTid = kNumStreams;
constexpr int kPhaseTid = kNumStreams + 1;  // the cost model's phases of compute actions
using namespace detail;

namespace {

// One timeline event as emit(json) would print it (keys sorted), written without building the
// object: a large timeline's trace is mostly these.
void write_action_event(std::ostream& os, const TimelineEvent& e, std::int64_t pid) {
  os << "{\"args\":{";
  if (e.action.op == Op::OverlapFB) os << "\"b_microbatch\":" << e.action.b_mb << ",\"b_stage\":" << e.action.b_stage << ",";
  os << "\"bytes\":" << e.bytes << ",\"end_ns\":" << e.end_ns << ",\"flops\":" << json(e.flops).dump()
     << ",\"microbatch\":" << e.action.mb << ",\"stage\":" << e.action.stage << ",\"start_ns\":" << e.start_ns << "}"
     << ",\"cat\":" << json(std::string(op_name(e.action.op))).dump()
     << ",\"dur\":" << json(static_cast<double>(e.end_ns - e.start_ns) / 1e3).dump()
     << ",\"name\":" << json(to_string(e.action)).dump() << ",\"ph\":\"X\",\"pid\":" << pid
     << ",\"tid\":" << static_cast<int>(e.stream) << ",\"ts\":" << json(static_cast<double>(e.start_ns) / 1e3).dump() << "}";
}

}  // namespace

std::string render_chrome_trace(const std::vector<ReportInput>& inputs) {
  std::ostringstream os;
  write_chrome_trace(os, inputs);
  return os.str();
}

void write_chrome_trace(std::ostream& os, const std::vector<ReportInput>& inputs) {
  struct Block {
    const ReportInput* input;
    const ScheduleResult* schedule;
    const TimelineResult* run;
  };
  std::vector<Block> blocks;
  std::size_t max_ranks = 0;
  for_each_timeline(inputs, [&](const ReportInput& in, const ScheduleResult& s, const TimelineResult& run) {
    blocks.push_back({&in, &s, &run});
    max_ranks = std::max(max_ranks, run.timeline.ranks.size());
  });
  const std::size_t stride = (max_ranks / 1000 + 1) * 1000;
  os << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"pipelab report\",\"pid_stride\":" << stride
     << "},\"traceEvents\":[";
  bool first = true;
  auto emit = [&](const json& e) {
    os << (first ? "\n" : ",\n") << e.dump();
    first = false;
  };
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    const Block& bl = blocks[b];
    std::string prefix;
    if (blocks.size() > 1) {
      if (inputs.size() > 1) prefix += bl.input->name + " ";
      prefix += bl.schedule->schedule + " ";
      if (bl.run->source != "simulated") prefix += bl.run->source + " ";
    }
    const Timeline& t = bl.run->timeline;
    for (std::size_t r = 0; r < t.ranks.size(); ++r) {
      if (t.ranks[r].empty()) continue;  // no process for a rank without events (a sparse result stays small)
      const auto pid = static_cast<std::int64_t>(b * stride + r);
      emit({{"name", "process_name"}, {"ph", "M"}, {"pid", pid}, {"tid", 0},
            {"args", {{"name", prefix + "rank " + std::to_string(r)}}}});
      emit({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", 0}, {"args", {{"sort_index", pid}}}});
      for (int tid = 0; tid < kNumStreams; ++tid) {
        emit({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", tid},
              {"args", {{"name", std::string(stream_name(static_cast<Stream>(tid)))}}}});
        emit({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", tid}, {"args", {{"sort_index", tid}}}});
      }
      for (const TimelineEvent& e : t.ranks[r]) {
        os << (first ? "\n" : ",\n");
        first = false;
        write_action_event(os, e, pid);
      }
      if (!bl.run->phases.empty()) {
        bool phases_named = false;
        for (const TimelineEvent& e : t.ranks[r]) {
          const ActionPhases* kind = e.stream == Stream::Compute ? find_phases(bl.run->phases, e.action) : nullptr;
          if (kind == nullptr) continue;
          if (!phases_named) {
            emit({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", kPhaseTid}, {"args", {{"name", "phases"}}}});
            emit({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", kPhaseTid}, {"args", {{"sort_index", kPhaseTid}}}});
            phases_named = true;
          }
          const std::string action = to_string(e.action);
          for (const PhaseSpan& p : lay_out_phases(e, *kind)) {
            emit({{"name", p.phase->name},
                  {"cat", "phase"},
                  {"ph", "X"},
                  {"pid", pid},
                  {"tid", kPhaseTid},
                  {"ts", static_cast<double>(p.start_ns) / 1e3},
                  {"dur", static_cast<double>(p.end_ns - p.start_ns) / 1e3},
                  {"args", {{"action", action}, {"comm_ns", p.phase->comm_ns}, {"exposed_comm_ns", p.exposed_ns}}}});
          }
        }
      }
      bool named = false;
      for (const DeviceActivity& a : bl.run->device_activity) {
        if (static_cast<std::size_t>(a.rank) != r) continue;
        if (!named) {
          emit({{"name", "thread_name"}, {"ph", "M"}, {"pid", pid}, {"tid", kDeviceTid}, {"args", {{"name", "kernels"}}}});
          emit({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", pid}, {"tid", kDeviceTid}, {"args", {{"sort_index", kDeviceTid}}}});
          named = true;
        }
        emit({{"name", a.name},
              {"cat", a.bytes > 0 ? "memcpy" : "kernel"},
              {"ph", "X"},
              {"pid", pid},
              {"tid", kDeviceTid},
              {"ts", static_cast<double>(a.start_ns) / 1e3},
              {"dur", static_cast<double>(a.end_ns - a.start_ns) / 1e3},
              {"args", {{"action", a.action}, {"bytes", a.bytes}}}});
      }
    }
  }
  os << "\n]}\n";
}

}  // namespace pipelab::reports
