# Compile tests/mpi/hello.c with a quaycc and run it: proves the wrapper
# (include and library paths, rpath, argument passing) at test time.
#   cmake -DQUAYCC=... -DQUAYRUN=... -DSRC=.../hello.c -DWORKDIR=...
#         -DMODE=shared|static -DTRANSPORT=shm|tcp -DRANKS=3 -P quaycc_hello.cmake
#   shared: quaycc -Wall -Wextra -Werror '-DHELLO_WORDS=hello there' hello.c
#           -o '<dir with space>/hello'; quayrun -n RANKS; then alone
#   static: quaycc -c ... -o hello.o; quaycc -static-quay hello.o -o hello;
#           quayrun -n RANKS
# Every rank must print its line, ending "ok"; every exit status must be 0.
foreach(v QUAYCC QUAYRUN SRC WORKDIR MODE TRANSPORT RANKS)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "quaycc_hello.cmake: -D${v}=... missing")
  endif()
endforeach()

# The caller's environment must not pick the compiler, the library kind
# or a rank for the singleton run.
foreach(v QUAYCC_CC QUAYCC_STATIC QUAY_RANK QUAY_SIZE QUAY_TRANSPORT PMI_FD PMI_PORT
          PMI_RANK PMI_SIZE PMI_ID)
  unset(ENV{${v}})
endforeach()

# run(<what> <command>...): run it, fail on a nonzero status; its stdout
# goes to the variable out.
function(run what)
  string(REPLACE ";" " " shown "${ARGN}")
  message(STATUS "${what}: ${shown}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e
                  TIMEOUT 60)
  if(NOT rc STREQUAL "0")
    message(FATAL_ERROR "${what} failed (${rc}):\n${o}${e}")
  endif()
  if(e)
    message("${e}")
  endif()
  set(out "${o}" PARENT_SCOPE)
endfunction()

# expect_ranks(<output> <n> <words>): one "<words> from rank r of n: ... ok"
# line per rank.
function(expect_ranks output n words)
  math(EXPR last "${n} - 1")
  foreach(r RANGE 0 ${last})
    if(NOT output MATCHES "${words} from rank ${r} of ${n}: [^\n]*, ok\n")
      message(FATAL_ERROR "no good line from rank ${r} of ${n} in:\n${output}")
    endif()
  endforeach()
  message(STATUS "${n} rank(s) said ok")
endfunction()

set(dir "${WORKDIR}/with space")
file(REMOVE_RECURSE "${WORKDIR}")
file(MAKE_DIRECTORY "${dir}")
set(prog "${dir}/hello")
set(cflags -O2 -Wall -Wextra -Werror -std=c11)

run("quaycc -show" ${QUAYCC} -show)
if(NOT out MATCHES "-lquaympi")
  message(FATAL_ERROR "quaycc -show does not link -lquaympi: ${out}")
endif()

if(MODE STREQUAL "shared")
  run("compile and link" ${QUAYCC} ${cflags} "-DHELLO_WORDS=hello there" ${SRC} -o ${prog})
  set(words "hello there")
elseif(MODE STREQUAL "static")
  run("quaycc -c -show" ${QUAYCC} -c -show ${SRC})
  if(out MATCHES "quaympi")
    message(FATAL_ERROR "quaycc -c would link: ${out}")
  endif()
  run("compile" ${QUAYCC} ${cflags} -c ${SRC} -o ${dir}/hello.o)
  run("link static" ${QUAYCC} -static-quay ${dir}/hello.o -o ${prog})
  set(words "hello")
else()
  message(FATAL_ERROR "MODE=${MODE}: expected shared or static")
endif()

run("quayrun" ${QUAYRUN} -n ${RANKS} --transport ${TRANSPORT} ${prog})
expect_ranks("${out}" ${RANKS} "${words}")
if(MODE STREQUAL "shared")
  run("singleton" ${prog})
  expect_ranks("${out}" 1 "${words}")
endif()
