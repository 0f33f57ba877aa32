/*
 * test_rt_wait.c — the runtime's wait policy (adapters/rt/wait.c) without
 * a transport: /proc/loadavg's runnable count read from its text, the
 * knobs (and their refusals), more ranks than cores (share), the verdict
 * from the load, which changes only when two looks agree, and from slow
 * yields, with its trials; crowded polls kept while they pay. Nothing here depends on how loaded the machine
 * running it is (the times are the test's own).
 */
#include "harness.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qrt_wait.h"

#include <quay/quay.h>

static int32_t runnable(const char *s)
{
    return qrt_load_runnable(s, strlen(s));
}

static void unset_all(void)
{
    unsetenv("QUAY_SPIN_US");
    unsetenv("QUAY_SPIN_CROWDED_US");
    unsetenv("QUAY_SPIN");
    unsetenv("QUAY_CROWDED");
}

static void t_parse(void)
{
    is_int(runnable("0.95 1.34 1.80 4/92 22111\n"), 4);
    is_int(runnable("12.00 9.50 3.10 137/2048 1"), 137);
    is_int(runnable("0.00 0.00 0.00 1/1 1"), 1);
    is_int(runnable(""), -1);
    is_int(runnable("0.95 1.34 1.80"), -1);
    is_int(runnable("0.95 1.34 1.80 /92 1"), -1);
    is_int(runnable("0.95 1.34 1.80 4"), -1);
    is_int(runnable("0.95 1.34 1.80 x/92 1"), -1);
    /* Only `len` bytes are read: no terminator needed. */
    is_int(qrt_load_runnable("0.1 0.2 0.3 7/9 1", 14), 7);
    is_int(qrt_load_runnable("0.1 0.2 0.3 7/9 1", 13), -1);
}

static int64_t run_delay(const char *t)
{
    return qrt_sched_run_delay(t, strlen(t));
}

static void t_parse_schedstat(void)
{
    is_int((int)run_delay("1180956 0 1\n"), 0);
    is_int((int)run_delay("12 345 6"), 345);
    is_int((int)run_delay("12 345"), 345);
    is_int((int)run_delay("12 345\n"), 345);
    is_int((int)run_delay(""), -1);
    is_int((int)run_delay("12"), -1);
    is_int((int)run_delay("12 "), -1);
    is_int((int)run_delay("12 x 3"), -1);
    is_int((int)run_delay("12 34x 3"), -1);
    is_int((int)run_delay(" 12 34 3"), -1);
    /* Only `len` bytes are read. */
    is_int((int)qrt_sched_run_delay("7 89 1", 3), 8);
    is_int((int)qrt_sched_run_delay("7 89 1", 2), -1);
}

