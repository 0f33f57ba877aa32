/*
 * pmi_exchange — the address exchange a quay rank does at start-up, as a
 * test program: run it under pmi_fakerun, under Hydra's mpiexec, or alone.
 *
 *   pmi_exchange [--size N] [--singleton] [--abort CODE]
 *
 * Every rank puts its "address" (10.0.x.y:port) and a business card as
 * long as the process manager allows, commits, waits at the barrier, then
 * gets every rank's pair and checks it byte for byte; a second round
 * (another put and barrier) checks that barriers can be repeated. Along
 * the way: a missing key is QPMI_ENOTFOUND and the connection stays
 * usable, a short buffer is QPMI_ERANGE, unsendable keys and values are
 * QPMI_EINVAL before anything is sent.
 *
 *   --size N      fail unless the job has N ranks
 *   --singleton   clear the PMI_* environment first and expect rank 0 of 1
 *   --abort CODE  the last rank calls qpmi_abort(CODE); the others wait in
 *                 a barrier that never completes (the process manager must
 *                 kill them)
 *
 * Exit status 0 on success; failures are printed on stderr.
 */
#include "pmi_client.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_rank = -1;
static int g_fail = 0;

#define CHECK(cond, ...)                                                        \
    do {                                                                        \
        if (!(cond)) {                                                          \
            fprintf(stderr, "pmi_exchange[%d]: %s:%d: check failed: %s: ", g_rank, \
                    __FILE__, __LINE__, #cond);                                 \
            fprintf(stderr, __VA_ARGS__);                                       \
            fputc('\n', stderr);                                                \
            g_fail = 1;                                                         \
        }                                                                       \
    } while (0)

static void make_addr(int r, char *buf, size_t n)
{
    snprintf(buf, n, "10.0.%d.%d:%d", r / 250, r % 250 + 1, 41000 + r);
}

/* A card of exactly `len` bytes: a header, then every byte a value may
 * hold (0x21..0x7e but '\'), rotated by rank. */
static void make_card(int r, size_t len, char *buf)
{
    char addr[64];
    make_addr(r, addr, sizeof addr);
    int h = snprintf(buf, len + 1, "quay1;rank=%d;tcp=%s;shm=/quay-%d;pad=", r, addr, r);
    size_t i = h < 0 ? 0 : (size_t)h;
    if (i > len)
        i = len;
    for (unsigned k = (unsigned)r; i < len; k++) {
        char c = (char)(0x21 + k % 94);
        buf[i++] = c == '\\' ? '#' : c;
    }
    buf[len] = '\0';
}

static const char *err(qpmi *p, int rc)
{
    static char b[400];
    snprintf(b, sizeof b, "%s (%s)", qpmi_strerror(rc), p ? qpmi_errmsg(p) : qpmi_init_errmsg());
    return b;
}

int main(int argc, char **argv)
{
    int want_size = -1, singleton = 0, abort_code = 0, do_abort = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--size") == 0 && i + 1 < argc) {
            want_size = atoi(argv[++i]);
        } else if (strcmp(argv[i], "--singleton") == 0) {
            singleton = 1;
        } else if (strcmp(argv[i], "--abort") == 0 && i + 1 < argc) {
            do_abort = 1;
            abort_code = atoi(argv[++i]);
        } else {
            fprintf(stderr, "usage: pmi_exchange [--size N] [--singleton] [--abort CODE]\n");
            return 2;
        }
    }
    if (singleton) {
        static const char *const vars[] = {"PMI_FD", "PMI_PORT", "PMI_ID", "PMI_RANK",
                                           "PMI_SIZE"};
        for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
            unsetenv(vars[i]);
    }

    qpmi *p = NULL;
    int rc = qpmi_init(&p);
    if (rc != QPMI_OK) {
        fprintf(stderr, "pmi_exchange: qpmi_init: %s\n", err(NULL, rc));
        return 1;
    }
    int me = qpmi_rank(p), n = qpmi_size(p);
    g_rank = me;
    CHECK(n >= 1 && me >= 0 && me < n, "rank %d size %d", me, n);
    if (want_size > 0)
        CHECK(n == want_size, "size %d, expected %d", n, want_size);
    CHECK(qpmi_is_singleton(p) == singleton, "is_singleton %d", qpmi_is_singleton(p));
    if (singleton)
        CHECK(me == 0 && n == 1 && qpmi_fd(p) == -1, "singleton is rank %d of %d", me, n);
    CHECK(qpmi_kvsname(p) != NULL && qpmi_kvsname(p)[0] != '\0', "empty kvsname");
    CHECK(qpmi_key_max(p) >= 16 && qpmi_val_max(p) >= 64, "maxes %zu %zu", qpmi_key_max(p),
          qpmi_val_max(p));

    if (do_abort) {
        if (me == n - 1) {
            rc = qpmi_abort(p, abort_code, "pmi_exchange --abort: bye now");
            CHECK(rc == QPMI_OK, "abort: %s", err(p, rc));
            sleep(30); /* the process manager kills us */
            qpmi_finalize(p);
            return 99;
        }
        rc = qpmi_barrier(p); /* never completes */
        fprintf(stderr, "pmi_exchange[%d]: barrier returned %d during an abort\n", me, rc);
        qpmi_finalize(p);
        return 98;
    }

    /* Local argument checks: nothing goes on the wire. */
    CHECK(qpmi_put(p, "bad key", "v") == QPMI_EINVAL, "space in a key");
    CHECK(qpmi_put(p, "bad=key", "v") == QPMI_EINVAL, "'=' in a key");
    CHECK(qpmi_put(p, "k", "") == QPMI_EINVAL, "empty value");
    CHECK(qpmi_put(p, "k", "a b") == QPMI_EINVAL, "space in a value");
    CHECK(qpmi_put(p, "k", "a\nb") == QPMI_EINVAL, "newline in a value");
    CHECK(qpmi_put(p, "k", "a\\b") == QPMI_EINVAL, "backslash in a value");
    size_t vmax = qpmi_val_max(p);
    char *card = malloc(vmax + 2);
    char *got = malloc(vmax + 2);
    if (card == NULL || got == NULL)
        return 1;
    memset(card, 'x', vmax + 1);
    card[vmax + 1] = '\0';
    CHECK(qpmi_put(p, "k", card) == QPMI_EINVAL, "value of val_max + 1 bytes");

    /* Round 1: addresses and business cards. */
    char addr[64];
    make_addr(me, addr, sizeof addr);
    rc = qpmi_put_rank(p, "addr", addr);
    CHECK(rc == QPMI_OK, "put addr: %s", err(p, rc));
    make_card(me, vmax, card);
    rc = qpmi_put_rank(p, "card", card);
    CHECK(rc == QPMI_OK, "put card: %s", err(p, rc));
    rc = qpmi_commit(p);
    CHECK(rc == QPMI_OK, "commit: %s", err(p, rc));
    rc = qpmi_barrier(p);
    CHECK(rc == QPMI_OK, "barrier: %s", err(p, rc));

    for (int r = 0; r < n && !g_fail; r++) {
        char want[64];
        size_t len = 0;
        make_addr(r, want, sizeof want);
        rc = qpmi_get_rank(p, "addr", r, got, vmax + 1, &len);
        CHECK(rc == QPMI_OK && strcmp(got, want) == 0 && len == strlen(want),
              "addr of rank %d: rc %s, got \"%s\", want \"%s\"", r, err(p, rc),
              rc == QPMI_OK ? got : "", want);
        make_card(r, vmax, card);
        rc = qpmi_get_rank(p, "card", r, got, vmax + 1, &len);
        CHECK(rc == QPMI_OK && strcmp(got, card) == 0 && len == vmax,
              "card of rank %d: rc %s, %zu bytes, want %zu", r, err(p, rc), len, vmax);
    }

    /* A missing key leaves the connection usable; a short buffer says so. */
    rc = qpmi_get_rank(p, "nokey", me, got, vmax + 1, NULL);
    CHECK(rc == QPMI_ENOTFOUND, "missing key: %s", err(p, rc));
    size_t len = 0;
    char small[4];
    char want0[64];
    make_addr(0, want0, sizeof want0);
    rc = qpmi_get_rank(p, "addr", 0, small, sizeof small, &len);
    CHECK(rc == QPMI_ERANGE && len == strlen(want0), "short buffer: %s, len %zu", err(p, rc),
          len);
    if (!singleton) {
        rc = qpmi_get(p, "PMI_process_mapping", got, vmax + 1, NULL);
        CHECK(rc == QPMI_OK && strncmp(got, "(vector,", 8) == 0, "PMI_process_mapping: %s",
              err(p, rc));
    }

    /* Round 2: another put and barrier. */
    char v2[64];
    snprintf(v2, sizeof v2, "round2:%d:%d", me, n);
    rc = qpmi_put_rank(p, "r2", v2);
    CHECK(rc == QPMI_OK, "put r2: %s", err(p, rc));
    rc = qpmi_barrier(p);
    CHECK(rc == QPMI_OK, "barrier 2: %s", err(p, rc));
    int peers[2] = {(me + 1) % n, (me + n - 1) % n};
    for (int i = 0; i < 2; i++) {
        char want[64];
        snprintf(want, sizeof want, "round2:%d:%d", peers[i], n);
        rc = qpmi_get_rank(p, "r2", peers[i], got, vmax + 1, NULL);
        CHECK(rc == QPMI_OK && strcmp(got, want) == 0, "r2 of rank %d: %s", peers[i],
              err(p, rc));
    }

    rc = qpmi_finalize(p);
    CHECK(rc == QPMI_OK, "finalize: %s", qpmi_strerror(rc));
    free(card);
    free(got);
    if (!g_fail && me == 0)
        printf("pmi_exchange: %d rank(s) exchanged addresses and %zu-byte cards: ok\n", n, vmax);
    return g_fail ? 1 : 0;
}
