# Sanitizer builds (docs/testing.md): -DPIPELAB_SANITIZE=address,undefined (ASan + UBSan) or
# -DPIPELAB_SANITIZE=thread (TSan) instruments every C++ target, so the test suites run under it.
# UBSan stops at the first report (-fno-sanitize-recover) so a report fails its test. CUDA code is
# never instrumented: a sanitizer build skips the cuda backend unless -DPIPELAB_CUDA=ON.
# Included by the top-level CMakeLists.txt before any target is defined.
set(PIPELAB_SANITIZE "" CACHE STRING "Sanitizers for every C++ target: address,undefined | thread | empty (none)")

set(PIPELAB_SANITIZE_FLAGS "")
if(PIPELAB_SANITIZE)
  string(REPLACE "," ";" _pipelab_sanitizers "${PIPELAB_SANITIZE}")
  foreach(s IN LISTS _pipelab_sanitizers)
    if(NOT s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "PIPELAB_SANITIZE: '${s}' is not one of address, undefined, thread, leak "
                          "(e.g. -DPIPELAB_SANITIZE=address,undefined or -DPIPELAB_SANITIZE=thread)")
    endif()
  endforeach()
  if("thread" IN_LIST _pipelab_sanitizers AND ("address" IN_LIST _pipelab_sanitizers OR "leak" IN_LIST _pipelab_sanitizers))
    message(FATAL_ERROR "PIPELAB_SANITIZE: thread cannot be combined with address or leak (one build each)")
  endif()
  list(APPEND PIPELAB_SANITIZE_FLAGS -fsanitize=${PIPELAB_SANITIZE} -fno-omit-frame-pointer)
  if("undefined" IN_LIST _pipelab_sanitizers)
    list(APPEND PIPELAB_SANITIZE_FLAGS -fno-sanitize-recover=undefined)
    # GCC leaves float -> integer conversions out of -fsanitize=undefined; clang includes them.
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      list(APPEND PIPELAB_SANITIZE_FLAGS -fsanitize=float-cast-overflow -fno-sanitize-recover=float-cast-overflow)
    endif()
  endif()
  foreach(flag IN LISTS PIPELAB_SANITIZE_FLAGS)
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:${flag}>)
    add_link_options(${flag})
  endforeach()
  # Line tables, so reports name files and lines without the cost of full debug info.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-gline-tables-only>)
  else()
    add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-g1>)
  endif()
  message(STATUS "pipelab: sanitizers ${PIPELAB_SANITIZE} on every C++ target")
endif()

# The environment every test runs in under a sanitizer (tests/CMakeLists.txt sets it on each test):
# reports stop the test with a stack trace and exit code 86 (never an exit code pipelab gives);
# leaks inside MPI's own libraries are not ours.
set(PIPELAB_TEST_ENVIRONMENT "")
if(PIPELAB_SANITIZE)
  set(_supp ${PROJECT_SOURCE_DIR}/tests/sanitizers)
  list(APPEND PIPELAB_TEST_ENVIRONMENT
       "ASAN_OPTIONS=exitcode=86:detect_stack_use_after_return=1:strict_init_order=1:check_initialization_order=1"
       "UBSAN_OPTIONS=exitcode=86:print_stacktrace=1:halt_on_error=1"
       "LSAN_OPTIONS=exitcode=86:suppressions=${_supp}/lsan.supp:print_suppressions=0"
       "TSAN_OPTIONS=exitcode=86:halt_on_error=1:second_deadlock_stack=1:suppressions=${_supp}/tsan.supp")
endif()
