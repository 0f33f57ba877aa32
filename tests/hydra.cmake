# tests/hydra.cmake — find MPICH's Hydra mpiexec, for the tests that let
# it launch quay programs (tests/e2e, tests/pmi, tests/mpi):
#   include(${PROJECT_SOURCE_DIR}/tests/hydra.cmake)
#   if(quay_hydra) ... ${QUAY_MPIEXEC} -n 3 prog ... endif()
# Sets QUAY_MPIEXEC (cache: the program found, or -NOTFOUND) and, in the
# including scope, quay_hydra (ON when `mpiexec --version` says HYDRA: an
# Open MPI or Slurm mpiexec does not speak PMI-1 to its ranks).
find_program(QUAY_MPIEXEC NAMES mpiexec.hydra mpiexec
             DOC "MPICH Hydra mpiexec for the *_hydra_* tests")
set(quay_hydra OFF)
set(quay_hydra_why "no mpiexec found (Debian: apt-get install mpich)")
if(QUAY_MPIEXEC)
  execute_process(COMMAND ${QUAY_MPIEXEC} --version
                  OUTPUT_VARIABLE quay_mpiexec_version ERROR_QUIET
                  RESULT_VARIABLE quay_mpiexec_rc TIMEOUT 20)
  if(quay_mpiexec_rc EQUAL 0 AND quay_mpiexec_version MATCHES "HYDRA")
    set(quay_hydra ON)
  else()
    set(quay_hydra_why "${QUAY_MPIEXEC} is not MPICH's Hydra (Debian: apt-get install mpich)")
  endif()
endif()

include(${PROJECT_SOURCE_DIR}/cmake/quay_skip_test.cmake)
