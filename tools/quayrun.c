/*
 * quayrun — start N ranks of a quay program on this host.
 *
 *   quayrun -n N [--transport shm|tcp] [--grace SECONDS] [--] prog [args...]
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
 * and a random job cookie (QUAY_TCP_JOB), and connects to the others
 * itself (adapters/sockets). A rank that dies closes its connections,
 * which is how the others learn.
 *
 * SIGINT, SIGTERM and SIGHUP sent to quayrun are passed on to the ranks.
 * If a rank fails
 * (non-zero status or killed by a signal), the others get a grace period
 * to finish, then are killed.
 *
 * Exit status: 0 if every rank exited 0; otherwise the first failure seen:
 * the rank's exit status, or 128 + the signal that killed it. 2 for a
 * usage error, 1 if quayrun itself could not start the job.
 *
 * Environment read here: QUAY_SHM_RING_KB (packet ring per ordered pair,
 * default 256, smaller for large N), QUAY_SHM_CTL_KB (RDMA request ring,
 * default 16).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
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
    qshm_seg seg;     /* shm */
    int *listen_fd;   /* tcp: per rank, until its fork */
} job;

static void usage(FILE *f)
{
    fprintf(f, "usage: quayrun -n N [--transport shm|tcp] [--grace SECONDS] [--] prog [args...]\n"
               "  -n, --np N        number of ranks (1..%d)\n"
               "  --transport shm   shared memory on this host (the default)\n"
               "  --transport tcp   TCP sockets (on QUAY_TCP_ADDR, default 127.0.0.1)\n"
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
    if (!j->tcp && strcmp(j->transport, "shm") != 0) {
        fprintf(stderr, "quayrun: --transport %s: unknown transport (known: shm, tcp)\n",
                j->transport);
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
static const char *const OURS[] = {"QUAY_RANK=",   "QUAY_SIZE=",      "QUAY_TRANSPORT=",
                                   "QUAY_SHM_FD=", "QUAY_TCP_FD=",    "QUAY_TCP_PEERS=",
                                   "QUAY_TCP_JOB="};
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

/* In the child: back to the signal mask the program expects, die with
 * quayrun, keep the segment fd across exec, become the program. */
static void child(const job *j, const sigset_t *oldmask, pid_t parent, int fd, char **env)
{
    sigprocmask(SIG_SETMASK, oldmask, NULL);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(127); /* quayrun died before prctl took effect */
    int fl = fcntl(fd, F_GETFD);
    if (fl >= 0)
        fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC);
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

/* A rank ended: report a failure, remember the first one, tell the others. */
static void reaped(job *j, int r, int st)
{
    int code = 0;
    j->pid[r] = 0;
    j->running--;
    if (!j->tcp)
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

static void reap(job *j)
{
    int st;
    pid_t p;
    while ((p = waitpid(-1, &st, WNOHANG)) > 0) {
        for (int r = 0; r < j->n; r++) {
            if (j->pid[r] == p) {
                reaped(j, r, st);
                break;
            }
        }
    }
}

/* Fork and exec rank r with `set` added to the environment and `fd`
 * kept open across exec. */
static int spawn(job *j, const sigset_t *oldmask, int r, int fd, char *const *set, size_t nset)
{
    char **env = rank_env(set, nset);
    if (env == NULL) {
        fprintf(stderr, "quayrun: out of memory\n");
        return -1;
    }
    pid_t self = getpid();
    pid_t p = fork();
    if (p == 0)
        child(j, oldmask, self, fd, env);
    free(env);
    if (p < 0) {
        fprintf(stderr, "quayrun: fork: %s\n", strerror(errno));
        return -1;
    }
    j->pid[r] = p;
    j->running++;
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
        rc = spawn(j, oldmask, r, fd, sets, 4);
    }
    close(fd); /* our mapping keeps the segment */
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
    if (peers == NULL || j->listen_fd == NULL) {
        fprintf(stderr, "quayrun: out of memory\n");
        free(peers);
        return -1;
    }
    for (int r = 0; r < j->n; r++)
        j->listen_fd[r] = -1;
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
        char set[5][48];
        char *sets[6] = {set[0], set[1], set[2], set[3], set[4], peers};
        snprintf(set[0], sizeof set[0], "QUAY_RANK=%d", r);
        snprintf(set[1], sizeof set[1], "QUAY_SIZE=%d", j->n);
        snprintf(set[2], sizeof set[2], "QUAY_TRANSPORT=tcp");
        snprintf(set[3], sizeof set[3], "QUAY_TCP_JOB=%016llx", (unsigned long long)cookie);
        snprintf(set[4], sizeof set[4], "QUAY_TCP_FD=%d", j->listen_fd[r]);
        rc = spawn(j, oldmask, r, j->listen_fd[r], sets, 6);
        /* The rank has its copy; ours would keep the port open after the
         * rank is gone (and later ranks must not inherit it). */
        close(j->listen_fd[r]);
        j->listen_fd[r] = -1;
    }
    for (int r = 0; r < j->n; r++)
        if (j->listen_fd[r] >= 0)
            close(j->listen_fd[r]);
    free(j->listen_fd);
    j->listen_fd = NULL;
    free(peers);
    return rc;
}

static int start(job *j, const sigset_t *oldmask)
{
    return j->tcp ? start_tcp(j, oldmask) : start_shm(j, oldmask);
}

int main(int argc, char **argv)
{
    job j;
    sigset_t set, oldmask;
    memset(&j, 0, sizeof j);
    int rc = parse(&j, argc, argv);
    if (rc == 1) {
        usage(stdout);
        return 0;
    }
    if (rc != 0)
        return 2;
    j.pid = calloc((size_t)j.n, sizeof *j.pid);
    if (j.pid == NULL)
        return 1;

    /* Signals are taken synchronously (sigtimedwait) in the loop below. */
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, &oldmask);

    if (start(&j, &oldmask) != 0) {
        kill_all(&j, SIGKILL);
        while (wait(NULL) > 0)
            ;
        return 1;
    }

    while (j.running > 0) {
        siginfo_t info;
        struct timespec ts, *tsp = NULL;
        if (j.deadline > 0 && !j.killed) {
            double left = j.deadline - now_s();
            if (left < 0)
                left = 0;
            ts.tv_sec = (time_t)left;
            ts.tv_nsec = (long)((left - (double)ts.tv_sec) * 1e9);
            tsp = &ts;
        }
        int sig = sigtimedwait(&set, &info, tsp);
        if (sig == SIGCHLD) {
            reap(&j);
        } else if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
            /* A terminal's ^C reached the ranks already (same process
             * group, SI_KERNEL): pass on only what was sent to us alone.
             * A second signal kills. */
            j.signals++;
            if (j.signals > 1) {
                kill_all(&j, SIGKILL);
                j.killed = 1;
            } else if (info.si_code != SI_KERNEL) {
                kill_all(&j, sig);
            }
            if (j.deadline == 0)
                j.deadline = now_s() + j.grace_s;
        } else if (sig < 0 && errno == EAGAIN) {
            fprintf(stderr, "quayrun: killing %d rank(s) still running %gs after the failure\n",
                    j.running, j.grace_s);
            kill_all(&j, SIGKILL);
            j.killed = 1;
        }
    }
    if (!j.tcp)
        qshm_seg_detach(&j.seg);
    free(j.pid);
    return j.status;
}
