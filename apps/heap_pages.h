// Huge pages for the process heap: a large simulation writes tens of MB of schedule and timeline
// once, and on 4 KiB pages most of its time goes to page faults (docs/simulator.md, "Speed").
#pragma once

namespace pipelab::app {

/// Asks the kernel to back the main heap with transparent huge pages (madvise mode, the Debian
/// default) and keeps large blocks on that heap: glibc only; a no-op where the allocator or the
/// kernel does not take the advice (sanitizers, THP "never"). Call first thing in main().
void prefer_huge_heap_pages();

}  // namespace pipelab::app
