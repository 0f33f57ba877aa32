/*
 * shm_futex.h — sleeping on a shared 32-bit word, and the doorbell
 * protocol built on it.
 *
 * Doorbell (one per rank, qshm_slot.doorbell). A sender publishes a frame
 * (its stamp, release), then qshm_doorbell_notify: if the owner said it
 * may sleep, bump the word and FUTEX_WAKE it. The owner, before sleeping:
 * reads the word, sets `sleeping`, looks at its rings once more, and only
 * then FUTEX_WAITs for the word to change. Fences on both sides make sure
 * that either the sender sees `sleeping` (and wakes) or the owner sees the
 * frame (and does not sleep); the futex itself returns at once if the word
 * moved after it was read. A sender that finds the owner awake touches
 * nothing of the owner's: the frame itself is the news. A wake-up with no
 * frame to find (qshm_doorbell_ring: a rank died, shm_wake) always bumps
 * the word, so a poll about to sleep returns at once. Every wait has a
 * timeout as well, so even a wake lost to a bug costs bounded time, never
 * a hang.
 */
#ifndef QUAY_SHM_FUTEX_H
#define QUAY_SHM_FUTEX_H

#include <stdatomic.h>
#include <stdint.h>

#include "shm_seg.h"

/** Sleep while *w == expect, for at most timeout_ns (> 0). Returns at
 *  once if *w != expect. Spurious returns are possible. */
void qshm_futex_wait(_Atomic uint32_t *w, uint32_t expect, int64_t timeout_ns);

/** Wake every process sleeping on w. */
void qshm_futex_wake(_Atomic uint32_t *w);

/** Wake `s`'s owner if it sleeps, after publishing a frame or freeing room
 *  that its next look at the rings will find. */
void qshm_doorbell_notify(qshm_slot *s);

/** Make `s`'s owner's next or current sleep return, with nothing in the
 *  rings to tell it why (a rank died, a wake request). */
void qshm_doorbell_ring(qshm_slot *s);

#endif /* QUAY_SHM_FUTEX_H */
