/*
 * test_errors.c — error codes, config defaults and engine creation
 * argument checks (quay.h "Error codes", "Configuration", "Engine").
 */
#include <stdlib.h>
#include <string.h>

#include <quay/quay.h>

#include "harness.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Every code quay.h defines. */
static const int all_codes[] = {
    QUAY_OK,        QUAY_EINVAL,    QUAY_ERANK,      QUAY_ETAG,
    QUAY_ECOMM,     QUAY_EAGAIN,    QUAY_ETRUNCATE,  QUAY_ECANCELLED,
    QUAY_EPEER,     QUAY_ENOTPOSTED, QUAY_EPROTO,    QUAY_ESTATE,
    QUAY_ENOBUFS,   QUAY_EBUSY,     QUAY_EVERSION,   QUAY_ENOTSUP,
    QUAY_ENOMEM,    QUAY_EINTERNAL,
};

static const int fatal_codes[] = {QUAY_ENOMEM, QUAY_EINTERNAL};

static int is_listed_fatal(int code)
{
    for (size_t i = 0; i < COUNT_OF(fatal_codes); i++)
        if (fatal_codes[i] == code)
            return 1;
    return 0;
}

static void test_strerror_distinct(void)
{
    for (size_t i = 0; i < COUNT_OF(all_codes); i++) {
        const char *s = quay_strerror(all_codes[i]);
        if (!ok_msg(s != NULL && s[0] != '\0',
                    "quay_strerror(%d) is a non-empty string", all_codes[i]))
            continue;
        for (size_t j = 0; j < i; j++) {
            const char *t = quay_strerror(all_codes[j]);
            if (t != NULL && strcmp(s, t) == 0)
                ok_msg(0, "quay_strerror(%d) and quay_strerror(%d) differ "
                          "(both \"%s\")", all_codes[i], all_codes[j], s);
        }
    }
    note("%zu codes have distinct names", COUNT_OF(all_codes));
}

static void test_strerror_unknown(void)
{
    /* Never NULL, even for codes quay does not define. */
    static const int unknown[] = {1, -1, -200, -216, -499, -503, -100000,
                                  12345};
    for (size_t i = 0; i < COUNT_OF(unknown); i++) {
        const char *s = quay_strerror(unknown[i]);
        ok_msg(s != NULL && s[0] != '\0',
               "quay_strerror(%d) (unknown) is a non-empty string",
               unknown[i]);
    }
}

static void test_fatal(void)
{
    for (size_t i = 0; i < COUNT_OF(all_codes); i++) {
        int code = all_codes[i];
        int want = is_listed_fatal(code);
        ok_msg(quay_err_is_fatal(code) == want, "quay_err_is_fatal(%d (%s)) == %d",
               code, quay_strerror(code), want);
    }
    /* "Codes at or below QUAY_ERR_FATAL are fatal." */
    is_int(quay_err_is_fatal(QUAY_ERR_FATAL), 1);
    is_int(quay_err_is_fatal(QUAY_ERR_FATAL - 100), 1);
    is_int(quay_err_is_fatal(QUAY_ERR_FATAL + 1), 0);
    ok(QUAY_ENOMEM <= QUAY_ERR_FATAL && QUAY_EINTERNAL <= QUAY_ERR_FATAL);
}

static void test_config_default(void)
{
    quay_config cfg;
    memset(&cfg, 0xa5, sizeof cfg); /* defaults must not depend on garbage */
    quay_config_default(&cfg);
    memset(cfg.key_secret, 0x5a, sizeof cfg.key_secret); /* (tests: any fixed secret) */

    is_int(cfg.version, QUAY_CONFIG_VERSION);
    ok(cfg.flags & QUAY_CFG_COMPLETE_ACTIONS);
    ok(cfg.eager_max > 0);
    ok(cfg.frag_size > 0);
    ok(cfg.pipeline_depth >= 1 && cfg.pipeline_depth <= 64);
    ok(cfg.max_requests > 0);
    ok(cfg.max_unexpected > 0);
    ok(cfg.max_out > 0);
    ok(cfg.max_ctrl > 0);
    ok(cfg.max_comms > 0);
    ok(cfg.reorder_window > 0);
    ok(cfg.unexpected_bytes_max > 0);
    ok(cfg.alloc.alloc == NULL && cfg.alloc.release == NULL &&
       cfg.alloc.ctx == NULL);
}

