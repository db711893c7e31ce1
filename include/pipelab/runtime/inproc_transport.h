// In-process transport: ranks are threads of one process. A message is handed over without a copy
// (the receiver takes the sender's buffer) through a mailbox per rank keyed by (direction, stage,
// mb); the sender's post time travels with it on the shared iteration clock.
#pragma once

#include <memory>

#include "pipelab/runtime/transport.h"

namespace pipelab::runtime {

class InprocWorld {
 public:
  /// One endpoint per rank of `shape`. `cores` (0 = this machine's) decides WaitPolicy::Auto.
  explicit InprocWorld(const PipelineShape& shape, WaitPolicy wait = WaitPolicy::Auto, int cores = 0);
  ~InprocWorld();
  InprocWorld(const InprocWorld&) = delete;
  InprocWorld& operator=(const InprocWorld&) = delete;

  int size() const;
  /// Rank r's endpoint; used by one thread at a time.
  Transport& transport(int rank);
  /// The rank whose abort() came first (-1 if none): its error is the one to report.
  int first_failed_rank() const;

  struct State;

 private:
  std::unique_ptr<State> state_;
};

}  // namespace pipelab::runtime
