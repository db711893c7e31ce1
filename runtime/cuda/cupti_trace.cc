// CuptiTrace: CONCURRENT_KERNEL, MEMCPY and EXTERNAL_CORRELATION activity records, parsed when
// CUPTI hands a buffer back, matched to actions when a rank's activity is taken.
#include "cupti_trace.h"

#include <cupti.h>

#include <algorithm>
#include <cstdlib>

#include "pipelab/base/error.h"

namespace pipelab::runtime::cuda {

namespace {

void check_cupti(CUptiResult rc, const char* what) {
  if (rc == CUPTI_SUCCESS) return;
  const char* text = nullptr;
  cuptiGetResultString(rc, &text);
  throw DeviceError(std::string("cupti: ") + what + " failed: " + (text ? text : "?"));
}

constexpr std::size_t kBufferBytes = 8u << 20;
constexpr std::size_t kAlign = 8;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CuptiTrace& trace = CuptiTrace::instance();
  CUpti_Activity* record = nullptr;
  while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    switch (record->kind) {
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        trace.add({k->correlationId, k->name != nullptr ? k->name : "kernel", k->start, k->end, 0});
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
        trace.add({m->correlationId, "memcpy", m->start, m->end, static_cast<std::int64_t>(m->bytes)});
        break;
      }
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) trace.correlate(e->correlationId, e->externalId);
        break;
      }
      default: break;
    }
  }
  std::free(buffer);
}

}  // namespace

CuptiTrace& CuptiTrace::instance() {
  static CuptiTrace trace;
  return trace;
}

void CuptiTrace::enable() {
  std::lock_guard lock(mutex_);
  if (enabled_) return;
  check_cupti(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed), "cuptiActivityRegisterCallbacks");
  check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable(CONCURRENT_KERNEL)");
  check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY), "cuptiActivityEnable(MEMCPY)");
  check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION), "cuptiActivityEnable(EXTERNAL_CORRELATION)");
  // CUPTI emits an external correlation record beside the API record of the launch: the runtime
  // and driver API kinds must be on for kernels to be tied to actions (their records are skipped).
  check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME), "cuptiActivityEnable(RUNTIME)");
  check_cupti(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER), "cuptiActivityEnable(DRIVER)");
  enabled_ = true;
}

void CuptiTrace::mark_epoch(int rank) {
  std::uint64_t now = 0;
  check_cupti(cuptiGetTimestamp(&now), "cuptiGetTimestamp");
  std::lock_guard lock(mutex_);
  epochs_[rank].push_back(now);
}

void CuptiTrace::push_action(int rank, const Action& action) {
  std::uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    id = next_id_++;
    actions_[id] = ActionRef{rank, static_cast<int>(epochs_[rank].size()) - 1, to_string(action)};
  }
  check_cupti(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id),
              "cuptiActivityPushExternalCorrelationId");
}

void CuptiTrace::pop_action() {
  std::uint64_t last = 0;
  check_cupti(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last),
              "cuptiActivityPopExternalCorrelationId");
}

void CuptiTrace::add(Record r) {
  std::lock_guard lock(mutex_);
  records_.push_back(std::move(r));
}

void CuptiTrace::correlate(std::uint32_t correlation, std::uint64_t external) {
  std::lock_guard lock(mutex_);
  external_of_[correlation] = external;
}

std::string CuptiTrace::summary() {
  check_cupti(cuptiActivityFlushAll(1), "cuptiActivityFlushAll");
  std::lock_guard lock(mutex_);
  return std::to_string(records_.size()) + " kernel/copy records, " + std::to_string(external_of_.size()) + " correlations, " +
         std::to_string(actions_.size()) + " actions";
}

std::vector<DeviceActivity> CuptiTrace::take(int rank, int iteration) {
  check_cupti(cuptiActivityFlushAll(1), "cuptiActivityFlushAll");
  std::lock_guard lock(mutex_);
  std::vector<DeviceActivity> out;
  const auto epochs = epochs_.find(rank);
  if (epochs == epochs_.end() || iteration < 0 || static_cast<std::size_t>(iteration) >= epochs->second.size()) return out;
  const auto t0 = static_cast<std::int64_t>(epochs->second[static_cast<std::size_t>(iteration)]);
  std::vector<Record> rest;
  for (Record& r : records_) {
    // Launched outside every action (data loading, gradient zeroing), or by this rank in another
    // iteration: dropped. Another rank's: kept for its take().
    const auto ext = external_of_.find(r.correlation);
    const auto action = ext == external_of_.end() ? actions_.end() : actions_.find(ext->second);
    if (action == actions_.end()) continue;
    if (action->second.rank != rank) {
      rest.push_back(std::move(r));
      continue;
    }
    if (action->second.iteration != iteration) continue;
    out.push_back(DeviceActivity{rank, std::move(r.name), static_cast<std::int64_t>(r.start) - t0,
                                 static_cast<std::int64_t>(r.end) - t0, r.bytes, action->second.label});
  }
  records_.swap(rest);
  std::erase_if(actions_, [rank](const auto& a) { return a.second.rank == rank; });
  std::sort(out.begin(), out.end(), [](const DeviceActivity& a, const DeviceActivity& b) { return a.start_ns < b.start_ns; });
  return out;
}

}  // namespace pipelab::runtime::cuda
