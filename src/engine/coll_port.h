/*
 * coll_port.h — the one door between the engine and the collectives
 * (src/collectives), which sit above it.
 *
 * The collectives call the engine's functions like any user of it; the
 * engine reaches them only through the hook table they install (hooks,
 * NULL until the first collective, or from creation with application
 * bypass) and reads their doorbell: the counts and queues below say
 * whether their schedules have work, so the engine's pull and arrival
 * paths can ask without a call. The queues hold the collectives'
 * schedules: the engine only tests them for emptiness; everything else
 * the collectives keep is behind `st`, opaque here.
 */
#ifndef QUAY_ENGINE_COLL_PORT_H
#define QUAY_ENGINE_COLL_PORT_H

#include <quay/quay.h>

#include "engine/list.h"

struct coll_state;

typedef struct coll_hooks {
    /** Start the steps that became ready (schedules on `ready`), look at
     *  the arrivals they asked for (npend), and move `blocked` schedules
     *  back to `ready` once a request and a control slot are free. */
    void (*progress)(quay_engine *e);
    /** An offload action (nemit > 0): 1 with *a filled, else 0. */
    int (*pull)(quay_engine *e, quay_action *a);
    /** A message arrived on a collective twin, before any call matched it
     *  (application bypass); NULL: the collectives do not look. */
    void (*on_arrival)(quay_engine *e, quay_comm *twin, const quay_msg *m);
    /** A request of theirs (RF_COLL) is done: read its status, release it. */
    void (*on_req_done)(quay_engine *e, quay_req *r);
    /** 1 while a schedule runs or waits for its call (a context switch
     *  must wait: schedules are not saved). */
    int (*busy)(const quay_engine *e);
    /** Free everything (engine free). */
    void (*fini)(quay_engine *e);
} coll_hooks;

typedef struct coll_port {
    const coll_hooks *hooks; /* NULL: no collective state exists */
    qlink ready;             /* schedules with steps to start */
    qlink blocked;           /* ... that found no request or control slot */
    uint32_t npend;          /* arrivals they want to look at */
    uint32_t nemit;          /* offload actions waiting to be pulled */
    struct coll_state *st;   /* the rest: theirs */
} coll_port;

/* Steps are ready to start, or arrivals wait to be looked at. */
static inline int coll_has_ready(const coll_port *p)
{
    return !ql_empty(&p->ready) || p->npend != 0;
}

/* The collectives look at messages arriving on their twins before any
 * call matches them (application bypass). */
static inline int coll_watches_arrivals(const coll_port *p)
{
    return p->hooks != NULL && p->hooks->on_arrival != NULL;
}

#endif /* QUAY_ENGINE_COLL_PORT_H */
