/*
 * timed.c — nicsim's timed mode (timed.h): a discrete-event simulation of
 * hosts, buses, NIC processors and links, with each resource serving one
 * thing at a time in event-time order.
 *
 * A packet moves through stages, each an event: host CPU (build) -> bus
 * (DMA to the NIC; the sender's op_done) -> NIC (firmware) -> link ->
 * destination NIC (firmware; a receive buffer) -> bus -> host memory ->
 * host CPU (quay_on_packet, when the host is in the library). Agent
 * packets skip the buses and hosts. Events are ordered by (time, creation
 * number), so runs are deterministic.
 */
#include "timed.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <quay/quay_coll.h>

enum {
    EV_APP = 1,    /* the application runs */
    EV_DMA_TX,     /* host -> NIC over the bus */
    EV_NIC_TX,     /* NIC firmware, sending */
    EV_WIRE_TX,    /* onto the link */
    EV_NIC_RX,     /* off the link into the destination NIC */
    EV_DMA_RX,     /* NIC -> host memory */
    EV_HOST_RX,    /* in host memory: handled when the host is in the library */
    EV_HOST_PROC,  /* the host's handling done: into the engine */
    EV_AGENT_RX,   /* the agent's handling done: into the agent */
    EV_AGENT_POST, /* an offload descriptor reached the agent */
    EV_OP_DONE,    /* a sender's op_done */
    EV_ATOMIC,     /* a host server thread runs a remote atomic */
};

enum { PK_SEND = 1, PK_OFFLOAD, PK_DONE, PK_PUT, PK_GET, PK_ATOMIC };
enum { APP_START = 0, APP_COMPUTE, APP_WAIT, APP_DONE, APP_RUNNING };

typedef struct tpkt {
    struct tpkt *next;
    int32_t from, to;
    uint8_t kind;
    uint8_t from_agent, to_agent;
    uint8_t signal;     /* its sender asked to wake the receiving host */
    uint8_t small;      /* room for PKT_SMALL bytes: back to t->spare when done */
    uint64_t token;
    size_t len;
    uint8_t *bytes;
    /* RDMA */
    uint64_t key, off;
    void *local;
    uint32_t aop;
    uint64_t aoperand, acompare;
    /* offload */
    const quay_offload *desc;
    uint64_t cookie;
    int32_t status;
} tpkt;

typedef struct tev {
    uint64_t t;
    tpkt *p;            /* the packet, or NULL (EV_APP, EV_OP_DONE) */
    uint64_t token;     /* EV_OP_DONE */
    int32_t rank;
    int16_t type;
    int8_t agent;       /* EV_OP_DONE: the agent's, not the host's */
    int8_t failed;      /* EV_OP_DONE: status QUAY_ESTATE (RDMA refused) */
} tev;

/* A bucket of the event queue: event indices in push order. */
typedef struct evq {
    uint32_t *ix;
    uint32_t head, n, cap; /* (only b[0] is taken from the head) */
} evq;

typedef struct trank {
    quay_engine *host, *agent;
    uint64_t host_free, bus_free, nic_free, link_free;
    uint64_t server_free;         /* the atomic server thread (atomic_host) */
    uint64_t stolen;              /* signal handlers' time, owed by the computation */
    int want_progress;            /* its engine said NOTIFY(self): keep handling */
    uint64_t app_at;              /* when the running computation ends */
    uint64_t busy;
    int app;
    quay_req *wait;
    uint64_t compute_ns;
    int next;                     /* what the app asked for while running */
    tpkt *pend, *pend_tail;       /* in host memory while the app computes */
    tpkt *retry, *retry_tail;     /* refused with QUAY_EAGAIN: offered again */
    tpkt *nicq, *nicq_tail;       /* waiting for a NIC receive buffer */
    uint32_t nic_used;
} trank;