static void t_knobs(void)
{
    qrt_waitpol p;
    unset_all();
    setenv("QUAY_CROWDED", "0", 1);
    is_int(qrt_waitpol_init(&p, 1), 0);
    is_int((int)(qrt_waitpol_budget(&p, 0) / 1000), 200); /* the default */
    qrt_waitpol_fini(&p);

    setenv("QUAY_CROWDED", "1", 1);
    is_int(qrt_waitpol_init(&p, 1), 0);
    is_int((int)(qrt_waitpol_budget(&p, 0) / 1000), 20); /* crowded: polls 20 µs */
    qrt_waitpol_fini(&p);
    setenv("QUAY_SPIN_CROWDED_US", "7", 1);
    is_int(qrt_waitpol_init(&p, 1), 0);
    is_int((int)(qrt_waitpol_budget(&p, 0) / 1000), 7);
    qrt_waitpol_fini(&p);

    setenv("QUAY_CROWDED", "0", 1);
    setenv("QUAY_SPIN_US", "0", 1);
    is_int(qrt_waitpol_init(&p, 1), 0);
    is_int((int)qrt_waitpol_budget(&p, 0), 0); /* block at once */
    qrt_waitpol_fini(&p);

    /* QUAY_SPIN: a number of polls, whatever the load. */
    setenv("QUAY_SPIN", "5", 1);
    is_int(qrt_waitpol_init(&p, 1), 0);
    ok(qrt_waitpol_budget(&p, 0) == QRT_WAIT_SHARE);
    is_int((int)p.spin_polls, 5);
    qrt_waitpol_fini(&p);

    static const char *const bad[][2] = {{"QUAY_CROWDED", "2"},
                                         {"QUAY_SPIN_US", "-1"},
                                         {"QUAY_SPIN_CROWDED_US", "x"},
                                         {"QUAY_SPIN", "1e3"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        unset_all();
        setenv(bad[i][0], bad[i][1], 1);
        ok_msg(qrt_waitpol_init(&p, 1) == QUAY_EINVAL, "%s=%s refused", bad[i][0], bad[i][1]);
    }
    unset_all();
}

static void t_ranks_share(void)
{
    /* More ranks here than cores we may use: they share (polls, then
     * yields), unless others crowd the cores too, which a count below
     * our ranks cannot show. */
    qrt_waitpol p;
    unset_all();
    is_int(qrt_waitpol_init(&p, 1 << 20), 0);
    ok(!p.crowded);
    ok(qrt_waitpol_budget(&p, 0) == QRT_WAIT_SHARE);
    is_int((int)p.spin_polls, 64);
    qrt_waitpol_fini(&p);
    setenv("QUAY_CROWDED", "1", 1);
    is_int(qrt_waitpol_init(&p, 1 << 20), 0);
    is_int((int)(qrt_waitpol_budget(&p, 0) / 1000), 20);
    qrt_waitpol_fini(&p);
    unset_all();
}

static void t_verdict(void)
{
    qrt_waitpol p;
    unset_all();
    setenv("QUAY_CROWDED", "0", 1); /* no look at init: the test plays them */
    is_int(qrt_waitpol_init(&p, 2), 0);
    unset_all();
    /* Two ranks, two cores. */
    p.cpus = 2;
    p.crowded = p.last = 0;
    qrt_waitpol_note(&p, 2);
    ok(!p.crowded);
    qrt_waitpol_note(&p, 3); /* one look: a passing thread? */
    ok(!p.crowded);
    qrt_waitpol_note(&p, 2);
    ok(!p.crowded);
    qrt_waitpol_note(&p, 4);
    qrt_waitpol_note(&p, 5); /* two: crowded */
    ok(p.crowded);
    qrt_waitpol_note(&p, 1);
    ok(p.crowded);
    qrt_waitpol_note(&p, 3);
    ok(p.crowded);
    qrt_waitpol_note(&p, 2);
    qrt_waitpol_note(&p, 1);
    ok(!p.crowded);
    qrt_waitpol_fini(&p);
}

static void t_first_looks(void)
{
    /* Left to the load, a rank starts as spin: its start-up's count (the
     * launcher, the other ranks starting) is one look, not a verdict. */
    qrt_waitpol p;
    unset_all();
    is_int(qrt_waitpol_init(&p, 1), 0);
    ok(!p.crowded);
    /* The first wait's look, whatever the machine's load, is one. */
    ok(qrt_waitpol_budget(&p, 0) == p.spin_ns);
    p.cpus = 1;
    p.crowded = p.last = 0;
    qrt_waitpol_note(&p, 3);
    ok(!p.crowded);
    qrt_waitpol_note(&p, 3);
    ok(p.crowded);
    qrt_waitpol_fini(&p);
}

static void t_contended(void)
{
    /* Two ranks, two cores, a quiet count: spin, until two wake-ups in
     * sixteen find the core taken (the kernel put the ranks on one core);
     * then crowded, with trials of spin after 20 ms, 40 ms, ... */
    const uint64_t us = 1000, ms = 1000 * us;
    qrt_waitpol p;
    unset_all();
    is_int(qrt_waitpol_init(&p, 2), 0);
    if (p.fd >= 0)
        close(p.fd); /* (the test plays the load: none) */
    if (p.sfd >= 0)
        close(p.sfd);
    p.fd = p.sfd = -1;
    p.cpus = p.allowed = 2;
    p.crowded = p.last = 0;
    uint64_t t = 10000 * ms;
    ok(qrt_waitpol_budget(&p, t) == p.spin_ns);
    /* Short delays, or long ones that are a small share of the time. */
    for (int i = 0; i < 40; i++)
        qrt_waitpol_delay(&p, i % 2 ? 19 * us : 30 * us, i % 2 ? 40 * us : 200 * us, t += ms);
    ok(!p.contended);
    /* One a window: still spin. */
    for (int i = 0; i < 48; i++)
        qrt_waitpol_delay(&p, i % 16 == 5 ? 200 * us : 0, 400 * us, t += ms);
    ok(!p.contended);
    ok(qrt_waitpol_budget(&p, t) == p.spin_ns);
    qrt_waitpol_delay(&p, 200 * us, 400 * us, t += ms);
    qrt_waitpol_delay(&p, 0, 400 * us, t += ms);
    qrt_waitpol_delay(&p, 100 * us, 400 * us, t += ms); /* a quarter: counts */
    ok(p.contended);
    ok(qrt_waitpol_budget(&p, t) == p.crowded_ns);
    /* Crowded polls are judged: they miss (the peer needs our core). */
    for (int i = 0; i < 9; i++)
        qrt_waitpol_polled(&p, 0, t += us);
    is_int((int)qrt_waitpol_budget(&p, t), 0);
    is_int((int)qrt_waitpol_budget(&p, t + 15 * ms), 0);
    /* The trial: spin again; it fails at once, so the next is later. */
    ok(qrt_waitpol_budget(&p, t += 20 * ms) == p.spin_ns);
    ok(!p.contended);
    qrt_waitpol_delay(&p, 300 * us, 500 * us, t += ms);
    qrt_waitpol_delay(&p, 300 * us, 500 * us, t += ms);
    ok(p.contended);
    ok(qrt_waitpol_budget(&p, t + 39 * ms) != p.spin_ns);
    ok(qrt_waitpol_budget(&p, t += 40 * ms) == p.spin_ns);
    /* A trial that holds for a second: the next failure waits 20 ms. */
    for (int i = 0; i < 1000; i++)
        qrt_waitpol_delay(&p, 0, ms, t += ms);
    qrt_waitpol_delay(&p, 300 * us, 500 * us, t += ms);
    qrt_waitpol_delay(&p, 300 * us, 500 * us, t += ms);
    ok(p.contended);
    ok(qrt_waitpol_budget(&p, t + 20 * ms) == p.spin_ns);
    qrt_waitpol_fini(&p);

    /* QUAY_CROWDED=0 (never): no run delays are read. */
    setenv("QUAY_CROWDED", "0", 1);
    is_int(qrt_waitpol_init(&p, 2), 0);
    is_int(p.sfd, -1);
    qrt_waitpol_fini(&p);
    unset_all();
}

static void t_yields(void)
{
    /* Eight ranks on what we say are two cores: share, until two yields
     * in sixteen take a slice; then crowded, with trials of share after
     * 20 ms, 40 ms, ... while they keep failing. */
    const uint64_t ms = 1000 * 1000, fast = 3 * 1000, slow = 2 * ms;
    qrt_waitpol p;
    unset_all();
    setenv("QUAY_SPIN_CROWDED_US", "0", 1); /* crowded: block at once */
    is_int(qrt_waitpol_init(&p, 8), 0);
    p.allowed = p.cpus = 2;
    uint64_t t = 10000 * ms;
    ok(qrt_waitpol_budget(&p, t) == QRT_WAIT_SHARE);
    for (int i = 0; i < 40; i++)
        qrt_waitpol_yielded(&p, fast, t += ms);
    ok(!p.crowded);
    /* One slow yield in each window of sixteen: still share. */
    for (int i = 0; i < 48; i++)
        qrt_waitpol_yielded(&p, i % 16 == 5 ? slow : fast, t += ms);
    ok(!p.crowded);
    qrt_waitpol_yielded(&p, slow, t += ms);
    qrt_waitpol_yielded(&p, fast, t += ms);
    qrt_waitpol_yielded(&p, slow, t += ms);
    ok(p.crowded);
    is_int((int)qrt_waitpol_budget(&p, t), 0); /* crowded: block at once */
    is_int((int)qrt_waitpol_budget(&p, t + 19 * ms), 0);
    /* The trial: share again; it fails at once, so the next is later. */
    ok(qrt_waitpol_budget(&p, t += 20 * ms) == QRT_WAIT_SHARE);
    qrt_waitpol_yielded(&p, slow, t += ms);
    qrt_waitpol_yielded(&p, slow, t += ms);
    ok(p.crowded);
    is_int((int)qrt_waitpol_budget(&p, t + 39 * ms), 0);
    ok(qrt_waitpol_budget(&p, t += 40 * ms) == QRT_WAIT_SHARE);
    /* A trial that holds for a second: the next failure waits 20 ms. */
    for (int i = 0; i < 1000; i++)
        qrt_waitpol_yielded(&p, fast, t += ms);
    qrt_waitpol_yielded(&p, slow, t += ms);
    qrt_waitpol_yielded(&p, slow, t += ms);
    ok(p.crowded);
    ok(qrt_waitpol_budget(&p, t + 20 * ms) == QRT_WAIT_SHARE);
    qrt_waitpol_fini(&p);

    /* QUAY_CROWDED=0 or QUAY_SPIN set: they keep yielding. */
    setenv("QUAY_CROWDED", "0", 1);
    is_int(qrt_waitpol_init(&p, 8), 0);
    p.allowed = p.cpus = 2;
    for (int i = 0; i < 8; i++)
        qrt_waitpol_yielded(&p, slow, t += ms);
    ok(qrt_waitpol_budget(&p, t) == QRT_WAIT_SHARE);
    qrt_waitpol_fini(&p);
    unset_all();
}

static void t_polls(void)
{
    /* Crowded: poll 20 µs while at least half the polls see the answer
     * in time; more than 8 misses in a window of 16 stop them until a
     * trial, 20 ms later, then 40 ms, ... */
    const uint64_t ms = 1000 * 1000, us20 = 20 * 1000;
    qrt_waitpol p;
    unset_all();
    setenv("QUAY_CROWDED", "1", 1);
    is_int(qrt_waitpol_init(&p, 2), 0);
    unset_all();
    uint64_t t = 10000 * ms;
    ok(qrt_waitpol_budget(&p, t) == us20);
    for (int i = 0; i < 64; i++) /* half miss, half hit: it pays */
        qrt_waitpol_polled(&p, i % 2, t += ms);
    ok(qrt_waitpol_budget(&p, t) == us20);
    for (int i = 0; i < 8; i++)
        qrt_waitpol_polled(&p, 0, t += ms);
    ok(qrt_waitpol_budget(&p, t) == us20);
    qrt_waitpol_polled(&p, 0, t += ms); /* the ninth miss in sixteen */
    is_int((int)qrt_waitpol_budget(&p, t), 0);
    is_int((int)qrt_waitpol_budget(&p, t + 19 * ms), 0);
    ok(qrt_waitpol_budget(&p, t += 20 * ms) == us20); /* the trial */
    for (int i = 0; i < 9; i++)
        qrt_waitpol_polled(&p, 0, t += ms);
    is_int((int)qrt_waitpol_budget(&p, t + 39 * ms), 0);
    ok(qrt_waitpol_budget(&p, t += 40 * ms) == us20);
    for (int i = 0; i < 1000; i++) /* a trial that holds a second */
        qrt_waitpol_polled(&p, 1, t += ms);
    for (int i = 0; i < 17; i++) /* (windows are fixed: 9 may straddle two) */
        qrt_waitpol_polled(&p, 0, t += ms);
    is_int((int)qrt_waitpol_budget(&p, t), 0);
    ok(qrt_waitpol_budget(&p, t + 20 * ms) == us20);
    qrt_waitpol_fini(&p);

    /* Not crowded: the polls are not judged. */
    setenv("QUAY_CROWDED", "0", 1);
    is_int(qrt_waitpol_init(&p, 2), 0);
    for (int i = 0; i < 64; i++)
        qrt_waitpol_polled(&p, 0, t += ms);
    is_int((int)(qrt_waitpol_budget(&p, t) / 1000), 200);
    qrt_waitpol_fini(&p);
    unset_all();
}

static void t_live(void)
{
    /* On Linux the load is read at once; the verdict is the machine's. */
    qrt_waitpol p;
    unset_all();
    is_int(qrt_waitpol_init(&p, 1), 0);
    ok(p.fd >= 0);
    uint64_t b = qrt_waitpol_budget(&p, 0);
    ok(b == p.spin_ns || b == p.crowded_ns || b == QRT_WAIT_SHARE);
    /* The run delay is read too (the kernel has it, or it is let go). */
    qrt_waitpol_woke(&p, 1000);
    qrt_waitpol_woke(&p, 2000);
    ok(p.sfd < 0 || p.run_delay_at == 2000);
    qrt_waitpol_fini(&p);
    is_int(p.fd, -1);
    is_int(p.sfd, -1);
}

int main(void)
{
    subtest("/proc/loadavg's runnable count", t_parse);
    subtest("schedstat's run delay", t_parse_schedstat);
    subtest("the knobs", t_knobs);
    subtest("more ranks than cores", t_ranks_share);
    subtest("the verdict from two looks", t_verdict);
    subtest("no verdict at start-up", t_first_looks);
    subtest("wake-ups that find the core taken", t_contended);
    subtest("slow yields", t_yields);
    subtest("crowded polls that pay, and that do not", t_polls);
    subtest("the live load", t_live);
    return done_testing();
}
