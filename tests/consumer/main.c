/*
 * main.c — smallest embedder of an installed quay: create an engine for a
 * world of one rank, free it, print a few facts. Exit status 0 on success.
 */
#include <stdio.h>

#include <quay/quay.h>

int main(void)
{
    quay_config cfg;
    quay_engine *e = NULL;

    quay_config_default(&cfg);
    cfg.rank = 0;
    cfg.nranks = 1;
    int rc = quay_engine_new(&cfg, &e);
    if (rc != QUAY_OK) {
        fprintf(stderr, "quay_engine_new: %s\n", quay_strerror(rc));
        return 1;
    }
    printf("quay %s (0x%06x): rank %d of %d\n", QUAY_VERSION,
           (unsigned)QUAY_VERSION_NUM, (int)quay_engine_rank(e),
           (int)quay_engine_size(e));
    printf("QUAY_EAGAIN: %s\n", quay_strerror(QUAY_EAGAIN));
    quay_engine_free(e);
    return 0;
}
