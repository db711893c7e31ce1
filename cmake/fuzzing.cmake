# libFuzzer targets (fuzz/, docs/testing.md): with -DPIPELAB_FUZZ=ON and clang, every C++ target is
# compiled with coverage instrumentation (-fsanitize=fuzzer-no-link) and fuzz/ builds one
# libFuzzer binary per parser. Any other compiler skips fuzz/ with a message; the same sources
# still build as corpus-replay tests (fuzz/CMakeLists.txt). Combine with PIPELAB_SANITIZE so a
# fuzzer finds memory errors and undefined behaviour, not only crashes.
set(PIPELAB_HAVE_LIBFUZZER OFF)
if(PIPELAB_FUZZ)
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    include(CheckCXXSourceCompiles)
    set(CMAKE_REQUIRED_FLAGS "-fsanitize=fuzzer")
    check_cxx_source_compiles(
      "#include <cstddef>\n#include <cstdint>\nextern \"C\" int LLVMFuzzerTestOneInput(const std::uint8_t*, std::size_t) { return 0; }"
      PIPELAB_LIBFUZZER_WORKS)
    unset(CMAKE_REQUIRED_FLAGS)
    if(PIPELAB_LIBFUZZER_WORKS)
      set(PIPELAB_HAVE_LIBFUZZER ON)
      add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link>)
      message(STATUS "pipelab: libFuzzer found, building the fuzz targets")
    else()
      message(STATUS "pipelab: clang cannot link -fsanitize=fuzzer (install libclang-rt-dev), skipping the fuzz targets")
    endif()
  else()
    message(STATUS "pipelab: the fuzz targets need clang (CXX=clang++), ${CMAKE_CXX_COMPILER_ID} found: skipping them")
  endif()
endif()
