/*
 * raw_tcp.c — a raw loopback TCP stream, the baseline for quay's TCP
 * transport ("quay TCP bandwidth >= 90 % of raw loopback").
 *
 *   raw_tcp [--csv] [--quick] [--reps N] [--rep-ms MS] [--stat median|min]
 *           [--window W] [--max-size B] [--buf-kb KB] [--block]
 *
 * The process listens on 127.0.0.1 and forks: the child connects and
 * reads, the parent writes and keeps the time. Both sockets have
 * TCP_NODELAY and SO_SNDBUF / SO_RCVBUF of --buf-kb (default 4096 KiB;
 * the kernel caps it at net.core.wmem_max / rmem_max and doubles it;
 * 0 leaves the kernel's autotuning alone). Both sides busy-poll
 * non-blocking sockets, as MPI libraries poll: on a 2-core VM a sleep and
 * wake-up per socket-buffer-full costs a blocking loop a third of its
 * small-message rate and some of its large-message bandwidth. --block
 * uses blocking sockets instead (recv with MSG_WAITALL).
 *
 * The loop is qbench's bw (bench/mpi/qbench.c) without MPI: per
 * iteration the writer sends a window of messages (one send() loop per
 * message, each from its own buffer slot), the reader reads each message
 * in full into its own slot, then answers a 1-byte ack. Same sizes
 * (1 B .. 4 MiB), the same window (64, at most 16 MiB: 4 at 4 MiB, 16 at
 * 1 MiB), the same method (a pattern check of one window per size
 * outside the timing, a warm-up that doubles until a run takes 1/8 of a
 * repetition, then --reps repetitions of ~--rep-ms; median and best
 * printed, CSV carries the median or with --stat min the best), the same
 * output ("bw,size,value,MB/s" with --csv; MB = 10^6 B).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RT_KIB 1024u
#define RT_MIB (1024u * 1024u)
#define RT_SLOT_AREA (16u * RT_MIB)
#define RT_ITERS_MAX 100000000L
#define RT_ITERS_MIN 2L
#define RT_QUIT UINT64_MAX

/* Keep in step with bw_sizes in qbench.c. */
static const size_t rt_sizes[] = {1, 8, 64, 512, 4096, 32768, 262144, 1048576, 4194304};

typedef struct rt_opts {
    int csv;
    int use_min;
    int reps;
    double rep_s;
    int window;
    size_t max_size;
    long buf_kb;
    int block; /* blocking sockets instead of busy polling */
} rt_opts;

/* What the writer announces before each run. */
typedef struct rt_hdr {
    uint64_t size;    /* message size, or RT_QUIT */
    uint64_t windows; /* iterations */
    uint64_t seed;    /* 0: no check; else slot i carries pattern seed + i */
} rt_hdr;

static double rt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#if defined(__GNUC__) || defined(__clang__)
__attribute__((noreturn))
#endif
static void rt_die(const char *who, const char *what)
{
    fflush(stdout);
    fprintf(stderr, "raw_tcp %s: %s: %s\n", who, what, errno != 0 ? strerror(errno) : "failed");
    exit(1);
}

static uint64_t rt_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1Dull;
}

static void rt_fill(unsigned char *p, size_t len, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t v = rt_next(&s);
        memcpy(p + i, &v, len - i < 8 ? len - i : 8);
    }
}

static long rt_check(const unsigned char *p, size_t len, uint64_t seed)
{
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t i = 0; i < len; i += 8) {
        uint64_t v = rt_next(&s);
        unsigned char e[8];
        memcpy(e, &v, 8);
        for (size_t k = 0; k < 8 && i + k < len; k++)
            if (p[i + k] != e[k])
                return (long)(i + k);
    }
    return -1;
}

static int rt_window(const rt_opts *o, size_t size)
{
    size_t w = RT_SLOT_AREA / (size > 0 ? size : 1);
    if (w > (size_t)o->window)
        w = (size_t)o->window;
    return w < 1 ? 1 : (int)w;
}

/* All of buf, or die (EOF from the reader included). A non-blocking
 * socket is polled until it takes everything. */
