/*
 * test_pmi_wire — the PMI-1 answer parser on its own (adapters/pmi/
 * pmi_wire.h): well-formed answers in Hydra's styles, escapes, every
 * refusal, the field bound, and strict integers; then every line of
 * random bytes and every truncation of a valid one, which must either
 * split into fields that lie inside the line or be refused (under ASan in
 * the sanitizer build: no byte read or written outside it).
 */
#include "harness.h"
#include "pmi_wire.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `len` bytes of `bytes` (NULL: left for the caller to fill) in an
 * exact-size heap buffer with a NUL after them, so that ASan sees any
 * read past the line. */
static char *heap_line(const char *bytes, size_t len)
{
    char *line = malloc(len + 1);
    if (line == NULL)
        abort();
    if (bytes != NULL)
        memcpy(line, bytes, len);
    line[len] = '\0';
    return line;
}

/* Split a heap copy of `text`; *keep is the copy, for the caller to free. */
static int split(const char *text, qpmi_answer *m, char **keep, char *err, size_t errlen)
{
    size_t len = strlen(text);
    *keep = heap_line(text, len);
    return qpmi_wire_split(*keep, len, m, err, errlen);
}

static void t_wellformed(void)
{
    qpmi_answer m;
    char *line, err[128];
    is_int(split("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0", &m, &line, err,
                 sizeof err), 0);
    is_str(m.cmd, "response_to_init");
    is_int(m.n, 3);
    is_str(qpmi_wire_find(&m, "pmi_subversion"), "1");
    is_str(qpmi_wire_find(&m, "rc"), "0");
    ok(qpmi_wire_find(&m, "absent") == NULL);
    ok(!qpmi_wire_has(&m, "absent"));
    free(line);

    /* Spaces between fields and after them, a key without '=', an empty
     * value. */
    is_int(split("cmd=get_result   flag  value=  rc=0 ", &m, &line, err, sizeof err), 0);
    is_str(m.cmd, "get_result");
    ok(qpmi_wire_has(&m, "flag"));
    ok(qpmi_wire_find(&m, "flag") == NULL);
    is_str(qpmi_wire_find(&m, "value"), "");
    free(line);

    /* MPICH's escapes: "\c" is c, a space included; a trailing '\' stays. */
    is_int(split("cmd=get_result value=a\\ b\\=c\\\\d rc=0 tail=x\\", &m, &line, err, sizeof err),
           0);
    is_str(qpmi_wire_find(&m, "value"), "a b=c\\d");
    is_str(qpmi_wire_find(&m, "tail"), "x\\");
    free(line);

    /* A second cmd= is an ordinary field; the first one names the answer. */
    is_int(split("cmd=barrier_out cmd=other", &m, &line, err, sizeof err), 0);
    is_str(m.cmd, "barrier_out");
    is_str(qpmi_wire_find(&m, "cmd"), "other");
    free(line);

    /* Exactly the bound of fields. */
    char big[64 * QPMI_WIRE_MAX_FIELDS];
    size_t n = (size_t)snprintf(big, sizeof big, "cmd=x");
    for (int i = 0; i < QPMI_WIRE_MAX_FIELDS; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, " k%d=%d", i, i);
    is_int(split(big, &m, &line, err, sizeof err), 0);
    is_int(m.n, QPMI_WIRE_MAX_FIELDS);
    is_str(qpmi_wire_find(&m, "k31"), "31");
    free(line);
}

static void refused(const char *text, size_t len, const char *why)
{
    qpmi_answer m;
    char err[128] = "";
    char *line = heap_line(text, len);
    int rc = qpmi_wire_split(line, len, &m, err, sizeof err);
    ok_msg(rc == -1 && strstr(err, why) != NULL, "refused (%s): got %d \"%s\"", why, rc, err);
    free(line);
}

static void t_refusals(void)
{
    refused("", 0, "does not start with cmd=");
    refused("rc=0 cmd=x", 10, "does not start with cmd=");
    refused(" cmd=x", 6, "does not start with cmd=");
    refused("cmd=", 4, "empty cmd=");
    refused("cmd", 3, "does not start with cmd=");
    refused("cmd=x\0rc=0", 10, "NUL byte");
    refused("cmd=x\trc=0", 10, "control character 0x09");
    refused("cmd=x rc=0\x7f", 11, "control character 0x7f");
    refused("cmd=x r%c=0", 11, "bad key");
    refused("cmd=x =0", 8, "bad key");
    refused("cmd=x k\xc3\xa9=1", 11, "bad key");

    char big[64 * (QPMI_WIRE_MAX_FIELDS + 1)];
    size_t n = (size_t)snprintf(big, sizeof big, "cmd=x");
    for (int i = 0; i <= QPMI_WIRE_MAX_FIELDS; i++)
        n += (size_t)snprintf(big + n, sizeof big - n, " k%d", i);
    refused(big, n, "more than 32 fields");

    /* A NULL or empty err buffer is allowed. */
    char line[] = "garbage";
    qpmi_answer m;
    is_int(qpmi_wire_split(line, strlen(line), &m, NULL, 0), -1);
}

