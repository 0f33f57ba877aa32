/*
 * pmi_client.c — PMI-1 client over the "simple" wire protocol (see
 * pmi_client.h). Written from the protocol as MPICH specifies and serves
 * it (src/pmi/maint/pmi-1.1.txt; Hydra's src/pm/hydra/pm/pmiserv in 4.0,
 * src/pm/hydra/proxy and mpiexec in 4.1+), not from MPICH code.
 *
 * One request line, one answer line (three more after an initack). Every
 * answer is read into a bounded buffer, split into key=value tokens
 * (pmi_wire.c) and checked: it must start with cmd=, name the expected
 * answer, carry a valid rc= (if any) and the fields the command needs,
 * with every length within the maxes the server gave.
 */
#include "pmi_client.h"
#include "pmi_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

/* Longest answer line (with its '\n') before get_maxes has answered:
 * response_to_init, initack, set, maxes are all short. */
#define LINE_CAP_START 1024
/* Largest maxes accepted from a server (each; bytes). */
#define MAXES_LIMIT (1 << 20)
/* Longest abort message sent. */
#define ABORT_MSG_MAX 256
/* Singleton maxes: the same as Hydra's, so programs behave alike. */
#define SINGLETON_KVSNAME_MAX 256
#define SINGLETON_KEYLEN_MAX 64
#define SINGLETON_VALLEN_MAX 1024

struct qpmi_kv {
    char *key;
    char *val;
};

struct qpmi {
    int fd;        /* -1: singleton */
    int rank;
    int size;
    int appnum;
    int dead;      /* a transport or protocol error: the stream is lost */
    int timeout_ms;
    int debug;
    int server_subversion;
    /* Buffer sizes, NUL included, as get_maxes reports them. */
    int kvsname_max;
    int keylen_max;
    int vallen_max;
    char *kvsname;

    char *rbuf;    /* bytes received, not yet consumed */
    size_t rlen;
    size_t rcap;   /* longest line accepted, '\n' included */
    char *line;    /* the current line, NUL-terminated (rcap bytes) */
    char *sbuf;    /* the request being sent */
    size_t scap;

    char err[256];

    struct qpmi_kv *kv; /* singleton key-value space */
    size_t nkv;
    size_t kvcap;
};

static char init_err[256];

/* ------------------------------------------------------------------------
 * Small helpers
 * ---------------------------------------------------------------------- */

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static int fail(qpmi *p, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->err, sizeof p->err, fmt, ap);
    va_end(ap);
    if (rc == QPMI_EIO || rc == QPMI_EPROTO || rc == QPMI_ETIMEDOUT)
        p->dead = 1;
    return rc;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------------
 * Transport: whole lines out, bounded lines in
 * ---------------------------------------------------------------------- */

/* Wait until fd is ready for `events` or the deadline (-1: none) passes. */
static int wait_fd(qpmi *p, short events, int64_t deadline)
{
    for (;;) {
        int t = -1;
        if (deadline >= 0) {
            int64_t left = deadline - now_ms();
            if (left <= 0)
                return fail(p, QPMI_ETIMEDOUT, "no answer from the process manager in %d ms",
                            p->timeout_ms);
            t = left > INT_MAX ? INT_MAX : (int)left;
        }
        struct pollfd pfd = {.fd = p->fd, .events = events, .revents = 0};
        int r = poll(&pfd, 1, t);
        if (r > 0)
            return QPMI_OK; /* readable, writable, or HUP/ERR: the I/O says */
        if (r == 0)
            continue; /* re-check the deadline */
        if (errno != EINTR)
            return fail(p, QPMI_EIO, "poll: %s", strerror(errno));
    }
}

static int64_t deadline_of(const qpmi *p)
{
    return p->timeout_ms < 0 ? -1 : now_ms() + p->timeout_ms;
}

