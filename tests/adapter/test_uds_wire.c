/*
 * test_uds_wire — the example adapter (examples/adapter) against its
 * contract (<quay/quay_adapter.h>), from the runtime's side: this process
 * opens it as rank 0 of 2 with a recording sink, and a forked child plays
 * rank 1 on the raw wire, honest or not. Checked: packets in order, a
 * packet refused with QUAY_EAGAIN offered again before anything behind
 * it, bye after the packets, a failure after them and never with a bye,
 * garbage failing the peer (a length over the limit allocating nothing),
 * queued sends finishing in order (op_done) or with QUAY_EPEER before
 * peer_failed, busy.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <quay/quay_adapter.h>

#define MAGIC 0x31534455u /* uds_meet.c's hello */
#define BIG (64u << 10)
#define NSEND 64

static int failures;
#define CHECK(c)                                                                           \
    do {                                                                                   \
        if (!(c)) {                                                                        \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c);         \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

/* ---- rank 1: the raw wire ------------------------------------------------------------ */

static void put(int fd, const void *b, size_t n)
{
    const char *p = b;
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k <= 0)
            _exit(10);
        p += k;
        n -= (size_t)k;
    }
}

/* One send per frame: rank 0 may close on seeing its header (garbage),
 * and a second send would then fail. */
static void frame(int fd, int type, const void *body, uint32_t len, uint32_t claimed)
{
    uint8_t f[8 + 16] = {0};
    memcpy(f, &claimed, 4);
    f[4] = (uint8_t)type;
    if (len > 16)
        _exit(17);
    if (len > 0)
        memcpy(f + 8, body, len);
    put(fd, f, 8 + len);
}

static void get(int fd, void *b, size_t n)
{
    char *p = b;
    while (n > 0) {
        ssize_t k = recv(fd, p, n, 0);
        if (k <= 0)
            _exit(11);
        p += k;
        n -= (size_t)k;
    }
}

static int dial(const char *dir)
{
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path, sizeof a.sun_path, "%s/0.sock", dir);
    for (int i = 0; i < 5000; i++) {
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) {
            uint32_t hello[4] = {MAGIC, 1, 0, 2};
            put(fd, hello, sizeof hello);
            return fd;
        }
        close(fd);
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    _exit(12);
}

enum { NORMAL, NO_BYE, OVER_LIMIT, BAD_TYPE, AFTER_BYE, MID_FRAME, SENDS, SENDS_DIE, NCASES };
static const char *const names[NCASES] = {"normal",   "no_bye",    "over_limit", "bad_type",
                                          "after_bye", "mid_frame", "sends",      "sends_die"};

/* Rank 1 for case c; `go` says that rank 0 has queued its sends. */
static void rank1(int c, const char *dir, int go)
{
    int fd = dial(dir);
    static uint8_t buf[BIG + 8];
    char g;
    switch (c) {
    case NORMAL:
        frame(fd, 1, "abc", 3, 3);
        frame(fd, 1, "defg", 4, 4);
        frame(fd, 2, NULL, 0, 0);
        get(fd, buf, 8); /* rank 0's bye: then we both close */
        break;
    case NO_BYE:
        frame(fd, 1, "abc", 3, 3);
        break;
    case OVER_LIMIT:
        frame(fd, 1, NULL, 0, 0xffffffffu);
        break;
    case BAD_TYPE:
        frame(fd, 9, NULL, 0, 0);
        break;
    case AFTER_BYE:
        frame(fd, 2, NULL, 0, 0);
        frame(fd, 1, "abc", 3, 3);
        (void)recv(fd, buf, 1, 0); /* until rank 0 closes */
        break;
    case MID_FRAME:
        frame(fd, 1, "0123456789", 10, 100);
        break;
    case SENDS: /* every packet, in order, then bye both ways */
        if (read(go, &g, 1) != 1)
            _exit(16);
        for (uint32_t i = 0; i < NSEND; i++) {
            uint32_t len;
            get(fd, buf, 8);
            memcpy(&len, buf, 4);
            if (buf[4] != 1 || len != BIG)
                _exit(13);
            get(fd, buf, len);
            for (uint32_t k = 0; k < len; k++)
                if (buf[k] != (uint8_t)(i + k))
                    _exit(14);
        }
        frame(fd, 2, NULL, 0, 0);
        get(fd, buf, 8);
        if (buf[4] != 2)
            _exit(15);
        break;
    case SENDS_DIE: /* read nothing, die once rank 0 has queued */
        if (read(go, &g, 1) != 1)
            _exit(16);
        _exit(0);
    }
    close(fd);
    _exit(0);
}

/* ---- rank 0: the adapter with a recording sink --------------------------------------- */

typedef struct rec {
    char log[4096]; /* events, one letter each, and packet bodies */
    int refuse;     /* EAGAIN the first offer of every packet */
    int offers;
    uint64_t next_token; /* op_done expected next (in order) */
    int queued;          /* sends that answered 0: each gets an op_done */
    int done_ok, done_epeer, done_bad;
    int bye, failed;
} rec;

static void note(rec *r, const char *s)
{
    strncat(r->log, s, sizeof r->log - strlen(r->log) - 1);
}

static int s_packet(void *ctx, int32_t peer, const void *b, size_t len)
{
    rec *r = ctx;
    char s[64];
    if (peer != 1 || r->bye || r->failed)
        note(r, "!");
    if (r->refuse && r->offers++ % 2 == 0) {
        snprintf(s, sizeof s, "R%.*s", (int)(len < 16 ? len : 16), (const char *)b);
        note(r, s);
        return QUAY_EAGAIN;
    }
    snprintf(s, sizeof s, "P%.*s", (int)(len < 16 ? len : 16), (const char *)b);
    note(r, s);
    return 0;
}

