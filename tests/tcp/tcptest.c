/*
 * tcptest.c — the forked ranks, the checking sink and the raw wire
 * helpers of tcptest.h.
 */
#include "tcptest.h"

#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tcp.h"

uint64_t tt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ---- directory ------------------------------------------------------------------------- */

int tt_dir_make(tt_dir *d, int n)
{
    memset(d, 0, sizeof *d);
    d->n = n;
    for (int r = 0; r < TT_MAX; r++)
        d->fd[r] = d->dead_fd[r] = -1;
    for (int r = 0; r < n; r++) {
        d->fd[r] = qrt_tcp_listen("127.0.0.1", d->addrs[r], sizeof d->addrs[r]);
        if (d->fd[r] < 0) {
            fprintf(stderr, "qrt_tcp_listen: %s\n", strerror(-d->fd[r]));
            return -1;
        }
    }
    return 0;
}

void tt_dir_close(tt_dir *d)
{
    for (int r = 0; r < TT_MAX; r++) {
        if (d->fd[r] >= 0)
            close(d->fd[r]);
        d->fd[r] = -1;
    }
}

static int td_publish(void *ctx, const char *addrs)
{
    (void)ctx;
    (void)addrs;
    return 0;
}

static int td_fence(void *ctx)
{
    (void)ctx;
    return 0;
}

static int td_lookup(void *ctx, int32_t r, char *buf, size_t cap)
{
    tt_dir *d = ctx;
    snprintf(buf, cap, "%s", d->addrs[r]);
    return 0;
}

qrt_tcp_dir tt_dir_for(tt_dir *d, int32_t rank)
{
    qrt_tcp_dir dir = {d, TT_JOB, td_publish, td_fence, td_lookup, d->fd[rank], d->dead_fd[rank]};
    return dir;
}

int tt_run(tt_dir *d, const tt_fn *fn, void *arg, int timeout_s, int *st)
{
    pid_t pid[TT_MAX];
    int failed = 0;
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < d->n; r++) {
        pid[r] = fn[r] != NULL ? fork() : -1;
        if (pid[r] == 0) {
            alarm((unsigned)timeout_s);
            int rc = fn[r](d, r, arg);
            /* exit, not _exit: the sanitizer build checks the child for
             * leaks too (stdout was flushed before the fork). */
            exit(rc == 0 ? 0 : 1);
        }
    }
    for (int r = 0; r < d->n; r++) {
        int s = 0;
        st[r] = fn[r] != NULL ? -1 : 0;
        if (pid[r] > 0) {
            while (waitpid(pid[r], &s, 0) < 0 && errno == EINTR)
                ;
            st[r] = WIFEXITED(s) && WEXITSTATUS(s) == 0 ? 0 : (s != 0 ? s : -1);
            if (WIFSIGNALED(s))
                fprintf(stderr, "  rank %d killed by signal %d%s\n", r, WTERMSIG(s),
                        WTERMSIG(s) == SIGALRM ? " (timeout)" : "");
        }
        failed += st[r] != 0;
    }
    return failed;
}

/* ---- the checking sink ------------------------------------------------------------------- */

uint8_t tt_mem_byte(int32_t rank, size_t i)
{
    return (uint8_t)(rank * 13 + i * 3 + (i >> 9));
}

uint8_t tt_pkt_byte(int32_t src, uint64_t seq, size_t i)
{
    return (uint8_t)(src * 31 + seq * 7 + i + (i >> 8));
}

static int sk_packet(void *ctx, int32_t peer, const void *bytes, size_t len)
{
    tt_rank *r = ctx;
    const uint8_t *b = bytes;
    r->ev++;
    if (r->refuse) {
        r->refused++;
        return QUAY_EAGAIN;
    }
    if (len < 16 || tcp_get32(b) != (uint32_t)peer || tcp_get64(b + 4) != r->next_seq[peer] ||
        tcp_get32(b + 12) != (uint32_t)len) {
        if (r->bad++ < 5)
            fprintf(stderr, "  rank %d: bad packet from %d: len %zu, seq %llu (want %llu)\n",
                    (int)r->rank, (int)peer, len,
                    len >= 12 ? (unsigned long long)tcp_get64(b + 4) : 0ull,
                    (unsigned long long)r->next_seq[peer]);
    } else {
        for (size_t i = 16; i < len; i++) {
            if (b[i] != tt_pkt_byte(peer, r->next_seq[peer], i)) {
                if (r->bad++ < 5)
                    fprintf(stderr, "  rank %d: packet %llu from %d differs at byte %zu\n",
                            (int)r->rank, (unsigned long long)r->next_seq[peer], (int)peer, i);
                break;
            }
        }
    }
    r->next_seq[peer]++;
    return 0;
}

