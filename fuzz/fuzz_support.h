// What every fuzz target shares: the input as text, the one exception a parser may throw on bad
// bytes (pipelab::InputError and its subclasses: a clear refusal), and a check that aborts on a
// broken property so libFuzzer records the input. Any other exception escapes the target and is a
// finding (libFuzzer reports it as a crash): it would reach main() as "internal error".
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "pipelab/base/error.h"

namespace pipelab::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

/// Aborts with `what` when `ok` is false: a property of the parser that the input broke.
inline void require(bool ok, const char* what) {
  if (ok) return;
  std::fprintf(stderr, "fuzz property broken: %s\n", what);
  std::abort();
}

/// Runs `body`; an InputError (bad input, refused with a message) ends the input quietly.
template <class Body>
void refusing_bad_input(Body&& body) {
  try {
    body();
  } catch (const InputError& e) {
    require(e.what()[0] != '\0', "an InputError carries a message");
  }
}

}  // namespace pipelab::fuzz