static int send_all(qpmi *p, const char *buf, size_t len)
{
    int64_t deadline = deadline_of(p);
    int use_send = 1;
    while (len > 0) {
        ssize_t n;
        if (use_send) {
            n = send(p->fd, buf, len, MSG_NOSIGNAL);
            if (n < 0 && errno == ENOTSOCK) {
                use_send = 0;
                continue;
            }
        } else {
            n = write(p->fd, buf, len);
        }
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            int rc = wait_fd(p, POLLOUT, deadline);
            if (rc != QPMI_OK)
                return rc;
            continue;
        }
        return fail(p, QPMI_EIO, "sending to the process manager: %s",
                    n < 0 ? strerror(errno) : "nothing written");
    }
    return QPMI_OK;
}

/* Format a request into sbuf and send it. */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 2, 3)))
#endif
static int sendf(qpmi *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(p->sbuf, p->scap, fmt, ap);
    va_end(ap);
    if (n < 0)
        return fail(p, QPMI_EINVAL, "cannot format a request");
    if ((size_t)n >= p->scap) {
        char *nb = realloc(p->sbuf, (size_t)n + 1);
        if (nb == NULL)
            return fail(p, QPMI_ENOMEM, "out of memory");
        p->sbuf = nb;
        p->scap = (size_t)n + 1;
        va_start(ap, fmt);
        vsnprintf(p->sbuf, p->scap, fmt, ap);
        va_end(ap);
    }
    if (p->debug)
        fprintf(stderr, "[qpmi %d] -> %s", p->rank, p->sbuf);
    return send_all(p, p->sbuf, (size_t)n);
}

/* Read one line into p->line (without its '\n'); *len its length. */
static int read_line(qpmi *p, size_t *len)
{
    int64_t deadline = deadline_of(p);
    for (;;) {
        char *nl = memchr(p->rbuf, '\n', p->rlen);
        if (nl != NULL) {
            size_t n = (size_t)(nl - p->rbuf);
            memcpy(p->line, p->rbuf, n);
            p->line[n] = '\0';
            p->rlen -= n + 1;
            memmove(p->rbuf, nl + 1, p->rlen);
            *len = n;
            if (p->debug)
                fprintf(stderr, "[qpmi %d] <- %s\n", p->rank, p->line);
            return QPMI_OK;
        }
        if (p->rlen >= p->rcap)
            return fail(p, QPMI_EPROTO, "answer line longer than %zu bytes", p->rcap - 1);
        if (p->timeout_ms >= 0) {
            int rc = wait_fd(p, POLLIN, deadline);
            if (rc != QPMI_OK)
                return rc;
        }
        ssize_t r = read(p->fd, p->rbuf + p->rlen, p->rcap - p->rlen);
        if (r > 0) {
            p->rlen += (size_t)r;
            continue;
        }
        if (r == 0)
            return fail(p, QPMI_EIO, p->rlen ? "process manager closed the connection mid-line"
                                             : "process manager closed the connection");
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            int rc = wait_fd(p, POLLIN, deadline);
            if (rc != QPMI_OK)
                return rc;
            continue;
        }
        return fail(p, QPMI_EIO, "receiving from the process manager: %s", strerror(errno));
    }
}

/* Raise the line cap to fit the maxes (keeps buffered bytes). */
static int set_line_cap(qpmi *p, size_t cap)
{
    if (cap <= p->rcap)
        return QPMI_OK;
    char *nr = realloc(p->rbuf, cap);
    if (nr == NULL)
        return fail(p, QPMI_ENOMEM, "out of memory");
    p->rbuf = nr;
    char *nl = realloc(p->line, cap);
    if (nl == NULL)
        return fail(p, QPMI_ENOMEM, "out of memory");
    p->line = nl;
    p->rcap = cap;
    return QPMI_OK;
}

/* ------------------------------------------------------------------------
 * Parsing an answer
 * ---------------------------------------------------------------------- */

