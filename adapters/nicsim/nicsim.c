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
 *
 * Faults (all off by default; nothing below draws or allocates while
 * every knob is 0):
 *   - a delayed packet sits in the `pen` (a min-heap on (due, seq)), off
 *     its link, so it is neither a candidate nor a FIFO blocker; it joins
 *     the tail of its link when the clock reaches `due`;
 *   - a stalled destination is in `stalled`; its packets stay on their
 *     links but are subtracted from the deliverable count (per node:
 *     `nin_links` / `nin_pkts` candidates, minus its `nblocked`) and
 *     skipped by the scans;
 *   - `settle` runs after every event: it performs kills that are due,
 *     releases the pen, ends stalls, and when nothing is enabled while
 *     packets are held, moves the clock to the first release;
 *   - fault decisions draw from `frng`, a stream of its own, so the
 *     scheduler's draws are those of a fault-free run until a fault
 *     actually changes what happens.
 * FIFO-mode invariant kept by every fault path: only a link head carries
 * a current EAGAIN stamp (a head pushed back by an insertion, and a
 * packet purged by a kill, has its stamp uncounted and cleared).
 */
#include "nicsim.h"
#include "nicsim_prng.h"

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
    uint8_t is_copy;   /* made by dup_ppm */
    uint8_t fated;     /* drop / corrupt decided (first offer) */
    uint8_t corrupted;
    /* RDMA operation (not a packet for quay_on_packet): executed against
     * the destination's registered memory when delivered */
    uint8_t rdma;        /* 0, or NS_RDMA_PUT / NS_RDMA_GET / NS_RDMA_ATOMIC */
    uint64_t token;      /* the initiator's, completed after execution */
    uint64_t key, offset, rlen;
    void *local;         /* GET, ATOMIC: where the result goes at the initiator */
    uint32_t aop;        /* ATOMIC: QUAY_ATOMIC_*, operand, compare */
    uint64_t aoperand, acompare;
    unsigned char data[]; /* PUT: the data, read at issue */
} ns_pkt;

enum { NS_RDMA_PUT = 1, NS_RDMA_GET = 2, NS_RDMA_ATOMIC = 3 };

/* Per-link fault state, allocated on first override / black hole. */
typedef struct ns_lfx {
    int has_faults;        /* `f` overrides nicsim_config.faults */
    nicsim_faults f;
    uint64_t blackhole_at; /* clock time, or NS_NEVER */
} ns_lfx;

typedef struct ns_link {
    ns_pkt **ring;
    uint32_t head;
    uint32_t len;
    uint32_t cap;    /* power of two, or 0 */
    uint32_t active; /* index in sim->active, or NS_NONE */
    ns_lfx *fx;      /* NULL: config defaults, no black hole */
} ns_link;

typedef struct ns_node {
    quay_engine *e;
    uint64_t epoch;
    uint32_t nblocked;  /* stamps equal to `epoch` (see top comment) */
    uint32_t dirty_idx; /* index in sim->dirty, or NS_NONE */
    uint32_t nin_links; /* non-empty links into this node */
    uint32_t nin_pkts;  /* packets on links into this node */
    uint32_t stall_ppm;
    uint32_t stall_max;
    uint32_t stall_idx; /* index in sim->stalled, or NS_NONE */
    uint64_t stall_until;
    int killed;
} ns_node;

/* A packet held off its link (delay). */
typedef struct ns_held {
    uint64_t due;
    uint64_t seq;
    ns_pkt *p;
} ns_held;

typedef struct ns_kill {
    int32_t rank;
    uint64_t at;
} ns_kill;

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
    uint64_t ninflight; /* on links + held */
    uint64_t nlinked;   /* on links */
    uint64_t nblocked; /* sum of nodes[].nblocked */

    ns_held *pen; /* min-heap on (due, seq) */
    uint32_t npen;
    uint32_t cappen;
    uint64_t pen_seq;
    int32_t *stalled; /* stalled destinations (n entries) */
    uint32_t nstalled;
    ns_kill *kills;   /* scheduled kills, in scheduling order */
    uint32_t nkills;
    uint32_t capkills;
    uint64_t now;     /* the clock (nicsim_now) */
    uint64_t frng[4]; /* fault decisions */

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
/* PRNG: bounded draws over nicsim_prng.h (xoshiro256** from splitmix64) */
/* ------------------------------------------------------------------ */


/* Uniform in [0, bound), bound > 0 (Lemire's multiply-shift, with the
 * rejection step so it is exactly uniform). */