static void sk_op_done(void *ctx, uint64_t token, int status)
{
    tt_rank *r = ctx;
    r->ev++;
    r->outstanding--;
    if (r->ndone < TT_DONES)
        r->done[r->ndone++] = (tt_done){token, status, r->ev};
    if (!(token & TT_RDMA_TOKEN))
        free((void *)(uintptr_t)token);
}

static int sk_resolve(void *ctx, int32_t peer, uint64_t key, uint64_t offset, uint64_t len,
                      uint32_t access, void **addr)
{
    tt_rank *r = ctx;
    r->nresolve++;
    if (peer < 0 || peer >= r->size || peer == r->rank)
        return QUAY_ERANK; /* the transport names the connection's peer */
    if (key != TT_KEY_RW && key != TT_KEY_RO)
        return QUAY_ESTATE;
    if (offset > TT_MEM || len > TT_MEM - offset ||
        (key == TT_KEY_RO && (access & QUAY_MEM_WRITE)))
        return QUAY_EPROTO;
    *addr = r->mem + offset;
    return 0;
}

static int sk_atomic(void *ctx, int32_t peer, uint64_t key, uint64_t offset, uint32_t op,
                     uint64_t operand, uint64_t compare, uint64_t *old)
{
    tt_rank *r = ctx;
    uint64_t w;
    r->natomic++;
    if (peer < 0 || peer >= r->size || peer == r->rank)
        return QUAY_ERANK;
    if (key != TT_KEY_RW)
        return QUAY_ESTATE;
    if (offset > TT_MEM - 8 || op < QUAY_ATOMIC_FADD || op > QUAY_ATOMIC_CAS)
        return QUAY_EPROTO;
    memcpy(&w, r->mem + offset, 8);
    *old = w;
    if (op == QUAY_ATOMIC_FADD)
        w += operand;
    else if (op == QUAY_ATOMIC_SWAP || w == compare)
        w = operand;
    memcpy(r->mem + offset, &w, 8);
    return 0;
}

static void sk_bye(void *ctx, int32_t peer)
{
    tt_rank *r = ctx;
    r->ev++;
    r->bye[peer]++;
    r->bye_seq[peer] = r->next_seq[peer];
}

static void sk_failed(void *ctx, int32_t peer)
{
    tt_rank *r = ctx;
    r->ev++;
    r->failed[peer]++;
    r->fail_ev[peer] = r->ev;
}

int tt_open(tt_rank *r, tt_dir *d, int32_t rank)
{
    memset(r, 0, sizeof *r);
    for (int i = 0; i < d->n; i++) {
        if (i != rank && d->fd[i] >= 0) {
            close(d->fd[i]);
            d->fd[i] = -1;
        }
    }
    r->rank = rank;
    r->size = d->n;
    r->mem = malloc(TT_MEM);
    if (r->mem == NULL)
        return QUAY_ENOMEM;
    for (size_t i = 0; i < TT_MEM; i++)
        r->mem[i] = tt_mem_byte(rank, i);
    r->sink = (quay_transport_sink){r, sk_packet, sk_op_done, sk_resolve, sk_atomic, sk_bye, sk_failed};
    qrt_tcp_dir dir = tt_dir_for(d, rank);
    d->fd[rank] = d->dead_fd[rank] = -1; /* the transport's now */
    return qrt_tcp_open(rank, d->n, &dir, &r->sink, &r->t);
}

int tt_send(tt_rank *r, int32_t peer, size_t len)
{
    uint8_t *b = malloc(len);
    uint64_t seq = r->sent_seq[peer];
    if (b == NULL)
        return QUAY_ENOMEM;
    tcp_put32(b, (uint32_t)r->rank);
    tcp_put64(b + 4, seq);
    tcp_put32(b + 12, (uint32_t)len);
    for (size_t i = 16; i < len; i++)
        b[i] = tt_pkt_byte(r->rank, seq, i);
    /* Two iovecs, as the engine sends (header, payload). */
    quay_iov iov[2] = {{b, 16}, {b + 16, len - 16}};
    int rc = r->t->ops->send(r->t, peer, iov, 2, (uint64_t)(uintptr_t)b);
    if (rc == 0) {
        r->queued++;
        r->outstanding++;
    } else {
        free(b);
    }
    if (rc >= 0)
        r->sent_seq[peer]++;
    return rc;
}

int tt_rdma(tt_rank *r, int kind, int32_t peer, uint64_t id, uint64_t key, uint64_t off,
            void *local, uint64_t len, uint32_t aop, uint64_t operand, uint64_t compare)
{
    quay_action a;
    memset(&a, 0, sizeof a);
    a.kind = kind;
    a.peer = peer;
    a.token = id | TT_RDMA_TOKEN;
    a.rdma.key = key;
    a.rdma.offset = off;
    a.rdma.local = local;
    a.rdma.len = len;
    a.atomic.op = aop;
    a.atomic.operand = operand;
    a.atomic.compare = compare;
    int rc = r->t->ops->rdma(r->t, &a);
    if (rc >= 0)
        r->outstanding++;
    return rc;
}