/* The values quay.h documents field by field. */
static void test_config_documented(void)
{
    quay_config cfg;
    quay_config_default(&cfg);
    memset(cfg.key_secret, 0x5a, sizeof cfg.key_secret); /* (tests: any fixed secret) */

    is_int(cfg.flags, QUAY_CFG_COMPLETE_ACTIONS);
    is_int(cfg.rank, 0);
    is_int(cfg.nranks, 1);
    is_size(cfg.eager_max, 8192);
    is_size(cfg.frag_size, 65536);
    is_int(cfg.pipeline_depth, 8);
    is_size(cfg.max_packet, 0);
    is_int(cfg.max_requests, 4096);
    is_int(cfg.max_unexpected, 4096);
    is_size(cfg.unexpected_bytes_max, (size_t)64 * 1024 * 1024);
    is_int(cfg.max_out, 1024);
    is_int(cfg.max_ctrl, 1024);
    is_int(cfg.max_comms, 64);
    is_int(cfg.reorder_window, 256);
    is_int(cfg.transport_caps, 0);
}

/* Expect quay_engine_new to refuse `cfg` with `want` and hand out nothing. */
static void expect_reject(const quay_config *cfg, int want, const char *why)
{
    quay_engine *e = NULL;
    int rc = quay_engine_new(cfg, &e);
    ok_msg(rc == want, "engine_new rejects %s: %d (%s), want %d (%s)", why, rc,
           quay_strerror(rc), want, quay_strerror(want));
    ok_msg(e == NULL, "no engine returned for %s", why);
    if (rc == QUAY_OK)
        quay_engine_free(e);
}

static void test_engine_new_rejects(void)
{
    quay_config cfg;
    quay_engine *e = NULL;

    is_int(quay_engine_new(NULL, &e), QUAY_EINVAL);
    ok(e == NULL);

    quay_config_default(&cfg);
    memset(cfg.key_secret, 0x5a, sizeof cfg.key_secret); /* (tests: any fixed secret) */
    is_int(quay_engine_new(&cfg, NULL), QUAY_EINVAL);

    quay_config_default(&cfg);
    memset(cfg.key_secret, 0x5a, sizeof cfg.key_secret); /* (tests: any fixed secret) */
    cfg.version = 0;
    expect_reject(&cfg, QUAY_EVERSION, "version 0");
    cfg.version = QUAY_CONFIG_VERSION + 1;
    expect_reject(&cfg, QUAY_EVERSION, "a future version");

    quay_config_default(&cfg);
    memset(cfg.key_secret, 0x5a, sizeof cfg.key_secret); /* (tests: any fixed secret) */
    cfg.nranks = 0;
    expect_reject(&cfg, QUAY_EINVAL, "nranks 0");
    cfg.nranks = -3;
    expect_reject(&cfg, QUAY_EINVAL, "negative nranks");

    quay_config_default(&cfg);
    memset(cfg.key_secret, 0x5a, sizeof cfg.key_secret); /* (tests: any fixed secret) */
    cfg.nranks = 4;
    cfg.rank = 4;
    expect_reject(&cfg, QUAY_EINVAL, "rank == nranks");
    cfg.rank = 1000;
    expect_reject(&cfg, QUAY_EINVAL, "rank > nranks");
    cfg.rank = -1;
    expect_reject(&cfg, QUAY_EINVAL, "negative rank");

    quay_config_default(&cfg);
    memset(cfg.key_secret, 0x5a, sizeof cfg.key_secret); /* (tests: any fixed secret) */
    cfg.pipeline_depth = 0;
    expect_reject(&cfg, QUAY_EINVAL, "pipeline_depth 0");
    cfg.pipeline_depth = 65;
    expect_reject(&cfg, QUAY_EINVAL, "pipeline_depth 65");

    quay_config_default(&cfg);
    memset(cfg.key_secret, 0x5a, sizeof cfg.key_secret); /* (tests: any fixed secret) */
    cfg.max_packet = QUAY_MAX_HEADER; /* no room for any payload */
    expect_reject(&cfg, QUAY_EINVAL, "max_packet below header + eager_max");
}

