// `pipelab list [schedules]`: what pipelab knows about.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <string_view>

#include "commands.h"
#include "pipelab/base/error.h"
#include "pipelab/profiles/gpu_spec.h"
#include "pipelab/profiles/model_spec.h"
#include "pipelab/profiles/presets.h"
#include "pipelab/schedules/registry.h"

namespace pipelab::app {
namespace {

// "  aliases: a, b" under a row, or nothing when there are none.
void print_aliases(std::ostream& os, int indent, const std::vector<std::string>& aliases) {
  if (aliases.empty()) return;
  std::string list;
  for (const auto& a : aliases) list += (list.empty() ? "" : ", ") + a;
  os << std::setw(indent) << "" << "aliases: " << list << "\n";
}

void print_schedules(std::ostream& os) {
  // The description column as wide as the longest description, so the columns never run together.
  std::size_t width = 0;
  for (const ScheduleInfo& info : schedule_registry()) width = std::max(width, std::string_view(info.summary).size() + 2);
  const int w = static_cast<int>(width);
  os << std::left << std::setw(18) << "# schedule" << std::setw(w) << "description" << "constraints\n";
  for (const ScheduleInfo& info : schedule_registry()) {
    os << std::left << std::setw(18) << info.name << std::setw(w) << info.summary << info.constraints << "\n";
    print_aliases(os, 18, info.aliases);
  }
}

void print_models(std::ostream& os) {
  os << std::left << std::setw(16) << "# model" << std::setw(8) << "layers" << std::setw(8) << "hidden" << std::setw(8) << "heads"
     << std::setw(8) << "groups" << std::setw(8) << "ffn" << std::setw(9) << "experts" << std::setw(8) << "seq" << "params (B)\n";
  for (const std::string& name : model_preset_names()) {
    const ModelSpec m = model_preset(name);
    os << std::left << std::setw(16) << name << std::setw(8) << m.num_layers << std::setw(8) << m.hidden_size << std::setw(8)
       << m.num_attention_heads << std::setw(8) << m.num_query_groups << std::setw(8) << m.ffn_hidden_size << std::setw(9)
       << (m.is_moe() ? std::to_string(m.num_experts) + "/" + std::to_string(m.moe_router_topk) : "-") << std::setw(8)
       << m.seq_length << std::fixed << std::setprecision(2) << static_cast<double>(m.total_params()) / 1e9 << "\n";
    print_aliases(os, 16, model_preset_aliases(name));
  }
}

void print_gpus(std::ostream& os) {
  os << std::left << std::setw(12) << "# gpu" << std::setw(12) << "bf16 TFLOPS" << std::setw(11) << "fp8 TFLOPS" << std::setw(11) << "fp4 TFLOPS" << std::setw(10)
     << "HBM GiB" << std::setw(12) << "HBM GB/s" << std::setw(14) << "NVLink GB/s" << std::setw(10) << "NIC GB/s" << "GPUs/node\n";
  for (const std::string& name : gpu_preset_names()) {
    const GpuSpec g = gpu_preset(name);
    os << std::left << std::setw(12) << name << std::setw(12) << g.peak_bf16_tflops << std::setw(11) << g.peak_fp8_tflops
       << std::setw(11) << g.peak_fp4_tflops << std::setw(10) << std::fixed << std::setprecision(1) << static_cast<double>(g.hbm_bytes) / (1024.0 * 1024 * 1024)
       << std::defaultfloat << std::setprecision(6) << std::setw(12) << g.hbm_bandwidth_gbps << std::setw(14)
       << g.nvlink_bandwidth_gbps << std::setw(10) << g.nic_bandwidth_gbps << g.gpus_per_node << "\n";
    print_aliases(os, 12, gpu_preset_aliases(name));
  }
}

}  // namespace

void add_list_command(CLI::App& root, int& exit_code) {
  auto* cmd = root.add_subcommand("list", "List the schedules, model presets or GPU presets");
  auto what = std::make_shared<std::string>("schedules");
  cmd->add_option("what", *what, "schedules | models | gpus")->check(CLI::IsMember({"schedules", "models", "gpus"}));
  cmd->callback([what, &exit_code] {
    if (*what == "models") {
      print_models(std::cout);
    } else if (*what == "gpus") {
      print_gpus(std::cout);
    } else {
      print_schedules(std::cout);
    }
    exit_code = 0;
  });
}

}  // namespace pipelab::app
