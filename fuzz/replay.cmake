# fuzz/replay.cmake — the fuzz harnesses as plain replay programs, and the
# CTest tests that replay the checked-in corpora and crash reproducers.
#
# Included from tests/CMakeLists.txt, so every build with tests (AFL or
# not) builds fuzz_<harness>_replay and registers, labelled "fuzz":
#   fuzz_replay_<harness>   every file of fuzz/corpus/<harness>/
#   fuzz_crashes_<harness>  every file of fuzz/crashes/<harness>/ (if any)
#   fuzz_seeds_fresh        fuzz_seedgen --check: the structured seeds in
#                           the corpora are what the generator writes
# fuzz/CMakeLists.txt (QUAY_FUZZ=ON) includes it too, for the programs.
# With QUAY_SANITIZE the replays run under ASan + UBSan. Variables and
# functions are set on every include (directory scopes do not share
# them); targets and tests are made once.

set(QUAY_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
set(QUAY_FUZZ_HARNESSES decode engine sim restore)

# fuzz_sim runs on the scenario library (tests/ordering): parser, runner
# and checks. Defined by whichever of tests/ordering, tools/ and this
# file comes first.
include(${PROJECT_SOURCE_DIR}/tests/ordering/quay_scenario.cmake)

# Sources of harness `h` (besides fuzz_main.c) and what it links.
set(quay_fuzz_src_decode ${QUAY_FUZZ_DIR}/fuzz_decode.c)
set(quay_fuzz_src_engine ${QUAY_FUZZ_DIR}/fuzz_engine.c ${QUAY_FUZZ_DIR}/fe_peer.c
                         ${QUAY_FUZZ_DIR}/fe_calls.c)
set(quay_fuzz_src_sim ${QUAY_FUZZ_DIR}/fuzz_sim.c ${QUAY_FUZZ_DIR}/sim_gen.c)
set(quay_fuzz_src_restore ${QUAY_FUZZ_DIR}/fuzz_restore.c)
set(quay_fuzz_libs_sim quay_scenario nicsim)

# quay_fuzz_target(<target> <harness> [<extra sources>...]): an executable
# of harness <harness> with the given driver sources (none: libFuzzer's).
function(quay_fuzz_target target h)
  add_executable(${target} ${quay_fuzz_src_${h}} ${ARGN})
  target_link_libraries(${target} PRIVATE quay_fuzz_common ${quay_fuzz_libs_${h}})
  target_compile_options(${target} PRIVATE $<$<C_COMPILER_ID:GNU,Clang>:-UNDEBUG>)
endfunction()

if(TARGET quay_fuzz_common)
  return()
endif()

add_library(quay_fuzz_common STATIC ${QUAY_FUZZ_DIR}/fuzz_common.c)
target_include_directories(quay_fuzz_common PUBLIC ${QUAY_FUZZ_DIR})
target_link_libraries(quay_fuzz_common PUBLIC quay_internal quay_posix_defs)
target_compile_options(quay_fuzz_common PRIVATE $<$<C_COMPILER_ID:GNU,Clang>:-UNDEBUG>)

set(quay_fuzz_env "")
if(QUAY_SANITIZE)
  set(quay_fuzz_env
      "ASAN_OPTIONS=detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1"
      "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
endif()

function(quay_fuzz_test name)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS fuzz)
  if(quay_fuzz_env)
    set_property(TEST ${name} PROPERTY ENVIRONMENT ${quay_fuzz_env})
  endif()
endfunction()

foreach(h IN LISTS QUAY_FUZZ_HARNESSES)
  quay_fuzz_target(fuzz_${h}_replay ${h} ${QUAY_FUZZ_DIR}/fuzz_main.c)
  quay_fuzz_test(fuzz_replay_${h} fuzz_${h}_replay ${QUAY_FUZZ_DIR}/corpus/${h})
  file(GLOB quay_fuzz_crashes CONFIGURE_DEPENDS ${QUAY_FUZZ_DIR}/crashes/${h}/*)
  if(quay_fuzz_crashes)
    quay_fuzz_test(fuzz_crashes_${h} fuzz_${h}_replay ${QUAY_FUZZ_DIR}/crashes/${h})
  endif()
endforeach()

# The seed generator: writes the structured seeds and the dictionaries
# (fuzz/README.md); --check compares the checked-in ones with its output.
add_executable(fuzz_seedgen ${QUAY_FUZZ_DIR}/seedgen.c)
target_link_libraries(fuzz_seedgen PRIVATE quay_fuzz_common)
quay_fuzz_test(fuzz_seeds_fresh fuzz_seedgen --check ${QUAY_FUZZ_DIR})
