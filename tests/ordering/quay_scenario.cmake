# The scenario library (parser + runner + checker), shared by
# tests/ordering/test_ordering and tools/quay-sim. Included by whichever of
# the two directories is configured first.
if(NOT TARGET quay_scenario)
  set(quay_scn_dir ${PROJECT_SOURCE_DIR}/tests/ordering)
  add_library(quay_scenario STATIC
              ${quay_scn_dir}/scn_parse.c
              ${quay_scn_dir}/scn_parse_ops.c
              ${quay_scn_dir}/scn_run.c
              ${quay_scn_dir}/scn_trace.c
              ${quay_scn_dir}/scn_ops.c
              ${quay_scn_dir}/scn_check.c
              ${quay_scn_dir}/scn_coll.c)
  target_include_directories(quay_scenario PUBLIC ${quay_scn_dir})
  target_link_libraries(quay_scenario PUBLIC nicsim quay_static)
  target_compile_options(quay_scenario PRIVATE ${QUAY_LIB_WARNINGS})
endif()
