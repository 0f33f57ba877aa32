/*
 * quayrun — start N ranks of a quay program on this host.
 *
 *   quayrun -n N [--transport shm|tcp|PATH] [--grace SECONDS] [--] prog [args...]
 *
 * shm (the default): it makes the shared segment (a memfd: nothing to
 * clean up however the job ends), forks and execs N copies of prog with
 * QUAY_RANK, QUAY_SIZE, QUAY_TRANSPORT=shm and QUAY_SHM_FD set, and waits.
 * When a rank ends, its slot in the segment is marked, so that ranks
 * waiting on it learn at once (and complete with QUAY_EPEER instead of
 * hanging).
 *
 * tcp: it makes one listening socket per rank (on QUAY_TCP_ADDR, default
 * 127.0.0.1), so every address is known before any rank starts: each rank
 * gets its own socket (QUAY_TCP_FD), every rank's address (QUAY_TCP_PEERS)
 * and connects to the others itself (adapters/sockets). The random job
 * cookie comes in a pipe (QUAY_TCP_JOB_FD) that the rank reads once: in
 * the environment, any process of the user could read it from /proc and
 * pass for a rank. A rank that dies closes its connections, which is how
 * the others learn once connected; before that, quayrun writes its number
 * to every rank's dead-rank pipe (QUAY_TCP_DEAD_FD), so that nobody waits
 * for it until the connect limit.
 *
 * PATH (anything with a '/'): an adapter library (<quay/quay_adapter.h>)
 * that every rank loads (QUAY_TRANSPORT=PATH, made absolute). Its ranks
 * meet by themselves; quayrun gives them QUAY_JOB_DIR, a directory of
 * their own (mode 0700, under $TMPDIR or /tmp) to meet in, and removes it
 * with what they left there once every rank has ended.
 *
 * Without --transport, QUAY_TRANSPORT from quayrun's environment says
 * which (shm if it is unset).
 *
 * SIGINT, SIGTERM and SIGHUP sent to quayrun are passed on to the ranks.
 * If a rank fails
 * (non-zero status or killed by a signal), the others get a grace period
 * to finish, then are killed.
 *
 * Exit status: 0 if every rank exited 0; otherwise the first failure in
 * time: the rank's exit status, or 128 + the signal that killed it. 2 for
 * a usage error, 1 if quayrun itself could not start the job. Ranks are
 * reaped in the order they end (a pidfd each, in one epoll set, which
 * hands them out in the order they became ready): waitpid(-1) would
 * return them in fork order, and a survivor that exits just after the
 * rank that failed would be taken for the cause.
 *
 * Environment read here: QUAY_SHM_RING_KB (packet ring per ordered pair,
 * default 256, smaller for large N), QUAY_SHM_CTL_KB (RDMA request ring,
 * default 16).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qrt_tcp.h"
#include "shm_seg.h"

#define MAX_RANKS 4096
#define GRACE_DEFAULT_S 5.0
/* Rings of all pairs together stay below this unless asked otherwise. */
#define RINGS_BUDGET (1ull << 30)

extern char **environ;

typedef struct job {
    int n;
    const char *transport;
    double grace_s;
    char **argv; /* prog and its arguments */
    pid_t *pid;  /* per rank; 0 once reaped */
    int running;
    int status;       /* exit status of quayrun */
    int failed;       /* a rank failed */
    int killed;       /* SIGKILL sent to the rest */
    int signals;      /* forwarded so far */
    double deadline;  /* kill the rest at this time (0: none) */
    int tcp;          /* --transport tcp */
    int lib;          /* --transport PATH: an adapter library */
    char *adapter;    /* lib: its absolute path */
    char jobdir[PATH_MAX]; /* lib: QUAY_JOB_DIR ("" until made) */
    qshm_seg seg;     /* shm */
    int *listen_fd;   /* tcp: per rank, until its fork */
    int *dead_w;      /* tcp: per rank, its dead-rank pipe (-1: closed) */
    int *pidfd;       /* per rank (-1: none, reaped on SIGCHLD) */
    int ep;           /* epoll: the pidfds and sfd */
    int sfd;          /* signalfd: SIGCHLD, SIGINT, SIGTERM, SIGHUP */
    struct rlimit nofile; /* as we found it, for the ranks */
    int nofile_set;       /* nofile is known */
} job;