/* Split p->line (len bytes) in place into m (pmi_wire.h). */
static int parse_line(qpmi *p, size_t len, qpmi_answer *m)
{
    char why[160];
    if (qpmi_wire_split(p->line, len, m, why, sizeof why) != 0)
        return fail(p, QPMI_EPROTO, "%s", why);
    return QPMI_OK;
}

static int need_int(qpmi *p, const qpmi_answer *m, const char *key, long min, long max, int *out)
{
    const char *v = qpmi_wire_find(m, key);
    if (v == NULL)
        return fail(p, QPMI_EPROTO, "cmd=%s answer lacks %s=", m->cmd, key);
    if (qpmi_wire_int(v, min, max, out) != 0)
        return fail(p, QPMI_EPROTO, "cmd=%s answer has bad %s=%.40s", m->cmd, key, v);
    return QPMI_OK;
}

/* Read an answer, check its cmd and rc. ESERVER keeps the stream usable. */
static int expect(qpmi *p, const char *cmd, qpmi_answer *m)
{
    size_t len = 0;
    int rc = read_line(p, &len);
    if (rc != QPMI_OK)
        return rc;
    rc = parse_line(p, len, m);
    if (rc != QPMI_OK)
        return rc;
    if (strcmp(m->cmd, cmd) != 0)
        return fail(p, QPMI_EPROTO, "expected cmd=%s, got cmd=%.60s", cmd, m->cmd);
    if (qpmi_wire_has(m, "rc")) {
        int code;
        const char *v = qpmi_wire_find(m, "rc");
        if (qpmi_wire_int(v, INT_MIN, INT_MAX, &code) != 0)
            return fail(p, QPMI_EPROTO, "cmd=%s answer has bad rc=%.40s", cmd, v ? v : "");
        if (code != 0) {
            const char *msg = qpmi_wire_find(m, "msg");
            if (msg == NULL)
                msg = qpmi_wire_find(m, "errmsg");
            return fail(p, QPMI_ESERVER, "cmd=%s: rc=%d%s%.120s", cmd, code, msg ? " " : "",
                        msg ? msg : "");
        }
    }
    return QPMI_OK;
}

static int live(qpmi *p)
{
    if (p->dead)
        return QPMI_EDEAD;
    return QPMI_OK;
}

/* ------------------------------------------------------------------------
 * Start-up
 * ---------------------------------------------------------------------- */

static int env_int(qpmi *p, const char *name, long min, long max, int dflt, int *out)
{
    const char *v = getenv(name);
    if (v == NULL) {
        *out = dflt;
        return QPMI_OK;
    }
    if (qpmi_wire_int(v, min, max, out) != 0)
        return fail(p, QPMI_EINVAL, "%s=\"%.40s\" is not an integer in [%ld, %ld]", name, v,
                    min, max);
    return QPMI_OK;
}

static int connect_port(qpmi *p, const char *hostport)
{
    char host[256];
    const char *colon = strrchr(hostport, ':');
    if (colon == NULL || colon == hostport || (size_t)(colon - hostport) >= sizeof host)
        return fail(p, QPMI_EINVAL, "PMI_PORT=\"%.60s\" is not host:port", hostport);
    size_t hl = (size_t)(colon - hostport);
    memcpy(host, hostport, hl);
    host[hl] = '\0';
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') { /* [v6addr]:port */
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = '\0';
    }
    int port;
    if (qpmi_wire_int(colon + 1, 1, 65535, &port) != 0)
        return fail(p, QPMI_EINVAL, "PMI_PORT=\"%.60s\": bad port", hostport);

    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int g = getaddrinfo(host, colon + 1, &hints, &res);
    if (g != 0)
        return fail(p, QPMI_EIO, "PMI_PORT host \"%.60s\": %s", host, gai_strerror(g));
    int err = 0;
    for (struct addrinfo *a = res; a != NULL; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) {
            err = errno;
            continue;
        }
        int r;
        do
            r = connect(fd, a->ai_addr, a->ai_addrlen);
        while (r < 0 && errno == EINTR);
        if (r == 0) {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
            p->fd = fd;
            freeaddrinfo(res);
            return QPMI_OK;
        }
        err = errno;
        close(fd);
    }
    freeaddrinfo(res);
    return fail(p, QPMI_EIO, "cannot connect to PMI_PORT=%.60s: %s", hostport,
                err ? strerror(err) : "no address");
}