struct tsim {
    int32_t n;
    nicsim_model m;
    trank *r;
    /* the event queue: a radix heap over event times */
    tev *evs;            /* events, by index; free ones on evfree */
    uint32_t *evfree;
    uint32_t nevs, evcap, nfree;
    evq b[65];           /* b[0]: time == last; b[i]: highest differing bit i-1 */
    uint64_t last;       /* the time of the last event taken */
    size_t nev;          /* events queued */
    uint64_t now;
    tsim_app_fn app;
    void *app_ctx;
    int fatal;
    tsim_stats st;
    tpkt *spare;         /* freed small packets, reused first (no malloc per packet) */
};

/* ---- events ------------------------------------------------------------------------ */

/* The event queue is a radix heap [Ahuja, Mehlhorn, Orlin, Tarjan 1990]:
 * the simulator never schedules into the past (every event is at or after
 * the one being handled), so a monotone queue suffices. Bucket i > 0
 * holds the events whose time first differs from `last` at bit i - 1;
 * taking from an empty b[0] moves the lowest non-empty bucket down
 * around its minimum. Each bucket stays in push order (moves are stable
 * and go to buckets that are empty), so events at equal times leave in
 * the order they were pushed: the same order as a heap on (time, push
 * count), at O(1) per push and amortised O(log T) moves per event. */
static int ev_bucket(uint64_t when, uint64_t last)
{
    return when == last ? 0 : 64 - __builtin_clzll(when ^ last);
}

static void evq_append(tsim *t, evq *q, uint32_t ix)
{
    if (q->n == q->cap) {
        uint32_t ncap = q->cap ? q->cap * 2 : 64;
        uint32_t *n = realloc(q->ix, (size_t)ncap * sizeof *n);
        if (n == NULL) {
            t->fatal = QUAY_ENOMEM;
            return;
        }
        q->ix = n;
        q->cap = ncap;
    }
    q->ix[q->n++] = ix;
}

static void ev_push_full(tsim *t, const tev *proto)
{
    uint32_t ix;
    if (t->nfree != 0) {
        ix = t->evfree[--t->nfree];
    } else {
        if (t->nevs == t->evcap) {
            uint32_t ncap = t->evcap ? t->evcap * 2 : 1024;
            tev *ev = realloc(t->evs, (size_t)ncap * sizeof *ev);
            if (ev != NULL)
                t->evs = ev;
            uint32_t *fr = ev != NULL ? realloc(t->evfree, (size_t)ncap * sizeof *fr) : NULL;
            if (fr == NULL) {
                t->fatal = QUAY_ENOMEM;
                return;
            }
            t->evfree = fr;
            t->evcap = ncap;
        }
        ix = t->nevs++;
    }
    tev *e = &t->evs[ix];
    *e = *proto;
    if (e->t < t->last)
        e->t = t->last; /* (never: causes come before their effects) */
    evq_append(t, &t->b[ev_bucket(e->t, t->last)], ix);
    t->nev++;
}

static void ev_push(tsim *t, uint64_t when, int type, int32_t rank, tpkt *p)
{
    tev e = {.t = when, .p = p, .rank = rank, .type = (int16_t)type};
    ev_push_full(t, &e);
}

static void op_done_at(tsim *t, uint64_t when, int32_t rank, uint64_t token, int agent,
                       int status)
{
    tev e = {.t = when, .token = token, .rank = rank, .type = EV_OP_DONE,
             .agent = (int8_t)agent, .failed = (int8_t)(status != 0)};
    ev_push_full(t, &e);
}

static tev ev_pop(tsim *t)
{
    evq *z = &t->b[0];
    if (z->head == z->n) {
        z->head = z->n = 0;
        int i = 1;
        while (t->b[i].n == 0)
            i++;
        evq *q = &t->b[i];
        uint64_t min = UINT64_MAX;
        for (uint32_t k = 0; k < q->n; k++)
            if (t->evs[q->ix[k]].t < min)
                min = t->evs[q->ix[k]].t;
        t->last = min;
        for (uint32_t k = 0; k < q->n; k++)
            evq_append(t, &t->b[ev_bucket(t->evs[q->ix[k]].t, min)], q->ix[k]);
        q->n = 0;
    }
    uint32_t ix = z->ix[z->head++];
    t->evfree[t->nfree++] = ix;
    t->nev--;
    return t->evs[ix];
}

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t bytes_ns(size_t len, uint64_t ps) { return (uint64_t)len * ps / 1000; }

