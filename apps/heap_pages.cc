// See heap_pages.h.
#include "heap_pages.h"

#include <cstdint>
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace pipelab::app {

void prefer_huge_heap_pages() {
#if defined(__GLIBC__)
  constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;  // x86-64 and arm64 (4 KiB base pages) THP size
  constexpr int kHeapReserve = 1 << 30;  // address space only: pages are touched (and backed) as used
  // Blocks up to 32 MiB (glibc's largest mmap threshold) come from the heap instead of separate
  // mappings, the heap grows by kHeapReserve at once and is never trimmed below it, so one advice
  // covers what a simulation allocates. mallopt fails under an interposed allocator: leave it be.
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1) return;
  mallopt(M_TOP_PAD, kHeapReserve);
  mallopt(M_TRIM_THRESHOLD, kHeapReserve);
  void* probe = std::malloc(4 << 20);  // grows the heap by the reserve now
  if (probe == nullptr) return;
  const auto first = (reinterpret_cast<std::uintptr_t>(probe) + kHugePage - 1) & ~(kHugePage - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(sbrk(0));
  if (end > first) madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE);  // advice: failure is harmless
  std::free(probe);
#endif
}

}  // namespace pipelab::app