/* PMI_PORT handshake: initack, then set size / rank / debug. */
static int initack(qpmi *p, int id)
{
    qpmi_answer m;
    int rc = sendf(p, "cmd=initack pmiid=%d\n", id);
    if (rc == QPMI_OK)
        rc = expect(p, "initack", &m);
    static const char *const keys[3] = {"size", "rank", "debug"};
    int vals[3] = {0, 0, 0};
    for (int i = 0; i < 3 && rc == QPMI_OK; i++) {
        rc = expect(p, "set", &m);
        if (rc == QPMI_OK)
            rc = need_int(p, &m, keys[i], i == 0 ? 1 : INT_MIN, INT_MAX, &vals[i]);
    }
    if (rc == QPMI_ESERVER)
        p->dead = 1; /* a refused handshake leaves nothing to talk about */
    if (rc != QPMI_OK)
        return rc;
    p->size = vals[0];
    p->rank = vals[1];
    return QPMI_OK;
}

static int handshake(qpmi *p)
{
    qpmi_answer m;
    int rc;

    /* Version 1.1: Hydra 4.0.x refuses a higher subversion. */
    if ((rc = sendf(p, "cmd=init pmi_version=1 pmi_subversion=1\n")) != QPMI_OK ||
        (rc = expect(p, "response_to_init", &m)) != QPMI_OK)
        return rc;
    int ver, sub;
    if ((rc = need_int(p, &m, "pmi_version", 0, INT_MAX, &ver)) != QPMI_OK ||
        (rc = need_int(p, &m, "pmi_subversion", 0, INT_MAX, &sub)) != QPMI_OK)
        return rc;
    if (ver != 1)
        return fail(p, QPMI_EPROTO, "server speaks PMI %d.%d, not 1.x", ver, sub);
    p->server_subversion = sub;

    if ((rc = sendf(p, "cmd=get_maxes\n")) != QPMI_OK || (rc = expect(p, "maxes", &m)) != QPMI_OK)
        return rc;
    if ((rc = need_int(p, &m, "kvsname_max", 2, MAXES_LIMIT, &p->kvsname_max)) != QPMI_OK ||
        (rc = need_int(p, &m, "keylen_max", 2, MAXES_LIMIT, &p->keylen_max)) != QPMI_OK ||
        (rc = need_int(p, &m, "vallen_max", 2, MAXES_LIMIT, &p->vallen_max)) != QPMI_OK)
        return rc;
    /* Longest legal answer: get_result with a fully escaped value, or
     * a not-found message naming the key, or my_kvsname. */
    size_t cap = 256 + (size_t)p->kvsname_max + (size_t)p->keylen_max + 2 * (size_t)p->vallen_max;
    if ((rc = set_line_cap(p, cap)) != QPMI_OK)
        return rc;

    if ((rc = sendf(p, "cmd=get_appnum\n")) != QPMI_OK ||
        (rc = expect(p, "appnum", &m)) != QPMI_OK ||
        (rc = need_int(p, &m, "appnum", INT_MIN, INT_MAX, &p->appnum)) != QPMI_OK)
        return rc;

    if ((rc = sendf(p, "cmd=get_my_kvsname\n")) != QPMI_OK ||
        (rc = expect(p, "my_kvsname", &m)) != QPMI_OK)
        return rc;
    const char *k = qpmi_wire_find(&m, "kvsname");
    if (k == NULL)
        return fail(p, QPMI_EPROTO, "cmd=my_kvsname answer lacks kvsname=");
    if (!qpmi_wire_val_ok(k, (size_t)p->kvsname_max - 1))
        return fail(p, QPMI_EPROTO, "kvsname \"%.60s\" is empty, too long or unsendable", k);
    p->kvsname = strdup(k);
    if (p->kvsname == NULL)
        return fail(p, QPMI_ENOMEM, "out of memory");
    return QPMI_OK;
}