/* Packets of at most PKT_SMALL bytes (every eager and control packet)
 * are kept on t->spare when done: their number is bounded by the most
 * ever in flight at once. */
#define PKT_SMALL 256

static void pkt_free(tsim *t, tpkt *p)
{
    if (p->small) {
        p->next = t->spare;
        t->spare = p;
    } else {
        free(p);
    }
}

static void q_push(tpkt **head, tpkt **tail, tpkt *p)
{
    p->next = NULL;
    if (*tail != NULL)
        (*tail)->next = p;
    else
        *head = p;
    *tail = p;
}

static tpkt *q_pop(tpkt **head, tpkt **tail)
{
    tpkt *p = *head;
    if (p != NULL) {
        *head = p->next;
        if (*head == NULL)
            *tail = NULL;
    }
    return p;
}

/* ---- pulling actions ---------------------------------------------------------------- */

/* A packet and room for `extra` bytes of copy right behind it. */
static tpkt *pkt_new_bytes(tsim *t, int32_t from, int32_t to, int kind, size_t extra)
{
    int small = extra <= PKT_SMALL;
    tpkt *p = small ? t->spare : NULL;
    if (p != NULL)
        t->spare = p->next;
    else
        p = malloc(sizeof *p + (small ? PKT_SMALL : extra));
    if (p == NULL) {
        t->fatal = QUAY_ENOMEM;
        return NULL;
    }
    memset(p, 0, sizeof *p);
    p->small = (uint8_t)small;
    p->bytes = (uint8_t *)(p + 1);
    p->from = from;
    p->to = to;
    p->kind = (uint8_t)kind;
    return p;
}

static tpkt *pkt_new(tsim *t, int32_t from, int32_t to, int kind)
{
    return pkt_new_bytes(t, from, to, kind, 0);
}

static tpkt *pkt_from_send(tsim *t, int32_t rank, const quay_action *a)
{
    size_t len = 0;
    for (uint32_t i = 0; i < a->iovcnt; i++)
        len += a->iov[i].len;
    tpkt *p = pkt_new_bytes(t, rank, a->peer, PK_SEND, len);
    if (p == NULL)
        return NULL;
    size_t at = 0;
    for (uint32_t i = 0; i < a->iovcnt; i++) {
        if (a->iov[i].len != 0)
            memcpy(p->bytes + at, a->iov[i].base, a->iov[i].len);
        at += a->iov[i].len;
    }
    p->len = len;
    p->token = a->token;
    return p;
}

/* Pull everything the host engine has, from time `when` on (the host CPU
 * builds each packet in turn). */