/* epoll keys: a rank's pidfd is its number; the signalfd is this. */
#define KEY_SIGNALS UINT64_MAX

static void usage(FILE *f)
{
    fprintf(f, "usage: quayrun -n N [--transport shm|tcp|PATH] [--grace SECONDS] [--] prog "
               "[args...]\n"
               "  -n, --np N        number of ranks (1..%d)\n"
               "  --transport shm   shared memory on this host (the default)\n"
               "  --transport tcp   TCP sockets (on QUAY_TCP_ADDR, default 127.0.0.1)\n"
               "  --transport PATH  an adapter library each rank loads (a path with a '/',\n"
               "                    e.g. ./libquay_uds.so); QUAY_JOB_DIR is the job's own\n"
               "                    directory, removed at the end\n"
               "                    (without --transport: $QUAY_TRANSPORT, else shm)\n"
               "  --grace SECONDS   after a rank fails, how long the others may still run\n"
               "                    before they are killed (default %g)\n",
            MAX_RANKS, GRACE_DEFAULT_S);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int parse_int(const char *s, long min, long max, long *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

/* The value of option `name` at argv[*i]: "--name=v", "-nV" or the next
 * argument. NULL if missing. */
static const char *opt_value(char **argv, int argc, int *i, const char *arg, size_t namelen)
{
    if (arg[namelen] == '=')
        return arg + namelen + 1;
    if (arg[namelen] != '\0')
        return arg[1] != '-' ? arg + namelen : NULL; /* -n4, not --np4 */
    if (*i + 1 >= argc)
        return NULL;
    return argv[++*i];
}

/* 0: parsed; 1: --help; 2: usage error (message printed). */
static int parse(job *j, int argc, char **argv)
{
    int i;
    j->n = 0;
    j->transport = getenv("QUAY_TRANSPORT");
    if (j->transport == NULL || *j->transport == '\0')
        j->transport = "shm";
    j->grace_s = GRACE_DEFAULT_S;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v;
        long n;
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == '\0')
            break;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
            return 1;
        if (strncmp(a, "-n", 2) == 0 && (a[2] == '\0' || (a[2] >= '0' && a[2] <= '9'))) {
            v = opt_value(argv, argc, &i, a, 2);
        } else if (strncmp(a, "--np", 4) == 0 && (a[4] == '\0' || a[4] == '=')) {
            v = opt_value(argv, argc, &i, a, 4);
        } else if (strncmp(a, "--transport", 11) == 0 && (a[11] == '\0' || a[11] == '=')) {
            if ((v = opt_value(argv, argc, &i, a, 11)) == NULL)
                goto missing;
            j->transport = v;
            continue;
        } else if (strncmp(a, "--grace", 7) == 0 && (a[7] == '\0' || a[7] == '=')) {
            char *end = NULL;
            if ((v = opt_value(argv, argc, &i, a, 7)) == NULL)
                goto missing;
            j->grace_s = strtod(v, &end);
            if (end == v || *end != '\0' || !(j->grace_s >= 0) || j->grace_s > 86400) {
                fprintf(stderr, "quayrun: --grace %s: expected seconds (0..86400)\n", v);
                return 2;
            }
            continue;
        } else {
            fprintf(stderr, "quayrun: unknown option %s\n", a);
            usage(stderr);
            return 2;
        }
        /* -n / --np */
        if (v == NULL)
            goto missing;
        if (parse_int(v, 1, MAX_RANKS, &n) != 0) {
            fprintf(stderr, "quayrun: -n %s: expected a number of ranks (1..%d)\n", v,
                    MAX_RANKS);
            return 2;
        }
        j->n = (int)n;
    }
    j->tcp = strcmp(j->transport, "tcp") == 0;
    j->lib = strchr(j->transport, '/') != NULL;
    if (!j->tcp && !j->lib && strcmp(j->transport, "shm") != 0) {
        fprintf(stderr,
                "quayrun: --transport %s: unknown transport (known: shm, tcp, or the path of "
                "an adapter library, such as ./libquay_uds.so)\n",
                j->transport);
        return 2;
    }
    /* Absolute: a rank that changes directory still finds it. */
    if (j->lib && (j->adapter = realpath(j->transport, NULL)) == NULL) {
        fprintf(stderr, "quayrun: --transport %s: %s\n", j->transport, strerror(errno));
        return 2;
    }
    if (j->n == 0 || i >= argc) {
        fprintf(stderr, "quayrun: %s\n", j->n == 0 ? "-n N is required" : "no program given");
        usage(stderr);
        return 2;
    }
    j->argv = argv + i;
    return 0;
missing:
    fprintf(stderr, "quayrun: option %s needs a value\n", argv[i]);
    usage(stderr);
    return 2;
}

