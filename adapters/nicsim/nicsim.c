/*
 * nicsim.c — adversarial scheduler over N quay engines (see nicsim.h).
 *
 * Data layout, chosen so that every event costs O(1) expected:
 *   - one queue per directed link (src -> dst), a power-of-two ring of
 *     packet pointers, rows of links allocated on first use;
 *   - `active`: the links that hold at least one packet (swap-remove);
 *   - `dirty`: the engines that may have actions to pull (swap-remove);
 *   - `opd`: pending op_done calls (swap-remove);
 *   - packets come from per-size-class free lists.
 * A packet answered with QUAY_EAGAIN is stamped with its destination's
 * epoch; it is eligible again once that epoch moves. `nblocked` per node
 * counts the stamps that are still current (FIFO mode: blocked link heads,
 * reorder mode: blocked packets), so the number of deliverable choices is
 * known without a scan.
 */
#include "nicsim.h"

#include <stdlib.h>
#include <string.h>

#define NS_NONE UINT32_MAX
#define NS_NEVER UINT64_MAX
/* Packet buffer size classes: 64 B << k. */
#define NS_MIN_CLASS_SHIFT 6
#define NS_NCLASS 27
/* An engine that keeps producing actions forever is a bug; stop there. */
#define NS_MAX_ACTIONS_PER_PULL (1u << 22)

typedef struct ns_pkt {
    struct ns_pkt *next; /* free list link */
    uint64_t id;
    uint64_t blocked_epoch; /* dst epoch of the last EAGAIN, or NS_NEVER */
    int32_t src;
    int32_t dst;
    uint64_t len;
    uint32_t cls;
    unsigned char data[];
} ns_pkt;

typedef struct ns_link {
    ns_pkt **ring;
    uint32_t head;
    uint32_t len;
    uint32_t cap;    /* power of two, or 0 */
    uint32_t active; /* index in sim->active, or NS_NONE */
} ns_link;

typedef struct ns_node {
    quay_engine *e;
    uint64_t epoch;
    uint32_t nblocked;  /* stamps equal to `epoch` (see top comment) */
    uint32_t dirty_idx; /* index in sim->dirty, or NS_NONE */
} ns_node;

typedef struct ns_opd {
    int32_t rank;
    int32_t status;
    uint64_t token;
} ns_opd;

struct nicsim {
    nicsim_config cfg;
    uint32_t n;
    ns_node *nodes;
    ns_link **rows; /* rows[src] = n links, NULL until src first sends */

    uint32_t *active; /* link ids (src * n + dst) with packets */
    uint32_t nactive;
    uint32_t capactive;
    uint64_t ninflight;
    uint64_t nblocked; /* sum of nodes[].nblocked */

    int32_t *dirty;
    uint32_t ndirty;

    ns_opd *opd;
    uint32_t nopd;
    uint32_t capopd;

    ns_pkt *freel[NS_NCLASS];
    uint64_t rng[4];
    uint64_t next_pkt_id;
    int32_t step_fatal; /* first fatal code during the current step */
    int in_pull;

    nicsim_complete_fn complete_cb;
    void *complete_ctx;
    nicsim_event_fn event_cb;
    void *event_ctx;
    nicsim_stats st;
};

/* ------------------------------------------------------------------ */
/* PRNG: xoshiro256** seeded through splitmix64                          */
/* ------------------------------------------------------------------ */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(uint64_t s[4])
{
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, bound), bound > 0 (Lemire's multiply-shift, with the
 * rejection step so it is exactly uniform). */