static void host_pump(tsim *t, int32_t rank)
{
    trank *r = &t->r[rank];
    quay_action a;
    int rc;
    tpkt *sent[16]; /* this pump's last packets: a NOTIFY names one's peer */
    int nsent = 0;
    while ((rc = quay_next_action(r->host, &a)) == 1) {
        tpkt *p = NULL;
        if (a.kind == QUAY_ACT_NOTIFY) {
            if (a.peer == rank) {
                r->want_progress = 1; /* a bypassed transfer is under way */
                continue;
            }
            for (int i = nsent; i-- > 0;)
                if (sent[i]->to == a.peer) {
                    sent[i]->signal = 1;
                    break;
                }
            continue;
        }
        if (a.kind == QUAY_ACT_SEND_MULTI) {
            /* Built once by the host, DMA'd once; the NIC sends a copy per
             * destination (each pays nic_ns and its link time). */
            quay_action one = a;
            one.kind = QUAY_ACT_SEND;
            tpkt *first = pkt_from_send(t, rank, &one);
            if (first == NULL)
                continue;
            uint64_t cost = t->m.host_send_ns + bytes_ns(first->len, t->m.host_send_ps);
            r->host_free += cost;
            r->busy += cost;
            ev_push(t, r->host_free, EV_DMA_TX, rank, first);
            uint64_t at = r->host_free + t->m.bus_ns + bytes_ns(first->len, t->m.bus_ps);
            for (uint32_t i = 0; i < a.nmulti && i < QUAY_MULTI_MAX; i++) {
                one.peer = a.multi[i].peer;
                one.token = a.multi[i].token;
                one.iov[0] = a.multi[i].hdr;
                tpkt *c = pkt_from_send(t, rank, &one);
                if (c == NULL)
                    break;
                op_done_at(t, at, rank, c->token, 0, 0);
                ev_push(t, at, EV_NIC_TX, rank, c);
            }
            continue;
        }
        if (a.kind == QUAY_ACT_SEND) {
            p = pkt_from_send(t, rank, &a);
        } else if (a.kind == QUAY_ACT_OFFLOAD) {
            p = pkt_new(t, rank, rank, PK_OFFLOAD);
            if (p != NULL) {
                p->desc = a.offload.desc;
                p->len = sizeof *a.offload.desc;
            }
        } else if (a.kind == QUAY_ACT_RDMA_PUT || a.kind == QUAY_ACT_RDMA_GET ||
                   a.kind == QUAY_ACT_RDMA_ATOMIC) {
            p = pkt_new(t, rank, a.peer,
                        a.kind == QUAY_ACT_RDMA_PUT   ? PK_PUT
                        : a.kind == QUAY_ACT_RDMA_GET ? PK_GET
                                                      : PK_ATOMIC);
            if (p != NULL) {
                p->aop = a.atomic.op;
                p->aoperand = a.atomic.operand;
                p->acompare = a.atomic.compare;
                p->token = a.token;
                p->key = a.rdma.key;
                p->off = a.rdma.offset;
                p->local = a.rdma.local;
                p->len = (size_t)a.rdma.len;
            }
        }
        if (p == NULL)
            continue; /* COMPLETE and NOTIFY: the app checks its request */
        uint64_t cost = p->kind == PK_OFFLOAD
                            ? t->m.host_post_ns
                            : t->m.host_send_ns +
                                  bytes_ns(p->kind == PK_SEND ? p->len : 0, t->m.host_send_ps);
        r->host_free += cost;
        r->busy += cost;
        if (p->kind == PK_SEND) {
            if (nsent == 16)
                memmove(sent, sent + 1, 15 * sizeof *sent);
            sent[nsent < 16 ? nsent++ : 15] = p;
        }
        ev_push(t, r->host_free, EV_DMA_TX, rank, p);
    }
    if (rc < 0)
        t->fatal = rc;
}

static void agent_pump(tsim *t, int32_t rank, uint64_t when)
{
    trank *r = &t->r[rank];
    quay_action a;
    int rc;
    while ((rc = quay_next_action(r->agent, &a)) == 1) {
        if (a.kind == QUAY_ACT_SEND) {
            tpkt *p = pkt_from_send(t, rank, &a);
            if (p == NULL)
                continue;
            p->from_agent = p->to_agent = 1;
            ev_push(t, when, EV_NIC_TX, rank, p);
        } else if (a.kind == QUAY_ACT_OFFLOAD_DONE) {
            tpkt *p = pkt_new(t, rank, rank, PK_DONE);
            if (p == NULL)
                continue;
            p->cookie = a.offload.cookie;
            p->status = a.offload.status;
            p->len = 16;
            p->from_agent = 1;
            r->nic_used++; /* it leaves through the receive path's DMA */
            ev_push(t, when, EV_DMA_RX, rank, p);
        }
    }
    if (rc < 0)
        t->fatal = rc;
}

/* ---- the application ------------------------------------------------------------------ */

