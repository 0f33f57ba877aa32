/*
 * wait.c — the wait policy: spin, share or crowded, from the ranks on
 * this host and the load (qrt_wait.h).
 */
#include "qrt_wait.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <quay/quay.h>

#include "qrt_env.h"

/* spin: a wake-up costs several microseconds per message, which would
 * dominate medium-size round trips. */
#define RT_SPIN_US_DEFAULT 200
#define RT_SPIN_DEFAULT 64
/* crowded: enough for a peer on another core to be woken and answer. */
#define RT_SPIN_CROWDED_US_DEFAULT 20
/* Crowded polls and share's yields are judged over this many. */
#define RT_WINDOW 16
/* How often a waiting rank looks at the load again (a look: ~1.5 µs). */
#define RT_LOAD_CHECK_NS (5 * 1000 * 1000ULL)
/* A yield to one of our ranks returns within microseconds (it runs until
 * it waits); one to a computing thread takes a slice (0.75 ms and more). */
#define RT_YIELD_SLOW_NS (250 * 1000ULL)
/* A wake-up that waited this long for a core, a quarter or more of the
 * time since the last one, found it taken (a slice of another thread is
 * milliseconds; a passing one takes microseconds). */
#define RT_DELAY_SLOW_NS (20 * 1000ULL)
/* After yields or crowded polls fail: a trial after this long, doubled
 * after each trial that fails within RT_TRIAL_GOOD_NS, up to the max. */
#define RT_RETRY_MIN_NS (20 * 1000 * 1000ULL)
#define RT_RETRY_MAX_NS (1280 * 1000 * 1000ULL)
#define RT_TRIAL_GOOD_NS (1000 * 1000 * 1000ULL)

int32_t qrt_load_runnable(const char *text, size_t len)
{
    /* "0.95 1.34 1.80 4/92 22111": skip three fields, read "R/". */
    size_t i = 0;
    for (int f = 0; f < 3; f++) {
        while (i < len && text[i] != ' ')
            i++;
        if (i >= len)
            return -1;
        i++;
    }
    int32_t r = 0;
    size_t start = i;
    while (i < len && text[i] >= '0' && text[i] <= '9' && r < 1000000)
        r = r * 10 + (text[i++] - '0');
    if (i == start || i >= len || text[i] != '/')
        return -1;
    return r;
}

int64_t qrt_sched_run_delay(const char *text, size_t len)
{
    /* "1234 5678 9": skip the first field, read the second. */
    size_t i = 0;
    while (i < len && text[i] >= '0' && text[i] <= '9')
        i++;
    if (i == 0 || i >= len || text[i] != ' ')
        return -1;
    i++;
    int64_t v = 0;
    size_t start = i;
    while (i < len && text[i] >= '0' && text[i] <= '9' && v < INT64_MAX / 10 - 9)
        v = v * 10 + (text[i++] - '0');
    if (i == start || (i < len && text[i] != ' ' && text[i] != '\n'))
        return -1;
    return v;
}

static int32_t cores_allowed(void)
{
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int32_t)n : 1;
}

void qrt_waitpol_note(qrt_waitpol *p, int32_t runnable)
{
    uint8_t look = runnable > p->cpus;
    if (look == p->last)
        p->crowded = look;
    p->last = look;
}

static void look_at_load(qrt_waitpol *p)
{
    char buf[128];
    ssize_t n = pread(p->fd, buf, sizeof buf, 0);
    int32_t r = n > 0 ? qrt_load_runnable(buf, (size_t)n) : -1;
    if (r < 0) {
        /* Nothing to read: the ranks alone decide from now on. */
        close(p->fd);
        p->fd = -1;
        p->crowded = 0;
        return;
    }
    qrt_waitpol_note(p, r);
}

int qrt_waitpol_init(qrt_waitpol *p, int32_t local)
{
    uint64_t us = RT_SPIN_US_DEFAULT, cus = RT_SPIN_CROWDED_US_DEFAULT,
             polls = RT_SPIN_DEFAULT, force = 0;
    int hu = qrt_env_u64("QUAY_SPIN_US", 0, 10u * 1000 * 1000, &us);
    int hc = qrt_env_u64("QUAY_SPIN_CROWDED_US", 0, 10u * 1000 * 1000, &cus);
    int hs = qrt_env_u64("QUAY_SPIN", 0, 1u << 30, &polls);
    int hf = qrt_env_u64("QUAY_CROWDED", 0, 1, &force);
    if (hu < 0 || hc < 0 || hs < 0 || hf < 0)
        return QUAY_EINVAL;
    *p = (qrt_waitpol){.spin_ns = us * 1000,
                       .crowded_ns = cus * 1000,
                       .spin_polls = (uint32_t)polls,
                       .fixed = hs == 0,
                       .force = hf == 0 ? (uint8_t)(1 + force) : 0,
                       .fd = -1,
                       .local = local,
                       .allowed = cores_allowed()};
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    p->cpus = n > 0 ? (int32_t)n : p->allowed;
    p->crowded = p->force == 2;
    /* (doubled at the first) */
    p->yields.retry_ns = p->polls.retry_ns = p->wakes.retry_ns = RT_RETRY_MIN_NS / 2;
    p->sfd = -1;
    /* No look here: at start-up the count holds our ranks' siblings
     * starting and the launcher, a crowd gone within milliseconds, and a
     * crowded verdict from it can stop the polls for a short program's
     * whole run. Spin until two looks of the waits agree otherwise. */
    if (p->force == 0 && !p->fixed && local <= p->allowed) {
        p->fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
        p->sfd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    }
    return 0;
}

