/*
 * sim_tables.h — `quay-sim tables`: the NIC dissertation's comparisons of
 * host-based and NIC-based (offloaded) operations on nicsim's timed mode,
 * printed as Markdown tables (or CSV) with optional SVG charts. The same
 * code is bench/bench_timed.
 */
#ifndef QUAY_TOOLS_SIM_TABLES_H
#define QUAY_TOOLS_SIM_TABLES_H

/** Run with argv[1..argc) as options (argv[0] is not read). 0 on
 *  success, 2 on a usage, model or output-directory error; a failed
 *  simulation exits with status 1. */
int sim_tables_main(int argc, char **argv);

#endif /* QUAY_TOOLS_SIM_TABLES_H */