static int host_in_library(const trank *r)
{
    return r->app == APP_WAIT || r->app == APP_DONE;
}

/* Host CPU to take packet p. */
static uint64_t recv_cost(const tsim *t, const tpkt *p)
{
    if (p->kind == PK_DONE)
        return t->m.host_notify_ns;
    return t->m.host_recv_ns + bytes_ns(p->len, t->m.host_recv_ps);
}

/* Handle packets that waited in host memory, in order, once the host is
 * free (it just entered the library). */
static void host_drain_pending(tsim *t, int32_t rank)
{
    trank *r = &t->r[rank];
    tpkt *p;
    while ((p = q_pop(&r->pend, &r->pend_tail)) != NULL) {
        uint64_t cost = recv_cost(t, p);
        r->host_free += cost;
        r->busy += cost;
        ev_push(t, r->host_free, EV_HOST_PROC, rank, p);
    }
}

/* After the host engine changed: is the request the app waits for done? */
static void host_check_wait(tsim *t, int32_t rank)
{
    trank *r = &t->r[rank];
    if (r->app == APP_WAIT && quay_req_test(r->wait, NULL)) {
        r->app = APP_RUNNING; /* scheduled: not waiting any more */
        ev_push(t, max64(r->host_free, t->now), EV_APP, rank, NULL);
    }
}

static void app_run(tsim *t, int32_t rank)
{
    trank *r = &t->r[rank];
    r->host_free = max64(r->host_free, t->now) + t->m.host_call_ns;
    r->busy += t->m.host_call_ns;
    uint64_t save = t->now;
    t->now = r->host_free;
    r->next = 0;
    r->app = APP_RUNNING;
    if (t->app != NULL)
        t->app(t, rank, t->app_ctx);
    else
        r->next = APP_DONE;
    t->now = save;
    host_pump(t, rank);
    switch (r->next) {
    case APP_COMPUTE:
        r->app = APP_COMPUTE;
        r->host_free += r->compute_ns;
        r->app_at = r->host_free;
        ev_push(t, r->host_free, EV_APP, rank, NULL);
        break;
    case APP_WAIT:
        r->app = APP_WAIT;
        host_drain_pending(t, rank);
        host_check_wait(t, rank);
        break;
    default:
        r->app = APP_DONE;
        host_drain_pending(t, rank);
        break;
    }
}

void tsim_compute(tsim *t, int32_t rank, uint64_t ns)
{
    t->r[rank].next = APP_COMPUTE;
    t->r[rank].compute_ns = ns;
}

void tsim_wait(tsim *t, int32_t rank, quay_req *req)
{
    t->r[rank].next = APP_WAIT;
    t->r[rank].wait = req;
}

void tsim_finish(tsim *t, int32_t rank) { t->r[rank].next = APP_DONE; }

/* ---- stages ------------------------------------------------------------------------------- */

static void nic_take_buffer(tsim *t, int32_t rank, tpkt *p);

static void nic_release_buffer(tsim *t, int32_t rank)
{
    trank *r = &t->r[rank];
    r->nic_used--;
    tpkt *w = q_pop(&r->nicq, &r->nicq_tail);
    if (w != NULL)
        nic_take_buffer(t, rank, w);
}

static void nic_take_buffer(tsim *t, int32_t rank, tpkt *p)
{
    trank *r = &t->r[rank];
    if (t->m.nic_buffers != 0 && r->nic_used >= t->m.nic_buffers) {
        q_push(&r->nicq, &r->nicq_tail, p); /* link-level back-pressure */
        return;
    }
    r->nic_used++;
    r->nic_free = max64(r->nic_free, t->now) + t->m.nic_ns;
    if (p->to_agent) {
        r->nic_free += t->m.agent_step_ns;
        ev_push(t, r->nic_free, EV_AGENT_RX, rank, p);
    } else {
        ev_push(t, r->nic_free, EV_DMA_RX, rank, p);
    }
}

