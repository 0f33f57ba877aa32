/*
 * fake_pmi.c — a fake PMI-1 process manager (fake_pmi.h). One process,
 * one poll loop; it plays both Hydra's proxy (the PMI_FD socketpairs, or a
 * PMI_PORT listener) and its server (the key-value space, the barrier).
 */
#include "fake_pmi.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Hydra's maxes (pmiserv_common.h): buffer sizes, NUL included. */
#define KVSNAME_MAX 256
#define KEYLEN_MAX 64
#define VALLEN_MAX 1024
#define IN_CAP 8192
#define MAX_CONNS (2 * FPS_MAX_PROCS)
#define MAX_FIELDS 16

typedef struct {
    char *key;
    char *val;
} kv;

typedef struct {
    kv *v;
    size_t n, cap;
} kvlist;

typedef struct {
    int fd;   /* -1: closed */
    int rank; /* -1: not known yet (PMI_PORT before initack) */
    int inited;
    int in_barrier;
    int finalized;
    char in[IN_CAP];
    size_t inlen;
} conn;

typedef struct {
    const fps_opts *o;
    fps_result *res;
    conn c[MAX_CONNS];
    int nconn;
    int listen_fd;
    int port;
    pid_t pid[FPS_MAX_PROCS];
    int running;
    kvlist committed;
    kvlist pending;
    char kvsname[64];
    unsigned dribble_seq;
} srv;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static void violation(srv *s, const conn *c, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "fake_pmi: rank %d: protocol violation: ", c ? c->rank : -1);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    s->res->violations++;
}

static int kv_set(kvlist *l, const char *k, const char *v)
{
    for (size_t i = 0; i < l->n; i++) {
        if (strcmp(l->v[i].key, k) == 0) {
            char *nv = strdup(v);
            if (nv == NULL)
                return -1;
            free(l->v[i].val);
            l->v[i].val = nv;
            return 0;
        }
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        kv *nl = realloc(l->v, cap * sizeof *nl);
        if (nl == NULL)
            return -1;
        l->v = nl;
        l->cap = cap;
    }
    l->v[l->n].key = strdup(k);
    l->v[l->n].val = strdup(v);
    if (l->v[l->n].key == NULL || l->v[l->n].val == NULL) {
        free(l->v[l->n].key);
        free(l->v[l->n].val);
        return -1;
    }
    l->n++;
    return 0;
}

static const char *kv_get(const kvlist *l, const char *k)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i].key, k) == 0)
            return l->v[i].val;
    return NULL;
}

static void kv_free(kvlist *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].key);
        free(l->v[i].val);
    }
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

/* ------------------------------------------------------------------------
 * Sending answers
 * ---------------------------------------------------------------------- */

static void send_bytes(srv *s, conn *c, const char *buf, size_t len)
{
    while (len > 0 && c->fd >= 0) {
        size_t chunk = len;
        if (s->o->dribble) {
            chunk = 1 + (s->dribble_seq++ % 7);
            if (chunk > len)
                chunk = len;
        }
        ssize_t n = send(c->fd, buf, chunk, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            /* The client is gone; its exit status will tell why. */
            return;
        }
        buf += n;
        len -= (size_t)n;
        if (s->o->dribble && len > 0) {
            struct timespec ts = {0, 200 * 1000};
            nanosleep(&ts, NULL);
        }
    }
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((format(printf, 3, 4)))
#endif
static void reply(srv *s, conn *c, const char *fmt, ...)
{
    char buf[2 * IN_CAP];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof buf) {
        violation(s, c, "answer too long to format");
        return;
    }
    if (s->o->verbose)
        fprintf(stderr, "fake_pmi: -> %d: %s", c->rank, buf);
    send_bytes(s, c, buf, (size_t)n);
}

/* ------------------------------------------------------------------------
 * Requests
 * ---------------------------------------------------------------------- */

