/*
 * run_main.c — main() for the MPICH tests written as
 * `int run(const char *arg)` (MPICH builds those with a main of its own;
 * this is quay's). The program's arguments become one space-separated
 * string for run(); its return, the rank's error count, is summed by
 * MTest_Finalize, which prints the verdict. Linked by tests/mpich/run.sh
 * only into tests that define run().
 */
#include "mpitest.h"

int main(int argc, char **argv)
{
    size_t len = 1;
    for (int i = 1; i < argc; i++)
        len += strlen(argv[i]) + 1;
    char *args = malloc(len);
    if (!args) {
        fprintf(stderr, "run_main: out of memory\n");
        return 1;
    }
    args[0] = '\0';
    for (int i = 1; i < argc; i++) {
        if (i > 1)
            strcat(args, " ");
        strcat(args, argv[i]);
    }

    MTest_Init(&argc, &argv);
    int errs = run(args);
    free(args);
    MTest_Finalize(errs);
    return errs ? 1 : 0;
}