static void test_engine_new_default(void)
{
    quay_config cfg;
    quay_engine *e = NULL;
    quay_config_default(&cfg);
    memset(cfg.key_secret, 0x5a, sizeof cfg.key_secret); /* (tests: any fixed secret) */

    if (!is_int(quay_engine_new(&cfg, &e), QUAY_OK) || !ok(e != NULL))
        return;
    is_int(quay_engine_rank(e), 0);
    is_int(quay_engine_size(e), 1);
    quay_engine_free(e);

    /* A larger world: the last rank is valid. */
    cfg.nranks = 8;
    cfg.rank = 7;
    e = NULL;
    if (is_int(quay_engine_new(&cfg, &e), QUAY_OK) && ok(e != NULL)) {
        is_int(quay_engine_rank(e), 7);
        is_int(quay_engine_size(e), 8);
        quay_engine_free(e);
    }

    quay_engine_free(NULL); /* documented: NULL ok */
    ok(1);
}

/* Allocator hooks that count live blocks and can fail the n-th call. */
typedef struct counting_alloc {
    long calls;    /* alloc calls so far */
    long live;     /* blocks not yet released */
    long fail_at;  /* alloc call index that returns NULL; -1 = never */
} counting_alloc;

static void *ca_alloc(size_t size, void *ctx)
{
    counting_alloc *ca = ctx;
    if (ca->calls++ == ca->fail_at)
        return NULL;
    void *p = malloc(size ? size : 1);
    if (p)
        ca->live++;
    return p;
}

static void ca_release(void *ptr, void *ctx)
{
    counting_alloc *ca = ctx;
    ca->live--;
    free(ptr);
}

static void test_engine_new_alloc_failure(void)
{
    counting_alloc ca = {0, 0, -1};
    quay_config cfg;
    quay_engine *e = NULL;
    quay_config_default(&cfg);
    memset(cfg.key_secret, 0x5a, sizeof cfg.key_secret); /* (tests: any fixed secret) */
    cfg.alloc.alloc = ca_alloc;
    cfg.alloc.release = ca_release;
    cfg.alloc.ctx = &ca;

    /* A clean run: every block comes from the hook and goes back to it. */
    if (!is_int(quay_engine_new(&cfg, &e), QUAY_OK))
        return;
    long clean_calls = ca.calls;
    ok_msg(clean_calls > 0, "engine_new allocates through the hook (%ld calls)",
           clean_calls);
    quay_engine_free(e);
    is_int(ca.live, 0);

    /* Fail each allocation in turn: QUAY_ENOMEM, no engine, no leak. */
    int all_enomem = 1, all_clean = 1;
    for (long n = 0; n < clean_calls; n++) {
        ca.calls = 0;
        ca.live = 0;
        ca.fail_at = n;
        e = NULL;
        int rc = quay_engine_new(&cfg, &e);
        if (rc != QUAY_ENOMEM || e != NULL) {
            all_enomem = 0;
            note("failing allocation %ld: rc %d (%s), engine %p", n, rc,
                 quay_strerror(rc), (void *)e);
            if (rc == QUAY_OK)
                quay_engine_free(e);
        }
        if (ca.live != 0) {
            all_clean = 0;
            note("failing allocation %ld leaks %ld blocks", n, ca.live);
        }
    }
    ok_msg(all_enomem, "each of %ld failed allocations gives QUAY_ENOMEM",
           clean_calls);
    ok_msg(all_clean, "each of %ld failed allocations leaks nothing",
           clean_calls);
}

int main(void)
{
    subtest("strerror names every code distinctly", test_strerror_distinct);
    subtest("strerror of unknown codes", test_strerror_unknown);
    subtest("err_is_fatal", test_fatal);
    subtest("config_default is sane", test_config_default);
    subtest("config_default matches quay.h", test_config_documented);
    subtest("engine_new rejects bad arguments", test_engine_new_rejects);
    subtest("engine_new accepts the default config", test_engine_new_default);
    subtest("engine_new allocation failure", test_engine_new_alloc_failure);
    return done_testing();
}