static void rt_send_all(int fd, const void *buf, size_t len, const char *who)
{
    const unsigned char *p = buf;
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (n <= 0)
            rt_die(who, "send");
        p += n;
        len -= (size_t)n;
    }
}

/* 1: read all of buf; 0: EOF before the first byte; dies otherwise. A
 * non-blocking socket is polled (MSG_WAITALL only matters to a blocking
 * one). */
static int rt_recv_all(int fd, void *buf, size_t len, const char *who)
{
    unsigned char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t n = recv(fd, p + got, len - got, MSG_WAITALL);
        if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
            continue;
        if (n == 0 && got == 0)
            return 0;
        if (n <= 0) {
            if (n == 0)
                errno = 0;
            rt_die(who, "read (connection closed mid-message)");
        }
        got += (size_t)n;
    }
    return 1;
}

static void rt_nonblock(int fd, const rt_opts *o, const char *who)
{
    int fl = fcntl(fd, F_GETFL);
    if (!o->block && (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0))
        rt_die(who, "O_NONBLOCK");
}

static void rt_sockopts(int fd, long buf_kb, const char *who)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0)
        rt_die(who, "TCP_NODELAY");
    if (buf_kb > 0) {
        int b = (int)(buf_kb * 1024);
        if (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &b, sizeof b) != 0 ||
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &b, sizeof b) != 0)
            rt_die(who, "SO_SNDBUF / SO_RCVBUF");
    }
}

/* ---- the reader (child) ------------------------------------------------------- */

static int rt_reader(const rt_opts *o, uint16_t port)
{
    const char *who = "reader";
    struct sockaddr_in a;
    rt_hdr h;
    unsigned char ack = 1;
    unsigned char *rbuf = malloc(RT_SLOT_AREA);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (rbuf == NULL || fd < 0)
        rt_die(who, "set-up");
    memset(rbuf, 0, RT_SLOT_AREA);
    rt_sockopts(fd, o->buf_kb, who);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
        rt_die(who, "connect");
    rt_nonblock(fd, o, who);
    while (rt_recv_all(fd, &h, sizeof h, who) && h.size != RT_QUIT) {
        size_t size = (size_t)h.size;
        int w = rt_window(o, size);
        if (size > RT_SLOT_AREA) {
            fprintf(stderr, "raw_tcp reader: bad header\n");
            return 1;
        }
        if (h.seed != 0)
            memset(rbuf, 0xEE, (size_t)w * size);
        for (uint64_t it = 0; it < h.windows; it++) {
            for (int i = 0; i < w; i++)
                rt_recv_all(fd, rbuf + (size_t)i * size, size, who);
            rt_send_all(fd, &ack, 1, who);
        }
        for (int i = 0; h.seed != 0 && i < w; i++) {
            long bad = rt_check(rbuf + (size_t)i * size, size, h.seed + (uint64_t)i);
            if (bad >= 0) {
                fprintf(stderr, "raw_tcp reader: %zu-byte message %d wrong at byte %ld\n", size,
                        i, bad);
                return 3;
            }
        }
    }
    close(fd);
    free(rbuf);
    return 0;
}

/* ---- the writer (parent) ------------------------------------------------------ */

/* One run of `windows` windows; returns the seconds from the first byte
 * to the last ack. */
static double rt_run(const rt_opts *o, int fd, unsigned char *sbuf, size_t size,
                     long windows, uint64_t seed)
{
    const char *who = "writer";
    rt_hdr h = {size, (uint64_t)windows, seed};
    int w = rt_window(o, size);
    unsigned char ack;
    if (seed != 0)
        for (int i = 0; i < w; i++)
            rt_fill(sbuf + (size_t)i * size, size, seed + (uint64_t)i);
    rt_send_all(fd, &h, sizeof h, who);
    double t0 = rt_now();
    for (long it = 0; it < windows; it++) {
        for (int i = 0; i < w; i++)
            rt_send_all(fd, sbuf + (size_t)i * size, size, who);
        if (!rt_recv_all(fd, &ack, 1, who)) {
            errno = 0;
            rt_die(who, "the reader closed the connection (see its message)");
        }
    }
    return rt_now() - t0;
}

