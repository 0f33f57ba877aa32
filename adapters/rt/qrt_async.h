/*
 * qrt_async.h — asynchronous progress inside the runtime (async.c), and
 * the door of rt.c it goes through. The public calls are in quay_rt.h
 * (qrt_async_start, qrt_lock, ...). Not installed.
 */
#ifndef QRT_ASYNC_H
#define QRT_ASYNC_H

#include "quay_rt.h"

typedef struct qrt_async qrt_async;

/* rt.c: where the runtime keeps its progress thread (NULL: none). */
qrt_async **qrt_async_slot(qrt *rt);

/* rt.c: the host has a spare core for every rank's progress thread: at
 * least twice as many cores as ranks here (fixed at start; asked before
 * the thread starts, so that it reads nothing the waits write). */
int qrt_cores_spare(const qrt *rt);

/* Check QUAY_ASYNC_PROGRESS (0 or 1): 0, or QUAY_EINVAL after a message
 * (qrt_init refuses a malformed value as it does every QUAY_* knob). */
int qrt_async_env_check(void);

#endif /* QRT_ASYNC_H */
