/*
 * progress.c — driving the engine from inside MPI calls: one step, a
 * wait until something is true, and retrying a call the engine answered
 * QUAY_EAGAIN (a bounded pool is full: progress frees it).
 */
#include <time.h>

#include "qmpi.h"

/* Idle retries before a retry blocks in the transport (1 ms at most). */
#define RETRY_SPIN 64
#define RETRY_BLOCK_NS (1000 * 1000)

double qmpi_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static QMPI_NORETURN void engine_failed(const char *fn, int rc)
{
    qmpi_die(fn, "the engine failed: %s", quay_strerror(rc));
}

void qmpi_poll(void)
{
    qmpi.burst = 0;
    int rc = qrt_progress(qmpi.rt, 0);
    if (rc < 0)
        engine_failed("progress", rc);
}

void qmpi_flush(void)
{
    int rc = qrt_flush(qmpi.rt);
    if (rc < 0)
        engine_failed("progress", rc);
}

void qmpi_wait_until(const char *fn, int (*ready)(void *ctx), void *ctx)
{
    qmpi.burst = 0;
    int rc = qrt_wait_until(qmpi.rt, ready, ctx);
    if (rc < 0)
        engine_failed(fn, rc);
}

int qmpi_again(qmpi_retry *r, int rc)
{
    if (rc != QUAY_EAGAIN)
        return 0;
    if (r->since == 0)
        r->since = qmpi_now();
    else if (qmpi_now() - r->since > QMPI_EAGAIN_LIMIT_S)
        return 0;
    qmpi.burst = 0;
    int p = qrt_progress(qmpi.rt, r->idle >= RETRY_SPIN ? RETRY_BLOCK_NS : 0);
    if (p < 0)
        engine_failed("progress", p);
    r->idle = p > 0 ? 0 : r->idle + 1;
    return 1;
}