/* Ring sizes: knobs, or 256 KiB per pair shrunk (to 16 KiB at least) so
 * that all pairs together stay within RINGS_BUDGET. */
static int ring_sizes(int n, uint64_t *ring, uint64_t *ctl)
{
    const char *s;
    long kb;
    *ring = 256u << 10;
    *ctl = 16u << 10;
    while (*ring > (16u << 10) && (uint64_t)n * (uint64_t)n * *ring > RINGS_BUDGET)
        *ring >>= 1;
    if ((s = getenv("QUAY_SHM_RING_KB")) != NULL && *s != '\0') {
        if (parse_int(s, 4, 1 << 20, &kb) != 0) {
            fprintf(stderr, "quayrun: QUAY_SHM_RING_KB=%s: expected 4..1048576\n", s);
            return -1;
        }
        *ring = (uint64_t)kb << 10;
    }
    if ((s = getenv("QUAY_SHM_CTL_KB")) != NULL && *s != '\0') {
        if (parse_int(s, 4, 1 << 16, &kb) != 0) {
            fprintf(stderr, "quayrun: QUAY_SHM_CTL_KB=%s: expected 4..65536\n", s);
            return -1;
        }
        *ctl = (uint64_t)kb << 10;
    }
    return 0;
}

/* Variables quayrun sets: a value inherited from our own environment
 * would confuse the rank (e.g. quayrun started under quayrun). */
static const char *const OURS[] = {
    "QUAY_RANK=",      "QUAY_SIZE=",       "QUAY_TRANSPORT=", "QUAY_SHM_FD=",
    "QUAY_TCP_FD=",    "QUAY_TCP_PEERS=",  "QUAY_TCP_JOB=",   "QUAY_TCP_JOB_FD=",
    "QUAY_TCP_DEAD_FD=", "QUAY_JOB_DIR="};
#define NOURS (sizeof OURS / sizeof OURS[0])

/* The environment of rank r: ours without any of OURS, then the rank's
 * own `nset` strings (owned by the caller). */
static char **rank_env(char *const *set, size_t nset)
{
    size_t cnt = 0, k = 0;
    while (environ[cnt] != NULL)
        cnt++;
    char **env = calloc(cnt + nset + 1, sizeof *env);
    if (env == NULL)
        return NULL;
    for (size_t i = 0; i < cnt; i++) {
        int skip = 0;
        for (size_t o = 0; o < NOURS; o++)
            skip |= strncmp(environ[i], OURS[o], strlen(OURS[o])) == 0;
        if (!skip)
            env[k++] = environ[i];
    }
    for (size_t i = 0; i < nset; i++)
        env[k++] = set[i];
    env[k] = NULL;
    return env;
}

