/*
 * bench_timed.c — collectives, locks and atomics on nicsim's timed mode:
 * host-based vs NIC-based, in simulated time. The program is
 * `quay-sim tables` (tools/sim_tables.c, which lists the tables and
 * options); this name keeps bench/RESULTS.md's commands working.
 *
 *   bench_timed [--model FILE] [--set key=value]... [--max-n N] [--reps R]
 *               [--csv] [--only NAME]... [--only-sim] [--svg DIR]
 */
#include "sim_tables.h"

int main(int argc, char **argv)
{
    return sim_tables_main(argc, argv);
}