int tt_rdma_status(const tt_rank *r, uint64_t id)
{
    for (int i = 0; i < r->ndone; i++)
        if (r->done[i].token == (id | TT_RDMA_TOKEN))
            return r->done[i].status;
    return 1;
}

static int settled(const tt_rank *r)
{
    for (int32_t p = 0; p < r->size; p++)
        if (p != r->rank && !r->bye[p] && !r->failed[p])
            return 0;
    return !r->t->ops->busy(r->t);
}

int tt_finish(tt_rank *r)
{
    int ok;
    if (r->t->ops->bye(r->t) != 0)
        return -1;
    TT_POLL_UNTIL(r, settled(r), 30000, ok);
    r->t->ops->close(r->t);
    r->t = NULL;
    free(r->mem);
    r->mem = NULL;
    return ok ? 0 : -1;
}

/* ---- raw ranks ------------------------------------------------------------------------------ */

int tt_raw_write(int fd, const void *b, size_t len)
{
    const uint8_t *p = b;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int tt_raw_read(int fd, void *b, size_t len)
{
    uint8_t *p = b;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int tt_raw_connect(tt_dir *d, int32_t me, int32_t to, int32_t size)
{
    struct sockaddr_in sa[TCP_ADDRS_MAX];
    uint8_t h[TCP_HELLO_LEN];
    int n = tcp_parse_addrs(d->addrs[to], strlen(d->addrs[to]), sa, TCP_ADDRS_MAX);
    if (n < 1)
        return -1;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa[0], sizeof sa[0]) != 0)
        goto fail;
    tcp_put32(h, TCP_MAGIC);
    tcp_put16(h + 4, TCP_VERSION);
    tcp_put16(h + 6, 0);
    tcp_put64(h + 8, TT_JOB);
    tcp_put32(h + 16, (uint32_t)me);
    tcp_put32(h + 20, (uint32_t)to);
    tcp_put32(h + 24, (uint32_t)size);
    tcp_put32(h + 28, 0);
    if (tt_raw_write(fd, h, sizeof h) != 0 || tt_raw_read(fd, h, sizeof h) != 0 ||
        tcp_get32(h) != TCP_MAGIC || tcp_get32(h + 16) != (uint32_t)to ||
        tcp_get32(h + 20) != (uint32_t)me)
        goto fail;
    return fd;
fail:
    fprintf(stderr, "  raw rank %d: cannot connect to rank %d\n", (int)me, (int)to);
    if (fd >= 0)
        close(fd);
    return -1;
}

uint8_t *tt_raw_pkt(int32_t src, uint64_t seq, size_t len, size_t *flen)
{
    uint8_t *f = malloc(TCP_PREFIX + len);
    if (f == NULL)
        return NULL;
    tcp_prefix(f, TCP_PKT, len);
    uint8_t *b = f + TCP_PREFIX;
    tcp_put32(b, (uint32_t)src);
    tcp_put64(b + 4, seq);
    tcp_put32(b + 12, (uint32_t)len);
    for (size_t i = 16; i < len; i++)
        b[i] = tt_pkt_byte(src, seq, i);
    *flen = TCP_PREFIX + len;
    return f;
}

int tt_raw_frame(int fd, uint8_t *h)
{
    if (tt_raw_read(fd, h, TCP_PREFIX) != 0 || h[0] < TCP_PKT || h[0] > TCP_TYPE_MAX)
        return -1;
    if (tt_raw_read(fd, h + TCP_PREFIX, tcp_ext_len(h[0])) != 0)
        return -1;
    uint64_t body = tcp_get64(h + 4);
    uint8_t junk[4096];
    while (body > 0) {
        size_t n = body < sizeof junk ? (size_t)body : sizeof junk;
        if (tt_raw_read(fd, junk, n) != 0)
            return -1;
        body -= n;
    }
    return h[0];
}

/* ---- stderr capture ------------------------------------------------------------------------- */

static int saved_err = -1;
static FILE *cap_file;

void tt_stderr_capture(void)
{
    fflush(stderr);
    cap_file = tmpfile();
    if (cap_file == NULL)
        return;
    saved_err = dup(2);
    dup2(fileno(cap_file), 2);
}

char *tt_stderr_end(void)
{
    char *text = calloc(1, 1);
    if (cap_file == NULL)
        return text;
    fflush(stderr);
    dup2(saved_err, 2);
    close(saved_err);
    saved_err = -1;
    off_t n = lseek(fileno(cap_file), 0, SEEK_END);
    if (n > 0 && text != NULL) {
        char *t = realloc(text, (size_t)n + 1);
        if (t != NULL) {
            text = t;
            rewind(cap_file);
            size_t got = fread(text, 1, (size_t)n, cap_file);
            text[got] = '\0';
            fputs(text, stderr); /* still shown in the test's log */
        }
    }
    fclose(cap_file);
    cap_file = NULL;
    return text;
}