static int rt_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void rt_point(const rt_opts *o, int fd, unsigned char *sbuf, double *vals, size_t size)
{
    long w = 1;
    double t;
    char sz[32];
    rt_run(o, fd, sbuf, size, 1, size * 104729u + 1); /* the data check */
    for (int round = 0;; round++) {
        t = rt_run(o, fd, sbuf, size, w, 0);
        if (round == 0) /* cold */
            continue;
        if (t >= o->rep_s / 8 || w >= RT_ITERS_MAX / 2)
            break;
        w *= t < o->rep_s / 256 ? 8 : 2;
    }
    double est = t > 0 ? o->rep_s * (double)w / t : (double)RT_ITERS_MAX;
    long iters = est < (double)RT_ITERS_MIN   ? RT_ITERS_MIN
                 : est > (double)RT_ITERS_MAX ? RT_ITERS_MAX
                                               : (long)est;
    for (int r = 0; r < o->reps; r++)
        vals[r] = rt_run(o, fd, sbuf, size, iters, 0) / (double)iters;
    qsort(vals, (size_t)o->reps, sizeof vals[0], rt_cmp_double);
    int m = o->reps;
    double med = m % 2 ? vals[m / 2] : (vals[m / 2 - 1] + vals[m / 2]) / 2;
    double bytes = (double)rt_window(o, size) * (double)size;
    double v_med = bytes / med / 1e6, v_best = bytes / vals[0] / 1e6;
    if (o->csv) {
        printf("bw,%zu,%.6g,MB/s\n", size, o->use_min ? v_best : v_med);
    } else {
        if (size >= RT_MIB)
            snprintf(sz, sizeof sz, "%zuM", size / RT_MIB);
        else if (size >= RT_KIB)
            snprintf(sz, sizeof sz, "%zuK", size / RT_KIB);
        else
            snprintf(sz, sizeof sz, "%zu", size);
        printf("%8s %12.1f %12.1f %10ld  %6d\n", sz, v_med, v_best, iters, rt_window(o, size));
    }
    fflush(stdout);
}

/* ---- options and main --------------------------------------------------------- */

static void rt_usage(FILE *f)
{
    fprintf(f, "usage: raw_tcp [--csv] [--quick] [--reps N] [--rep-ms MS] [--stat median|min]\n"
               "               [--window W] [--max-size BYTES] [--buf-kb KB] [--block]\n"
               "  (the options mean what they mean for qbench; --buf-kb: SO_SNDBUF and\n"
               "   SO_RCVBUF, default 4096, 0 = the kernel's autotuning; --block: blocking\n"
               "   sockets instead of busy polling)\n");
}

/* 0: run; 1: help; 2: error. */
static int rt_parse(rt_opts *o, int argc, char **argv)
{
    int reps = 0;
    double rep_ms = 0;
    *o = (rt_opts){0, 0, 7, 0.15, 64, (size_t)-1, 4096, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return 1;
        if (strcmp(a, "--csv") == 0) {
            o->csv = 1;
        } else if (strcmp(a, "--block") == 0) {
            o->block = 1;
        } else if (strcmp(a, "--quick") == 0) {
            o->reps = 3;
            o->rep_s = 0.03;
        } else if (strcmp(a, "--reps") == 0 && v != NULL) {
            reps = atoi(v), i++;
            if (reps < 1 || reps > 1000)
                goto bad;
        } else if (strcmp(a, "--rep-ms") == 0 && v != NULL) {
            rep_ms = atof(v), i++;
            if (!(rep_ms > 0 && rep_ms <= 60000))
                goto bad;
        } else if (strcmp(a, "--stat") == 0 && v != NULL) {
            i++;
            if (strcmp(v, "median") != 0 && strcmp(v, "min") != 0)
                goto bad;
            o->use_min = strcmp(v, "min") == 0;
        } else if (strcmp(a, "--window") == 0 && v != NULL) {
            o->window = atoi(v), i++;
            if (o->window < 1 || o->window > 4096)
                goto bad;
        } else if (strcmp(a, "--max-size") == 0 && v != NULL) {
            unsigned long long s = strtoull(v, &end, 10);
            i++;
            if (end == v)
                goto bad;
            if (*end == 'K' || *end == 'k')
                s *= RT_KIB, end++;
            else if (*end == 'M' || *end == 'm')
                s *= RT_MIB, end++;
            if (*end != '\0')
                goto bad;
            o->max_size = (size_t)s;
        } else if (strcmp(a, "--buf-kb") == 0 && v != NULL) {
            o->buf_kb = strtol(v, &end, 10), i++;
            if (end == v || *end != '\0' || o->buf_kb < 0 || o->buf_kb > 1024 * 1024)
                goto bad;
        } else {
            fprintf(stderr, "raw_tcp: unknown option or missing value: %s\n", a);
            rt_usage(stderr);
            return 2;
        }
        continue;
    bad:
        fprintf(stderr, "raw_tcp: %s %s: invalid value\n", a, v);
        return 2;
    }
    if (reps > 0)
        o->reps = reps;
    if (rep_ms > 0)
        o->rep_s = rep_ms / 1000;
    return 0;
}