static void s_op_done(void *ctx, uint64_t token, int status)
{
    rec *r = ctx;
    if (token != r->next_token++ || r->failed)
        r->done_bad++;
    else if (status == 0)
        r->done_ok++;
    else if (status == QUAY_EPEER)
        r->done_epeer++;
    else
        r->done_bad++;
}

static void s_bye(void *ctx, int32_t peer)
{
    rec *r = ctx;
    note(r, peer == 1 ? "B" : "!");
    r->bye++;
}

static void s_failed(void *ctx, int32_t peer)
{
    rec *r = ctx;
    note(r, peer == 1 ? "F" : "!");
    r->failed++;
}

/* Poll until `until` holds or 5 s pass. */
static void pump(quay_transport *t, rec *r, int (*until)(quay_transport *, rec *))
{
    for (int i = 0; i < 500 && !until(t, r); i++)
        CHECK(t->ops->poll(t, 10 * 1000 * 1000) >= 0);
}

static int ended(quay_transport *t, rec *r)
{
    return r->failed > 0 || (r->bye > 0 && !t->ops->busy(t));
}

static int all_done(quay_transport *t, rec *r)
{
    (void)t;
    return r->done_ok + r->done_epeer + r->done_bad >= r->queued;
}

static int failed_(quay_transport *t, rec *r)
{
    (void)t;
    return r->failed > 0;
}

static void run(int c, const char *dir, int refuse)
{
    rec r;
    memset(&r, 0, sizeof r);
    r.refuse = refuse;
    quay_transport_sink sink = {&r, s_packet, s_op_done, NULL, NULL, s_bye, s_failed};
    quay_transport *t = NULL;
    int go[2];
    if (pipe(go) != 0)
        exit(1);
    pid_t child = fork();
    if (child == 0)
        rank1(c, dir, go[0]);
    CHECK(quay_transport_open(QUAY_TRANSPORT_ABI_VERSION, 0, 2, &sink, &t) == 0 && t != NULL);
    if (t == NULL)
        exit(1);
    CHECK(t->ops->abi_version == QUAY_TRANSPORT_ABI_VERSION && t->caps == QUAY_CAP_ORDERED);
    if (c == SENDS || c == SENDS_DIE) {
        static uint8_t data[NSEND][BIG];
        int queued = 0;
        for (uint32_t i = 0; i < NSEND; i++) {
            for (uint32_t k = 0; k < BIG; k++)
                data[i][k] = (uint8_t)(i + k);
            quay_iov iov[2] = {{data[i], 100}, {data[i] + 100, BIG - 100}};
            int rc = t->ops->send(t, 1, iov, 2, i);
            CHECK(rc == 0 || rc == 1);
            if (rc == 1)
                r.next_token = i + 1; /* out at once: no op_done */
            queued += rc == 0;
            CHECK(rc != 1 || queued == 0); /* nothing passes a queue */
        }
        CHECK(queued > 0 && t->ops->busy(t)); /* 4 MiB: more than a socket holds */
        r.queued = queued;
        CHECK(write(go[1], "g", 1) == 1);
        if (c == SENDS_DIE) {
            pump(t, &r, failed_);
            CHECK(r.done_ok + r.done_epeer == queued && r.done_epeer > 0 && r.done_bad == 0);
            CHECK(r.failed == 1 && !t->ops->busy(t));
            CHECK(t->ops->send(t, 1, (quay_iov[]){{"x", 1}}, 1, 99) == QUAY_EPEER);
        } else {
            pump(t, &r, all_done);
            CHECK(r.done_ok == queued && r.done_bad == 0);
        }
    }
    pump(t, &r, ended);
    if (c == NORMAL || c == SENDS) {
        CHECK(t->ops->bye(t) == 0);
        pump(t, &r, ended);
    }
    for (int i = 0; i < 5; i++) /* whatever else it sent: nothing more is told */
        CHECK(t->ops->poll(t, 10 * 1000 * 1000) >= 0);
    t->ops->close(t);
    close(go[0]);
    close(go[1]);
    int st = 0;
    waitpid(child, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    printf("%-10s %s log %s\n", names[c], refuse ? "(refusing)" : "          ", r.log);
    static const char *const want[NCASES] = {"PabcPdefgB", "PabcF", "F",  "F",
                                             "B",          "F",     "B",  "F"};
    static const char *const want_refusing[NCASES] = {"RabcPabcRdefgPdefgB", "RabcPabcF"};
    const char *w = refuse ? want_refusing[c] : want[c];
    CHECK(w != NULL && strcmp(r.log, w) == 0);
}

int main(void)
{
    char dir[] = "/tmp/test_uds_wire-XXXXXX";
    if (mkdtemp(dir) == NULL)
        return 1;
    setenv("QUAY_UDS_DIR", dir, 1);
    setenv("QUAY_UDS_CONNECT_MS", "5000", 1);
    for (int c = 0; c < NCASES; c++)
        run(c, dir, 0);
    run(NORMAL, dir, 1);
    run(NO_BYE, dir, 1);
    rmdir(dir);
    if (failures != 0)
        fprintf(stderr, "test_uds_wire: %d check(s) failed\n", failures);
    return failures != 0;
}