/* Offer a packet to an engine; QUAY_EAGAIN keeps it for later. */
static int deliver(tsim *t, quay_engine *e, trank *r, tpkt *p)
{
    int rc;
    if (p->kind == PK_DONE)
        rc = quay_on_offload_done(e, p->cookie, p->status);
    else
        rc = quay_on_packet(e, p->from, p->bytes, p->len);
    if (rc == QUAY_EAGAIN) {
        q_push(&r->retry, &r->retry_tail, p);
        return 0;
    }
    if (quay_err_is_fatal(rc))
        t->fatal = rc;
    t->st.packets++;
    t->st.bytes += p->len;
    pkt_free(t, p);
    return 1;
}

/* Offer refused packets again (something changed at the engine). */
static void retry_refused(tsim *t, quay_engine *e, trank *r)
{
    tpkt *list = r->retry;
    r->retry = r->retry_tail = NULL;
    int moved = 0;
    while (list != NULL) {
        tpkt *p = list;
        list = list->next;
        moved |= deliver(t, e, r, p);
    }
    (void)moved;
}

/* RDMA at the target: the NIC resolves the key against the host's memory
 * (an atomic: one at a time per NIC, which is what makes it atomic). */
static int rdma_exec(tsim *t, tpkt *p)
{
    trank *tr = &t->r[p->to];
    if (p->kind == PK_ATOMIC) {
        uint64_t old = 0;
        int rc = quay_mem_atomic(tr->host, p->from, p->key, p->off, p->aop, p->aoperand,
                                 p->acompare, &old);
        if (rc == 0)
            memcpy(p->local, &old, sizeof old);
        return rc;
    }
    void *mem = NULL;
    int rc = quay_mem_resolve(tr->host, p->from, p->key, p->off, p->len,
                              p->kind == PK_PUT ? QUAY_MEM_WRITE : QUAY_MEM_READ, &mem);
    if (rc == 0 && p->len != 0) {
        if (p->kind == PK_PUT)
            memcpy(mem, p->local, p->len);
        else
            memcpy(p->local, mem, p->len);
    }
    return rc;
}

