/*
 * e2e_early_exit [exit|kill] — rank 1 ends before it starts the runtime
 * (exits with status 7, or kills itself with SIGKILL); every other rank
 * must then fail in start-up with QUAY_EPEER, at once, rather than wait
 * for the connect limit or quayrun's grace timer. Rank 1 is in the middle
 * so that, over TCP, lower ranks wait for it to connect and higher ranks
 * try to connect to it.
 *
 * Each survivor prints "rank R: start-up failed: <error>" and exits 3;
 * expect_early_exit.sh checks the lines and quayrun's status.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quay_rt.h"

#define VICTIM 1

int main(int argc, char **argv)
{
    const char *s = getenv("QUAY_RANK");
    int rank = s != NULL ? atoi(s) : 0;
    if (rank == VICTIM) {
        if (argc > 1 && strcmp(argv[1], "kill") == 0)
            raise(SIGKILL);
        return 7;
    }
    qrt *rt;
    int rc = qrt_init(NULL, &rt);
    if (rc == 0) {
        fprintf(stderr, "rank %d: started although rank %d never did\n", rank, VICTIM);
        return 1;
    }
    printf("rank %d: start-up failed: %s\n", rank, quay_strerror(rc));
    fflush(stdout);
    return rc == QUAY_EPEER ? 3 : 1;
}
