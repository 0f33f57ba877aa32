/*
 * async.c — asynchronous progress (quay_rt.h: qrt_async_start): a thread
 * of the runtime's own drives the engine while the program computes, so
 * rendezvous transfers and non-blocking collectives move between the
 * program's calls. Off unless started; QUAY_ASYNC_PROGRESS=1 asks the MPI
 * binding to start it.
 *
 * The engine and the transport are single-threaded by contract, so the
 * program's thread and the progress thread take turns, never both inside
 * at once (qrt_lock, the runtime's lock): a two-flag handshake (Dekker's)
 * rather than a mutex, since the program's side runs at every MPI call.
 * The program's thread makes `gate` odd when a call begins (even when it
 * ends) and then looks at `inside`; the progress thread sets `inside`
 * (opening a session of steps) and then looks at `gate`. At least one of
 * them sees the other: the progress thread then steps back at once, and
 * the program's thread waits only for the thread to see it (it looks at
 * the gate before every step; a step never blocks). The program always
 * wins.
 *
 * The fence that makes each side see the other is asymmetric for a
 * napping thread where the kernel has membarrier(2): the program's side,
 * at every call, orders its store and load with a compiler barrier
 * alone, and the thread, at each session it opens, has the kernel order
 * the program's thread (MEMBARRIER_CMD_PRIVATE_EXPEDITED, an interrupt
 * on the program's core if it runs). With a sequentially consistent
 * store at every call instead, osu_bw at 1-64 B ran at 0.74-1.0 of its
 * rate (2-core VM, 2 ranks, six paired rounds; osu_mbw_mr unchanged
 * within the noise), and a napping thread opens few sessions. A hot
 * thread (below) opens one at every step while the program is away, so
 * there both sides fence, as they do without membarrier or with
 * QUAY_ASYNC_MEMBARRIER=0 (which the tests use to run both).
 *
 * How the thread idles. Each wake-up of the thread costs the ranks that
 * are busy communicating (2-core VM, osu_latency: waking every 100 µs
 * while the program is in calls made the 8-byte figure 30-50 % worse;
 * every 1 ms, no measurable change), and waking it on purpose costs the
 * waker a futex wake-up, 7-38 µs measured on that VM. So nobody wakes
 * it: every call, as it ends, says whether work is in flight (`pending`:
 * requests, complete ones not yet freed included, or sends the transport
 * holds), its own steps say the same, and the thread paces itself:
 *   - the program is in a call, or made calls during the last nap (it
 *     progresses the engine itself): nap, doubling to NAP_CALL_MAX;
 *   - the program stayed away for a whole nap: step, and again at once
 *     while steps do something (yielding now and then);
 *   - the program is away and nothing happened: nap, NAP_MIN doubling to
 *     NAP_AWAY_MAX, and to NAP_IDLE_MAX once it has been away COLD_NS.
 * Without a core of its own the thread runs as SCHED_IDLE: it takes a
 * core only when no rank wants it. Measured on the 2-core VM, 2 ranks:
 * when the thread woke every 10 µs while work was in flight and stepped
 * 2 µs after the program left any call, osu_mbw_mr 8 B ran at 0.2-0.4 of
 * its rate without the thread. Naps are nanosleeps with the thread's
 * timer slack at 1 µs (else a 2 µs one lasts the default 50 µs).
 *
 * With a spare core for every rank's thread (qrt_cores_spare: this
 * process may run on twice as many cores as there are ranks on the host;
 * QUAY_ASYNC_SPIN=1 forces it, 0 forbids it where other programs want
 * the cores) the thread is hot while work has been in flight within
 * BUSY_NS: it never naps. It looks at the gate every HOT_LOOK_NS
 * (reading it more often would take its cache line from the program at
 * each call) and steps once the program has been away HOT_AWAY_NS, then
 * steps on while the program stays away. So a transfer's round trips (a
 * rendezvous answered, a collective's next step started) happen within
 * a microsecond or two of computation instead of a nap's time, while a
 * program in a loop of calls (a window of sends, a ping-pong) never
 * meets the thread in the engine: measured on 16 cores, stepping as soon
 * as the program left a call cut osu_mbw_mr to a third. With nothing in
 * flight it naps as above.
 *
 * The thread never blocks in the transport: that would hold the engine
 * while it sleeps, and the program's next call would wait for it to be
 * woken and scheduled (120-330 µs on the loaded 2-core VM, measured).
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "qrt_async.h"
#include "qrt_env.h"

#define NAP_MIN_NS 2000LL
#define NAP_AWAY_MAX_NS 20000LL
#define NAP_IDLE_MAX_NS 200000LL
#define NAP_CALL_MAX_NS 1000000LL
#define COLD_NS 200000ULL
/* Hot (spare cores): the program away this long before the thread steps,
 * and how often it looks at the gate meanwhile. */