static uint32_t rng_below(uint64_t s[4], uint32_t bound)
{
    uint64_t m = (nicsim_xoshiro_next(s) >> 32) * (uint64_t)bound;
    uint32_t l = (uint32_t)m;
    if (l < bound) {
        uint32_t t = (uint32_t)(-bound) % bound;
        while (l < t) {
            m = (nicsim_xoshiro_next(s) >> 32) * (uint64_t)bound;
            l = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

/* Uniform in [0, bound), bound > 0. */
static uint64_t rng_below64(uint64_t s[4], uint64_t bound)
{
    uint64_t t = (0 - bound) % bound, x;
    do
        x = nicsim_xoshiro_next(s);
    while (x < t);
    return x % bound;
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
    p->is_copy = 0;
    p->fated = 0;
    p->corrupted = 0;
    p->rdma = 0;
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

static int ensure_row(nicsim *sim, int32_t src)
{
    if (sim->rows[src] == NULL) {
        ns_link *row = calloc(sim->n, sizeof *row);
        uint32_t i;
        if (row == NULL)
            return QUAY_ENOMEM;
        for (i = 0; i < sim->n; i++)
            row[i].active = NS_NONE;
        sim->rows[src] = row;
    }
    return 0;
}

/* The EAGAIN stamp of the packet at `idx` of `l` counts in nblocked. */
static int stamp_counted(const nicsim *sim, const ns_link *l, uint32_t idx);

/* Forget the stamp of the packet at `idx` (it leaves the head, or the
 * link), uncounting it if it counted. */
static void unstamp(nicsim *sim, ns_link *l, uint32_t idx);

/* Queue `p` on its link at position `idx` (<= len; len: the tail). */
static int link_insert(nicsim *sim, ns_pkt *p, uint32_t idx)
{
    int32_t src = p->src, dst = p->dst;
    uint32_t id;
    ns_link *l;
    int rc = ensure_row(sim, src);
    if (rc != 0)
        return rc;
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
    if (idx >= l->len) {
        l->ring[(l->head + l->len) & (l->cap - 1)] = p;
    } else {
        uint32_t mask = l->cap - 1, i;
        if (idx == 0 && !sim->cfg.reorder)
            unstamp(sim, l, 0); /* the old head is a head no more */
        for (i = l->len; i > idx; i--)
            l->ring[(l->head + i) & mask] = l->ring[(l->head + i - 1) & mask];
        l->ring[(l->head + idx) & mask] = p;
    }
    l->len++;
    if (l->active == NS_NONE) {
        l->active = sim->nactive;
        sim->active[sim->nactive++] = id;
        sim->nodes[dst].nin_links++;
    }
    sim->nodes[dst].nin_pkts++;
    sim->nlinked++;
    return 0;
}

static ns_pkt *link_at(const ns_link *l, uint32_t i)
{
    return l->ring[(l->head + i) & (l->cap - 1)];
}

static int stamp_counted(const nicsim *sim, const ns_link *l, uint32_t idx)
{
    return (sim->cfg.reorder || idx == 0) && pkt_blocked(sim, link_at(l, idx));
}

static void unstamp(nicsim *sim, ns_link *l, uint32_t idx)
{
    ns_pkt *p = link_at(l, idx);
    if (stamp_counted(sim, l, idx)) {
        sim->nodes[p->dst].nblocked--;
        sim->nblocked--;
    }
    p->blocked_epoch = NS_NEVER;
}

/* Unlink the packet at position `idx` of link `id`, keeping the order of
 * the others (shift the shorter side). The caller accounts for ninflight
 * and the packet itself. */
static void link_remove(nicsim *sim, uint32_t id, uint32_t idx)
{
    ns_link *l = link_get(sim, id);
    ns_node *dn = &sim->nodes[id % sim->n];
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
    sim->nlinked--;
    dn->nin_pkts--;
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
        dn->nin_links--;
    }
}

/* ------------------------------------------------------------------ */
/* Fault helpers                                                        */
/* ------------------------------------------------------------------ */

/* Yes with probability ppm / 1e6; no draw at 0 or at certainty. */
static int draw_ppm(nicsim *sim, uint32_t ppm)
{
    if (ppm == 0)
        return 0;
    if (ppm >= NICSIM_PPM_ONE)
        return 1;
    return rng_below(sim->frng, NICSIM_PPM_ONE) < ppm;
}

/* K uniform in 1..max (0: the default). */
static uint32_t draw_hold(nicsim *sim, uint32_t max)
{
    if (max == 0)
        max = NICSIM_HOLD_MAX_DEFAULT;
    return max == 1 ? 1 : 1 + rng_below(sim->frng, max);
}

static const nicsim_faults *link_faults(const nicsim *sim, int32_t src,
                                        int32_t dst)
{
    const ns_link *row = sim->rows[src];
    if (row != NULL && row[dst].fx != NULL && row[dst].fx->has_faults)
        return &row[dst].fx->f;
    return &sim->cfg.faults;
}

static int link_blackholed(const nicsim *sim, int32_t src, int32_t dst)
{
    const ns_link *row = sim->rows[src];
    return row != NULL && row[dst].fx != NULL &&
           sim->now >= row[dst].fx->blackhole_at;
}

static ns_lfx *link_fx(nicsim *sim, int32_t src, int32_t dst)
{
    ns_link *l;
    if (ensure_row(sim, src) != 0)
        return NULL;
    l = &sim->rows[src][dst];
    if (l->fx == NULL) {
        l->fx = calloc(1, sizeof *l->fx);
        if (l->fx == NULL)
            return NULL;
        l->fx->blackhole_at = NS_NEVER;
    }
    return l->fx;
}

static int valid_faults(const nicsim_faults *f)
{
    return f->drop_ppm <= NICSIM_PPM_ONE && f->dup_ppm <= NICSIM_PPM_ONE &&
           f->corrupt_ppm <= NICSIM_PPM_ONE &&
           f->delay_ppm <= NICSIM_PPM_ONE &&
           f->reorder_ppm <= NICSIM_PPM_ONE &&
           f->delay_max <= NICSIM_HOLD_MAX_LIMIT;
}

static int pen_less(const ns_held *a, const ns_held *b)
{
    return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void pen_sift_down(nicsim *sim, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, m = i;
        ns_held t;
        if (l < sim->npen && pen_less(&sim->pen[l], &sim->pen[m]))
            m = l;
        if (l + 1 < sim->npen && pen_less(&sim->pen[l + 1], &sim->pen[m]))
            m = l + 1;
        if (m == i)
            return;
        t = sim->pen[i];
        sim->pen[i] = sim->pen[m];
        sim->pen[m] = t;
        i = m;
    }
}

static int pen_push(nicsim *sim, ns_pkt *p, uint64_t due)
{
    uint32_t i;
    if (sim->npen == sim->cappen) {
        uint32_t ncap = sim->cappen ? sim->cappen * 2 : 16;
        ns_held *np;
        if (ncap < sim->cappen)
            return QUAY_ENOMEM;
        np = realloc(sim->pen, (size_t)ncap * sizeof *np);
        if (np == NULL)
            return QUAY_ENOMEM;
        sim->pen = np;
        sim->cappen = ncap;
    }
    i = sim->npen++;
    sim->pen[i].due = due;
    sim->pen[i].seq = sim->pen_seq++;
    sim->pen[i].p = p;
    while (i > 0) {
        uint32_t up = (i - 1) / 2;
        ns_held t;
        if (!pen_less(&sim->pen[i], &sim->pen[up]))
            break;
        t = sim->pen[i];
        sim->pen[i] = sim->pen[up];
        sim->pen[up] = t;
        i = up;
    }
    return 0;
}

static ns_pkt *pen_pop(nicsim *sim)
{
    ns_pkt *p = sim->pen[0].p;
    sim->npen--;
    if (sim->npen > 0) {
        sim->pen[0] = sim->pen[sim->npen];
        pen_sift_down(sim, 0);
    }
    return p;
}

static int node_stalled(const nicsim *sim, int32_t r)
{
    return sim->nodes[r].stall_idx != NS_NONE;
}

static void stall_end(nicsim *sim, int32_t r)
{
    ns_node *nd = &sim->nodes[r];
    uint32_t i = nd->stall_idx;
    if (i == NS_NONE)
        return;
    sim->nstalled--;
    if (i != sim->nstalled) {
        int32_t last = sim->stalled[sim->nstalled];
        sim->stalled[i] = last;
        sim->nodes[last].stall_idx = i;
    }
    nd->stall_idx = NS_NONE;
}

static void emit_fault(nicsim *sim, int kind, int32_t rank, int32_t peer,
                       const ns_pkt *p, uint64_t aux)
{
    nicsim_event ev;
    if (sim->event_cb == NULL)
        return;
    memset(&ev, 0, sizeof ev);
    ev.kind = kind;
    ev.rank = rank;
    ev.peer = peer;
    ev.aux = aux;
    if (p != NULL) {
        ev.pkt_id = p->id;
        ev.len = p->len;
        ev.data = p->data;
    }
    emit(sim, &ev);
}

/* A packet that left the network without being offered to its engine. */
static void opd_push(nicsim *sim, int32_t r, uint64_t token, int status);

static void pkt_lost(nicsim *sim, ns_pkt *p, uint64_t reason)
{
    /* A lost RDMA operation (an end killed, the link black-holed) still
     * completes at a live initiator, as failed. */
    if (p->rdma && !sim->nodes[p->src].killed)
        opd_push(sim, p->src, p->token, QUAY_EPEER);
    if (reason == NICSIM_DROP_RANDOM)
        sim->st.drops++;
    else if (reason == NICSIM_DROP_BLACKHOLE)
        sim->st.blackholed++;
    else
        sim->st.killed_pkts++;
    emit_fault(sim, NICSIM_EV_DROP, p->dst, p->src, p, reason);
    pkt_release(sim, p);
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

/* Put a packet that is on the wire on its way: held off its link
 * (delay_ppm), or queued on it, possibly ahead of others (reorder_ppm).
 * The fault event to report afterwards goes to *fev (kind 0: none). */
static int place(nicsim *sim, ns_pkt *p, const nicsim_faults *f,
                 nicsim_event *fev)
{
    const ns_link *row;
    uint32_t len, idx;
    int rc;
    fev->kind = 0;
    if (draw_ppm(sim, f->delay_ppm)) {
        uint32_t k = draw_hold(sim, f->delay_max);
        rc = pen_push(sim, p, sim->now + k);
        if (rc != 0)
            return rc;
        sim->st.delays++;
        fev->kind = NICSIM_EV_DELAY;
        fev->aux = k;
    } else {
        row = sim->rows[p->src];
        len = row != NULL ? row[p->dst].len : 0;
        idx = len;
        if (len > 0 && draw_ppm(sim, f->reorder_ppm))
            idx = rng_below(sim->frng, len);
        rc = link_insert(sim, p, idx);
        if (rc != 0)
            return rc;
        if (idx < len) {
            sim->st.reorders++;
            fev->kind = NICSIM_EV_REORDER;
            fev->aux = len - idx;
        }
    }
    sim->ninflight++;
    if (sim->ninflight > sim->st.inflight_peak)
        sim->st.inflight_peak = sim->ninflight;
    return 0;
}

static void emit_placed(nicsim *sim, const ns_pkt *p, const nicsim_event *fev)
{
    if (fev->kind != 0)
        emit_fault(sim, fev->kind, p->src, p->dst, p, fev->aux);
}

/*
 * RDMA_PUT / RDMA_GET: an operation on the link like a packet (delivery
 * order stays the scheduler's choice; delay, reorder and NIC stalls apply)
 * but never dropped, duplicated or corrupted: an RDMA NIC's transport is
 * reliable, and a refused key is reported, not lost. A PUT's data is read
 * from the initiator at issue; on delivery the target's key, offset and
 * length are checked by the target engine (quay_mem_resolve), the data
 * moved, and the initiator's op_done queued with the result.
 */
static void pull_rdma(nicsim *sim, int32_t r, const quay_action *a)
{
    static const nicsim_faults reliable; /* timing faults only, below */
    int put = a->kind == QUAY_ACT_RDMA_PUT;
    int atomic = a->kind == QUAY_ACT_RDMA_ATOMIC;
    nicsim_event fev;
    const nicsim_faults *f;
    ns_pkt *p;
    int rc;
    if (a->peer < 0 || (uint32_t)a->peer >= sim->n || a->peer == r ||
        (a->rdma.local == NULL && a->rdma.len != 0)) {
        note_error(sim, r, a->peer, QUAY_EINVAL);
        opd_push(sim, r, a->token, QUAY_EINVAL);
        return;
    }
    p = pkt_alloc(sim, put ? a->rdma.len : 0);
    if (p == NULL) {
        note_error(sim, r, a->peer, QUAY_ENOMEM);
        opd_push(sim, r, a->token, QUAY_EPEER);
        return;
    }
    if (put && a->rdma.len != 0)
        memcpy(p->data, a->rdma.local, (size_t)a->rdma.len);
    p->id = sim->next_pkt_id++;
    p->src = r;
    p->dst = a->peer;
    p->rdma = put ? NS_RDMA_PUT : atomic ? NS_RDMA_ATOMIC : NS_RDMA_GET;
    p->aop = a->atomic.op;
    p->aoperand = a->atomic.operand;
    p->acompare = a->atomic.compare;
    p->token = a->token;
    p->key = a->rdma.key;
    p->offset = a->rdma.offset;
    p->rlen = a->rdma.len;
    p->local = a->rdma.local;
    p->fated = 1; /* never dropped or corrupted */
    sim->st.rdma_ops++;
    if (sim->nodes[r].killed || sim->nodes[a->peer].killed) {
        pkt_lost(sim, p, NICSIM_DROP_KILLED);
        return;
    }
    if (link_blackholed(sim, r, a->peer)) {
        pkt_lost(sim, p, NICSIM_DROP_BLACKHOLE);
        return;
    }
    /* Delay and reorder as the link's, nothing that loses or copies. */
    f = link_faults(sim, r, a->peer);
    nicsim_faults timing = reliable;
    timing.delay_ppm = f->delay_ppm;
    timing.delay_max = f->delay_max;
    timing.reorder_ppm = f->reorder_ppm;
    rc = place(sim, p, &timing, &fev);
    if (rc != 0) {
        pkt_release(sim, p);
        note_error(sim, r, a->peer, rc);
        opd_push(sim, r, a->token, QUAY_EPEER);
    }
}

static void rdma_execute(nicsim *sim, ns_pkt *p)
{
    void *addr = NULL;
    int put = p->rdma == NS_RDMA_PUT;
    if (p->rdma == NS_RDMA_ATOMIC) {
        /* The target NIC: one operation at a time on that engine's memory. */
        uint64_t old = 0;
        int arc = quay_mem_atomic(sim->nodes[p->dst].e, p->src, p->key, p->offset, p->aop,
                                  p->aoperand, p->acompare, &old);
        if (arc == 0)
            memcpy(p->local, &old, sizeof old);
        else
            sim->st.rdma_refused++;
        opd_push(sim, p->src, p->token, arc);
        bump(sim, p->src);
        return;
    }
    int rc = quay_mem_resolve(sim->nodes[p->dst].e, p->src, p->key, p->offset, p->rlen,
                              put ? QUAY_MEM_WRITE : QUAY_MEM_READ, &addr);
    if (rc == 0 && p->rlen != 0) {
        if (put)
            memcpy(addr, p->data, (size_t)p->rlen);
        else
            memcpy(p->local, addr, (size_t)p->rlen);
    }
    if (rc == 0)
        sim->st.rdma_bytes += p->rlen;
    else
        sim->st.rdma_refused++;
    opd_push(sim, p->src, p->token, rc);
    bump(sim, p->src);
}

static void pull_send(nicsim *sim, int32_t r, const quay_action *a)
{
    uint64_t total = 0;
    uint32_t i;
    ns_pkt *p;
    nicsim_event ev, fev;
    const nicsim_faults *f;
    int rc, lost = -1;

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
    f = link_faults(sim, r, a->peer);
    fev.kind = 0;
    if (sim->nodes[r].killed || sim->nodes[a->peer].killed)
        lost = NICSIM_DROP_KILLED;
    else if (link_blackholed(sim, r, a->peer))
        lost = NICSIM_DROP_BLACKHOLE;
    if (lost < 0) {
        rc = place(sim, p, f, &fev);
        if (rc != 0) {
            pkt_release(sim, p);
            note_error(sim, r, a->peer, rc);
            opd_push(sim, r, a->token, QUAY_EPEER);
            return;
        }
    }
    sim->st.sends++;
    if (sim->nodes[r].killed) {
        sim->st.epeer_op_dones++;
        opd_push(sim, r, a->token, QUAY_EPEER);
    } else {
        opd_push(sim, r, a->token, 0);
    }
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
    if (lost >= 0) {
        pkt_lost(sim, p, (uint64_t)lost);
        return;
    }
    emit_placed(sim, p, &fev);
    if (draw_ppm(sim, f->dup_ppm)) {
        ns_pkt *c = pkt_alloc(sim, p->len);
        if (c == NULL) {
            note_error(sim, r, a->peer, QUAY_ENOMEM);
            return;
        }
        /* `p` may sit in the pen or on the link: its bytes are intact */
        if (p->len != 0)
            memcpy(c->data, p->data, (size_t)p->len);
        c->id = sim->next_pkt_id++;
        c->src = r;
        c->dst = a->peer;
        c->is_copy = 1;
        rc = place(sim, c, f, &fev);
        if (rc != 0) {
            pkt_release(sim, c);
            note_error(sim, r, a->peer, rc);
            return;
        }
        sim->st.dups++;
        emit_fault(sim, NICSIM_EV_DUP, r, a->peer, c, p->id);
        emit_placed(sim, c, &fev);
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
        case QUAY_ACT_SEND_MULTI: {
            /* One descriptor, many destinations: a packet per copy. */
            sim->st.multi_sends++;
            uint32_t extra = a.nmulti < QUAY_MULTI_MAX ? a.nmulti : QUAY_MULTI_MAX;
            quay_action one = a;
            one.kind = QUAY_ACT_SEND;
            pull_send(sim, r, &one);
            for (uint32_t i = 0; i < extra; i++) {
                one.peer = a.multi[i].peer;
                one.token = a.multi[i].token;
                one.iov[0] = a.multi[i].hdr;
                pull_send(sim, r, &one);
            }
            break;
        }
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
        case QUAY_ACT_RDMA_ATOMIC:
            pull_rdma(sim, r, &a);
            break;
        default:
            note_error(sim, r, a.peer, QUAY_EINVAL);
            break;
        }
    }
    if (got == NS_MAX_ACTIONS_PER_PULL)
        note_error(sim, r, -1, QUAY_EINTERNAL);
    sim->in_pull = 0;
    /* Even without an action the engine may have moved: quay_next_action
     * delivers self traffic inside the call (a probe or a deferred packet
     * waiting for that message must get another chance). */
    bump(sim, r);
}

/* Flip 1..3 distinct bits of `p`. */
static void corrupt(nicsim *sim, ns_pkt *p)
{
    uint64_t nbits = p->len * 8, pos[3];
    uint32_t nb = 1 + rng_below(sim->frng, 3), i, j;
    if (nb > nbits)
        nb = (uint32_t)nbits;
    for (i = 0; i < nb; i++) {
        int fresh;
        do {
            pos[i] = rng_below64(sim->frng, nbits);
            fresh = 1;
            for (j = 0; j < i; j++)
                if (pos[j] == pos[i])
                    fresh = 0;
        } while (!fresh);
        p->data[pos[i] >> 3] ^= (unsigned char)(1u << (pos[i] & 7));
    }
    p->corrupted = 1;
    sim->st.corrupts++;
    sim->st.corrupt_bits += nb;
    emit_fault(sim, NICSIM_EV_CORRUPT, p->dst, p->src, p, nb);
}

static uint64_t pkt_flags(const ns_pkt *p)
{
    return (p->is_copy ? (uint64_t)NICSIM_PKT_COPY : 0) |
           (p->corrupted ? (uint64_t)NICSIM_PKT_CORRUPTED : 0);
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

    if (l->fx != NULL && link_blackholed(sim, src, dst)) {
        link_remove(sim, id, idx);
        sim->ninflight--;
        pkt_lost(sim, p, NICSIM_DROP_BLACKHOLE);
        return;
    }
    if (draw_ppm(sim, nd->stall_ppm)) {
        uint32_t k = draw_hold(sim, nd->stall_max);
        nd->stall_until = sim->now + k;
        nd->stall_idx = sim->nstalled;
        sim->stalled[sim->nstalled++] = dst;
        sim->st.stalls++;
        emit_fault(sim, NICSIM_EV_STALL, dst, src, p, k);
        return;
    }
    if (p->rdma) {
        link_remove(sim, id, idx);
        sim->ninflight--;
        rdma_execute(sim, p);
        pkt_release(sim, p);
        return;
    }
    if (!p->fated) {
        const nicsim_faults *f = link_faults(sim, src, dst);
        p->fated = 1;
        if (draw_ppm(sim, f->drop_ppm)) {
            link_remove(sim, id, idx);
            sim->ninflight--;
            pkt_lost(sim, p, NICSIM_DROP_RANDOM);
            return;
        }
        if (p->len > 0 && draw_ppm(sim, f->corrupt_ppm))
            corrupt(sim, p);
    }
    if (sim->event_cb != NULL) {
        memset(&ev, 0, sizeof ev);
        ev.kind = NICSIM_EV_DELIVER;
        ev.rank = dst;
        ev.peer = src;
        ev.pkt_id = p->id;
        ev.len = p->len;
        ev.aux = pkt_flags(p);
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
            ev.aux = pkt_flags(p);
            emit(sim, &ev);
        }
        return;
    }
    link_remove(sim, id, idx);
    sim->ninflight--;
    if (rc == 0) {
        sim->st.deliveries++;
        sim->st.bytes_delivered += p->len;
        sim->st.dup_accepted += p->is_copy;
        sim->st.corrupt_accepted += p->corrupted;
        bump(sim, dst);
        mark_dirty(sim, dst);
    } else {
        sim->st.dup_rejected += p->is_copy;
        sim->st.corrupt_rejected += p->corrupted;
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
            ev.aux = pkt_flags(p);
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
    uint64_t cand = sim->cfg.reorder ? sim->nlinked : sim->nactive;
    uint64_t n = cand - sim->nblocked;
    uint32_t i;
    for (i = 0; i < sim->nstalled; i++) {
        const ns_node *nd = &sim->nodes[sim->stalled[i]];
        n -= (sim->cfg.reorder ? nd->nin_pkts : nd->nin_links) - nd->nblocked;
    }
    return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

/* Deliver the k-th deliverable packet (k < n_deliverable). */
static void deliver_kth(nicsim *sim, uint32_t k)
{
    uint32_t i, j;
    for (i = 0; i < sim->nactive; i++) {
        uint32_t id = sim->active[i];
        ns_link *l = link_get(sim, id);
        if (sim->nstalled != 0 && node_stalled(sim, (int32_t)(id % sim->n)))
            continue;
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

/* Discard every packet of link src -> dst. */
static void purge_link(nicsim *sim, int32_t src, int32_t dst)
{
    ns_link *l;
    uint32_t id = (uint32_t)src * sim->n + (uint32_t)dst;
    if (sim->rows[src] == NULL)
        return;
    l = &sim->rows[src][dst];
    while (l->len > 0) {
        ns_pkt *p = link_at(l, 0);
        unstamp(sim, l, 0);
        link_remove(sim, id, 0);
        sim->ninflight--;
        pkt_lost(sim, p, NICSIM_DROP_KILLED);
    }
}

static void do_kill(nicsim *sim, int32_t r)
{
    ns_node *nd = &sim->nodes[r];
    uint32_t i, k;
    if (nd->killed)
        return;
    nd->killed = 1;
    sim->st.kills++;
    emit_fault(sim, NICSIM_EV_KILL, r, -1, NULL, 0);
    for (i = 0; i < sim->n; i++)
        purge_link(sim, r, (int32_t)i);
    for (i = 0; i < sim->n; i++)
        if ((int32_t)i != r)
            purge_link(sim, (int32_t)i, r);
    for (i = 0, k = 0; i < sim->npen; i++) {
        ns_pkt *p = sim->pen[i].p;
        if (p->src == r || p->dst == r) {
            sim->ninflight--;
            pkt_lost(sim, p, NICSIM_DROP_KILLED);
        } else {
            sim->pen[k++] = sim->pen[i];
        }
    }
    sim->npen = k;
    for (i = sim->npen / 2; i-- > 0;)
        pen_sift_down(sim, i);
    for (i = 0; i < sim->nopd; i++) {
        if (sim->opd[i].rank == r && sim->opd[i].status == 0) {
            sim->opd[i].status = QUAY_EPEER;
            sim->st.epeer_op_dones++;
        }
    }
    stall_end(sim, r);
}

/* After every event: kills that are due, held packets whose time came,
 * stalls that ended; and if nothing is enabled while packets are still
 * held back, move the clock to the next release (see nicsim_now). */
static void settle(nicsim *sim)
{
    for (;;) {
        uint64_t next = NS_NEVER;
        uint32_t i = 0;
        while (i < sim->nkills) {
            if (sim->kills[i].at <= sim->now) {
                int32_t r = sim->kills[i].rank;
                memmove(&sim->kills[i], &sim->kills[i + 1],
                        (sim->nkills - i - 1) * sizeof *sim->kills);
                sim->nkills--;
                do_kill(sim, r);
            } else {
                i++;
            }
        }
        while (sim->npen > 0 && sim->pen[0].due <= sim->now) {
            ns_pkt *p = pen_pop(sim);
            int rc = link_insert(sim, p, UINT32_MAX);
            if (rc != 0) {
                note_error(sim, p->dst, p->src, rc);
                sim->ninflight--;
                pkt_lost(sim, p, NICSIM_DROP_RANDOM);
            }
        }
        i = 0;
        while (i < sim->nstalled) {
            int32_t r = sim->stalled[i];
            if (sim->nodes[r].stall_until <= sim->now)
                stall_end(sim, r); /* swaps another one into i */
            else
                i++;
        }
        if (sim->npen == 0 && sim->nstalled == 0)
            return;
        if (sim->ndirty + n_deliverable(sim) + sim->nopd != 0)
            return;
        if (sim->npen > 0)
            next = sim->pen[0].due;
        for (i = 0; i < sim->nstalled; i++)
            if (sim->nodes[sim->stalled[i]].stall_until < next)
                next = sim->nodes[sim->stalled[i]].stall_until;
        sim->now = next;
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
        cfg->reorder > 1 || cfg->auto_pull > 1 || !valid_faults(&cfg->faults) ||
        cfg->stall_ppm > NICSIM_PPM_ONE || cfg->stall_max > NICSIM_HOLD_MAX_LIMIT)
        return QUAY_EINVAL;

    sim = calloc(1, sizeof *sim);
    if (sim == NULL)
        return QUAY_ENOMEM;
    sim->cfg = *cfg;
    sim->n = (uint32_t)cfg->nranks;
    sim->nodes = calloc(sim->n, sizeof *sim->nodes);
    sim->rows = calloc(sim->n, sizeof *sim->rows);
    sim->dirty = calloc(sim->n, sizeof *sim->dirty);
    sim->stalled = calloc(sim->n, sizeof *sim->stalled);
    if (sim->nodes == NULL || sim->rows == NULL || sim->dirty == NULL ||
        sim->stalled == NULL) {
        nicsim_free(sim);
        return QUAY_ENOMEM;
    }
    for (i = 0; i < sim->n; i++) {
        sim->nodes[i].dirty_idx = NS_NONE;
        sim->nodes[i].stall_idx = NS_NONE;
        sim->nodes[i].stall_ppm = cfg->stall_ppm;
        sim->nodes[i].stall_max = cfg->stall_max;
    }
    x = cfg->seed;
    for (i = 0; i < 4; i++)
        sim->rng[i] = nicsim_splitmix64(&x);
    /* the fault stream continues the same splitmix64 sequence */
    for (i = 0; i < 4; i++)
        sim->frng[i] = nicsim_splitmix64(&x);
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
                free(l->fx);
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
    for (i = 0; i < sim->npen; i++)
        free(sim->pen[i].p);
    free(sim->pen);
    free(sim->stalled);
    free(sim->kills);
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
    nd = n_deliverable(sim);
    if (choice >= sim->ndirty + nd + sim->nopd)
        return QUAY_EINVAL;
    sim->step_fatal = 0;
    sim->now++;
    if (choice < sim->ndirty) {
        pull(sim, sim->dirty[choice]);
    } else if (choice - sim->ndirty < nd) {
        deliver_kth(sim, choice - sim->ndirty);
    } else {
        op_done(sim, choice - sim->ndirty - nd);
    }
    sim->st.steps++;
    settle(sim);
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
        if (!pkt_blocked(sim, link_at(l, idx)) &&
            (sim->nstalled == 0 || !node_stalled(sim, (int32_t)(id % sim->n)))) {
            sim->step_fatal = 0;
            sim->now++;
            deliver(sim, id, idx);
            sim->st.steps++;
            settle(sim);
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
    st->now = sim->now;
    st->delayed = sim->npen;
}

int nicsim_selfcheck(const nicsim *sim)
{
    uint64_t linked = 0, blocked = 0, deliverable = 0;
    uint32_t i, j, k, nactive = 0;
    for (i = 0; i < sim->n; i++) {
        uint32_t inl = 0, inp = 0, nb = 0;
        for (j = 0; j < sim->n; j++) {
            const ns_link *l = sim->rows[j] != NULL ? &sim->rows[j][i] : NULL;
            if (l == NULL || l->len == 0) {
                if (l != NULL && l->active != NS_NONE)
                    return 1;
                continue;
            }
            if (l->active == NS_NONE || l->active >= sim->nactive ||
                sim->active[l->active] != j * sim->n + i)
                return 2;
            nactive++;
            inl++;
            inp += l->len;
            for (k = 0; k < l->len; k++) {
                const ns_pkt *p = link_at(l, k);
                int cur = pkt_blocked(sim, p);
                if (p->src != (int32_t)j || p->dst != (int32_t)i)
                    return 3;
                if (cur && !sim->cfg.reorder && k != 0)
                    return 4; /* FIFO: a current stamp off the head */
                nb += (uint32_t)cur;
                if (!cur && (sim->cfg.reorder || k == 0) &&
                    !node_stalled(sim, (int32_t)i))
                    deliverable++;
            }
        }
        if (inl != sim->nodes[i].nin_links || inp != sim->nodes[i].nin_pkts)
            return 5;
        if (nb != sim->nodes[i].nblocked)
            return 6;
        if (sim->nodes[i].stall_idx != NS_NONE &&
            (sim->nodes[i].stall_idx >= sim->nstalled ||
             sim->stalled[sim->nodes[i].stall_idx] != (int32_t)i ||
             sim->nodes[i].killed))
            return 7;
        linked += inp;
        blocked += nb;
    }
    if (nactive != sim->nactive || linked != sim->nlinked ||
        blocked != sim->nblocked)
        return 8;
    if (sim->ninflight != sim->nlinked + sim->npen)
        return 9;
    if (deliverable != n_deliverable(sim))
        return 10;
    for (i = 1; i < sim->npen; i++)
        if (pen_less(&sim->pen[i], &sim->pen[(i - 1) / 2]))
            return 11;
    for (i = 0; i < sim->npen; i++)
        if (sim->nodes[sim->pen[i].p->src].killed ||
            sim->nodes[sim->pen[i].p->dst].killed)
            return 12;
    /* settled: nothing enabled means nothing held back */
    if (sim->ndirty + n_deliverable(sim) + sim->nopd == 0 &&
        (sim->npen != 0 || sim->nstalled != 0))
        return 13;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Faults: public API                                                   */
/* ------------------------------------------------------------------ */

uint64_t nicsim_now(const nicsim *sim)
{
    return sim == NULL ? 0 : sim->now;
}

static int rank_ok(const nicsim *sim, int32_t r)
{
    return r >= 0 && (uint32_t)r < sim->n;
}

int nicsim_set_link_faults(nicsim *sim, int32_t src, int32_t dst,
                           const nicsim_faults *f)
{
    ns_lfx *fx;
    if (sim == NULL)
        return QUAY_EINVAL;
    if (!rank_ok(sim, src) || !rank_ok(sim, dst))
        return QUAY_ERANK;
    if (f != NULL && !valid_faults(f))
        return QUAY_EINVAL;
    if (f == NULL && (sim->rows[src] == NULL || sim->rows[src][dst].fx == NULL))
        return 0;
    fx = link_fx(sim, src, dst);
    if (fx == NULL)
        return QUAY_ENOMEM;
    fx->has_faults = f != NULL;
    if (f != NULL)
        fx->f = *f;
    return 0;
}

int nicsim_set_rank_stall(nicsim *sim, int32_t rank, uint32_t stall_ppm,
                          uint32_t stall_max)
{
    if (sim == NULL)
        return QUAY_EINVAL;
    if (!rank_ok(sim, rank))
        return QUAY_ERANK;
    if (stall_ppm > NICSIM_PPM_ONE || stall_max > NICSIM_HOLD_MAX_LIMIT)
        return QUAY_EINVAL;
    sim->nodes[rank].stall_ppm = stall_ppm;
    sim->nodes[rank].stall_max = stall_max;
    return 0;
}

int nicsim_blackhole_link(nicsim *sim, int32_t src, int32_t dst, uint64_t at)
{
    ns_lfx *fx;
    if (sim == NULL)
        return QUAY_EINVAL;
    if (!rank_ok(sim, src) || !rank_ok(sim, dst))
        return QUAY_ERANK;
    if (at == NICSIM_NEVER &&
        (sim->rows[src] == NULL || sim->rows[src][dst].fx == NULL))
        return 0;
    fx = link_fx(sim, src, dst);
    if (fx == NULL)
        return QUAY_ENOMEM;
    fx->blackhole_at = at;
    return 0;
}

int nicsim_kill_rank(nicsim *sim, int32_t rank, uint64_t at)
{
    uint32_t i;
    if (sim == NULL)
        return QUAY_EINVAL;
    if (!rank_ok(sim, rank))
        return QUAY_ERANK;
    if (sim->nodes[rank].killed)
        return 0;
    for (i = 0; i < sim->nkills; i++) {
        if (sim->kills[i].rank == rank) {
            memmove(&sim->kills[i], &sim->kills[i + 1],
                    (sim->nkills - i - 1) * sizeof *sim->kills);
            sim->nkills--;
            break;
        }
    }
    if (at == NICSIM_NEVER)
        return 0;
    if (at > sim->now) {
        if (sim->nkills == sim->capkills) {
            uint32_t ncap = sim->capkills ? sim->capkills * 2 : 8;
            ns_kill *nk = realloc(sim->kills, (size_t)ncap * sizeof *nk);
            if (nk == NULL)
                return QUAY_ENOMEM;
            sim->kills = nk;
            sim->capkills = ncap;
        }
        sim->kills[sim->nkills].rank = rank;
        sim->kills[sim->nkills].at = at;
        sim->nkills++;
        return 0;
    }
    do_kill(sim, rank);
    settle(sim);
    return 0;
}

int nicsim_rank_killed(const nicsim *sim, int32_t rank)
{
    return sim != NULL && rank_ok(sim, rank) && sim->nodes[rank].killed;
}
