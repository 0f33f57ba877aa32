/* bench_common.c — see bench_common.h. */
#include "bench_common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

void bench_check(int rc, const char *what)
{
    if (rc != 0)
        bench_die("%s: %s (%d)", what, quay_strerror(rc), rc);
}

int bench_parse_u64(const char *s, uint64_t *out)
{
    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || *end != '\0')
        return -1;
    *out = (uint64_t)v;
    return 0;
}

int bench_parse_size(const char *s, size_t *out)
{
    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0)
        return -1;
    unsigned shift = 0;
    if (*end == 'K' || *end == 'k')
        shift = 10;
    else if (*end == 'M' || *end == 'm')
        shift = 20;
    else if (*end == 'G' || *end == 'g')
        shift = 30;
    if (shift != 0) {
        end++;
        if (strcmp(end, "iB") == 0 || strcmp(end, "B") == 0)
            end += strlen(end);
    }
    if (*end != '\0')
        return -1;
    if (v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)v << shift;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_min(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    return n ? v[0] : 0.0;
}

double bench_median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_double);
    if (n == 0)
        return 0.0;
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

const char *bench_size_label(size_t b, char *buf, size_t cap)
{
    if (b >= (1u << 20) && b % (1u << 20) == 0)
        snprintf(buf, cap, "%zu MiB", b >> 20);
    else if (b >= 1024 && b % 1024 == 0)
        snprintf(buf, cap, "%zu KiB", b >> 10);
    else
        snprintf(buf, cap, "%zu B", b);
    return buf;
}

void bench_engines_new(const quay_config *base, quay_engine *e[2],
                       quay_comm *c[2])
{
    for (int r = 0; r < 2; r++) {
        quay_config cfg = *base;
        cfg.rank = r;
        cfg.nranks = 2;
        bench_check(quay_engine_new(&cfg, &e[r]), "quay_engine_new");
        bench_check(quay_comm_create(e[r], 0, 2, NULL, &c[r]), "quay_comm_create");
    }
}