typedef struct {
    const char *cmd;
    int n;
    const char *key[MAX_FIELDS];
    const char *val[MAX_FIELDS];
} req;

/* Strict parse of a client request: "cmd=X k=v k=v", single spaces, every
 * field key=value with both sides non-empty, no duplicate keys. */
static int parse_req(srv *s, conn *c, char *line, req *r)
{
    r->cmd = NULL;
    r->n = 0;
    if (strncmp(line, "cmd=", 4) != 0) {
        violation(s, c, "request does not start with cmd=: \"%.60s\"", line);
        return -1;
    }
    char *p = line;
    for (;;) {
        char *tok = p;
        char *sp = strchr(p, ' ');
        if (sp != NULL)
            *sp = '\0';
        char *eq = strchr(tok, '=');
        if (eq == NULL || eq == tok || eq[1] == '\0') {
            violation(s, c, "bad field \"%.60s\"", tok);
            return -1;
        }
        *eq = '\0';
        for (const char *k = tok; *k; k++) {
            if (!((*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9') || *k == '_')) {
                violation(s, c, "bad key \"%.60s\"", tok);
                return -1;
            }
        }
        for (const unsigned char *v = (const unsigned char *)eq + 1; *v; v++) {
            if (*v < 0x21 || *v == 0x7f || *v == '\\') {
                violation(s, c, "bad byte 0x%02x in value of %s", *v, tok);
                return -1;
            }
        }
        if (r->cmd == NULL) {
            r->cmd = eq + 1;
        } else {
            if (r->n == MAX_FIELDS) {
                violation(s, c, "too many fields");
                return -1;
            }
            for (int i = 0; i < r->n; i++) {
                if (strcmp(r->key[i], tok) == 0) {
                    violation(s, c, "duplicate field %s", tok);
                    return -1;
                }
            }
            r->key[r->n] = tok;
            r->val[r->n] = eq + 1;
            r->n++;
        }
        if (sp == NULL)
            break;
        if (sp[1] == ' ' || sp[1] == '\0') {
            violation(s, c, "stray space in a request");
            return -1;
        }
        p = sp + 1;
    }
    return 0;
}

static const char *field(const req *r, const char *k)
{
    for (int i = 0; i < r->n; i++)
        if (strcmp(r->key[i], k) == 0)
            return r->val[i];
    return NULL;
}

/* The fields of r must be exactly `need` (NULL-ended) plus any of `opt`. */
static int check_fields(srv *s, conn *c, const req *r, const char *const *need,
                        const char *const *opt)
{
    int nneed = 0;
    for (; need && need[nneed]; nneed++) {
        if (field(r, need[nneed]) == NULL) {
            violation(s, c, "cmd=%s without %s=", r->cmd, need[nneed]);
            return -1;
        }
    }
    for (int i = 0; i < r->n; i++) {
        int known = 0;
        for (int j = 0; need && need[j]; j++)
            known |= strcmp(r->key[i], need[j]) == 0;
        for (int j = 0; opt && opt[j]; j++)
            known |= strcmp(r->key[i], opt[j]) == 0;
        if (!known) {
            violation(s, c, "cmd=%s with unexpected field %s=", r->cmd, r->key[i]);
            return -1;
        }
    }
    return 0;
}

static void kill_all(srv *s, int sig)
{
    for (int i = 0; i < s->o->nprocs; i++)
        if (s->pid[i] > 0)
            kill(s->pid[i], sig);
}

static void barrier_check(srv *s)
{
    int in = 0;
    for (int i = 0; i < s->nconn; i++)
        if (s->c[i].rank >= 0 && s->c[i].in_barrier)
            in++;
    if (in < s->o->nprocs)
        return;
    /* Everyone is in: the puts become visible, then everyone goes out. */
    for (size_t i = 0; i < s->pending.n; i++)
        if (kv_set(&s->committed, s->pending.v[i].key, s->pending.v[i].val) != 0)
            violation(s, NULL, "out of memory");
    kv_free(&s->pending);
    for (int i = 0; i < s->nconn; i++) {
        conn *c = &s->c[i];
        if (c->rank >= 0 && c->in_barrier) {
            c->in_barrier = 0;
            reply(s, c, s->o->new_style ? "cmd=barrier_out tag=0\n" : "cmd=barrier_out\n");
        }
    }
}

static void handle(srv *s, conn *c, char *line)
{
    static const char *const none[] = {NULL};
    const int ns = s->o->new_style;
    const int n = s->o->nprocs;
    req r;
    if (s->o->verbose)
        fprintf(stderr, "fake_pmi: <- %d: %s\n", c->rank, line);
    if (parse_req(s, c, line, &r) != 0)
        return;

    if (strcmp(r.cmd, "initack") == 0) {
        static const char *const need[] = {"pmiid", NULL};
        if (!s->o->use_port || c->rank >= 0 || c->inited) {
            violation(s, c, "unexpected initack");
            return;
        }
        if (check_fields(s, c, &r, need, NULL) != 0)
            return;
        char *end = NULL;
        long id = strtol(field(&r, "pmiid"), &end, 10);
        if (*end != '\0' || id < 0 || id >= n) {
            violation(s, c, "bad pmiid=%s", field(&r, "pmiid"));
            return;
        }
        for (int i = 0; i < s->nconn; i++) {
            if (s->c[i].rank == id) {
                violation(s, c, "pmiid=%ld twice", id);
                return;
            }
        }
        c->rank = (int)id;
        if (ns)
            reply(s, c,
                  "cmd=initack rc=0 rank=%d size=%d appnum=0 debug=0\n"
                  "cmd=set size=%d\ncmd=set rank=%d\ncmd=set debug=0\n",
                  c->rank, n, n, c->rank);
        else
            reply(s, c, "cmd=initack\ncmd=set size=%d\ncmd=set rank=%d\ncmd=set debug=0\n", n,
                  c->rank);
        return;
    }
    if (c->rank < 0) {
        violation(s, c, "cmd=%s before initack", r.cmd);
        return;
    }
    if (c->finalized) {
        violation(s, c, "cmd=%s after finalize", r.cmd);
        return;
    }
    if (strcmp(r.cmd, "init") == 0) {
        static const char *const need[] = {"pmi_version", "pmi_subversion", NULL};
        if (check_fields(s, c, &r, need, NULL) != 0)
            return;
        if (strcmp(field(&r, "pmi_version"), "1") != 0 ||
            strcmp(field(&r, "pmi_subversion"), "1") != 0)
            violation(s, c, "init asks for PMI %s.%s", field(&r, "pmi_version"),
                      field(&r, "pmi_subversion"));
        if (c->inited)
            violation(s, c, "init twice");
        c->inited = 1;
        reply(s, c,
              ns ? "cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=2\n"
                 : "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n");
        return;
    }
    if (!c->inited) {
        violation(s, c, "cmd=%s before init", r.cmd);
        return;
    }
    if (strcmp(r.cmd, "abort") == 0) {
        static const char *const need[] = {"exitcode", NULL};
        static const char *const opt[] = {"message", NULL};
        if (check_fields(s, c, &r, need, opt) != 0)
            return;
        const char *code = field(&r, "exitcode"), *msg = field(&r, "message");
        if (code == NULL)
            return; /* (check_fields saw it) */
        fprintf(stderr, "fake_pmi: rank %d aborts the job: exitcode=%s message=%s\n", c->rank,
                code, msg ? msg : "(none)");
        if (!s->res->aborted) {
            s->res->aborted = 1;
            s->res->abort_code = atoi(code);
            kill_all(s, SIGKILL);
        }
        return;
    }
    if (strcmp(r.cmd, "get_maxes") == 0) {
        if (check_fields(s, c, &r, none, NULL) == 0)
            reply(s, c, "cmd=maxes %skvsname_max=%d keylen_max=%d vallen_max=%d\n",
                  ns ? "rc=0 " : "", KVSNAME_MAX, KEYLEN_MAX, VALLEN_MAX);
        return;
    }
    if (strcmp(r.cmd, "get_appnum") == 0) {
        if (check_fields(s, c, &r, none, NULL) == 0)
            reply(s, c, "cmd=appnum %sappnum=0\n", ns ? "rc=0 " : "");
        return;
    }
    if (strcmp(r.cmd, "get_my_kvsname") == 0) {
        if (check_fields(s, c, &r, none, NULL) == 0)
            reply(s, c, "cmd=my_kvsname %skvsname=%s\n", ns ? "rc=0 " : "", s->kvsname);
        return;
    }
    if (strcmp(r.cmd, "get_universe_size") == 0) {
        if (check_fields(s, c, &r, none, NULL) == 0)
            reply(s, c, "cmd=universe_size %ssize=%d\n", ns ? "rc=0 " : "", n);
        return;
    }
    if (strcmp(r.cmd, "put") == 0) {
        static const char *const need[] = {"kvsname", "key", "value", NULL};
        if (check_fields(s, c, &r, need, NULL) != 0)
            return;
        const char *k = field(&r, "key"), *v = field(&r, "value");
        if (strcmp(field(&r, "kvsname"), s->kvsname) != 0)
            violation(s, c, "put to kvsname=%s", field(&r, "kvsname"));
        if (strlen(k) >= KEYLEN_MAX || strlen(v) >= VALLEN_MAX)
            violation(s, c, "put of a key or value beyond the maxes");
        if (strncmp(k, "PMI_", 4) == 0) {
            reply(s, c, ns ? "cmd=put_result rc=1\n" : "cmd=put_result rc=-1 msg=reserved_key\n");
            return;
        }
        if (kv_set(&s->pending, k, v) != 0)
            violation(s, c, "out of memory");
        reply(s, c, ns ? "cmd=put_result rc=0\n" : "cmd=put_result rc=0 msg=success\n");
        return;
    }
    if (strcmp(r.cmd, "get") == 0) {
        static const char *const need[] = {"kvsname", "key", NULL};
        if (check_fields(s, c, &r, need, NULL) != 0)
            return;
        const char *k = field(&r, "key");
        if (strcmp(field(&r, "kvsname"), s->kvsname) != 0)
            violation(s, c, "get from kvsname=%s", field(&r, "kvsname"));
        if (strlen(k) >= KEYLEN_MAX)
            violation(s, c, "get of a key beyond the maxes");
        char map[64];
        const char *v = kv_get(&s->committed, k);
        if (strcmp(k, "PMI_process_mapping") == 0) {
            snprintf(map, sizeof map, "(vector,(0,1,%d))", n);
            v = map;
        }
        if (v != NULL)
            reply(s, c, ns ? "cmd=get_result rc=0 value=%s\n"
                           : "cmd=get_result rc=0 msg=success value=%s\n", v);
        else if (ns)
            reply(s, c, "cmd=get_result rc=1\n");
        else
            reply(s, c, "cmd=get_result rc=-1 msg=key_%s_not_found value=unknown\n", k);
        return;
    }
    if (strcmp(r.cmd, "barrier_in") == 0) {
        if (check_fields(s, c, &r, none, NULL) != 0)
            return;
        if (c->in_barrier)
            violation(s, c, "barrier_in twice");
        c->in_barrier = 1;
        barrier_check(s);
        return;
    }
    if (strcmp(r.cmd, "finalize") == 0) {
        if (check_fields(s, c, &r, none, NULL) != 0)
            return;
        c->finalized = 1;
        s->res->finalized++;
        reply(s, c, ns ? "cmd=finalize_ack rc=0\n" : "cmd=finalize_ack\n");
        return;
    }
    violation(s, c, "unknown cmd=%s", r.cmd);
}

/* ------------------------------------------------------------------------
 * Connections and processes
 * ---------------------------------------------------------------------- */

static void close_conn(srv *s, conn *c)
{
    if (c->fd < 0)
        return;
    if (c->inlen > 0)
        violation(s, c, "connection closed after %zu bytes of an unfinished line", c->inlen);
    else if (!c->finalized && !s->res->aborted && c->rank >= 0)
        violation(s, c, "connection closed without finalize");
    close(c->fd);
    c->fd = -1;
}

static void on_readable(srv *s, conn *c)
{
    ssize_t n;
    do
        n = read(c->fd, c->in + c->inlen, IN_CAP - c->inlen);
    while (n < 0 && errno == EINTR);
    if (n <= 0) {
        close_conn(s, c);
        return;
    }
    c->inlen += (size_t)n;
    for (;;) {
        char *nl = memchr(c->in, '\n', c->inlen);
        if (nl == NULL)
            break;
        *nl = '\0';
        size_t used = (size_t)(nl - c->in) + 1;
        if (memchr(c->in, '\0', used - 1) != NULL)
            violation(s, c, "NUL byte in a request");
        else
            handle(s, c, c->in);
        c->inlen -= used;
        memmove(c->in, c->in + used, c->inlen);
    }
    if (c->inlen == IN_CAP) {
        violation(s, c, "request longer than %d bytes", IN_CAP);
        c->inlen = 0;
        close_conn(s, c);
    }
}

static conn *add_conn(srv *s, int fd, int rank)
{
    if (s->nconn == MAX_CONNS) {
        close(fd);
        return NULL;
    }
    conn *c = &s->c[s->nconn++];
    memset(c, 0, sizeof *c);
    c->fd = fd;
    c->rank = rank;
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    return c;
}

static int start_listener(srv *s)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, FPS_MAX_PROCS) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    s->listen_fd = fd;
    s->port = ntohs(a.sin_port);
    return 0;
}