static void destroy(qpmi *p, int close_fd)
{
    if (p == NULL)
        return;
    if (close_fd && p->fd >= 0)
        close(p->fd);
    for (size_t i = 0; i < p->nkv; i++) {
        free(p->kv[i].key);
        free(p->kv[i].val);
    }
    free(p->kv);
    free(p->kvsname);
    free(p->rbuf);
    free(p->line);
    free(p->sbuf);
    free(p);
}

const char *qpmi_init_errmsg(void)
{
    return init_err;
}

int qpmi_init(qpmi **out)
{
    init_err[0] = '\0';
    if (out == NULL) {
        snprintf(init_err, sizeof init_err, "qpmi_init: out is NULL");
        return QPMI_EINVAL;
    }
    *out = NULL;
    qpmi *p = calloc(1, sizeof *p);
    if (p == NULL) {
        snprintf(init_err, sizeof init_err, "out of memory");
        return QPMI_ENOMEM;
    }
    p->fd = -1;
    p->timeout_ms = -1;
    p->appnum = -1;
    p->rank = 0;
    p->size = 1;
    p->rcap = LINE_CAP_START;
    p->scap = 512;
    p->rbuf = malloc(p->rcap);
    p->line = malloc(p->rcap);
    p->sbuf = malloc(p->scap);
    int rc = QPMI_OK;
    int owned = 0;       /* fd opened here (PMI_PORT), closed on failure */
    int from_server = 0; /* rank and size came from an initack */
    if (p->rbuf == NULL || p->line == NULL || p->sbuf == NULL) {
        rc = fail(p, QPMI_ENOMEM, "out of memory");
        goto out;
    }
    int dbg = 0;
    if ((rc = env_int(p, "QPMI_DEBUG", INT_MIN, INT_MAX, 0, &dbg)) != QPMI_OK ||
        (rc = env_int(p, "QPMI_TIMEOUT_MS", -1, INT_MAX, -1, &p->timeout_ms)) != QPMI_OK)
        goto out;
    p->debug = dbg != 0;

    const char *fdenv = getenv("PMI_FD");
    const char *portenv = getenv("PMI_PORT");
    if (fdenv == NULL && portenv == NULL) {
        /* Singleton: no process manager. */
        p->kvsname_max = SINGLETON_KVSNAME_MAX;
        p->keylen_max = SINGLETON_KEYLEN_MAX;
        p->vallen_max = SINGLETON_VALLEN_MAX;
        char name[64];
        snprintf(name, sizeof name, "singleton_kvs_%ld", (long)getpid());
        p->kvsname = strdup(name);
        if (p->kvsname == NULL)
            rc = fail(p, QPMI_ENOMEM, "out of memory");
        goto out;
    }

    if (fdenv != NULL) {
        int fd;
        if (qpmi_wire_int(fdenv, 0, INT_MAX, &fd) != 0) {
            rc = fail(p, QPMI_EINVAL, "PMI_FD=\"%.40s\" is not a descriptor number", fdenv);
            goto out;
        }
        int fl = fcntl(fd, F_GETFD);
        if (fl < 0) {
            rc = fail(p, QPMI_EINVAL, "PMI_FD=%d is not open", fd);
            goto out;
        }
        if ((rc = env_int(p, "PMI_SIZE", 1, INT_MAX, 1, &p->size)) != QPMI_OK ||
            (rc = env_int(p, "PMI_RANK", 0, INT_MAX, 0, &p->rank)) != QPMI_OK)
            goto out;
        if (p->rank >= p->size) {
            rc = fail(p, QPMI_EINVAL, "PMI_RANK=%d outside [0, PMI_SIZE=%d)", p->rank, p->size);
            goto out;
        }
        /* Ours now; not for programs this process may exec. */
        (void)fcntl(fd, F_SETFD, fl | FD_CLOEXEC);
        p->fd = fd;
    } else {
        rc = connect_port(p, portenv);
        if (rc != QPMI_OK)
            goto out;
        owned = 1;
        if (getenv("PMI_ID") != NULL) {
            int id;
            if ((rc = env_int(p, "PMI_ID", 0, INT_MAX, 0, &id)) != QPMI_OK ||
                (rc = initack(p, id)) != QPMI_OK)
                goto out;
            from_server = 1;
        } else if ((rc = env_int(p, "PMI_SIZE", 1, INT_MAX, 1, &p->size)) != QPMI_OK ||
                   (rc = env_int(p, "PMI_RANK", 0, INT_MAX, 0, &p->rank)) != QPMI_OK) {
            goto out;
        }
    }
    if (p->rank < 0 || p->rank >= p->size) {
        rc = fail(p, from_server ? QPMI_EPROTO : QPMI_EINVAL, "rank %d outside [0, %d)",
                  p->rank, p->size);
        goto out;
    }
    rc = handshake(p);

out:
    if (rc != QPMI_OK) {
        snprintf(init_err, sizeof init_err, "%s", p->err);
        destroy(p, owned);
        return rc;
    }
    *out = p;
    return QPMI_OK;
}