int main(int argc, char **argv)
{
    const char *who = "writer";
    rt_opts o;
    struct sockaddr_in a;
    socklen_t alen = sizeof a;
    int p = rt_parse(&o, argc, argv);
    if (p != 0) {
        rt_usage(p == 1 ? stdout : stderr);
        return p == 1 ? 0 : 2;
    }
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    if (lfd < 0)
        rt_die(who, "socket");
    /* Set before listen: the accepted socket inherits them, and the
     * receive buffer fixes the window scale at the handshake. */
    rt_sockopts(lfd, o.buf_kb, who);
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(lfd, 1) != 0 ||
        getsockname(lfd, (struct sockaddr *)&a, &alen) != 0)
        rt_die(who, "bind / listen");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        rt_die(who, "fork");
    if (pid == 0) {
        close(lfd);
        _exit(rt_reader(&o, ntohs(a.sin_port)));
    }
    int fd = accept(lfd, NULL, NULL);
    if (fd < 0)
        rt_die(who, "accept");
    close(lfd);
    rt_sockopts(fd, o.buf_kb, who);
    rt_nonblock(fd, &o, who);
    int snd = 0, rcv = 0;
    socklen_t l1 = sizeof snd, l2 = sizeof rcv;
    getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, &l1);
    getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, &l2);

    unsigned char *sbuf = malloc(RT_SLOT_AREA);
    double *vals = malloc((size_t)o.reps * sizeof *vals);
    if (sbuf == NULL || vals == NULL)
        rt_die(who, "out of memory");
    memset(sbuf, 0, RT_SLOT_AREA);

    const char *c = o.csv ? "# " : "";
    printf("%sraw_tcp: loopback 127.0.0.1, TCP_NODELAY, SO_SNDBUF %d SO_RCVBUF %d (%s), %s; "
           "median and best of %d repetitions of ~%.0f ms; CSV value: %s\n",
           c, snd, rcv, o.buf_kb > 0 ? "as set, doubled by the kernel" : "kernel autotuning",
           o.block ? "blocking sockets" : "busy polling", o.reps, o.rep_s * 1000,
           o.use_min ? "best" : "median");
    if (o.csv)
        printf("bench,size,value,unit\n");
    else
        printf("\n## bw [MB/s]: raw TCP stream, window + ack (higher is better)\n"
               "%8s %12s %12s %10s  window\n",
               "size", "median", "best", "iters");
    fflush(stdout);
    for (size_t i = 0; i < sizeof rt_sizes / sizeof rt_sizes[0]; i++)
        if (rt_sizes[i] <= o.max_size)
            rt_point(&o, fd, sbuf, vals, rt_sizes[i]);

    rt_hdr quit = {RT_QUIT, 0, 0};
    rt_send_all(fd, &quit, sizeof quit, who);
    close(fd);
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        rt_die(who, "waitpid");
    free(sbuf);
    free(vals);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "raw_tcp: the reader failed (status %d)\n", st);
        return 1;
    }
    if (o.csv)
        printf("# done\n");
    return 0;
}
