/*
 * e2e.c — helpers for the end-to-end programs (e2e.h).
 */
#include "e2e.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int32_t my_rank = -1;

void e2e_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "rank %d: %s:%d: ", (int)my_rank, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    _exit(1); /* no leak report: this run failed anyway */
}

void e2e_init(e2e *t)
{
    memset(t, 0, sizeof *t);
    E2E_OK(qrt_init(NULL, &t->rt));
    t->e = qrt_engine(t->rt);
    t->world = qrt_world(t->rt);
    t->rank = qrt_rank(t->rt);
    t->size = qrt_size(t->rt);
    my_rank = t->rank;
}

int e2e_finish(e2e *t)
{
    E2E_OK(qrt_finalize(t->rt));
    t->rt = NULL;
    return 0;
}

/* xorshift64*: a cheap, position-dependent pattern. */
static uint64_t next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

void e2e_fill(void *buf, size_t len, uint64_t seed)
{
    uint8_t *b = buf;
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t v = next(&s);
        memcpy(b + i, &v, 8);
    }
    if (i < len) {
        uint64_t v = next(&s);
        memcpy(b + i, &v, len - i);
    }
}

long e2e_verify(const void *buf, size_t len, uint64_t seed)
{
    const uint8_t *b = buf;
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    size_t i = 0;
    for (; i < len; i += 8) {
        uint64_t v = next(&s);
        size_t n = len - i < 8 ? len - i : 8;
        if (memcmp(b + i, &v, n) != 0) {
            for (size_t k = 0; k < n; k++)
                if (b[i + k] != ((uint8_t *)&v)[k])
                    return (long)(i + k);
        }
    }
    return -1;
}

quay_status e2e_wait(e2e *t, quay_req *r)
{
    quay_status st;
    E2E_OK(qrt_wait(t->rt, r, &st));
    E2E_OK(quay_req_free(t->e, r));
    return st;
}

void e2e_send(e2e *t, const void *buf, size_t len, int32_t dst, int32_t tag)
{
    quay_req *r;
    E2E_OK(quay_isend(t->e, t->world, buf, len, dst, tag, QUAY_SEND_STANDARD, &r));
    quay_status st = e2e_wait(t, r);
    if (st.error != 0)
        e2e_fail(__FILE__, __LINE__, "send to %d tag %d: %s", (int)dst, (int)tag,
                 quay_strerror(st.error));
}

quay_status e2e_recv(e2e *t, void *buf, size_t cap, int32_t src, int32_t tag)
{
    quay_req *r;
    E2E_OK(quay_irecv(t->e, t->world, buf, cap, src, tag, &r));
    return e2e_wait(t, r);
}

void e2e_barrier(e2e *t)
{
    quay_req *r;
    E2E_OK(quay_ibarrier(t->e, t->world, &r));
    quay_status st = e2e_wait(t, r);
    E2E_CHECK(st.error == 0);
}

int e2e_sanitized(void)
{
#if defined(__SANITIZE_ADDRESS__)
    return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return 1;
#else
    return 0;
#endif
#else
    return 0;
#endif
}
