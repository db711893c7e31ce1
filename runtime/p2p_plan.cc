// pair_traffic and comm_batches: read off the lowered schedule's SEND/RECV actions.
#include "pipelab/runtime/p2p_plan.h"

#include <map>
#include <utility>

#include "pipelab/schedules/dependencies.h"

namespace pipelab::runtime {

std::vector<PairTraffic> pair_traffic(const Schedule& lowered) {
  std::map<std::pair<int, int>, std::vector<MessageKey>> pairs;
  for (int r = 0; r < static_cast<int>(lowered.ranks.size()); ++r) {
    for (const Slot& slot : lowered.ranks[static_cast<std::size_t>(r)]) {
      if (!slot || (slot->op != Op::SendF && slot->op != Op::SendB)) continue;
      pairs[{r, lowered.shape.rank_of(peer_stage(*slot))}].push_back(message_of(*slot));
    }
  }
  std::vector<PairTraffic> out;
  out.reserve(pairs.size());
  for (auto& [key, messages] : pairs) out.push_back(PairTraffic{key.first, key.second, std::move(messages)});
  return out;
}

std::vector<std::vector<std::size_t>> comm_batches(const Schedule& lowered, int rank) {
  std::vector<std::vector<std::size_t>> out;
  const auto& list = lowered.ranks.at(static_cast<std::size_t>(rank));
  bool open = false;
  for (std::size_t pos = 0; pos < list.size(); ++pos) {
    const bool comm = list[pos] && is_comm(list[pos]->op);
    if (comm && !open) out.emplace_back();
    if (comm) out.back().push_back(pos);
    open = comm;
  }
  return out;
}

}  // namespace pipelab::runtime
