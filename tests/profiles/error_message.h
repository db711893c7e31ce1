// Test helper: run a callable that must throw exactly error type E and return its message.
#pragma once

#include <string>
#include <typeinfo>

#include <gtest/gtest.h>

#include <pipelab/base/error.h>

namespace pipelab::testing {

template <class E, class F>
std::string error_message(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(typeid(e), typeid(E)) << "threw " << typeid(e).name() << ": " << e.what();
    return e.what();
  }
  ADD_FAILURE() << "expected an exception of type " << typeid(E).name();
  return {};
}

}  // namespace pipelab::testing