static void t_integers(void)
{
    int v = 7;
    is_int(qpmi_wire_int("0", 0, 10, &v), 0);
    is_int(v, 0);
    is_int(qpmi_wire_int("-5", -10, 10, &v), 0);
    is_int(v, -5);
    is_int(qpmi_wire_int("2147483647", 0, INT_MAX, &v), 0);
    is_int(v, INT_MAX);
    v = 7;
    is_int(qpmi_wire_int("11", 0, 10, &v), -1);
    is_int(qpmi_wire_int("-1", 0, 10, &v), -1);
    is_int(qpmi_wire_int("", 0, 10, &v), -1);
    is_int(qpmi_wire_int(NULL, 0, 10, &v), -1);
    is_int(qpmi_wire_int("+1", 0, 10, &v), -1);
    is_int(qpmi_wire_int(" 1", 0, 10, &v), -1);
    is_int(qpmi_wire_int("1 ", 0, 10, &v), -1);
    is_int(qpmi_wire_int("0x1", 0, 10, &v), -1);
    is_int(qpmi_wire_int("-", -10, 10, &v), -1);
    is_int(qpmi_wire_int("99999999999999999999", LONG_MIN, LONG_MAX, &v), -1);
    is_int(v, 7); /* a refusal leaves *out alone */
}

static void t_keys_values(void)
{
    ok(qpmi_wire_key_ok("P0-businesscard", 64));
    ok(!qpmi_wire_key_ok("", 64));
    ok(!qpmi_wire_key_ok("a b", 64));
    ok(!qpmi_wire_key_ok("a=b", 64));
    ok(!qpmi_wire_key_ok("a\\b", 64));
    ok(!qpmi_wire_key_ok("a\x7f", 64));
    ok(qpmi_wire_key_ok("abcd", 4));
    ok(!qpmi_wire_key_ok("abcde", 4));
    ok(qpmi_wire_val_ok("tcp://10.0.0.1:5000", 64));
    ok(qpmi_wire_val_ok("a=b", 64)); /* '=' may stand in a value */
    ok(!qpmi_wire_val_ok("", 64));
    ok(!qpmi_wire_val_ok("a b", 64));
    ok(!qpmi_wire_val_ok("a\\b", 64));
    ok(!qpmi_wire_val_ok("a\nb", 64));
    ok(qpmi_wire_val_ok("abcd", 4));
    ok(!qpmi_wire_val_ok("abcde", 4));
    ok(qpmi_wire_val_byte_ok('x') && !qpmi_wire_val_byte_ok(' ') &&
       !qpmi_wire_val_byte_ok(0x7f) && !qpmi_wire_val_byte_ok('\\'));
}

/* Every field of an accepted split lies inside [line, line + len]. */
static int inside(const qpmi_answer *m, const char *line, size_t len)
{
    const char *end = line + len;
    if (m->cmd < line || m->cmd > end || m->n < 0 || m->n > QPMI_WIRE_MAX_FIELDS)
        return 0;
    for (int i = 0; i < m->n; i++) {
        if (m->f[i].key < line || m->f[i].key > end)
            return 0;
        if (m->f[i].val != NULL && (m->f[i].val < line || m->f[i].val > end))
            return 0;
    }
    return 1;
}

static void t_hostile(void)
{
    /* Every truncation of a valid answer. */
    const char *valid = "cmd=get_result rc=0 msg=success value=tcp\\ 10.0.0.1\\=5000 flag";
    size_t vlen = strlen(valid);
    int bad = 0;
    for (size_t len = 0; len <= vlen; len++) {
        char *line = heap_line(valid, len);
        qpmi_answer m;
        char err[128];
        if (qpmi_wire_split(line, len, &m, err, sizeof err) == 0 && !inside(&m, line, len))
            bad++;
        free(line);
    }
    is_int(bad, 0);

    /* Random lines from a small alphabet that reaches every branch. */
    static const char alpha[] = "cmd= rc=0\\kx_.-\x01\x7f=";
    uint64_t x = 0x9e3779b97f4a7c15u;
    int accepted = 0;
    bad = 0;
    for (int i = 0; i < 20000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        size_t len = (size_t)(x % 48);
        char *line = heap_line(NULL, len);
        uint64_t y = x;
        size_t k = 0;
        if (len >= 4 && (x & 1)) {
            memcpy(line, "cmd=", 4); /* most lines past the first check */
            k = 4;
        }
        for (; k < len; k++) {
            y = y * 6364136223846793005u + 1442695040888963407u;
            line[k] = alpha[(y >> 33) % (sizeof alpha - 1)];
        }
        qpmi_answer m;
        char err[128];
        if (qpmi_wire_split(line, len, &m, err, sizeof err) == 0) {
            accepted++;
            if (!inside(&m, line, len))
                bad++;
        }
        free(line);
    }
    is_int(bad, 0);
    ok_msg(accepted > 0, "some random lines are answers (%d)", accepted);
}

int main(void)
{
    subtest("well-formed answers", t_wellformed);
    subtest("refused answers", t_refusals);
    subtest("strict integers", t_integers);
    subtest("keys and values the wire can carry", t_keys_values);
    subtest("truncated and random lines", t_hostile);
    return done_testing();
}
