/*
 * shm_futex.c — futex wait / wake on shared words, the doorbell.
 */
#include "shm_futex.h"

#include <limits.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The words live in a MAP_SHARED segment used by several processes: the
 * shared (not _PRIVATE) futex operations. */
void qshm_futex_wait(_Atomic uint32_t *w, uint32_t expect, int64_t timeout_ns)
{
    struct timespec ts;
    if (timeout_ns <= 0)
        return;
    ts.tv_sec = (time_t)(timeout_ns / 1000000000);
    ts.tv_nsec = (long)(timeout_ns % 1000000000);
    /* EAGAIN (word moved), EINTR, ETIMEDOUT: the caller rechecks anyway. */
    (void)syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT, expect, &ts, NULL, 0);
}

void qshm_futex_wake(_Atomic uint32_t *w)
{
    (void)syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void qshm_doorbell_notify(qshm_slot *s)
{
    /* The other half of the owner's "sleeping, then look again". */
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&s->sleeping, memory_order_seq_cst)) {
        atomic_fetch_add_explicit(&s->doorbell, 1, memory_order_seq_cst);
        qshm_futex_wake(&s->doorbell);
    }
}

void qshm_doorbell_ring(qshm_slot *s)
{
    atomic_fetch_add_explicit(&s->doorbell, 1, memory_order_seq_cst);
    atomic_thread_fence(memory_order_seq_cst);
    if (atomic_load_explicit(&s->sleeping, memory_order_seq_cst))
        qshm_futex_wake(&s->doorbell);
}