#define HOT_AWAY_NS 1000ULL
#define HOT_LOOK_NS 300ULL
#define BUSY_NS 1000000ULL
/* Steps in a row that did something before the thread yields once. */
#define YIELD_EVERY 32
/* qrt_lock, finding a session open: polls of `inside`, then yields for
 * this long (the step may be waiting for this very core), then sleeps,
 * looking again at least every WAIT_RECHECK_NS. */
#define WAIT_SPIN 256
#define WAIT_YIELD_NS 20000ULL
#define WAIT_RECHECK_NS 1000000LL

/* The program's thread writes its line at every call, the progress
 * thread its own at every step: apart, so that neither write takes the
 * other's line (a hot thread reads the gate's line every few hundred
 * nanoseconds; sharing it with `inside` cost a miss per call). */
struct qrt_async {
    /* written by the program's thread */
    alignas(64) atomic_uint gate; /* odd while the program is in a call */
    atomic_int pending;           /* work was seen in flight (taken by the thread) */
    /* written by the progress thread */
    alignas(64) atomic_int inside; /* the progress thread steps */
    atomic_int fatal;              /* the engine's fatal code, if the thread met one */
    /* rarely written */
    alignas(64) qrt *rt;
    int spin;                /* hot allowed: QUAY_ASYNC_SPIN, else spare cores */
    int asym;                /* membarrier: the program's side needs no fence */
    pthread_t thread;
    atomic_int waiting;      /* the program's thread sleeps until !inside */
    atomic_int stop;
    pthread_mutex_t wait_mu; /* with wait_cv: the program's thread waiting */
    pthread_cond_t wait_cv;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void deadline(struct timespec *dl, int64_t ns)
{
    clock_gettime(CLOCK_MONOTONIC, dl);
    dl->tv_sec += (time_t)(ns / 1000000000);
    dl->tv_nsec += (long)(ns % 1000000000);
    if (dl->tv_nsec >= 1000000000) {
        dl->tv_sec++;
        dl->tv_nsec -= 1000000000;
    }
}

int qrt_async_env_check(void)
{
    uint64_t v;
    return qrt_env_u64("QUAY_ASYNC_PROGRESS", 0, 1, &v) < 0 ||
                   qrt_env_u64("QUAY_ASYNC_SPIN", 0, 1, &v) < 0 ||
                   qrt_env_u64("QUAY_ASYNC_MEMBARRIER", 0, 1, &v) < 0
               ? QUAY_EINVAL
               : 0;
}

int qrt_async_requested(const qrt *rt)
{
    uint64_t v = 0;
    (void)rt;
    return qrt_env_u64("QUAY_ASYNC_PROGRESS", 0, 1, &v) == 0 && v == 1;
}

/* Hot: work in flight lately, and a core of its own to poll on. */
static int hot(const qrt_async *a, uint64_t now, uint64_t busy_until)
{
    return a->spin && now < busy_until;
}

/* Spin until `until` (ns) without touching memory the program writes. */
static void relax_until(uint64_t until)
{
    while (now_ns() < until) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }
}

static int in_call(qrt_async *a)
{
    return atomic_load(&a->gate) & 1;
}

static void nap(int64_t ns)
{
    struct timespec ts = {0, (long)ns};
    nanosleep(&ts, NULL);
}

/* Work in flight that the thread could move: requests (complete ones
 * not yet freed count too) or sends the transport still holds. */
static int in_flight(qrt *rt)
{
    return quay_in_flight(qrt_engine(rt));
}

/* Work is in flight: say so. Only when nothing is noted yet: the engine
 * is not asked again, and the program's line is written only when the
 * note changes. */
static void note_in_flight(qrt_async *a)
{
    if (!atomic_load_explicit(&a->pending, memory_order_relaxed) && in_flight(a->rt))
        atomic_store_explicit(&a->pending, 1, memory_order_relaxed);
}

enum { STEP_OUT = -1, STEP_FATAL = -2 };

/* The heavy side of the fence: every thread of the process (the
 * program's) runs a full barrier before it returns. */
static void fence_program(const qrt_async *a)
{
    if (a->asym)
        syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
    else
        atomic_thread_fence(memory_order_seq_cst);
}