void qrt_waitpol_fini(qrt_waitpol *p)
{
    if (p->fd >= 0)
        close(p->fd);
    if (p->sfd >= 0)
        close(p->sfd);
    p->fd = p->sfd = -1;
}

/* The wait before the next trial, after one that lasted `lasted`. */
static uint64_t backoff(uint64_t lasted, uint64_t last_wait)
{
    if (lasted >= RT_TRIAL_GOOD_NS)
        return RT_RETRY_MIN_NS;
    return last_wait < RT_RETRY_MAX_NS / 2 ? 2 * last_wait : RT_RETRY_MAX_NS;
}

/* One event, against or not: 1 once `limit` in a window are against (the
 * next trial is then set), else 0. */
static int judge(qrt_evidence *v, int against, uint32_t limit, uint64_t now)
{
    v->seen++;
    v->against += against != 0;
    if (v->against >= limit) {
        v->retry_ns = backoff(now - v->since, v->retry_ns);
        v->retry_at = now + v->retry_ns;
        v->seen = v->against = 0;
        return 1;
    }
    if (v->seen >= RT_WINDOW)
        v->seen = v->against = 0;
    return 0;
}

/* 1 (and a new trial begins, its window empty) once the trial is due. */
static int trial_due(qrt_evidence *v, uint64_t now)
{
    if (now < v->retry_at)
        return 0;
    v->since = now;
    v->seen = v->against = 0;
    return 1;
}

void qrt_waitpol_yielded(qrt_waitpol *p, uint64_t took_ns, uint64_t now)
{
    if (p->force != 0 || p->fixed)
        return;
    if (judge(&p->yields, took_ns >= RT_YIELD_SLOW_NS, 2, now))
        p->crowded = 1;
}

void qrt_waitpol_delay(qrt_waitpol *p, uint64_t delay_ns, uint64_t span_ns, uint64_t now)
{
    if (!p->contended &&
        judge(&p->wakes, delay_ns >= RT_DELAY_SLOW_NS && delay_ns >= span_ns / 4, 2, now))
        p->contended = 1;
}

void qrt_waitpol_woke(qrt_waitpol *p, uint64_t now)
{
    if (p->sfd < 0)
        return;
    char buf[96];
    ssize_t n = pread(p->sfd, buf, sizeof buf, 0);
    int64_t d = n > 0 ? qrt_sched_run_delay(buf, (size_t)n) : -1;
    if (d < 0) {
        close(p->sfd); /* (nothing to read: the other evidence decides) */
        p->sfd = -1;
        return;
    }
    uint64_t was = p->run_delay, was_at = p->run_delay_at;
    p->run_delay = (uint64_t)d;
    p->run_delay_at = now;
    if (was_at != 0 && now > was_at && (uint64_t)d >= was)
        qrt_waitpol_delay(p, (uint64_t)d - was, now - was_at, now);
}

/* The verdict for a wait: crowded by the load, or by run delays. */
static int crowded_now(const qrt_waitpol *p)
{
    return p->crowded || p->contended;
}

void qrt_waitpol_polled(qrt_waitpol *p, int hit, uint64_t now)
{
    if (crowded_now(p) && p->cpoll && judge(&p->polls, !hit, RT_WINDOW / 2 + 1, now))
        p->cpoll = 0;
}

/* Crowded: poll only while it pays, or on trial. */
static uint64_t crowded_budget(qrt_waitpol *p, uint64_t now)
{
    if (p->crowded_ns == 0)
        return 0;
    if (!p->cpoll && trial_due(&p->polls, now))
        p->cpoll = 1;
    return p->cpoll ? p->crowded_ns : 0;
}

uint64_t qrt_waitpol_budget(qrt_waitpol *p, uint64_t now)
{
    if (p->fixed)
        return QRT_WAIT_SHARE;
    if (p->local > p->allowed) {
        /* share, unless yields were slow (then a trial when it is due) */
        if (p->crowded && p->force == 0 && trial_due(&p->yields, now))
            p->crowded = 0;
        return p->crowded ? crowded_budget(p, now) : QRT_WAIT_SHARE;
    }
    if (p->fd >= 0 && now >= p->next_check) {
        look_at_load(p);
        p->next_check = now + RT_LOAD_CHECK_NS;
    }
    if (p->contended && trial_due(&p->wakes, now))
        p->contended = 0; /* a trial of the load's verdict */
    return crowded_now(p) ? crowded_budget(p, now) : p->spin_ns;
}
