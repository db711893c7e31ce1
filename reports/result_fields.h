// The field tables of the result schema's flat objects: one list of (key, member, required) per
// struct drives both load_result (result_load.cc) and to_json (result_write.cc), so a key is named
// once. An optional field reads as the member's default when absent and is always written.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "pipelab/reports/result.h"

namespace pipelab::reports::detail {

template <class T>
struct Field {
  const char* key;
  std::variant<int T::*, std::int64_t T::*, double T::*, bool T::*, std::vector<std::int64_t> T::*> member;
  bool required = true;
};

// In the order the loader checks them (the first problem is the one reported).
inline constexpr std::array<Field<Summary>, 11> kSummaryFields{{
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

// Written into the rank's object beside kRankFields, for simulated timelines.
inline constexpr std::array<Field<StaticMemoryParts>, 4> kStaticPartsFields{{
    {"params_bytes", &StaticMemoryParts::params_bytes},
    {"grads_bytes", &StaticMemoryParts::grads_bytes},
    {"optimizer_bytes", &StaticMemoryParts::optimizer_bytes},
    {"comm_buffers_bytes", &StaticMemoryParts::comm_buffers_bytes, false},
}};

}  // namespace pipelab::reports::detail