/* In the child: back to the signal mask and descriptor limit the program
 * expects, die with quayrun, keep the rank's descriptors across exec,
 * become the program. */
static void child(const job *j, const sigset_t *oldmask, pid_t parent, const int *fd, int nfd,
                  char **env)
{
    sigprocmask(SIG_SETMASK, oldmask, NULL);
    if (j->nofile_set)
        setrlimit(RLIMIT_NOFILE, &j->nofile);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127); /* quayrun died before prctl took effect */
    for (int i = 0; i < nfd; i++) {
        int fl = fcntl(fd[i], F_GETFD);
        if (fl >= 0)
            fcntl(fd[i], F_SETFD, fl & ~FD_CLOEXEC);
    }
    execvpe(j->argv[0], j->argv, env);
    fprintf(stderr, "quayrun: cannot run %s: %s\n", j->argv[0], strerror(errno));
    _exit(127);
}

static void kill_all(job *j, int sig)
{
    for (int r = 0; r < j->n; r++)
        if (j->pid[r] > 0)
            kill(j->pid[r], sig);
}

/* tcp: rank r ended; ranks still starting must not wait for it. A rank
 * that has closed its pipe is connected (or gone): it hears no more. */
static void tell_dead(job *j, int r)
{
    uint32_t rec = (uint32_t)r;
    if (j->dead_w == NULL)
        return;
    if (j->dead_w[r] >= 0)
        close(j->dead_w[r]);
    j->dead_w[r] = -1;
    for (int k = 0; k < j->n && !j->killed; k++) {
        /* 4 bytes: written whole or not at all (EAGAIN: a pipe full of
         * news the rank does not read, which cannot happen below 16384
         * ranks). SIGPIPE is blocked: EPIPE. */
        if (j->dead_w[k] >= 0 && write(j->dead_w[k], &rec, sizeof rec) < 0 && errno != EAGAIN) {
            close(j->dead_w[k]);
            j->dead_w[k] = -1;
        }
    }
}

/* A rank ended: report a failure, remember the first one, tell the others. */
static void reaped(job *j, int r, int st)
{
    int code = 0;
    j->pid[r] = 0;
    j->running--;
    if (j->pidfd[r] >= 0)
        close(j->pidfd[r]); /* also leaves the epoll set */
    j->pidfd[r] = -1;
    if (!j->tcp && !j->lib)
        qshm_seg_mark_exited(&j->seg, (uint32_t)r);
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        code = 128 + sig;
        if (!j->killed)
            fprintf(stderr, "quayrun: rank %d killed by signal %d (%s)\n", r, sig,
                    strsignal(sig));
    } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0) {
        code = WEXITSTATUS(st);
        fprintf(stderr, "quayrun: rank %d exited with status %d\n", r, code);
    }
    if (j->tcp)
        tell_dead(j, r);
    if (code == 0)
        return;
    if (j->status == 0)
        j->status = code;
    if (!j->failed) {
        j->failed = 1;
        if (j->running > 0 && j->deadline == 0)
            j->deadline = now_s() + j->grace_s;
    }
}

/* Rank r's pidfd is ready: it has ended. */
static void reap_rank(job *j, int r)
{
    int st;
    if (r < 0 || r >= j->n || j->pid[r] <= 0)
        return;
    if (waitpid(j->pid[r], &st, WNOHANG) == j->pid[r])
        reaped(j, r, st);
}

/* SIGCHLD: the ranks without a pidfd (a kernel without pidfd_open, or out
 * of descriptors), the one the signal names first: it ended before the
 * others. Ranks with a pidfd are left to it. */
