/*
 * quayrun — start N ranks of a quay program on this host.
 *
 *   quayrun -n N [--transport shm] [--grace SECONDS] [--] prog [args...]
 *
 * It makes the shared segment (a memfd: nothing to clean up however the
 * job ends), forks and execs N copies of prog with QUAY_RANK, QUAY_SIZE,
 * QUAY_TRANSPORT=shm and QUAY_SHM_FD set, and waits. SIGINT, SIGTERM and
 * SIGHUP sent to quayrun are passed on to the ranks. When a rank ends, its
 * slot in the segment is marked, so that ranks waiting on it learn at once
 * (and complete with QUAY_EPEER instead of hanging). If a rank fails
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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
    qshm_seg seg;
} job;

static void usage(FILE *f)
{
    fprintf(f, "usage: quayrun -n N [--transport shm] [--grace SECONDS] [--] prog [args...]\n"
               "  -n, --np N        number of ranks (1..%d)\n"
               "  --transport shm   shared memory on this host (the default, and the only\n"
               "                    transport built so far)\n"
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
    if (strcmp(j->transport, "tcp") == 0) {
        fprintf(stderr, "quayrun: --transport tcp: the TCP transport is not built yet "
                        "(this quayrun knows shm only)\n");
        return 2;
    }
    if (strcmp(j->transport, "shm") != 0) {
        fprintf(stderr, "quayrun: --transport %s: unknown transport (known: shm)\n",
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

/* The environment of rank r: ours without any QUAY_RANK / QUAY_SIZE /
 * QUAY_TRANSPORT / QUAY_SHM_FD, then those four. */
static char **rank_env(int r, int n, int fd)
{
    static const char *const ours[] = {"QUAY_RANK=", "QUAY_SIZE=", "QUAY_TRANSPORT=",
                                       "QUAY_SHM_FD="};
    size_t cnt = 0, k = 0;
    while (environ[cnt] != NULL)
        cnt++;
    char **env = calloc(cnt + 5, sizeof *env);
    char *buf = malloc(160);
    if (env == NULL || buf == NULL) {
        free(env);
        free(buf);
        return NULL;
    }
    for (size_t i = 0; i < cnt; i++) {
        int skip = 0;
        for (size_t o = 0; o < 4; o++)
            skip |= strncmp(environ[i], ours[o], strlen(ours[o])) == 0;
        if (!skip)
            env[k++] = environ[i];
    }
    /* One buffer holds the four strings (freed with the array's owner). */
    snprintf(buf, 40, "QUAY_RANK=%d", r);
    snprintf(buf + 40, 40, "QUAY_SIZE=%d", n);
    snprintf(buf + 80, 40, "QUAY_TRANSPORT=shm");
    snprintf(buf + 120, 40, "QUAY_SHM_FD=%d", fd);
    env[k++] = buf;
    env[k++] = buf + 40;
    env[k++] = buf + 80;
    env[k++] = buf + 120;
    env[k] = NULL;
    return env;
}

static void free_env(char **env)
{
    size_t k = 0;
    if (env == NULL)
        return;
    while (env[k] != NULL)
        k++;
    free(env[k - 4]); /* the block rank_env allocated */
    free(env);
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

static int start(job *j, const sigset_t *oldmask)
{
    uint64_t ring, ctl;
    int fd, rc;
    if (ring_sizes(j->n, &ring, &ctl) != 0)
        return -1;
    rc = qshm_seg_create((uint32_t)j->n, ring, ctl, &j->seg, &fd);
    if (rc != 0) {
        fprintf(stderr, "quayrun: cannot create the shared segment: %s\n", strerror(-rc));
        return -1;
    }
    pid_t self = getpid();
    for (int r = 0; r < j->n; r++) {
        char **env = rank_env(r, j->n, fd);
        if (env == NULL) {
            fprintf(stderr, "quayrun: out of memory\n");
            close(fd);
            return -1;
        }
        pid_t p = fork();
        if (p == 0)
            child(j, oldmask, self, fd, env);
        free_env(env);
        if (p < 0) {
            fprintf(stderr, "quayrun: fork: %s\n", strerror(errno));
            close(fd);
            return -1;
        }
        j->pid[r] = p;
        j->running++;
    }
    close(fd); /* our mapping keeps the segment */
    return 0;
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
    qshm_seg_detach(&j.seg);
    free(j.pid);
    return j.status;
}
