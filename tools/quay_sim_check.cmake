# Runs quay-sim and checks its exit status and output (CTest alone checks
# only zero / non-zero, and quay-sim has four exit statuses).
#
#   cmake -DSIM=path/to/quay-sim -DARGS="a|b|c" -DRC=3
#         [-DMATCH=regex] [-DNOMATCH=regex] [-DREPLAY=1] -P quay_sim_check.cmake
#
# ARGS: quay-sim's arguments, separated by '|'. MATCH must occur in the
# output (stdout and stderr together), NOMATCH must not. REPLAY=1: the run
# is an --exhaustive one that fails; its printed choice list is fed back
# with --choices (the other arguments the same, --exhaustive and
# --max-runs dropped), which must fail with the same message.
if(NOT SIM OR NOT DEFINED ARGS OR NOT DEFINED RC)
  message(FATAL_ERROR "quay_sim_check: SIM, ARGS and RC are required")
endif()
string(REPLACE "|" ";" args "${ARGS}")

execute_process(COMMAND ${SIM} ${args} RESULT_VARIABLE rc
                OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("quay-sim ${args}\n${out}(exit status ${rc})")
if(NOT rc STREQUAL RC)
  message(FATAL_ERROR "exit status ${rc}, expected ${RC}")
endif()
if(DEFINED MATCH AND NOT out MATCHES "${MATCH}")
  message(FATAL_ERROR "output does not match '${MATCH}'")
endif()
if(DEFINED NOMATCH AND out MATCHES "${NOMATCH}")
  message(FATAL_ERROR "output matches '${NOMATCH}', which it must not")
endif()

if(REPLAY)
  if(NOT out MATCHES "FAILED: ([^\n]*)\nchoices:([ 0-9]*)\n")
    message(FATAL_ERROR "no failure with a choice list to replay")
  endif()
  set(failure "${CMAKE_MATCH_1}")
  string(STRIP "${CMAKE_MATCH_2}" choices)
  set(rargs "")
  set(skip 0)
  foreach(a IN LISTS args)
    if(skip)
      set(skip 0)
    elseif(a STREQUAL "--max-runs")
      set(skip 1)
    elseif(NOT a STREQUAL "--exhaustive")
      list(APPEND rargs "${a}")
    endif()
  endforeach()
  execute_process(COMMAND ${SIM} --trace --choices "${choices}" ${rargs}
                  RESULT_VARIABLE rc2 OUTPUT_VARIABLE out2 ERROR_VARIABLE out2)
  message("quay-sim --trace --choices \"${choices}\" ${rargs}\n${out2}"
          "(exit status ${rc2})")
  if(NOT rc2 STREQUAL "1")
    message(FATAL_ERROR "replay: exit status ${rc2}, expected 1")
  endif()
  string(FIND "${out2}" "FAILED: ${failure}\n" at)
  if(at LESS 0)
    message(FATAL_ERROR "replay did not fail with '${failure}'")
  endif()
  # a seeded run's diagnostics: the trace and the summary
  if(NOT out2 MATCHES "# scenario [^\n]*, choice script of" OR
     NOT out2 MATCHES "\nsummary of ")
    message(FATAL_ERROR "replay: no trace or no summary")
  endif()
endif()