static void reap_unwatched(job *j, pid_t first)
{
    int st;
    for (int r = 0; r < j->n; r++)
        if (j->pid[r] == first && j->pidfd[r] < 0 &&
            waitpid(j->pid[r], &st, WNOHANG) == j->pid[r])
            reaped(j, r, st);
    for (int r = 0; r < j->n; r++)
        if (j->pid[r] > 0 && j->pidfd[r] < 0 && waitpid(j->pid[r], &st, WNOHANG) == j->pid[r])
            reaped(j, r, st);
}

/* Watch rank r's end through a pidfd; without one, SIGCHLD still tells. */
static void watch(job *j, int r)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, j->pid[r], 0); /* close-on-exec */
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)r};
    if (fd >= 0 && epoll_ctl(j->ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        close(fd);
        fd = -1;
    }
    j->pidfd[r] = fd;
#else
    (void)j;
    (void)r;
#endif
}

/* Fork and exec rank r with `set` added to the environment and fd[0,
 * nfd) kept open across exec. */
static int spawn(job *j, const sigset_t *oldmask, int r, const int *fd, int nfd, char *const *set,
                 size_t nset)
{
    char **env = rank_env(set, nset);
    if (env == NULL) {
        fprintf(stderr, "quayrun: out of memory\n");
        return -1;
    }
    pid_t self = getpid();
    pid_t p = fork();
    if (p == 0)
        child(j, oldmask, self, fd, nfd, env);
    free(env);
    if (p < 0) {
        fprintf(stderr, "quayrun: fork: %s\n", strerror(errno));
        return -1;
    }
    j->pid[r] = p;
    j->running++;
    watch(j, r);
    return 0;
}

static int start_shm(job *j, const sigset_t *oldmask)
{
    uint64_t ring, ctl;
    int fd, rc = 0;
    char set[4][40];
    char *sets[4] = {set[0], set[1], set[2], set[3]};
    if (ring_sizes(j->n, &ring, &ctl) != 0)
        return -1;
    rc = qshm_seg_create((uint32_t)j->n, ring, ctl, &j->seg, &fd);
    if (rc != 0) {
        fprintf(stderr, "quayrun: cannot create the shared segment: %s\n", strerror(-rc));
        return -1;
    }
    rc = 0;
    for (int r = 0; r < j->n && rc == 0; r++) {
        snprintf(set[0], sizeof set[0], "QUAY_RANK=%d", r);
        snprintf(set[1], sizeof set[1], "QUAY_SIZE=%d", j->n);
        snprintf(set[2], sizeof set[2], "QUAY_TRANSPORT=shm");
        snprintf(set[3], sizeof set[3], "QUAY_SHM_FD=%d", fd);
        rc = spawn(j, oldmask, r, &fd, 1, sets, 4);
    }
    close(fd); /* our mapping keeps the segment */
    return rc;
}

/* tcp rank r: its listener, the cookie in a pipe of its own (written and
 * closed here, so the rank finds it all there and nobody can add to it),
 * and its dead-rank pipe, whose write end we keep. */