/* membarrier(2) with the private expedited command, registered. */
static int asym_fence_ready(void)
{
    long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
    if (cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
        !(cmds & MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED))
        return 0;
    return syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

static void session_close(qrt_async *a)
{
    /* (seq_cst, as wait_out's `waiting`) */
    atomic_store(&a->inside, 0);
    if (atomic_load(&a->waiting)) {
        pthread_mutex_lock(&a->wait_mu);
        pthread_cond_signal(&a->wait_cv);
        pthread_mutex_unlock(&a->wait_mu);
    }
}

/* Open a session of steps: 1, or 0 if the program is in a call. */
static int session_open(qrt_async *a)
{
    if (in_call(a))
        return 0;
    atomic_store(&a->inside, 1);
    /* Now either this sees the gate odd, or the program, at its next
     * call, sees `inside` and waits. */
    fence_program(a);
    if (!in_call(a))
        return 1;
    session_close(a);
    return 0;
}

/* One step of progress in an open session, unless the program wants in
 * (then the caller closes the session). Returns 1 if the step did
 * something, 0 if not, STEP_OUT if the program is in a call or wants
 * one, STEP_FATAL if the engine failed. */
static int step(qrt_async *a)
{
    if (in_call(a))
        return STEP_OUT;
    int rc = qrt_progress(a->rt, 0);
    if (rc < 0) {
        atomic_store(&a->fatal, rc);
        return STEP_FATAL;
    }
    note_in_flight(a);
    return rc > 0;
}

static int64_t doubled(int64_t ns, int64_t max)
{
    return ns * 2 > max ? max : ns * 2;
}

/* Cold: steps while they do something and the program stays away, in
 * one session, yielding now and then. Returns the last step's answer. */
static int cold_steps(qrt_async *a)
{
    if (!session_open(a))
        return STEP_OUT;
    int rc;
    for (uint32_t n = 1;; n++) {
        rc = step(a);
        if (rc <= 0 || n % YIELD_EVERY == 0)
            break;
    }
    session_close(a);
    if (rc > 0)
        sched_yield();
    return rc;
}

static void *progress_main(void *arg)
{
    qrt_async *a = arg;
    unsigned seen = atomic_load(&a->gate);
    uint64_t since = now_ns(); /* when the gate last moved, as seen here */
    uint64_t busy_until = 0;   /* work was in flight lately */
    int64_t incall = NAP_MIN_NS, pause = NAP_MIN_NS; /* naps: the program in calls, away */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
    if (!a->spin) {
        /* No core of its own: run only where no rank wants the core. */
        struct sched_param sp = {.sched_priority = 0};
        pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
    }
    while (!atomic_load(&a->stop)) {
        unsigned g = atomic_load(&a->gate);
        uint64_t now = now_ns();
        int fresh = g != seen;
        if (fresh) {
            seen = g;
            since = now;
        }
        /* (taken only once the busy time is half spent, and only when
         * set: a write here every loop would take the program's line) */
        if (now + BUSY_NS / 2 >= busy_until &&
            atomic_load_explicit(&a->pending, memory_order_relaxed) &&
            atomic_exchange_explicit(&a->pending, 0, memory_order_relaxed))
            busy_until = now + BUSY_NS;
        if (hot(a, now, busy_until)) {
            pause = incall = NAP_MIN_NS / 2;
            /* Only once the program has been away HOT_AWAY_NS: between
             * the calls of a loop it is back at once, and a step there
             * would make its next call wait and move the engine's cache
             * lines to this core and back. One step a session (fenced
             * on both sides, cheap): a call never waits for a thread
             * that is only looking. */
            if ((g & 1) || now - since < HOT_AWAY_NS) {
                relax_until(now + HOT_LOOK_NS);
                continue;
            }
            if (!session_open(a))
                continue;
            int rc = step(a);
            session_close(a);
            if (rc == STEP_FATAL)
                break; /* the program's next call says so */
            if (rc == 0)
                relax_until(now + HOT_LOOK_NS);
            continue;
        }
        /* Cold (no core of its own): a wake-up takes a core from a rank,
         * so the thread steps only once the program has been away for a
         * whole nap. While it makes calls (the gate moved during the nap)
         * or is in one, it progresses the engine itself: longer naps. */
        if ((g & 1) || fresh) {
            pause = NAP_MIN_NS / 2;
            incall = doubled(incall, NAP_CALL_MAX_NS);
            nap(incall);
            continue;
        }
        int rc = cold_steps(a);
        if (rc == STEP_FATAL)
            break; /* the program's next call says so */
        if (rc > 0) {
            incall = pause = NAP_MIN_NS / 2;
            continue;
        }
        if (rc == STEP_OUT)
            continue; /* the program's call began meanwhile */
        pause = doubled(pause, now - since < COLD_NS ? NAP_AWAY_MAX_NS : NAP_IDLE_MAX_NS);
        nap(pause);
    }
    return NULL;
}

static void async_free(qrt_async *a)
{
    pthread_cond_destroy(&a->wait_cv);
    pthread_mutex_destroy(&a->wait_mu);
    free(a);
}

int qrt_async_start(qrt *rt)
{
    if (rt == NULL)
        return QUAY_EINVAL;
    qrt_async **slot = qrt_async_slot(rt);
    if (*slot != NULL)
        return 0;
    /* (aligned: its lines are the program's and the thread's apart) */
    qrt_async *a = aligned_alloc(alignof(qrt_async), sizeof *a);
    if (a == NULL)
        return QUAY_ENOMEM;
    memset(a, 0, sizeof *a);
    a->rt = rt;
    uint64_t v;
    a->spin = qrt_env_u64("QUAY_ASYNC_SPIN", 0, 1, &v) == 0 ? (int)v : qrt_cores_spare(rt);
    /* Asymmetric only for a napping thread: a hot one opens a session at
     * every step while the program is away, every few hundred
     * nanoseconds, and each would interrupt the program's core. */
    uint64_t mb = 1;
    (void)qrt_env_u64("QUAY_ASYNC_MEMBARRIER", 0, 1, &mb);
    a->asym = !a->spin && mb == 1 && asym_fence_ready();
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0) {
        free(a);
        return QUAY_ENOMEM;
    }
    int ok = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
             pthread_cond_init(&a->wait_cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (!ok) {
        free(a);
        return QUAY_ENOMEM;
    }
    pthread_mutex_init(&a->wait_mu, NULL);
    /* The program's signals go to its own threads, never to ours. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&a->thread, NULL, progress_main, a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        async_free(a);
        return rc == EAGAIN ? QUAY_ENOMEM : QUAY_EINTERNAL;
    }
    *slot = a;
    return 0;
}

int qrt_async_stop(qrt *rt)
{
    qrt_async *a = rt != NULL ? *qrt_async_slot(rt) : NULL;
    if (a == NULL)
        return 0;
    atomic_store(&a->stop, 1);
    pthread_join(a->thread, NULL);
    int rc = atomic_load(&a->fatal);
    *qrt_async_slot(rt) = NULL;
    async_free(a);
    return rc;
}

int qrt_async_running(const qrt *rt)
{
    return rt != NULL && *qrt_async_slot((qrt *)rt) != NULL;
}

/* qrt_lock found a session open. (Out of line: the call's usual path,
 * with nothing to wait for, stays a leaf.) */
__attribute__((noinline, cold)) static void wait_out(qrt_async *a)
{
    for (int i = 0; i < WAIT_SPIN; i++)
        if (!atomic_load(&a->inside))
            return;
    uint64_t t0 = now_ns();
    while (atomic_load(&a->inside) && now_ns() - t0 < WAIT_YIELD_NS)
        sched_yield();
    if (!atomic_load(&a->inside))
        return;
    pthread_mutex_lock(&a->wait_mu);
    /* (seq_cst, as session_close's: either it sees `waiting` and signals
     * under wait_mu, or this sees `inside` 0) */
    atomic_store(&a->waiting, 1);
    while (atomic_load(&a->inside)) {
        struct timespec dl;
        deadline(&dl, WAIT_RECHECK_NS);
        pthread_cond_timedwait(&a->wait_cv, &a->wait_mu, &dl);
    }
    atomic_store(&a->waiting, 0);
    pthread_mutex_unlock(&a->wait_mu);
}

void qrt_lock(qrt *rt)
{
    qrt_async *a = rt != NULL ? *qrt_async_slot(rt) : NULL;
    if (a == NULL)
        return;
    unsigned g = atomic_load_explicit(&a->gate, memory_order_relaxed);
    if (a->asym) {
        /* (the thread's session_open fences this thread for it) */
        atomic_store_explicit(&a->gate, g + 1, memory_order_relaxed);
        atomic_signal_fence(memory_order_seq_cst);
        if (atomic_load_explicit(&a->inside, memory_order_acquire))
            wait_out(a);
    } else {
        /* (seq_cst, as session_open's store and fence) */
        atomic_store(&a->gate, g + 1);
        if (atomic_load(&a->inside))
            wait_out(a);
    }
}

void qrt_unlock(qrt *rt)
{
    qrt_async *a = rt != NULL ? *qrt_async_slot(rt) : NULL;
    if (a == NULL)
        return;
    /* What the call left in flight (a request it started, a packet it
     * queued) tells the thread to be ready for it. What it queued is not
     * flushed here: the binding sends what must leave at the call itself
     * (a collective's first packets, the first send of a burst) and holds
     * the rest of a burst to leave as one train (docs/mpi.md), which a
     * flush at every call would undo (measured on 16 cores: osu_mbw_mr
     * 8 B at 0.6 of its rate without the thread). The thread sends it if
     * the program goes away first. */
    note_in_flight(a);
    unsigned g = atomic_load_explicit(&a->gate, memory_order_relaxed);
    atomic_store_explicit(&a->gate, g + 1, memory_order_release);
}
