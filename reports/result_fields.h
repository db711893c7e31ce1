// The field tables of the result schema's flat objects: one list of (key, member, required) per
// struct drives both load_result (result_load.cc) and to_json (result_write.cc), so a key is named
// once. An optional field reads as the member's default when absent and is always written.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "pipelab/base/json_reader.h"
#include "pipelab/reports/result.h"

namespace pipelab::reports::detail {

/// `summary` as every result kind writes and reads it (result_write.cc, result_load.cc).
nlohmann::json summary_json(const Summary& summary);
Summary read_summary(const JsonReader& r);

template <class T>
struct Field {
  const char* key;
  // std::optional<double>: a number, or null where the figure does not apply (always written).
  std::variant<int T::*, std::int64_t T::*, double T::*, bool T::*, std::vector<std::int64_t> T::*, std::optional<double> T::*> member;
  bool required = true;
};

// In the order the loader checks them (the first problem is the one reported).
// The idle split, span bubble rate, in-action communication and optimizer step came later: older files lack them
// (read as 0).
inline constexpr std::array<Field<Summary>, 24> kSummaryFields{{
    {"makespan_ns", &Summary::makespan_ns},
    {"bubble_ratio", &Summary::bubble_ratio},
    {"tflops_per_gpu", &Summary::tflops_per_gpu},
    {"mfu", &Summary::mfu},
    {"tokens_per_s_per_gpu", &Summary::tokens_per_s_per_gpu},
    {"peak_memory_bytes", &Summary::peak_memory_bytes},
    {"exposed_comm_ns", &Summary::exposed_comm_ns},
    {"memory_capacity_bytes", &Summary::memory_capacity_bytes},
    {"oom", &Summary::oom},
    {"model_flops", &Summary::model_flops},
    {"tokens_per_iteration", &Summary::tokens_per_iteration},
    {"pipeline_bubble_ratio", &Summary::pipeline_bubble_ratio, false},
    {"stage_imbalance", &Summary::stage_imbalance, false},
    {"span_bubble_rate", &Summary::span_bubble_rate, false},
    {"exposed_pp_comm_ns", &Summary::exposed_pp_comm_ns, false},
    {"exposed_dp_comm_ns", &Summary::exposed_dp_comm_ns, false},
    {"other_idle_ns", &Summary::other_idle_ns, false},
    {"exposed_tp_comm_ns", &Summary::exposed_tp_comm_ns, false},
    {"exposed_ep_comm_ns", &Summary::exposed_ep_comm_ns, false},
    {"exposed_cp_comm_ns", &Summary::exposed_cp_comm_ns, false},
    {"exposed_fsdp_comm_ns", &Summary::exposed_fsdp_comm_ns, false},
    {"exposed_offload_ns", &Summary::exposed_offload_ns, false},
    {"host_wait_ns", &Summary::host_wait_ns, false},
    {"optimizer_step_ns", &Summary::optimizer_step_ns, false},
}};

// The memory columns may be absent (a backend that does not track memory), and so may `flops`.
inline constexpr std::array<Field<RankRow>, 9> kRankFields{{
    {"rank", &RankRow::rank},
    {"busy_ns", &RankRow::busy_ns},
    {"idle_ns", &RankRow::idle_ns},
    {"comm_ns", &RankRow::comm_ns},
    {"exposed_comm_ns", &RankRow::exposed_comm_ns},
    {"flops", &RankRow::flops, false},
    {"static_memory_bytes", &RankRow::static_memory_bytes, false},
    {"peak_activation_bytes", &RankRow::peak_activation_bytes, false},
    {"peak_memory_bytes", &RankRow::peak_memory_bytes, false},
}};

// Written into the rank's object beside kRankFields: its idle time by cause (absent in older files).
inline constexpr std::array<Field<IdleParts>, 5> kIdleFields{{
    {"pipeline_bubble_ns", &IdleParts::pipeline_bubble_ns, false},
    {"imbalance_ns", &IdleParts::imbalance_ns, false},
    {"exposed_pp_comm_ns", &IdleParts::exposed_pp_comm_ns, false},
    {"exposed_dp_comm_ns", &IdleParts::exposed_dp_comm_ns, false},
    {"other_idle_ns", &IdleParts::other_ns, false},
}};

// Written into the rank's object beside kRankFields, for simulated timelines.
inline constexpr std::array<Field<StaticMemoryParts>, 4> kStaticPartsFields{{
    {"params_bytes", &StaticMemoryParts::params_bytes},
    {"grads_bytes", &StaticMemoryParts::grads_bytes},
    {"optimizer_bytes", &StaticMemoryParts::optimizer_bytes},
    {"comm_buffers_bytes", &StaticMemoryParts::comm_buffers_bytes, false},
}};

}  // namespace pipelab::reports::detail