static int spawn_tcp(job *j, const sigset_t *oldmask, int r, uint64_t cookie, char *peers)
{
    int jp[2] = {-1, -1}, dp[2] = {-1, -1}, rc = -1;
    char set[6][48], text[24];
    char *sets[7] = {set[0], set[1], set[2], set[3], set[4], set[5], peers};
    int len = snprintf(text, sizeof text, "%016llx\n", (unsigned long long)cookie);
    if (pipe2(jp, O_CLOEXEC) != 0 || pipe2(dp, O_CLOEXEC | O_NONBLOCK) != 0) {
        fprintf(stderr, "quayrun: pipe: %s\n", strerror(errno));
        goto out;
    }
    /* 17 bytes into an empty pipe: written whole at once. */
    if (write(jp[1], text, (size_t)len) != (ssize_t)len) {
        fprintf(stderr, "quayrun: cannot write the job cookie: %s\n", strerror(errno));
        goto out;
    }
    close(jp[1]);
    jp[1] = -1;
    snprintf(set[0], sizeof set[0], "QUAY_RANK=%d", r);
    snprintf(set[1], sizeof set[1], "QUAY_SIZE=%d", j->n);
    snprintf(set[2], sizeof set[2], "QUAY_TRANSPORT=tcp");
    snprintf(set[3], sizeof set[3], "QUAY_TCP_FD=%d", j->listen_fd[r]);
    snprintf(set[4], sizeof set[4], "QUAY_TCP_JOB_FD=%d", jp[0]);
    snprintf(set[5], sizeof set[5], "QUAY_TCP_DEAD_FD=%d", dp[0]);
    int keep[3] = {j->listen_fd[r], jp[0], dp[0]};
    rc = spawn(j, oldmask, r, keep, 3, sets, 7);
    if (rc == 0) {
        j->dead_w[r] = dp[1];
        dp[1] = -1;
    }
out:
    /* The rank has its copies; later ranks must not inherit ours. */
    for (int i = 0; i < 2; i++) {
        if (jp[i] >= 0)
            close(jp[i]);
        if (dp[i] >= 0)
            close(dp[i]);
    }
    explicit_bzero(text, sizeof text);
    return rc;
}

/* tcp: every rank's listening socket first, so every address is known
 * before any rank starts and no rank ever waits for a directory. */
static int start_tcp(job *j, const sigset_t *oldmask)
{
    const char *host = getenv("QUAY_TCP_ADDR");
    size_t cap = (size_t)j->n * QRT_TCP_ADDR_MAX + 32, len = 0;
    char *peers = malloc(cap);
    char addrs[QRT_TCP_ADDR_MAX];
    uint64_t cookie = 0;
    int rc = 0;
    if (host == NULL || *host == '\0')
        host = "127.0.0.1"; /* ranks of one host: loopback, nothing exposed */
    j->listen_fd = malloc((size_t)j->n * sizeof *j->listen_fd);
    j->dead_w = malloc((size_t)j->n * sizeof *j->dead_w);
    if (peers == NULL || j->listen_fd == NULL || j->dead_w == NULL) {
        fprintf(stderr, "quayrun: out of memory\n");
        free(peers);
        return -1;
    }
    for (int r = 0; r < j->n; r++)
        j->listen_fd[r] = j->dead_w[r] = -1;
    len = (size_t)snprintf(peers, cap, "QUAY_TCP_PEERS=");
    for (int r = 0; r < j->n && rc == 0; r++) {
        int fd = qrt_tcp_listen(host, addrs, sizeof addrs);
        if (fd < 0) {
            fprintf(stderr, "quayrun: cannot listen on %s: %s\n", host, strerror(-fd));
            rc = -1;
            break;
        }
        j->listen_fd[r] = fd;
        len += (size_t)snprintf(peers + len, cap - len, "%s%s", r > 0 ? ";" : "", addrs);
    }
    /* Tells this job's connections from any other's on the same ports. */
    if (rc == 0 && getrandom(&cookie, sizeof cookie, 0) != (ssize_t)sizeof cookie)
        cookie = ((uint64_t)getpid() << 32) ^ (uint64_t)(now_s() * 1e9);
    for (int r = 0; r < j->n && rc == 0; r++) {
        rc = spawn_tcp(j, oldmask, r, cookie, peers);
        /* The rank has its copy; ours would keep the port open after the
         * rank is gone (and later ranks must not inherit it). */
        close(j->listen_fd[r]);
        j->listen_fd[r] = -1;
    }
    explicit_bzero(&cookie, sizeof cookie);
    for (int r = 0; r < j->n; r++)
        if (j->listen_fd[r] >= 0)
            close(j->listen_fd[r]);
    free(j->listen_fd);
    j->listen_fd = NULL;
    free(peers);
    return rc;
}

/* An adapter library: each rank gets its path, rank, size and the job's
 * directory; the ranks meet by themselves. */