/* ------------------------------------------------------------------------
 * Accessors
 * ---------------------------------------------------------------------- */

int qpmi_rank(const qpmi *p) { return p->rank; }
int qpmi_size(const qpmi *p) { return p->size; }
int qpmi_appnum(const qpmi *p) { return p->appnum; }
const char *qpmi_kvsname(const qpmi *p) { return p->kvsname; }
int qpmi_is_singleton(const qpmi *p) { return p->fd < 0; }
size_t qpmi_key_max(const qpmi *p) { return (size_t)p->keylen_max - 1; }
size_t qpmi_val_max(const qpmi *p) { return (size_t)p->vallen_max - 1; }
int qpmi_fd(const qpmi *p) { return p->fd; }
void qpmi_set_timeout(qpmi *p, int ms) { p->timeout_ms = ms < 0 ? -1 : ms; }
const char *qpmi_errmsg(const qpmi *p) { return p->err; }

/* ------------------------------------------------------------------------
 * Key-value space
 * ---------------------------------------------------------------------- */

static int local_put(qpmi *p, const char *key, const char *value)
{
    char *v = strdup(value);
    if (v == NULL)
        return fail(p, QPMI_ENOMEM, "out of memory");
    for (size_t i = 0; i < p->nkv; i++) {
        if (strcmp(p->kv[i].key, key) == 0) {
            free(p->kv[i].val);
            p->kv[i].val = v;
            return QPMI_OK;
        }
    }
    if (p->nkv == p->kvcap) {
        size_t cap = p->kvcap ? 2 * p->kvcap : 16;
        struct qpmi_kv *nk = realloc(p->kv, cap * sizeof *nk);
        if (nk == NULL) {
            free(v);
            return fail(p, QPMI_ENOMEM, "out of memory");
        }
        p->kv = nk;
        p->kvcap = cap;
    }
    char *k = strdup(key);
    if (k == NULL) {
        free(v);
        return fail(p, QPMI_ENOMEM, "out of memory");
    }
    p->kv[p->nkv].key = k;
    p->kv[p->nkv].val = v;
    p->nkv++;
    return QPMI_OK;
}

