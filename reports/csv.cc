// CSV renderers: a summary row per (input, schedule, timeline) with every summary metric as the
// result wrote it (no unit conversion), and one row per timeline event.
#include <algorithm>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>

#include "csv.h"

#include "config_view.h"
#include "format.h"
#include "pipelab/reports/render.h"
#include "table_model.h"

namespace pipelab::reports {
namespace detail {

std::string csv_field(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace detail

using namespace detail;

namespace {

// A figure the result states as null (not applicable) is an empty cell.
std::string optional_number(const std::optional<double>& v) { return v ? json_number(*v) : std::string(); }

}  // namespace

std::string render_summary_csv(const std::vector<ReportInput>& inputs) {
  std::ostringstream os;
  // A failed schedule leaves every result column empty: one comma per column of kResultColumns.
  constexpr std::string_view kResultColumns =
      "makespan_ns,bubble_ratio,tflops_per_gpu,mfu,tokens_per_s_per_gpu,max_peak_memory_bytes,peak_memory_bytes,"
      "exposed_comm_ns,memory_capacity_bytes,oom,model_flops,tokens_per_iteration,pipeline_bubble_ratio,stage_imbalance,"
      "exposed_pp_comm_ns,exposed_dp_comm_ns,other_idle_ns,exposed_tp_comm_ns,exposed_ep_comm_ns,exposed_cp_comm_ns,"
      "exposed_fsdp_comm_ns,exposed_offload_ns,host_wait_ns,span_bubble_rate,optimizer_step_ns,";
  const std::string no_results(static_cast<std::size_t>(std::count(kResultColumns.begin(), kResultColumns.end(), ',')), ',');
  os << "input,kind,schedule,source,status,error,model,gpu,tp,pp,vp,cp,ep,dp,gpus,mbs,gbs,microbatches,seq_length,"
     << kResultColumns << "iterations\n";
  for (const ReportInput& in : inputs) {
    const auto& c = in.config;
    // The vp cell is each schedule's own chunks per rank (a fixed-vp schedule runs with its own).
    std::ostringstream before_vp, after_vp;
    before_vp << csv_field(config_name(c, "model")) << "," << csv_field(config_name(c, "gpu"));
    for (const char* k : {"tp", "pp"}) before_vp << "," << csv_field(config_text(c, {"parallel", k}));
    for (const char* k : {"cp", "ep", "dp"}) after_vp << "," << csv_field(config_text(c, {"parallel", k}));
    after_vp << "," << csv_field(config_gpus(c));
    for (const char* k : {"mbs", "gbs", "microbatches", "seq_length"}) after_vp << "," << csv_field(config_text(c, {"parallel", k}));
    const std::string config_vp = csv_field(config_text(c, {"parallel", "vp"}));
    const std::string lead = csv_field(in.name) + "," + csv_field(in.kind) + ",";
    for (const ScheduleResult& s : in.schedules) {
      const std::string config_fields = before_vp.str() + "," + (s.vp > 0 ? std::to_string(s.vp) : config_vp) + after_vp.str();
      if (s.failed()) {
        os << lead << csv_field(s.schedule) << ",,error," << csv_field(s.error) << "," << config_fields
           << "," << no_results << config_iterations(c) << "\n";
        continue;
      }
      for (const TimelineResult& run : s.runs) {
        const Summary& m = run.summary;
        std::string peaks;
        for (std::size_t r = 0; r < m.peak_memory_bytes.size(); ++r) {
          peaks += (r ? ";" : "") + std::to_string(m.peak_memory_bytes[r]);
        }
        os << lead << csv_field(s.schedule) << "," << run.source << ",ok,," << config_fields << "," << m.makespan_ns
           << "," << json_number(m.bubble_ratio) << "," << optional_number(m.tflops_per_gpu) << "," << optional_number(m.mfu)
           << "," << json_number(m.tokens_per_s_per_gpu) << "," << m.max_peak_memory_bytes() << "," << peaks << ","
           << m.exposed_comm_ns << "," << m.memory_capacity_bytes << "," << (m.oom ? "true" : "false") << ","
           << json_number(m.model_flops) << "," << m.tokens_per_iteration << "," << json_number(m.pipeline_bubble_ratio) << ","
           << json_number(m.stage_imbalance) << "," << m.exposed_pp_comm_ns << "," << m.exposed_dp_comm_ns << "," << m.other_idle_ns
           << "," << m.exposed_tp_comm_ns << "," << m.exposed_ep_comm_ns << "," << m.exposed_cp_comm_ns << ","
           << m.exposed_fsdp_comm_ns << "," << m.exposed_offload_ns << "," << m.host_wait_ns << "," << json_number(m.span_bubble_rate) << "," << m.optimizer_step_ns << ","
           << config_iterations(c) << "\n";
      }
    }
  }
  return os.str();
}

std::string render_timeline_csv(const std::vector<ReportInput>& inputs) {
  std::ostringstream os;
  os << "input,schedule,source,rank,action,stream,start_ns,end_ns,bytes,flops\n";
  for_each_timeline(inputs, [&](const ReportInput& in, const ScheduleResult& s, const TimelineResult& run) {
    const std::string lead = csv_field(in.name) + "," + csv_field(s.schedule) + "," + run.source + ",";
    for (std::size_t r = 0; r < run.timeline.ranks.size(); ++r) {
      for (const TimelineEvent& e : run.timeline.ranks[r]) {
        os << lead << r << "," << csv_field(to_string(e.action)) << "," << stream_name(e.stream) << ","
           << e.start_ns << "," << e.end_ns << "," << e.bytes << "," << json_number(e.flops) << "\n";
      }
    }
  });
  return os.str();
}

}  // namespace pipelab::reports
