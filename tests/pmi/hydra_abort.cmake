# Run `MPIEXEC -n 3 PROG --abort WANT` and require that the job ends with
# exit status WANT: the last rank sends cmd=abort exitcode=WANT and Hydra
# kills every rank (the others wait in a barrier that never completes).
#   cmake -DMPIEXEC=... -DPROG=... -DWANT=7 -P hydra_abort.cmake
execute_process(COMMAND ${MPIEXEC} -n 3 ${PROG} --abort ${WANT}
                RESULT_VARIABLE rc TIMEOUT 50)
if(NOT rc STREQUAL "${WANT}")
  message(FATAL_ERROR "mpiexec exited with '${rc}', expected ${WANT}")
endif()
message(STATUS "mpiexec exited with ${rc}, as expected")