static void step(tsim *t, const tev *ev)
{
    trank *r = &t->r[ev->rank];
    tpkt *p = ev->p;
    const nicsim_model *m = &t->m;
    switch (ev->type) {
    case EV_APP:
        if (r->app == APP_COMPUTE && r->stolen != 0) {
            /* Signal handlers ran meanwhile: the computation ends later. */
            r->app_at = t->now + r->stolen;
            r->host_free = r->app_at;
            r->stolen = 0;
            ev_push(t, r->app_at, EV_APP, ev->rank, NULL);
            break;
        }
        app_run(t, ev->rank);
        break;
    case EV_DMA_TX: {
        r->bus_free = max64(r->bus_free, t->now) + bytes_ns(p->kind == PK_SEND ? p->len : 0,
                                                            m->bus_ps);
        uint64_t done = r->bus_free + m->bus_ns;
        if (p->kind == PK_OFFLOAD) {
            ev_push(t, done, EV_AGENT_POST, ev->rank, p);
            break;
        }
        if (p->kind == PK_SEND)
            op_done_at(t, done, ev->rank, p->token, 0, 0); /* the NIC has the data */
        ev_push(t, done, EV_NIC_TX, ev->rank, p);
        break;
    }
    case EV_NIC_TX:
        r->nic_free = max64(r->nic_free, t->now) + m->nic_ns;
        ev_push(t, r->nic_free, EV_WIRE_TX, ev->rank, p);
        break;
    case EV_WIRE_TX: {
        size_t wire_len = p->kind == PK_GET ? 32 : p->len;
        r->link_free = max64(r->link_free, t->now) + bytes_ns(wire_len, m->wire_ps);
        if (p->from_agent && p->kind == PK_SEND)
            op_done_at(t, r->link_free, ev->rank, p->token, 1, 0); /* on the wire */
        ev_push(t, r->link_free + m->wire_ns, EV_NIC_RX, p->to, p);
        break;
    }
    case EV_NIC_RX:
        if (p->kind == PK_ATOMIC && m->atomic_host) {
            /* Up to host memory, then the server thread when it is free. */
            r->nic_free = max64(r->nic_free, t->now) + m->nic_ns;
            r->bus_free = max64(r->bus_free, r->nic_free) + m->bus_ns;
            r->server_free = max64(r->server_free, r->bus_free) + m->host_recv_ns +
                             m->host_send_ns;
            ev_push(t, r->server_free, EV_ATOMIC, ev->rank, p);
            break;
        }
        if (p->kind == PK_PUT || p->kind == PK_GET || p->kind == PK_ATOMIC) {
            /* The target NIC moves the data by DMA, no host involved; the
             * initiator's op_done follows one wire latency later. */
            r->nic_free = max64(r->nic_free, t->now) + m->nic_ns;
            r->bus_free = max64(r->bus_free, r->nic_free) + bytes_ns(p->len, m->bus_ps) +
                          m->bus_ns;
            int rc = rdma_exec(t, p);
            op_done_at(t, r->bus_free + m->wire_ns +
                              bytes_ns(p->kind == PK_GET ? p->len : 0, m->wire_ps),
                       p->from, p->token, 0, rc);
            t->st.packets++;
            pkt_free(t, p);
            break;
        }
        nic_take_buffer(t, ev->rank, p);
        break;
    case EV_DMA_RX:
        r->bus_free = max64(r->bus_free, t->now) + bytes_ns(p->len, m->bus_ps);
        nic_release_buffer(t, ev->rank);
        ev_push(t, r->bus_free + m->bus_ns, EV_HOST_RX, ev->rank, p);
        break;
    case EV_HOST_RX:
        if (!host_in_library(r) && (p->signal || r->want_progress) && r->app == APP_COMPUTE) {
            /* Application bypass: the handler runs now, on stolen time (a
             * signal, or the handler still polling for its transfer). */
            uint64_t saved = r->host_free;
            r->host_free = t->now + (p->signal ? m->host_signal_ns : 0) + recv_cost(t, p);
            r->want_progress = 0; /* the engine says again if it still wants it */
            r->busy += r->host_free - t->now;
            if (deliver(t, r->host, r, p)) {
                t->st.host_pkts++;
                retry_refused(t, r->host, r);
            }
            host_pump(t, ev->rank);
            r->stolen += r->host_free - t->now;
            r->host_free = saved;
        } else if (!host_in_library(r)) {
            q_push(&r->pend, &r->pend_tail, p); /* the app computes */
        } else {
            uint64_t cost = recv_cost(t, p);
            r->host_free = max64(r->host_free, t->now) + cost;
            r->busy += cost;
            ev_push(t, r->host_free, EV_HOST_PROC, ev->rank, p);
        }
        break;
    case EV_HOST_PROC:
        r->host_free = max64(r->host_free, t->now);
        if (deliver(t, r->host, r, p)) {
            t->st.host_pkts++;
            retry_refused(t, r->host, r);
        }
        host_pump(t, ev->rank);
        host_check_wait(t, ev->rank);
        break;
    case EV_AGENT_RX:
        nic_release_buffer(t, ev->rank);
        if (deliver(t, r->agent, r, p))
            retry_refused(t, r->agent, r);
        agent_pump(t, ev->rank, t->now);
        break;
    case EV_AGENT_POST: {
        r->nic_free = max64(r->nic_free, t->now) + m->nic_ns + m->agent_step_ns;
        int rc = r->agent != NULL ? quay_agent_post(r->agent, p->desc) : QUAY_EINVAL;
        if (rc != 0)
            t->fatal = rc < 0 ? rc : QUAY_EINVAL;
        pkt_free(t, p);
        if (r->agent != NULL)
            agent_pump(t, ev->rank, r->nic_free);
        break;
    }
    case EV_OP_DONE: {
        int agent = ev->agent;
        int rc = quay_on_op_done(agent ? r->agent : r->host, ev->token,
                                 ev->failed ? QUAY_ESTATE : 0);
        if (quay_err_is_fatal(rc))
            t->fatal = rc;
        if (agent) {
            agent_pump(t, ev->rank, t->now);
        } else if (host_in_library(r)) {
            host_pump(t, ev->rank);
            host_check_wait(t, ev->rank);
        }
        break;
    }
    case EV_ATOMIC: {
        /* Done by the server; its reply goes back down the bus and over. */
        int rc = rdma_exec(t, p);
        op_done_at(t, t->now + 2 * m->bus_ns + 2 * m->nic_ns + m->wire_ns, p->from, p->token,
                   0, rc);
        t->st.packets++;
        pkt_free(t, p);
        break;
    }
    default:
        break;
    }
}