static void set_child_env(srv *s, int rank, int fd)
{
    char buf[64];
    unsetenv("PMI_FD");
    unsetenv("PMI_PORT");
    unsetenv("PMI_ID");
    unsetenv("PMI_RANK");
    unsetenv("PMI_SIZE");
    unsetenv("PMI_SPAWNED");
    if (s->o->use_port) {
        snprintf(buf, sizeof buf, "localhost:%d", s->port);
        setenv("PMI_PORT", buf, 1);
        snprintf(buf, sizeof buf, "%d", rank);
        setenv("PMI_ID", buf, 1);
    } else {
        snprintf(buf, sizeof buf, "%d", fd);
        setenv("PMI_FD", buf, 1);
        snprintf(buf, sizeof buf, "%d", rank);
        setenv("PMI_RANK", buf, 1);
        snprintf(buf, sizeof buf, "%d", s->o->nprocs);
        setenv("PMI_SIZE", buf, 1);
    }
}

static int spawn(srv *s, int rank, char *const argv[])
{
    int sv[2] = {-1, -1};
    if (!s->o->use_port) {
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
            perror("fake_pmi: socketpair");
            return -1;
        }
        (void)fcntl(sv[0], F_SETFD, FD_CLOEXEC);
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fake_pmi: fork");
        return -1;
    }
    if (pid == 0) {
        set_child_env(s, rank, sv[1]);
        execvp(argv[0], argv);
        fprintf(stderr, "fake_pmi: exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    s->pid[rank] = pid;
    s->running++;
    if (!s->o->use_port) {
        close(sv[1]);
        if (add_conn(s, sv[0], rank) == NULL)
            return -1;
    }
    return 0;
}

static void reap(srv *s)
{
    for (int i = 0; i < s->o->nprocs; i++) {
        if (s->pid[i] <= 0)
            continue;
        int st;
        pid_t r = waitpid(s->pid[i], &st, WNOHANG);
        if (r == s->pid[i]) {
            s->res->status[i] = WIFEXITED(st) ? WEXITSTATUS(st)
                                : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
            s->pid[i] = 0;
            s->running--;
        }
    }
}

int fps_run(const fps_opts *o, char *const argv[], fps_result *res)
{
    if (o->nprocs < 1 || o->nprocs > FPS_MAX_PROCS || argv == NULL || argv[0] == NULL) {
        fprintf(stderr, "fake_pmi: bad arguments\n");
        return -1;
    }
    srv *s = calloc(1, sizeof *s);
    if (s == NULL)
        return -1;
    memset(res, 0, sizeof *res);
    for (int i = 0; i < FPS_MAX_PROCS; i++)
        res->status[i] = -1;
    s->o = o;
    s->res = res;
    s->listen_fd = -1;
    snprintf(s->kvsname, sizeof s->kvsname, "kvs_%ld_0", (long)getpid());
    int rc = 0;
    if (o->use_port && start_listener(s) != 0) {
        perror("fake_pmi: listen");
        free(s);
        return -1;
    }
    for (int r = 0; r < o->nprocs; r++) {
        if (spawn(s, r, argv) != 0) {
            kill_all(s, SIGKILL);
            rc = -1;
            break;
        }
    }
    int64_t deadline = now_ms() + 1000 * (int64_t)(o->timeout_s > 0 ? o->timeout_s : 60);
    for (;;) {
        reap(s);
        int open_conns = 0;
        struct pollfd pfd[MAX_CONNS + 1];
        conn *who[MAX_CONNS + 1];
        int np = 0;
        if (s->listen_fd >= 0 && s->running > 0) {
            pfd[np] = (struct pollfd){.fd = s->listen_fd, .events = POLLIN, .revents = 0};
            who[np++] = NULL;
        }
        for (int i = 0; i < s->nconn; i++) {
            if (s->c[i].fd >= 0) {
                pfd[np] = (struct pollfd){.fd = s->c[i].fd, .events = POLLIN, .revents = 0};
                who[np++] = &s->c[i];
                open_conns++;
            }
        }
        if (s->running == 0 && open_conns == 0)
            break;
        if (now_ms() > deadline && !res->timed_out) {
            fprintf(stderr, "fake_pmi: job timed out; killing it\n");
            res->timed_out = 1;
            kill_all(s, SIGKILL);
        }
        if (s->running == 0 && res->timed_out)
            break; /* do not wait on connections of killed ranks */
        int r = poll(pfd, (nfds_t)np, 50);
        if (r < 0 && errno != EINTR) {
            perror("fake_pmi: poll");
            kill_all(s, SIGKILL);
            rc = -1;
            break;
        }
        for (int i = 0; i < np && r > 0; i++) {
            if (pfd[i].revents == 0)
                continue;
            if (who[i] == NULL) {
                int fd = accept(s->listen_fd, NULL, NULL);
                if (fd >= 0)
                    add_conn(s, fd, -1);
            } else if (who[i]->fd >= 0) {
                on_readable(s, who[i]);
            }
        }
    }
    /* Ranks killed on a time-out or an abort: reap them all. */
    for (int i = 0; i < o->nprocs; i++) {
        if (s->pid[i] > 0) {
            int st;
            if (waitpid(s->pid[i], &st, 0) == s->pid[i])
                res->status[i] = WIFEXITED(st) ? WEXITSTATUS(st)
                                 : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
        }
    }
    for (int i = 0; i < s->nconn; i++)
        if (s->c[i].fd >= 0)
            close(s->c[i].fd);
    if (s->listen_fd >= 0)
        close(s->listen_fd);
    kv_free(&s->committed);
    kv_free(&s->pending);
    free(s);
    return rc;
}