static uint32_t rng_below(uint64_t s[4], uint32_t bound)
{
    uint64_t m = (rng_next(s) >> 32) * (uint64_t)bound;
    uint32_t l = (uint32_t)m;
    if (l < bound) {
        uint32_t t = (uint32_t)(-bound) % bound;
        while (l < t) {
            m = (rng_next(s) >> 32) * (uint64_t)bound;
            l = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

/* ------------------------------------------------------------------ */
/* Small helpers                                                        */
/* ------------------------------------------------------------------ */

static void emit(nicsim *sim, const nicsim_event *ev)
{
    if (sim->event_cb != NULL)
        sim->event_cb(sim->event_ctx, ev);
}

static void note_error(nicsim *sim, int32_t rank, int32_t peer, int rc)
{
    nicsim_event ev;
    sim->st.errors++;
    if (sim->st.first_error == 0)
        sim->st.first_error = rc;
    memset(&ev, 0, sizeof ev);
    ev.kind = NICSIM_EV_ERROR;
    ev.rank = rank;
    ev.peer = peer;
    ev.rc = rc;
    emit(sim, &ev);
}

static void note_fatal(nicsim *sim, int rc)
{
    sim->st.fatal++;
    if (sim->st.first_fatal == 0)
        sim->st.first_fatal = rc;
    if (sim->step_fatal == 0)
        sim->step_fatal = rc;
}

static uint32_t size_class(uint64_t len)
{
    uint32_t c = 0;
    while (c + 1 < NS_NCLASS &&
           ((uint64_t)1 << (c + NS_MIN_CLASS_SHIFT)) < len)
        c++;
    return c;
}

static ns_pkt *pkt_alloc(nicsim *sim, uint64_t len)
{
    uint32_t c = size_class(len);
    ns_pkt *p;
    if (((uint64_t)1 << (c + NS_MIN_CLASS_SHIFT)) < len)
        return NULL; /* larger than the largest class */
    p = sim->freel[c];
    if (p != NULL) {
        sim->freel[c] = p->next;
    } else {
        p = malloc(sizeof *p + ((size_t)1 << (c + NS_MIN_CLASS_SHIFT)));
        if (p == NULL)
            return NULL;
        p->cls = c;
    }
    p->next = NULL;
    p->len = len;
    p->blocked_epoch = NS_NEVER;
    return p;
}

static void pkt_release(nicsim *sim, ns_pkt *p)
{
    p->next = sim->freel[p->cls];
    sim->freel[p->cls] = p;
}

static ns_link *link_get(const nicsim *sim, uint32_t id)
{
    return &sim->rows[id / sim->n][id % sim->n];
}

/* Something happened at `r`: packets deferred there become eligible. */
static void bump(nicsim *sim, int32_t r)
{
    ns_node *nd = &sim->nodes[r];
    nd->epoch++;
    sim->nblocked -= nd->nblocked;
    nd->nblocked = 0;
}

static int pkt_blocked(const nicsim *sim, const ns_pkt *p)
{
    return p->blocked_epoch == sim->nodes[p->dst].epoch;
}

static void pull(nicsim *sim, int32_t r);

static void dirty_remove(nicsim *sim, int32_t r)
{
    ns_node *nd = &sim->nodes[r];
    uint32_t i = nd->dirty_idx;
    if (i == NS_NONE)
        return;
    sim->ndirty--;
    if (i != sim->ndirty) {
        int32_t last = sim->dirty[sim->ndirty];
        sim->dirty[i] = last;
        sim->nodes[last].dirty_idx = i;
    }
    nd->dirty_idx = NS_NONE;
}

/* `r` may have actions now. */
static void mark_dirty(nicsim *sim, int32_t r)
{
    ns_node *nd = &sim->nodes[r];
    if (nd->e == NULL)
        return;
    if (sim->cfg.auto_pull) {
        if (!sim->in_pull)
            pull(sim, r);
        return;
    }
    if (nd->dirty_idx != NS_NONE)
        return;
    nd->dirty_idx = sim->ndirty;
    sim->dirty[sim->ndirty++] = r;
}

/* ------------------------------------------------------------------ */
/* Links                                                                */
/* ------------------------------------------------------------------ */

static int link_push(nicsim *sim, int32_t src, int32_t dst, ns_pkt *p)
{
    uint32_t id;
    ns_link *l;
    if (sim->rows[src] == NULL) {
        ns_link *row = calloc(sim->n, sizeof *row);
        uint32_t i;
        if (row == NULL)
            return QUAY_ENOMEM;
        for (i = 0; i < sim->n; i++)
            row[i].active = NS_NONE;
        sim->rows[src] = row;
    }
    id = (uint32_t)src * sim->n + (uint32_t)dst;
    l = &sim->rows[src][dst];
    if (l->active == NS_NONE && sim->nactive == sim->capactive) {
        uint32_t ncap = sim->capactive ? sim->capactive * 2 : 64;
        uint32_t *na = realloc(sim->active, (size_t)ncap * sizeof *na);
        if (na == NULL)
            return QUAY_ENOMEM;
        sim->active = na;
        sim->capactive = ncap;
    }
    if (l->len == l->cap) {
        uint32_t ncap = l->cap ? l->cap * 2 : 8;
        ns_pkt **nr;
        uint32_t i;
        if (ncap < l->cap)
            return QUAY_ENOMEM;
        nr = malloc((size_t)ncap * sizeof *nr);
        if (nr == NULL)
            return QUAY_ENOMEM;
        for (i = 0; i < l->len; i++)
            nr[i] = l->ring[(l->head + i) & (l->cap - 1)];
        free(l->ring);
        l->ring = nr;
        l->head = 0;
        l->cap = ncap;
    }
    l->ring[(l->head + l->len) & (l->cap - 1)] = p;
    l->len++;
    if (l->active == NS_NONE) {
        l->active = sim->nactive;
        sim->active[sim->nactive++] = id;
    }
    sim->ninflight++;
    if (sim->ninflight > sim->st.inflight_peak)
        sim->st.inflight_peak = sim->ninflight;
    return 0;
}

static ns_pkt *link_at(const ns_link *l, uint32_t i)
{
    return l->ring[(l->head + i) & (l->cap - 1)];
}

/* Unlink the packet at position `idx` of link `id`, keeping the order of
 * the others (shift the shorter side). */
static void link_remove(nicsim *sim, uint32_t id, uint32_t idx)
{
    ns_link *l = link_get(sim, id);
    uint32_t mask = l->cap - 1, i;
    if (idx < l->len / 2) {
        for (i = idx; i > 0; i--)
            l->ring[(l->head + i) & mask] = l->ring[(l->head + i - 1) & mask];
        l->head = (l->head + 1) & mask;
    } else {
        for (i = idx; i + 1 < l->len; i++)
            l->ring[(l->head + i) & mask] = l->ring[(l->head + i + 1) & mask];
    }
    l->len--;
    sim->ninflight--;
    if (l->len == 0) {
        uint32_t a = l->active;
        sim->nactive--;
        if (a != sim->nactive) {
            uint32_t moved = sim->active[sim->nactive];
            sim->active[a] = moved;
            link_get(sim, moved)->active = a;
        }
        l->active = NS_NONE;
        l->head = 0;
    }
}

/* ------------------------------------------------------------------ */
/* Events                                                               */
/* ------------------------------------------------------------------ */

static void opd_push(nicsim *sim, int32_t r, uint64_t token, int status)
{
    if (sim->nopd == sim->capopd) {
        uint32_t ncap = sim->capopd ? sim->capopd * 2 : 64;
        ns_opd *no = realloc(sim->opd, (size_t)ncap * sizeof *no);
        if (no == NULL) {
            note_error(sim, r, -1, QUAY_ENOMEM);
            return;
        }
        sim->opd = no;
        sim->capopd = ncap;
    }
    sim->opd[sim->nopd].rank = r;
    sim->opd[sim->nopd].status = status;
    sim->opd[sim->nopd].token = token;
    sim->nopd++;
}

static void pull_send(nicsim *sim, int32_t r, const quay_action *a)
{
    uint64_t total = 0;
    uint32_t i;
    ns_pkt *p;
    nicsim_event ev;
    int rc;

    if (a->peer < 0 || (uint32_t)a->peer >= sim->n || a->iovcnt < 1 ||
        a->iovcnt > QUAY_ACTION_IOV_MAX) {
        note_error(sim, r, a->peer, QUAY_EINVAL);
        opd_push(sim, r, a->token, QUAY_EPEER);
        return;
    }
    for (i = 0; i < a->iovcnt; i++)
        total += a->iov[i].len;
    p = pkt_alloc(sim, total);
    if (p == NULL) {
        note_error(sim, r, a->peer, QUAY_ENOMEM);
        opd_push(sim, r, a->token, QUAY_EPEER);
        return;
    }
    total = 0;
    for (i = 0; i < a->iovcnt; i++) {
        if (a->iov[i].len != 0)
            memcpy(p->data + total, a->iov[i].base, a->iov[i].len);
        total += a->iov[i].len;
    }
    p->id = sim->next_pkt_id++;
    p->src = r;
    p->dst = a->peer;
    rc = link_push(sim, r, a->peer, p);
    if (rc != 0) {
        pkt_release(sim, p);
        note_error(sim, r, a->peer, rc);
        opd_push(sim, r, a->token, QUAY_EPEER);
        return;
    }
    sim->st.sends++;
    opd_push(sim, r, a->token, 0);
    if (sim->event_cb != NULL) {
        memset(&ev, 0, sizeof ev);
        ev.kind = NICSIM_EV_SEND;
        ev.rank = r;
        ev.peer = a->peer;
        ev.token = a->token;
        ev.pkt_id = p->id;
        ev.len = p->len;
        ev.data = p->data;
        emit(sim, &ev);
    }
}

/* PULL: drain every action of engine `r`. */
static void pull(nicsim *sim, int32_t r)
{
    quay_engine *e = sim->nodes[r].e;
    quay_action a;
    uint32_t got = 0;
    nicsim_event ev;

    dirty_remove(sim, r);
    sim->st.pulls++;
    sim->in_pull = 1;
    while (got < NS_MAX_ACTIONS_PER_PULL) {
        int rc = quay_next_action(e, &a);
        if (rc != 1) {
            if (rc <= QUAY_ERR_FATAL)
                note_fatal(sim, rc);
            else if (rc != 0)
                note_error(sim, r, -1, rc);
            break;
        }
        got++;
        sim->st.actions++;
        switch (a.kind) {
        case QUAY_ACT_SEND:
            pull_send(sim, r, &a);
            break;
        case QUAY_ACT_COMPLETE:
            sim->st.completes++;
            if (sim->event_cb != NULL) {
                memset(&ev, 0, sizeof ev);
                ev.kind = NICSIM_EV_COMPLETE;
                ev.rank = r;
                ev.peer = -1;
                ev.req = a.req;
                emit(sim, &ev);
            }
            if (sim->complete_cb != NULL)
                sim->complete_cb(sim->complete_ctx, r, a.req, a.user);
            break;
        case QUAY_ACT_NOTIFY:
            /* Simulated hosts are always awake: nothing to do. */
            sim->st.notifies++;
            if (sim->event_cb != NULL) {
                memset(&ev, 0, sizeof ev);
                ev.kind = NICSIM_EV_NOTIFY;
                ev.rank = r;
                ev.peer = a.peer;
                emit(sim, &ev);
            }
            break;
        case QUAY_ACT_RDMA_PUT:
        case QUAY_ACT_RDMA_GET:
            /*
             * Remote-memory protocols (DESIGN §4 RDMA rendezvous). The
             * place for them: keep a table of quay_mem_register'ed regions
             * per rank (key -> base, len), copy rdma.len bytes between
             * rdma.local and the peer's (key, offset) as an in-flight
             * "RDMA packet" on the link so that delivery order stays
             * adversarial, then queue op_done. The engine emits none yet;
             * an RDMA action here is an error, answered so that the engine
             * is not left waiting.
             */
            note_error(sim, r, a.peer, QUAY_ENOTSUP);
            opd_push(sim, r, a.token, QUAY_ENOTSUP);
            break;
        default:
            note_error(sim, r, a.peer, QUAY_EINVAL);
            break;
        }
    }
    if (got == NS_MAX_ACTIONS_PER_PULL)
        note_error(sim, r, -1, QUAY_EINTERNAL);
    sim->in_pull = 0;
    if (got > 0)
        bump(sim, r);
}

/* DELIVER the packet at position `idx` of link `id`. */
static void deliver(nicsim *sim, uint32_t id, uint32_t idx)
{
    ns_link *l = link_get(sim, id);
    ns_pkt *p = link_at(l, idx);
    int32_t dst = p->dst, src = p->src;
    ns_node *nd = &sim->nodes[dst];
    nicsim_event ev;
    int rc;

    if (sim->event_cb != NULL) {
        memset(&ev, 0, sizeof ev);
        ev.kind = NICSIM_EV_DELIVER;
        ev.rank = dst;
        ev.peer = src;
        ev.pkt_id = p->id;
        ev.len = p->len;
        ev.data = p->data;
        emit(sim, &ev);
    }
    rc = quay_on_packet(nd->e, src, p->data, (size_t)p->len);
    if (rc == QUAY_EAGAIN) {
        sim->st.eagain++;
        p->blocked_epoch = nd->epoch;
        nd->nblocked++;
        sim->nblocked++;
        if (sim->event_cb != NULL) {
            memset(&ev, 0, sizeof ev);
            ev.kind = NICSIM_EV_DEFER;
            ev.rank = dst;
            ev.peer = src;
            ev.rc = rc;
            ev.pkt_id = p->id;
            ev.len = p->len;
            emit(sim, &ev);
        }
        return;
    }
    link_remove(sim, id, idx);
    if (rc == 0) {
        sim->st.deliveries++;
        sim->st.bytes_delivered += p->len;
        bump(sim, dst);
        mark_dirty(sim, dst);
    } else {
        if (rc == QUAY_EPROTO || rc == QUAY_ESTATE)
            sim->st.rejects++;
        else if (rc <= QUAY_ERR_FATAL)
            note_fatal(sim, rc);
        else
            note_error(sim, dst, src, rc);
        if (sim->event_cb != NULL) {
            memset(&ev, 0, sizeof ev);
            ev.kind = NICSIM_EV_REJECT;
            ev.rank = dst;
            ev.peer = src;
            ev.rc = rc;
            ev.pkt_id = p->id;
            ev.len = p->len;
            emit(sim, &ev);
        }
    }
    pkt_release(sim, p);
}

/* OP_DONE number `i` of the pending set. */
static void op_done(nicsim *sim, uint32_t i)
{
    ns_opd o = sim->opd[i];
    nicsim_event ev;
    int rc;

    sim->nopd--;
    if (i != sim->nopd)
        sim->opd[i] = sim->opd[sim->nopd];
    if (sim->event_cb != NULL) {
        memset(&ev, 0, sizeof ev);
        ev.kind = NICSIM_EV_OP_DONE;
        ev.rank = o.rank;
        ev.peer = -1;
        ev.rc = o.status;
        ev.token = o.token;
        emit(sim, &ev);
    }
    sim->st.op_dones++;
    rc = quay_on_op_done(sim->nodes[o.rank].e, o.token, o.status);
    if (rc != 0) {
        if (rc <= QUAY_ERR_FATAL)
            note_fatal(sim, rc);
        else
            note_error(sim, o.rank, -1, rc);
    }
    bump(sim, o.rank);
    mark_dirty(sim, o.rank);
}

/* Deliverable choices now. */
static uint32_t n_deliverable(const nicsim *sim)
{
    uint64_t cand = sim->cfg.reorder ? sim->ninflight : sim->nactive;
    uint64_t n = cand - sim->nblocked;
    return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* Deliver the k-th deliverable packet (k < n_deliverable). */
static void deliver_kth(nicsim *sim, uint32_t k)
{
    uint32_t i, j;
    for (i = 0; i < sim->nactive; i++) {
        uint32_t id = sim->active[i];
        ns_link *l = link_get(sim, id);
        if (!sim->cfg.reorder) {
            if (pkt_blocked(sim, link_at(l, 0)))
                continue;
            if (k == 0) {
                deliver(sim, id, 0);
                return;
            }
            k--;
            continue;
        }
        if (sim->nblocked == 0) {
            if (k < l->len) {
                deliver(sim, id, k);
                return;
            }
            k -= l->len;
            continue;
        }
        for (j = 0; j < l->len; j++) {
            if (pkt_blocked(sim, link_at(l, j)))
                continue;
            if (k == 0) {
                deliver(sim, id, j);
                return;
            }
            k--;
        }
    }
}

/* ------------------------------------------------------------------ */
/* Public API                                                           */
/* ------------------------------------------------------------------ */

void nicsim_config_default(nicsim_config *cfg)
{
    if (cfg == NULL)
        return;
    memset(cfg, 0, sizeof *cfg);
    cfg->version = NICSIM_CONFIG_VERSION;
    cfg->nranks = 2;
}

int nicsim_new(const nicsim_config *cfg, nicsim **psim)
{
    nicsim *sim;
    uint32_t i;
    uint64_t x;

    if (cfg == NULL || psim == NULL)
        return QUAY_EINVAL;
    *psim = NULL;
    if (cfg->version != NICSIM_CONFIG_VERSION)
        return QUAY_EVERSION;
    if (cfg->nranks < 1 || cfg->nranks > NICSIM_MAX_RANKS ||
        cfg->reorder > 1 || cfg->auto_pull > 1)
        return QUAY_EINVAL;
    if (cfg->drop_ppm != 0 || cfg->dup_ppm != 0 || cfg->corrupt_ppm != 0)
        return QUAY_ENOTSUP;

    sim = calloc(1, sizeof *sim);
    if (sim == NULL)
        return QUAY_ENOMEM;
    sim->cfg = *cfg;
    sim->n = (uint32_t)cfg->nranks;
    sim->nodes = calloc(sim->n, sizeof *sim->nodes);
    sim->rows = calloc(sim->n, sizeof *sim->rows);
    sim->dirty = calloc(sim->n, sizeof *sim->dirty);
    if (sim->nodes == NULL || sim->rows == NULL || sim->dirty == NULL) {
        nicsim_free(sim);
        return QUAY_ENOMEM;
    }
    for (i = 0; i < sim->n; i++)
        sim->nodes[i].dirty_idx = NS_NONE;
    x = cfg->seed;
    for (i = 0; i < 4; i++)
        sim->rng[i] = splitmix64(&x);
    *psim = sim;
    return 0;
}

void nicsim_free(nicsim *sim)
{
    uint32_t i, j, c;
    if (sim == NULL)
        return;
    if (sim->rows != NULL) {
        for (i = 0; i < sim->n; i++) {
            ns_link *row = sim->rows[i];
            if (row == NULL)
                continue;
            for (j = 0; j < sim->n; j++) {
                ns_link *l = &row[j];
                uint32_t k;
                for (k = 0; k < l->len; k++)
                    free(link_at(l, k));
                free(l->ring);
            }
            free(row);
        }
    }
    for (c = 0; c < NS_NCLASS; c++) {
        ns_pkt *p = sim->freel[c];
        while (p != NULL) {
            ns_pkt *nx = p->next;
            free(p);
            p = nx;
        }
    }
    free(sim->rows);
    free(sim->nodes);
    free(sim->dirty);
    free(sim->active);
    free(sim->opd);
    free(sim);
}

int nicsim_attach(nicsim *sim, int32_t rank, quay_engine *e)
{
    if (sim == NULL || e == NULL)
        return QUAY_EINVAL;
    if (rank < 0 || (uint32_t)rank >= sim->n)
        return QUAY_ERANK;
    if (quay_engine_rank(e) != rank ||
        quay_engine_size(e) != (int32_t)sim->n)
        return QUAY_EINVAL;
    sim->nodes[rank].e = e;
    bump(sim, rank);
    mark_dirty(sim, rank);
    return 0;
}

void nicsim_set_completion_cb(nicsim *sim, nicsim_complete_fn fn, void *ctx)
{
    sim->complete_cb = fn;
    sim->complete_ctx = ctx;
}

void nicsim_set_event_cb(nicsim *sim, nicsim_event_fn fn, void *ctx)
{
    sim->event_cb = fn;
    sim->event_ctx = ctx;
}

void nicsim_touch(nicsim *sim, int32_t rank)
{
    if (sim == NULL || rank < 0 || (uint32_t)rank >= sim->n ||
        sim->nodes[rank].e == NULL)
        return;
    bump(sim, rank);
    mark_dirty(sim, rank);
}

uint64_t nicsim_epoch(const nicsim *sim, int32_t rank)
{
    if (sim == NULL || rank < 0 || (uint32_t)rank >= sim->n)
        return 0;
    return sim->nodes[rank].epoch;
}

void nicsim_enabled_detail(const nicsim *sim, uint32_t *npull,
                           uint32_t *ndeliver, uint32_t *nopdone)
{
    if (npull != NULL)
        *npull = sim->ndirty;
    if (ndeliver != NULL)
        *ndeliver = n_deliverable(sim);
    if (nopdone != NULL)
        *nopdone = sim->nopd;
}

uint32_t nicsim_enabled_events(const nicsim *sim)
{
    return sim->ndirty + n_deliverable(sim) + sim->nopd;
}

int nicsim_step_choose(nicsim *sim, uint32_t choice)
{
    uint32_t nd;
    if (sim == NULL)
        return QUAY_EINVAL;
    sim->step_fatal = 0;
    if (choice < sim->ndirty) {
        pull(sim, sim->dirty[choice]);
        goto done;
    }
    choice -= sim->ndirty;
    nd = n_deliverable(sim);
    if (choice < nd) {
        deliver_kth(sim, choice);
        goto done;
    }
    choice -= nd;
    if (choice < sim->nopd) {
        op_done(sim, choice);
        goto done;
    }
    return QUAY_EINVAL;
done:
    sim->st.steps++;
    return sim->step_fatal != 0 ? sim->step_fatal : 1;
}

int nicsim_step(nicsim *sim)
{
    uint32_t nd, total, k;
    if (sim == NULL)
        return QUAY_EINVAL;
    nd = n_deliverable(sim);
    total = sim->ndirty + nd + sim->nopd;
    if (total == 0)
        return 0;
    k = rng_below(sim->rng, total);
    if (k >= sim->ndirty && k - sim->ndirty < nd && sim->nactive > 0) {
        /* Fast path: a random non-empty link, then a random packet on it
         * (not uniform over packets, but every deliverable packet has a
         * non-zero chance). Falls back to the scan when blocked. */
        uint32_t id = sim->active[rng_below(sim->rng, sim->nactive)];
        ns_link *l = link_get(sim, id);
        uint32_t idx = sim->cfg.reorder ? rng_below(sim->rng, l->len) : 0;
        if (!pkt_blocked(sim, link_at(l, idx))) {
            sim->step_fatal = 0;
            deliver(sim, id, idx);
            sim->st.steps++;
            return sim->step_fatal != 0 ? sim->step_fatal : 1;
        }
    }
    return nicsim_step_choose(sim, k);
}

int nicsim_idle(const nicsim *sim)
{
    return sim->ninflight == 0 && sim->nopd == 0 && sim->ndirty == 0;
}

int nicsim_run(nicsim *sim, uint64_t max_steps)
{
    uint64_t i;
    for (i = 0; i < max_steps; i++) {
        int rc;
        if (nicsim_idle(sim))
            return NICSIM_RUN_IDLE;
        rc = nicsim_step(sim);
        if (rc == 0)
            return NICSIM_RUN_STUCK;
        if (rc < 0)
            return rc;
    }
    return nicsim_idle(sim) ? NICSIM_RUN_IDLE : NICSIM_RUN_LIMIT;
}

void nicsim_get_stats(const nicsim *sim, nicsim_stats *st)
{
    *st = sim->st;
    st->inflight = sim->ninflight;
    st->pending_op_done = sim->nopd;
}