/* ---- public ------------------------------------------------------------------------------- */

int tsim_new(int32_t n, const nicsim_model *m, tsim **pt)
{
    if (pt == NULL || n <= 0 || m == NULL)
        return QUAY_EINVAL;
    tsim *t = calloc(1, sizeof *t);
    if (t == NULL || (t->r = calloc((size_t)n, sizeof *t->r)) == NULL) {
        free(t);
        return QUAY_ENOMEM;
    }
    t->n = n;
    t->m = *m;
    *pt = t;
    return 0;
}

static void q_free(tpkt *p)
{
    while (p != NULL) {
        tpkt *n = p->next;
        free(p);
        p = n;
    }
}

void tsim_free(tsim *t)
{
    if (t == NULL)
        return;
    for (int i = 0; i < 65; i++) {
        for (uint32_t k = t->b[i].head; k < t->b[i].n; k++)
            if (t->evs[t->b[i].ix[k]].p != NULL)
                free(t->evs[t->b[i].ix[k]].p);
        free(t->b[i].ix);
    }
    for (int32_t i = 0; i < t->n; i++) {
        q_free(t->r[i].pend);
        q_free(t->r[i].retry);
        q_free(t->r[i].nicq);
    }
    q_free(t->spare);
    free(t->evs);
    free(t->evfree);
    free(t->r);
    free(t);
}

int tsim_attach(tsim *t, int32_t rank, quay_engine *host, quay_engine *agent)
{
    if (t == NULL || rank < 0 || rank >= t->n || host == NULL ||
        quay_engine_rank(host) != rank || quay_engine_size(host) != t->n ||
        (agent != NULL && (quay_engine_rank(agent) != rank || quay_engine_size(agent) != t->n)))
        return QUAY_EINVAL;
    t->r[rank].host = host;
    t->r[rank].agent = agent;
    return 0;
}

void tsim_set_app(tsim *t, tsim_app_fn fn, void *ctx)
{
    t->app = fn;
    t->app_ctx = ctx;
}

uint64_t tsim_now(const tsim *t) { return t->now; }

int tsim_run(tsim *t)
{
    for (int32_t i = 0; i < t->n; i++) {
        if (t->r[i].host == NULL)
            return QUAY_EINVAL;
        if (t->r[i].app == APP_START) {
            t->r[i].app = APP_RUNNING;
            ev_push(t, t->now, EV_APP, i, NULL);
        }
    }
    while (t->nev != 0 && t->fatal == 0) {
        tev ev = ev_pop(t);
        if (ev.t > t->now)
            t->now = ev.t;
        t->st.events++;
        step(t, &ev);
    }
    if (t->fatal != 0)
        return t->fatal;
    for (int32_t i = 0; i < t->n; i++)
        if (t->r[i].app != APP_DONE || t->r[i].retry != NULL)
            return 1;
    return 0;
}

void tsim_get_stats(const tsim *t, tsim_stats *st) { *st = t->st; }

uint64_t tsim_host_busy(const tsim *t, int32_t rank) { return t->r[rank].busy; }