int qpmi_put(qpmi *p, const char *key, const char *value)
{
    if (p == NULL || key == NULL || value == NULL)
        return QPMI_EINVAL;
    if (!qpmi_wire_key_ok(key, qpmi_key_max(p)))
        return fail(p, QPMI_EINVAL, "key empty, longer than %zu or with an unsendable character",
                    qpmi_key_max(p));
    if (!qpmi_wire_val_ok(value, qpmi_val_max(p)))
        return fail(p, QPMI_EINVAL,
                    "value empty, longer than %zu or with an unsendable character",
                    qpmi_val_max(p));
    if (p->fd < 0)
        return local_put(p, key, value);
    int rc = live(p);
    if (rc != QPMI_OK)
        return rc;
    qpmi_answer m;
    if ((rc = sendf(p, "cmd=put kvsname=%s key=%s value=%s\n", p->kvsname, key, value)) !=
        QPMI_OK)
        return rc;
    return expect(p, "put_result", &m);
}

/* "<name>-<rank>" into buf (keylen_max bytes). */
static int rank_key(qpmi *p, const char *name, int rank, char *buf, size_t n)
{
    if (name == NULL || rank < 0 || rank >= p->size)
        return fail(p, QPMI_EINVAL, "bad name or rank %d", rank);
    int w = snprintf(buf, n, "%s-%d", name, rank);
    if (w < 0 || (size_t)w >= n)
        return fail(p, QPMI_EINVAL, "key \"%.40s-%d\" longer than %zu", name, rank,
                    qpmi_key_max(p));
    return QPMI_OK;
}

int qpmi_put_rank(qpmi *p, const char *name, const char *value)
{
    if (p == NULL)
        return QPMI_EINVAL;
    char *key = malloc((size_t)p->keylen_max);
    if (key == NULL)
        return fail(p, QPMI_ENOMEM, "out of memory");
    int rc = rank_key(p, name, p->rank, key, (size_t)p->keylen_max);
    if (rc == QPMI_OK)
        rc = qpmi_put(p, key, value);
    free(key);
    return rc;
}

int qpmi_commit(qpmi *p)
{
    if (p == NULL)
        return QPMI_EINVAL;
    return p->fd < 0 ? QPMI_OK : live(p);
}

int qpmi_barrier(qpmi *p)
{
    if (p == NULL)
        return QPMI_EINVAL;
    if (p->fd < 0)
        return QPMI_OK;
    int rc = live(p);
    if (rc != QPMI_OK)
        return rc;
    qpmi_answer m;
    if ((rc = sendf(p, "cmd=barrier_in\n")) != QPMI_OK)
        return rc;
    return expect(p, "barrier_out", &m);
}

static int copy_out(qpmi *p, const char *v, char *buf, size_t bufsize, size_t *len)
{
    size_t n = strlen(v);
    if (len != NULL)
        *len = n;
    if (n >= bufsize)
        return fail(p, QPMI_ERANGE, "value of %zu bytes does not fit a buffer of %zu", n,
                    bufsize);
    memcpy(buf, v, n + 1);
    return QPMI_OK;
}

