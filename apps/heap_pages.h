// Huge pages for the process heap: a large simulation writes tens of MB of schedule and timeline
// once, and on 4 KiB pages most of its time goes to page faults (docs/simulator.md, "Speed").
#pragma once

namespace pipelab::app {

/// Reserves 1 GiB of main heap at once, keeps blocks up to 32 MiB on it (never trimmed), and asks the
/// kernel to back it with transparent huge pages (THP in madvise mode, the Debian default, or always).
/// glibc only; nothing changes under an interposed allocator (sanitizers) or when the reserve fails
/// (address-space limits, strict overcommit); with THP "never" the heap settings stay but pages are
/// 4 KiB. Call first thing in main(), before any thread starts.
void prefer_huge_heap_pages();

}  // namespace pipelab::app
