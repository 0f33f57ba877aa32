/* sim_util.c — see sim_util.h. */
#include "sim_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <quay/quay.h>

uint64_t sim_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sim_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("quay-sim tables: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

void sim_check(int rc, const char *what)
{
    if (rc != 0)
        sim_die("%s: %s (%d)", what, quay_strerror(rc), rc);
}

void *sim_calloc(size_t n, size_t size)
{
    /* calloc(0, ..) may return NULL; a table never needs an empty array. */
    void *p = calloc(n != 0 ? n : 1, size);
    if (p == NULL)
        sim_die("out of memory");
    return p;
}