int qpmi_get(qpmi *p, const char *key, char *buf, size_t bufsize, size_t *len)
{
    if (p == NULL || key == NULL || buf == NULL || bufsize == 0)
        return QPMI_EINVAL;
    if (!qpmi_wire_key_ok(key, qpmi_key_max(p)))
        return fail(p, QPMI_EINVAL, "key empty, longer than %zu or with an unsendable character",
                    qpmi_key_max(p));
    if (p->fd < 0) {
        for (size_t i = 0; i < p->nkv; i++)
            if (strcmp(p->kv[i].key, key) == 0)
                return copy_out(p, p->kv[i].val, buf, bufsize, len);
        return fail(p, QPMI_ENOTFOUND, "no key %.60s", key);
    }
    int rc = live(p);
    if (rc != QPMI_OK)
        return rc;
    qpmi_answer m;
    if ((rc = sendf(p, "cmd=get kvsname=%s key=%s\n", p->kvsname, key)) != QPMI_OK)
        return rc;
    rc = expect(p, "get_result", &m);
    if (rc == QPMI_ESERVER) /* Hydra's only refusal of a get: no such key */
        return fail(p, QPMI_ENOTFOUND, "no key %.60s (%s)", key, p->err);
    if (rc != QPMI_OK)
        return rc;
    const char *found = qpmi_wire_find(&m, "found");
    if (qpmi_wire_has(&m, "found")) {
        if (found != NULL && (strcmp(found, "FALSE") == 0 || strcmp(found, "false") == 0))
            return fail(p, QPMI_ENOTFOUND, "no key %.60s", key);
        if (found == NULL || (strcmp(found, "TRUE") != 0 && strcmp(found, "true") != 0))
            return fail(p, QPMI_EPROTO, "cmd=get_result has bad found=%.20s",
                        found ? found : "");
    }
    const char *v = qpmi_wire_find(&m, "value");
    if (v == NULL)
        return fail(p, QPMI_EPROTO, "cmd=get_result answer lacks value=");
    if (strlen(v) >= (size_t)p->vallen_max)
        return fail(p, QPMI_EPROTO, "value of %zu bytes exceeds vallen_max=%d", strlen(v),
                    p->vallen_max);
    return copy_out(p, v, buf, bufsize, len);
}

int qpmi_get_rank(qpmi *p, const char *name, int rank, char *buf, size_t bufsize, size_t *len)
{
    if (p == NULL)
        return QPMI_EINVAL;
    char *key = malloc((size_t)p->keylen_max);
    if (key == NULL)
        return fail(p, QPMI_ENOMEM, "out of memory");
    int rc = rank_key(p, name, rank, key, (size_t)p->keylen_max);
    if (rc == QPMI_OK)
        rc = qpmi_get(p, key, buf, bufsize, len);
    free(key);
    return rc;
}

/* ------------------------------------------------------------------------
 * Ending
 * ---------------------------------------------------------------------- */

int qpmi_abort(qpmi *p, int code, const char *msg)
{
    if (p == NULL)
        return QPMI_EINVAL;
    if (p->fd < 0)
        return QPMI_OK;
    char clean[ABORT_MSG_MAX + 1];
    size_t n = 0;
    if (msg != NULL)
        for (; msg[n] && n < ABORT_MSG_MAX; n++)
            clean[n] = qpmi_wire_val_byte_ok((unsigned char)msg[n]) && msg[n] != '=' ? msg[n] : '_';
    clean[n] = '\0';
    /* Best effort even on a dead stream: the line may still get through. */
    if (n > 0)
        return sendf(p, "cmd=abort exitcode=%d message=%s\n", code, clean);
    return sendf(p, "cmd=abort exitcode=%d\n", code);
}

int qpmi_finalize(qpmi *p)
{
    if (p == NULL)
        return QPMI_OK;
    int rc = QPMI_OK;
    if (p->fd >= 0) {
        rc = live(p);
        qpmi_answer m;
        if (rc == QPMI_OK)
            rc = sendf(p, "cmd=finalize\n");
        if (rc == QPMI_OK)
            rc = expect(p, "finalize_ack", &m);
    }
    destroy(p, 1);
    return rc;
}

const char *qpmi_strerror(int rc)
{
    switch (rc) {
    case QPMI_OK: return "success";
    case QPMI_EINVAL: return "invalid argument or environment";
    case QPMI_ENOMEM: return "out of memory";
    case QPMI_EIO: return "connection to the process manager failed or closed";
    case QPMI_EPROTO: return "malformed or unexpected answer from the process manager";
    case QPMI_ESERVER: return "request refused by the process manager";
    case QPMI_ENOTFOUND: return "no such key";
    case QPMI_ERANGE: return "value larger than the buffer";
    case QPMI_ETIMEDOUT: return "no answer from the process manager in time";
    case QPMI_EDEAD: return "connection unusable after an earlier error";
    default: return "unknown error";
    }
}
