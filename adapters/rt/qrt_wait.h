/*
 * qrt_wait.h — the runtime's wait policy: how long a waiting rank polls
 * before it blocks in the transport, by who else wants the cores.
 *
 * A rank whose peer runs on another core gets its answer within a
 * microsecond or so: polling catches it, while a sleep and a wake-up
 * (futex or epoll, then the scheduler) cost several microseconds. Three
 * cases, decided at run time:
 *
 *   spin     a core for every runnable thread: poll QUAY_SPIN_US (200 µs)
 *            of idle time, then block.
 *   share    our own ranks outnumber the cores we may run on: QUAY_SPIN
 *            (64) polls, yielding in the second half, then block. A yield
 *            hands the core to another of our ranks, which has work more
 *            often than not, for less than a wake-up costs.
 *   crowded  other threads want the cores too: never yield, and poll
 *            (up to QUAY_SPIN_CROWDED_US, 20 µs) only while polling pays,
 *            then block. sched_yield would give the core to a computing
 *            thread for a whole slice, a millisecond or more per message.
 *            Polling pays when the peer runs on another core at the same
 *            time: its answer comes within microseconds, and the core we
 *            hold is ours (at our fair share) either way. It costs when
 *            the peer waits for the very core we hold, as it does once the
 *            kernel has put the two side by side (it tends to, for threads
 *            that wake each other): then a sleep and a wake-up, which puts
 *            the sleeper back on a core at once (it is ahead of the
 *            threads that compute), are the fastest hand-off. So a crowded
 *            wait polls while at least half of the last sixteen polls saw
 *            their answer in time, and stops when more missed; it tries
 *            again after a while, twice as long each time the trial fails.
 *
 * With a core per rank, crowded means more runnable threads than cores:
 * the kernel's count (/proc/loadavg's fourth field; ours included, and
 * our ranks all poll), read when a wait goes idle, at most every
 * RT_LOAD_CHECK_NS; two looks in a row must agree to change the verdict,
 * which starts as spin (at start-up the count holds the launch).
 * With more ranks than cores the count cannot tell (our sleeping ranks
 * are not in it), but the yields can: one that takes longer than
 * RT_YIELD_SLOW_NS gave the core to a thread that computes. Two such in
 * sixteen and the ranks stop yielding; they try again after a while,
 * twice as long each time the trial fails (as crowded polls do).
 *
 * The count cannot see either that the kernel has put two ranks that
 * wake each other on one core while the other one idles (it does, now
 * and then, for minutes): each then spins its whole budget for an answer
 * that needs the core it holds, 200 µs a message. What shows it is the
 * time a rank was runnable but not running (the kernel's run delay,
 * /proc/thread-self/schedstat), read when a blocked wait wakes: a
 * quarter or more of the time since the last wake-up, two wake-ups in
 * sixteen, and the rank takes the host for crowded, trying spin again
 * after a while, twice as long each time the trial fails. (Not share:
 * beside a peer on its core, yields measured slower than blocking.)
 */
#ifndef QRT_WAIT_H
#define QRT_WAIT_H

#include <stddef.h>
#include <stdint.h>

/* Evidence against a way of waiting (yielding, crowded polls, spinning
 * beside a peer on our core), judged over windows of 16 events; once it
 * is against, the way is tried again after retry_ns, twice as long each
 * time a trial fails within a second. */
typedef struct qrt_evidence {
    uint32_t seen;        /* events in this window ... */
    uint32_t against;     /* ... and how many spoke against */
    uint64_t since;       /* when the last trial began */
    uint64_t retry_ns;    /* how long until the next trial */
    uint64_t retry_at;
} qrt_evidence;

typedef struct qrt_waitpol {
    uint64_t spin_ns;     /* spin: idle time polled (QUAY_SPIN_US) */
    uint64_t crowded_ns;  /* crowded: idle time polled (QUAY_SPIN_CROWDED_US) */
    uint32_t spin_polls;  /* share, or QUAY_SPIN set: idle polls */
    uint8_t fixed;        /* QUAY_SPIN set: share's polls, whatever the load */
    uint8_t force;        /* QUAY_CROWDED: 0 auto, 1 never crowded, 2 always */
    uint8_t crowded;      /* the verdict */
    uint8_t last;         /* the last look's verdict */
    int fd;               /* /proc/loadavg, or -1: not read */
    int32_t local;        /* ranks on this host */
    int32_t cpus;         /* online cores (the count covers them all) */
    int32_t allowed;      /* cores this process may run on */
    uint64_t next_check;  /* when to read the load again */
    qrt_evidence yields;  /* share: slow yields (then crowded) */
    uint8_t cpoll;        /* crowded: polling pays (or is on trial) */
    qrt_evidence polls;   /* crowded: polls that ended in a block */
    int sfd;              /* /proc/thread-self/schedstat, or -1 */
    uint8_t contended;    /* crowded by run delays */
    qrt_evidence wakes;   /* blocked waits woken that found the core taken */
    uint64_t run_delay;   /* the run delay at the last wake-up, and when */
    uint64_t run_delay_at;
} qrt_waitpol;

/** Read the knobs (QUAY_SPIN_US, QUAY_SPIN, QUAY_SPIN_CROWDED_US,
 *  QUAY_CROWDED) and open the load and the calling thread's run delay
 *  (the thread that waits). `local`: ranks on this host. 0, or
 *  QUAY_EINVAL for a bad knob (a message on stderr). */
int qrt_waitpol_init(qrt_waitpol *p, int32_t local);

void qrt_waitpol_fini(qrt_waitpol *p);

/** A wait has just gone idle at `now` (ns, monotonic): how long it polls
 *  before it blocks; QRT_WAIT_SHARE: p->spin_polls polls, yielding in the
 *  second half. Looks at the load when a look is due. */
uint64_t qrt_waitpol_budget(qrt_waitpol *p, uint64_t now);

#define QRT_WAIT_SHARE UINT64_MAX

/** A wait that polled for a crowded budget saw its answer in time (hit)
 *  or blocked (miss), at `now`. */
void qrt_waitpol_polled(qrt_waitpol *p, int hit, uint64_t now);

/** A wait that blocked has woken at `now`: reads the run delay. */
void qrt_waitpol_woke(qrt_waitpol *p, uint64_t now);

/** Of the `span_ns` since the last wake-up, the thread waited `delay_ns`
 *  for a core (what qrt_waitpol_woke reads), at `now`. */
void qrt_waitpol_delay(qrt_waitpol *p, uint64_t delay_ns, uint64_t span_ns, uint64_t now);

/** The run delay (ns) in /proc/PID/schedstat's text ("exec delay
 *  slices"), or -1 if the text is not that. */
int64_t qrt_sched_run_delay(const char *text, size_t len);

/** A share wait's sched_yield took `took_ns`, ending at `now`. */
void qrt_waitpol_yielded(qrt_waitpol *p, uint64_t took_ns, uint64_t now);

/** One look at the load, with a core per rank: `runnable` threads on the
 *  host (see above). */
void qrt_waitpol_note(qrt_waitpol *p, int32_t runnable);

/** Runnable threads in /proc/loadavg's text (its fourth field, "R/T"),
 *  or -1 if the text is not that. */
int32_t qrt_load_runnable(const char *text, size_t len);

#endif /* QRT_WAIT_H */