static int start_lib(job *j, const sigset_t *oldmask)
{
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX];
    int err = 0;
    if (tmp == NULL || *tmp == '\0')
        tmp = "/tmp";
    if (snprintf(dir, sizeof dir, "%s/quayrun-XXXXXX", tmp) >= (int)sizeof dir)
        err = ENAMETOOLONG;
    else if (mkdtemp(dir) == NULL) /* mode 0700: the user's alone */
        err = errno;
    if (err != 0) {
        fprintf(stderr, "quayrun: cannot make the job directory in %s: %s\n", tmp,
                strerror(err));
        return -1;
    }
    memcpy(j->jobdir, dir, sizeof dir);
    size_t cap = strlen(j->adapter) + sizeof dir + 32;
    char *lib = malloc(cap), *jd = malloc(cap);
    char set[2][40];
    char *sets[4] = {set[0], set[1], lib, jd};
    int rc = 0;
    if (lib == NULL || jd == NULL) {
        fprintf(stderr, "quayrun: out of memory\n");
        rc = -1;
    } else {
        snprintf(lib, cap, "QUAY_TRANSPORT=%s", j->adapter);
        snprintf(jd, cap, "QUAY_JOB_DIR=%s", j->jobdir);
    }
    for (int r = 0; r < j->n && rc == 0; r++) {
        snprintf(set[0], sizeof set[0], "QUAY_RANK=%d", r);
        snprintf(set[1], sizeof set[1], "QUAY_SIZE=%d", j->n);
        rc = spawn(j, oldmask, r, NULL, 0, sets, 4);
    }
    free(lib);
    free(jd);
    return rc;
}

/* The job directory and what the ranks left in it (files, sockets, empty
 * directories: an adapter makes no deeper tree). */
static void remove_jobdir(job *j)
{
    if (j->jobdir[0] == '\0')
        return;
    DIR *d = opendir(j->jobdir);
    if (d != NULL) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                continue;
            if (unlinkat(dirfd(d), e->d_name, 0) != 0 && errno == EISDIR)
                (void)unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
        }
        closedir(d);
    }
    if (rmdir(j->jobdir) != 0)
        fprintf(stderr, "quayrun: cannot remove the job directory %s: %s\n", j->jobdir,
                strerror(errno));
    j->jobdir[0] = '\0';
}

static int start(job *j, const sigset_t *oldmask)
{
    if (j->lib)
        return start_lib(j, oldmask);
    return j->tcp ? start_tcp(j, oldmask) : start_shm(j, oldmask);
}

/* A signal for quayrun (one read from sfd). */
static void on_signal(job *j, const struct signalfd_siginfo *si)
{
    int sig = (int)si->ssi_signo;
    if (sig == SIGCHLD) {
        reap_unwatched(j, (pid_t)si->ssi_pid);
        return;
    }
    /* A terminal's ^C reached the ranks already (same process group,
     * SI_KERNEL): pass on only what was sent to us alone. A second signal
     * kills. */
    j->signals++;
    if (j->signals > 1) {
        kill_all(j, SIGKILL);
        j->killed = 1;
    } else if (si->ssi_code != SI_KERNEL) {
        kill_all(j, sig);
    }
    if (j->deadline == 0)
        j->deadline = now_s() + j->grace_s;
}

static void on_signals(job *j)
{
    struct signalfd_siginfo si[8];
    ssize_t n;
    while ((n = read(j->sfd, si, sizeof si)) > 0)
        for (size_t i = 0; i < (size_t)n / sizeof si[0]; i++)
            on_signal(j, &si[i]);
}

/* epoll_wait's timeout: -1, or until the grace period ends (rounded up,
 * so that waking early never looks like the end). */
static int wait_ms(const job *j)
{
    if (j->deadline <= 0 || j->killed)
        return -1;
    double left = j->deadline - now_s();
    return left <= 0 ? 0 : (int)(left * 1000.0) + 1;
}

