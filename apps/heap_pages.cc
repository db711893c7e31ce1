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
  // Reserved at once (touched, and so backed, only as used; it counts against RLIMIT_AS and strict
  // overcommit, where the reserve fails and nothing changes).
  constexpr int kHeapReserve = 1 << 30;
  constexpr int kDefaultTopPad = 128 << 10;  // glibc's M_TOP_PAD default
  // Blocks up to 32 MiB (glibc's largest mmap threshold) come from the heap instead of separate
  // mappings, and the heap is never trimmed (-1), so the one advice below covers what the main
  // thread allocates within the reserve (not thread arenas, nor growth past it).
  // mallopt fails under an interposed allocator (sanitizers): leave it be.
  if (mallopt(M_MMAP_THRESHOLD, 32 << 20) != 1) return;
  mallopt(M_TRIM_THRESHOLD, -1);
  mallopt(M_TOP_PAD, kHeapReserve);
  void* probe = std::malloc(4 << 20);  // grows the heap by the reserve now
  if (probe == nullptr) {              // no reserve: glibc's defaults again
    mallopt(M_TOP_PAD, kDefaultTopPad);
    mallopt(M_MMAP_THRESHOLD, 128 << 10);
    mallopt(M_TRIM_THRESHOLD, 128 << 10);
    return;
  }
  const auto first = (reinterpret_cast<std::uintptr_t>(probe) + kHugePage - 1) & ~(kHugePage - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(sbrk(0));
  std::free(probe);
  mallopt(M_TOP_PAD, kDefaultTopPad);  // growth past the reserve asks for what it needs
  if (end > first) madvise(reinterpret_cast<void*>(first), end - first, MADV_HUGEPAGE);  // advice: failure is harmless
#endif
}

}  // namespace pipelab::app
