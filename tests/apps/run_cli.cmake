# Runs one pipelab command and checks its exit code and output.
#   -DCMD="<exe>;arg;arg" -DRC=<expected exit code> [-DREGEX=<must match stdout+stderr>]
#   [-DOUT=<file that must exist afterwards>] [-DSAME_AS=<file the OUT file must equal>]
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(all "${out}${err}")
# A sanitizer build: a report fails the test whatever the exit code (cmake/sanitizers.cmake).
if(all MATCHES "(AddressSanitizer|LeakSanitizer|ThreadSanitizer|UndefinedBehaviorSanitizer|runtime error: )")
  message(FATAL_ERROR "sanitizer report\n--- output ---\n${all}")
endif()
if(NOT rc STREQUAL RC)
  message(FATAL_ERROR "exit code ${rc}, expected ${RC}\n--- output ---\n${all}")
endif()
if(DEFINED REGEX AND NOT all MATCHES "${REGEX}")
  message(FATAL_ERROR "output does not match /${REGEX}/\n--- output ---\n${all}")
endif()
if(DEFINED OUT AND NOT EXISTS "${OUT}")
  message(FATAL_ERROR "expected ${OUT} to be written\n--- output ---\n${all}")
endif()
if(DEFINED SAME_AS)
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files "${OUT}" "${SAME_AS}" RESULT_VARIABLE differ)
  if(differ)
    message(FATAL_ERROR "${OUT} differs from ${SAME_AS}")
  endif()
endif()