/* Signals and ends of ranks, in the order they happen, until every rank
 * is reaped. */
static void run(job *j)
{
    struct epoll_event ev[64];
    while (j->running > 0) {
        int ms = wait_ms(j);
        int n = epoll_wait(j->ep, ev, 64, ms);
        if (n < 0 && errno != EINTR) { /* EINTR: after SIGSTOP / SIGCONT */
            fprintf(stderr, "quayrun: epoll_wait: %s\n", strerror(errno));
            break;
        }
        for (int i = 0; i < n; i++) {
            if (ev[i].data.u64 == KEY_SIGNALS)
                on_signals(j);
            else
                reap_rank(j, (int)ev[i].data.u64);
        }
        if (n == 0 && ms >= 0 && j->running > 0 && now_s() >= j->deadline) {
            fprintf(stderr, "quayrun: killing %d rank(s) still running %gs after the failure\n",
                    j->running, j->grace_s);
            kill_all(j, SIGKILL);
            j->killed = 1;
        }
    }
    /* Only if epoll broke: the rest in any order. */
    while (j->running > 0) {
        int st;
        pid_t p = waitpid(-1, &st, 0);
        if (p < 0 && errno != EINTR)
            break;
        for (int r = 0; r < j->n && p > 0; r++)
            if (j->pid[r] == p)
                reaped(j, r, st);
    }
}

int main(int argc, char **argv)
{
    job j;
    sigset_t set, block, oldmask;
    memset(&j, 0, sizeof j);
    int rc = parse(&j, argc, argv);
    if (rc == 1) {
        usage(stdout);
        return 0;
    }
    if (rc != 0)
        return 2;
    j.pid = calloc((size_t)j.n, sizeof *j.pid);
    j.pidfd = malloc((size_t)j.n * sizeof *j.pidfd);
    if (j.pid == NULL || j.pidfd == NULL)
        return 1;
    for (int r = 0; r < j.n; r++)
        j.pidfd[r] = -1;
    /* Descriptors per rank (its pidfd; tcp: its listener and pipes): as
     * many as we may; the ranks get the limit back. */
    if (getrlimit(RLIMIT_NOFILE, &j.nofile) == 0) {
        struct rlimit more = j.nofile;
        more.rlim_cur = more.rlim_max;
        j.nofile_set = 1;
        (void)setrlimit(RLIMIT_NOFILE, &more);
    }

    /* Signals are read from a signalfd in the loop below. SIGPIPE is
     * blocked only: a rank that closed its dead-rank pipe makes our write
     * fail with EPIPE. */
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    block = set;
    sigaddset(&block, SIGPIPE);
    sigprocmask(SIG_BLOCK, &block, &oldmask);
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = KEY_SIGNALS};
    j.ep = epoll_create1(EPOLL_CLOEXEC);
    j.sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (j.ep < 0 || j.sfd < 0 || epoll_ctl(j.ep, EPOLL_CTL_ADD, j.sfd, &ev) != 0) {
        fprintf(stderr, "quayrun: epoll / signalfd: %s\n", strerror(errno));
        return 1;
    }

    if (start(&j, &oldmask) != 0) {
        kill_all(&j, SIGKILL);
        while (wait(NULL) > 0)
            ;
        remove_jobdir(&j);
        return 1;
    }
    run(&j);
    remove_jobdir(&j);
    free(j.adapter);
    if (!j.tcp && !j.lib)
        qshm_seg_detach(&j.seg);
    for (int r = 0; r < j.n; r++) {
        if (j.pidfd[r] >= 0)
            close(j.pidfd[r]);
        if (j.dead_w != NULL && j.dead_w[r] >= 0)
            close(j.dead_w[r]);
    }
    close(j.sfd);
    close(j.ep);
    free(j.dead_w);
    free(j.pidfd);
    free(j.pid);
    return j.status;
}
