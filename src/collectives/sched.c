/*
 * sched.c — the lifetime and running of collective schedules (coll.h;
 * build.c builds them). Start turns the edges into per-step successor
 * lists and dependency counts.
 *
 * Running: a step with no unfinished predecessor is ready. Local steps
 * (reduce, copy, join) run at once; sends and receives become RF_COLL
 * engine requests, whose completion (coll_hooks.on_req_done, called from
 * req_complete, possibly deep inside a packet) marks the step done, runs
 * the local steps that became ready, and finishes the schedule if that
 * was all; else it queues the schedule on e->coll.ready, and
 * coll_hooks.progress, called by the engine at the end of its entry
 * points, starts what became ready (no message starts inside a packet).
 * A step that cannot get a request (pool or control queue full) waits on
 * e->coll.blocked and is retried once the engine has room again.
 *
 * Failure: the first error (a peer failed, a message of the wrong length)
 * stops new steps; receives still posted are cancelled; once nothing is
 * in flight the user's request completes with that error.
 */
#include "collectives/coll.h"

#include "collectives/ops.h"

static void sched_progress(quay_engine *e);
static int sched_run(coll_sched *s);
/* What a failed send or receive makes of the schedule: a cancelled one
 * (the peer failed) and an abort (see send_abort: one byte where nothing
 * was due) mean a member failed. */
static int recv_error(const coll_step *st, const quay_req *r)
{
    int err = r->status.error;
    if (err == QUAY_ECANCELLED || (st->kind == CS_RECV && st->len == 0 && err == QUAY_ETRUNCATE))
        return QUAY_EPEER;
    return err;
}

static void sched_on_req_done(quay_engine *e, quay_req *r);
static void sched_finish(coll_sched *s);
static int step_run(coll_sched *s, uint32_t i);

/* ---- lifetime ------------------------------------------------------------------ */

/* Spare schedules kept per engine, and the largest temporary one keeps
 * (a large reduction's scratch is not worth holding on to). */
#define SCHED_SPARE_MAX 4
#define SCHED_SPARE_TMP (64u * 1024u)

static void sched_release(coll_sched *s)
{
    quay_engine *e = s->e;
    qfree(e, s->steps);
    qfree(e, s->edges);
    qfree(e, s->succ);
    qfree(e, s->ready);
    qfree(e, s->tmp);
    qfree(e, s);
}

/* Done with s: keep it, arrays and all, for the next collective (no
 * allocation on back-to-back calls), or free it. */
static void sched_free(coll_sched *s)
{
    quay_engine *e = s->e;
    if (e->coll.st->nspare >= SCHED_SPARE_MAX || ql_linked(&s->link) || ql_linked(&s->rlink) ||
        ql_linked(&s->elink)) {
        sched_release(s);
        return;
    }
    if (s->tmp_cap > SCHED_SPARE_TMP) {
        qfree(e, s->tmp);
        s->tmp = NULL;
        s->tmp_cap = 0;
    }
    ql_push_tail(&e->coll.st->spare, &s->link);
    e->coll.st->nspare++;
}

static int shape_eq(const coll_shape *a, const coll_shape *b)
{
    return a->kind == b->kind && a->alg == b->alg && a->ctx == b->ctx && a->size == b->size &&
           a->rank == b->rank && a->root == b->root && a->dt == b->dt && a->count == b->count &&
           a->in_place == b->in_place && a->commutative == b->commutative;
}

/* A blank schedule: a spare one (its arrays' capacity kept) or a new one.
 * A spare built for `want` keeps its steps too (s->reused); any other has
 * no shape until its builder gives it one (coll_launch, once built).
 *
 * The spares are a cache of built schedules, oldest first: a call of
 * another shape takes a new schedule while fewer than SCHED_SPARE_MAX
 * are kept, and only then rebuilds the least recently finished one, so
 * that a program alternating a few collectives (a broadcast and a
 * barrier) builds each once. */
static coll_sched *sched_blank(quay_engine *e, const coll_shape *want)
{
    qlink *n = NULL;
    if (want != NULL)
        for (qlink *l = ql_first(&e->coll.st->spare); l != NULL; l = ql_next(&e->coll.st->spare, l)) {
            const coll_sched *sp = QUAY_CONTAINER_OF(l, coll_sched, link);
            if (sp->shape.kind != 0 && shape_eq(&sp->shape, want)) {
                n = l;
                break;
            }
        }
    int reuse = n != NULL;
    if (n == NULL && (want == NULL || e->coll.st->nspare >= SCHED_SPARE_MAX))
        n = ql_first(&e->coll.st->spare); /* the oldest: the least likely asked for */
    coll_sched *s;
    if (n == NULL) {
        s = qalloc(e, sizeof *s);
        if (s != NULL)
            memset(s, 0, sizeof *s);
        return s;
    }
    ql_remove(n);
    e->coll.st->nspare--;
    s = QUAY_CONTAINER_OF(n, coll_sched, link);
    /* Its arrays (and, reused as it is, its steps) are kept: only the
     * call's state is cleared. */
    memset(&s->nready, 0, offsetof(coll_sched, run_end) - offsetof(coll_sched, nready));
    if (reuse) {
        s->reused = 1;
    } else {
        s->nsteps = 0;
        s->tmp_len = 0;
        memset(&s->shape, 0, sizeof s->shape);
    }
    return s;
}

/* *arr holds at least n elements of size sz (contents not kept). */
static int reserve(quay_engine *e, void **arr, uint32_t *cap, uint32_t n, size_t sz)
{
    if (n <= *cap && *arr != NULL)
        return 0;
    void *a = qalloc(e, (size_t)n * sz);
    if (a == NULL)
        return -1;
    qfree(e, *arr);
    *arr = a;
    *cap = n;
    return 0;
}

/* The engine's view: hooks set once any schedule exists; engine_free
 * goes through coll_hooks.fini. */
static void sched_fini(quay_engine *e)
{
    struct coll_state *st = e->coll.st;
    offload_fini(e);
    bypass_fini(e);
    qlink *n;
    while ((n = ql_first(&st->active)) != NULL) {
        coll_sched *s = QUAY_CONTAINER_OF(n, coll_sched, link);
        ql_remove(&s->link);
        if (ql_linked(&s->elink))
            ql_remove(&s->elink);
        sched_free(s);
    }
    while ((n = ql_first(&st->early)) != NULL) { /* ended, never called */
        coll_sched *s = QUAY_CONTAINER_OF(n, coll_sched, elink);
        ql_remove(&s->elink);
        sched_free(s);
    }
    while ((n = ql_first(&st->spare)) != NULL) {
        ql_remove(n);
        sched_release(QUAY_CONTAINER_OF(n, coll_sched, link));
    }
    qfree(e, st);
    e->coll.st = NULL;
    e->coll.hooks = NULL;
}

static int coll_emit_any(quay_engine *e, quay_action *a)
{
    return offload_emit(e, a) || bypass_emit(e, a);
}

/* The engine's progress hook: schedules that found no request or control
 * slot go back to the ready queue once there is room for one. */
static void hook_progress(quay_engine *e)
{
    if (!ql_empty(&e->coll.blocked) && e->req_free != NULL && ctrl_space(e))
        ql_splice_tail(&e->coll.ready, &e->coll.blocked);
    sched_progress(e);
}

static int hook_busy(const quay_engine *e)
{
    return e->coll.st->nactive != 0 || !ql_empty(&e->coll.st->early);
}

static const coll_hooks hooks_plain = {
    .progress = hook_progress,
    .pull = coll_emit_any,
    .on_arrival = NULL,
    .on_req_done = sched_on_req_done,
    .busy = hook_busy,
    .fini = sched_fini,
};

static const coll_hooks hooks_bypass = {
    .progress = hook_progress,
    .pull = coll_emit_any,
    .on_arrival = bypass_arrival, /* arrivals may start schedules early */
    .on_req_done = sched_on_req_done,
    .busy = hook_busy,
    .fini = sched_fini,
};

struct coll_state *coll_install(quay_engine *e)
{
    struct coll_state *st = e->coll.st;
    if (st == NULL) {
        st = qalloc(e, sizeof *st);
        if (st == NULL)
            return NULL;
        memset(st, 0, sizeof *st);
        ql_init(&st->active);
        ql_init(&st->early);
        ql_init(&st->spare);
        e->coll.st = st;
    }
    e->coll.hooks = st->byp != NULL ? &hooks_bypass : &hooks_plain;
    return st;
}

int coll_attach(quay_engine *e)
{
    if (coll_install(e) == NULL)
        return QUAY_ENOMEM;
    if (!e->cfg.coll_bypass)
        return 0;
    int rc = bypass_attach(e);
    coll_install(e); /* with the arrival hook */
    return rc;
}

coll_sched *sched_new(quay_engine *e, quay_comm *c, int *rc)
{
    return sched_new_shaped(e, c, NULL, rc);
}

coll_sched *sched_new_shaped(quay_engine *e, quay_comm *c, const coll_shape *shape, int *rc)
{
    if (e->coll.st == NULL && coll_install(e) == NULL) {
        *rc = QUAY_ENOMEM;
        return NULL;
    }
    if (e->coll.st->nactive >= e->cfg.coll_max) {
        *rc = QUAY_EAGAIN;
        return NULL;
    }
    if (c->coll == NULL) {
        /* The twin: same members, context | QUAY_CTX_COLL. */
        int r = comm_create(e, c->ctx | QUAY_CTX_COLL, c->size, c->world, 1, &c->coll);
        if (r != 0) {
            *rc = r == QUAY_ECOMM ? QUAY_EINTERNAL : QUAY_EAGAIN;
            return NULL;
        }
    }
    coll_sched *s = sched_blank(e, shape);
    if (s == NULL) {
        *rc = QUAY_EAGAIN;
        return NULL;
    }
    ql_init(&s->link);
    ql_init(&s->rlink);
    ql_init(&s->elink);
    s->gate = CS_NONE;
    s->byp_own = CS_NONE;
    s->byp_final = CS_NONE;
    s->e = e;
    s->comm = c->coll;
    s->rank = c->myrank;
    s->size = c->size;
    s->ureq = req_alloc(e, RK_COLL, c);
    if (s->ureq == NULL) {
        sched_free(s);
        *rc = QUAY_EAGAIN;
        return NULL;
    }
    *rc = 0;
    return s;
}

void sched_discard(coll_sched *s)
{
    s->shape.kind = 0; /* its steps may be half built: never reuse them */
    req_release(s->e, s->ureq);
    sched_free(s);
}

/* A reused schedule: every step back to waiting on all its predecessors. */
static void sched_rewind(coll_sched *s)
{
    for (uint32_t i = 0; i < s->nsteps; i++) {
        coll_step *st = &s->steps[i];
        st->ndeps = st->ndeps0;
        st->req = NULL;
        st->state = st->ndeps == 0 ? CST_READY : CST_WAIT;
        if (st->ndeps == 0)
            s->ready[s->nready++] = i;
    }
}

/* Edges -> successor lists (counting sort by the earlier step) and
 * dependency counts. */
static int sched_link(coll_sched *s)
{
    quay_engine *e = s->e;
    if (s->reused) {
        sched_rewind(s);
        return 0;
    }
    if (reserve(e, (void **)&s->succ, &s->succ_cap, s->nedges ? s->nedges : 1,
                sizeof *s->succ) != 0 ||
        reserve(e, (void **)&s->ready, &s->ready_cap, s->nsteps ? s->nsteps : 1,
                sizeof *s->ready) != 0)
        return QUAY_EAGAIN;
    for (uint32_t k = 0; k < s->nedges; k++) {
        s->steps[s->edges[2 * k]].nsucc++;
        s->steps[s->edges[2 * k + 1]].ndeps++;
    }
    uint32_t at = 0;
    for (uint32_t i = 0; i < s->nsteps; i++) {
        s->steps[i].succ = at;
        at += s->steps[i].nsucc;
        s->steps[i].nsucc = 0;
    }
    for (uint32_t k = 0; k < s->nedges; k++) {
        coll_step *b = &s->steps[s->edges[2 * k]];
        s->succ[b->succ + b->nsucc++] = s->edges[2 * k + 1];
    }
    s->nedges = 0; /* the edge array stays, for the next build */
    for (uint32_t i = 0; i < s->nsteps; i++)
        s->steps[i].ndeps0 = s->steps[i].ndeps;
    if (s->gate != CS_NONE)
        s->steps[s->gate].ndeps++; /* opened by the local call (sched_claim) */
    /* Ready in index order: algorithms list steps in the order they want
     * them started (e.g. a binomial root sends to its largest subtree
     * first). */
    for (uint32_t i = 0; i < s->nsteps; i++)
        if (s->steps[i].ndeps == 0) {
            s->steps[i].state = CST_READY;
            s->ready[s->nready++] = i;
        }
    return 0;
}

/* Allocate the temporaries and link the steps; on failure s is gone. */
static int sched_prepare(coll_sched *s)
{
    quay_engine *e = s->e;
    int rc = s->err;
    if (rc == 0 && s->tmp_len > s->tmp_cap) {
        qfree(e, s->tmp);
        s->tmp_cap = 0;
        if ((s->tmp = qalloc(e, s->tmp_len)) == NULL)
            rc = QUAY_EAGAIN;
        else
            s->tmp_cap = s->tmp_len;
    }
    if (rc == 0)
        rc = sched_link(s);
    if (rc != 0)
        sched_discard(s);
    return rc;
}

/* Prepare s and make it a running schedule with messages tagged tagbase:
 * its request COLL, counted; queued: its ready steps wait for the
 * progress hook (else the caller runs them). */
static int sched_activate(coll_sched *s, uint32_t tagbase, int queued)
{
    quay_engine *e = s->e;
    int rc = sched_prepare(s);
    if (rc != 0)
        return rc;
    s->tagbase = tagbase;
    req_set_state(e, s->ureq, QUAY_RS_COLL);
    ql_push_tail(&e->coll.st->active, &s->link);
    e->coll.st->nactive++;
    e->st.coll_started++;
    if (queued) {
        ql_push_tail(&e->coll.ready, &s->rlink);
        work_rare(e);
    }
    return 0;
}

int sched_start_early(coll_sched *s, uint32_t tagbase)
{
    int rc = sched_activate(s, tagbase, 1);
    if (rc == 0) {
        ql_push_tail(&s->e->coll.st->early, &s->elink);
        s->e->st.coll_bypassed++;
    }
    return rc;
}

void sched_claim(coll_sched *s, uint8_t *rbuf)
{
    quay_engine *e = s->e;
    ql_remove(&s->elink);
    s->rbuf = rbuf;
    s->ureq->comm->coll_seq++;
    if (s->ended) {
        /* It failed before the call: the call takes the error now. */
        quay_req *u = s->ureq;
        sched_free(s);
        req_complete(e, u);
        return;
    }
    coll_step *g = &s->steps[s->gate];
    if (--g->ndeps == 0) {
        g->state = CST_READY;
        s->ready[s->nready++] = s->gate;
        if (!ql_linked(&s->rlink))
            ql_push_tail(&e->coll.ready, &s->rlink);
        work_rare(e);
    }
}

int sched_start(coll_sched *s, quay_req **req)
{
    /* The sequence number: every member numbers its collectives on the
     * communicator alike, so it names the same call everywhere. */
    quay_comm *c = s->ureq->comm;
    quay_engine *e = s->e;
    int rc = sched_activate(s, (c->coll_seq & 0xFFFFu) << 15, 0);
    if (rc != 0)
        return rc;
    c->coll_seq++;
    *req = s->ureq;
    sched_run(s); /* (it may finish here: the request completes) */
    if (coll_has_ready(&e->coll))
        sched_progress(e); /* what its steps made ready elsewhere */
    return 0;
}

/* ---- running ------------------------------------------------------------------- */

static uint8_t *buf_at(coll_sched *s, int buf, size_t off)
{
    uint8_t *base = buf == CB_RECV ? s->rbuf : buf == CB_TMP ? s->tmp : (uint8_t *)s->sbuf;
    return off != 0 ? base + off : base; /* (zero-byte messages: base may be NULL) */
}

static void step_done(coll_sched *s, uint32_t i)
{
    coll_step *st = &s->steps[i];
    st->state = CST_DONE;
    s->ndone++;
    for (uint32_t k = 0; k < st->nsucc; k++) {
        coll_step *n = &s->steps[s->succ[st->succ + k]];
        if (--n->ndeps == 0) {
            n->state = CST_READY;
            s->ready[s->nready++] = s->succ[st->succ + k];
        }
    }
}

static void fail(coll_sched *s, int code)
{
    if (s->error == 0)
        s->error = code;
}

/* The ready steps that move no message (reduce, copy, join) run at once,
 * those that follow them too; sends and receives stay ready, in order,
 * for sched_run. */
static void run_local_ready(coll_sched *s)
{
    uint32_t keep = 0;
    for (uint32_t k = 0; k < s->nready; k++) { /* (step_done appends) */
        uint32_t i = s->ready[k];
        if (s->steps[i].kind == CS_SEND || s->steps[i].kind == CS_RECV)
            s->ready[keep++] = i;
        else
            (void)step_run(s, i); /* (a local step always runs) */
    }
    s->nready = keep;
}

static void sched_on_req_done(quay_engine *e, quay_req *r)
{
    coll_sched *s = r->user;
    uint32_t i = r->coll_step;
    coll_step *st = &s->steps[i];
    st->req = NULL;
    s->nrunning--;
    if (r->status.error != 0)
        fail(s, recv_error(st, r));
    else if (st->kind == CS_RECV && r->status.count != st->len)
        /* an abort (empty where data was due), or the members disagree */
        fail(s, r->status.count == 0 ? QUAY_EPEER : QUAY_ETRUNCATE);
    step_done(s, i);
    if (s->error == 0 && !s->running) {
        run_local_ready(s);
        if (s->ndone == s->nsteps) {
            sched_finish(s); /* (nothing was left to start) */
            return;
        }
    }
    if (!ql_linked(&s->rlink))
        ql_push_tail(&e->coll.ready, &s->rlink);
    work_rare(e);
}

/* The message step i would have sent, replaced by an abort of the wrong
 * length (0 bytes for a message, 1 byte where an empty one is expected):
 * the receiving member's step fails on the length (QUAY_EPEER: a member
 * failed) and fails its own schedule in turn. Best effort: without a request (pool
 * empty) or to a failed peer, nothing goes. */
static void send_abort(coll_sched *s, uint32_t i)
{
    static const uint8_t one = 0xAB;
    coll_step *st = &s->steps[i];
    quay_req *r = NULL;
    st->state = CST_RUNNING;
    s->nrunning++;
    int rc = p2p_send_post(s->e, s->comm, &one, st->len == 0 ? 1 : 0, st->peer,
                           (int32_t)(s->tagbase | st->subtag), QUAY_SEND_STANDARD, RF_COLL, s, i,
                           &r);
    if (rc != 0) {
        st->state = CST_DONE;
        s->nrunning--;
    } else if (st->state == CST_RUNNING) {
        st->req = r;
    }
}

/* Start step i. 0, or QUAY_EAGAIN: no request or control slot now. */
static int step_run(coll_sched *s, uint32_t i)
{
    quay_engine *e = s->e;
    coll_step *st = &s->steps[i];
    quay_req *r = NULL;
    int rc = 0;
    switch (st->kind) {
    case CS_SEND:
        /* A message the engine takes by copy holds no request: the step
         * is done once it is queued. */
        if (p2p_send_copy(e, s->comm, buf_at(s, st->buf, st->off), st->len, st->peer,
                          (int32_t)(s->tagbase | st->subtag)) == 0) {
            if (st->notify)
                coll_notify(e, comm_world(s->comm, st->peer));
            break;
        }
        /* (not taken so: posted as a request, as a receive is) */
        /* fall through */
    case CS_RECV:
        st->state = CST_RUNNING;
        s->nrunning++;
        if (st->kind == CS_SEND)
            rc = p2p_send_post(e, s->comm, buf_at(s, st->buf, st->off), st->len, st->peer,
                               (int32_t)(s->tagbase | st->subtag), QUAY_SEND_STANDARD, RF_COLL,
                               s, i, &r);
        else
            rc = p2p_recv_post(e, s->comm, buf_at(s, st->buf, st->off), st->len, st->peer,
                               (int32_t)(s->tagbase | st->subtag), RF_COLL, s, i, &r);
        if (rc != 0) {
            st->state = CST_READY;
            s->nrunning--;
            return rc;
        }
        if (st->notify)
            coll_notify(e, comm_world(s->comm, st->peer));
        if (st->state == CST_RUNNING)
            st->req = r; /* not done at once (the hook ran otherwise) */
        return 0;
    case CS_REDUCE:
        op_apply(&s->op, s->dt, buf_at(s, st->buf2, st->off2), buf_at(s, st->buf, st->off),
                 st->len / s->esize);
        break;
    case CS_COPY:
        if (st->len != 0)
            memmove(buf_at(s, st->buf, st->off), buf_at(s, st->buf2, st->off2), st->len);
        break;
    default:
        break;
    }
    step_done(s, i);
    return 0;
}

static void sched_finish(coll_sched *s)
{
    quay_engine *e = s->e;
    ql_remove(&s->link);
    if (ql_linked(&s->rlink))
        ql_remove(&s->rlink);
    e->coll.st->nactive--;
    quay_req *u = s->ureq;
    u->status.error = s->error;
    u->status.count = 0;
    if (s->error != 0)
        e->st.coll_failed++;
    if (ql_linked(&s->elink)) {
        /* Early, and failed (it cannot end otherwise before its gate
         * opens): kept on e->coll.st->early for the call (sched_claim). */
        s->ended = 1;
        return;
    }
    if (s->offloaded) {
        /* An agent's: the host hears of it, nobody holds the request. */
        offload_report(e, s->cookie, s->error);
        req_release(e, u);
        sched_free(s);
        return;
    }
    sched_free(s);
    req_complete(e, u);
}

/* Start what is ready; 1 if a step found no request or control slot
 * (s waits on e->coll.blocked). A step that completes at once (a
 * receive the message was there for) leaves the finish to sched_run. */
static int sched_run_ready(coll_sched *s)
{
    quay_engine *e = s->e;
    uint32_t head = 0;
    while (s->error == 0 && head < s->nready) {
        if (step_run(s, s->ready[head]) != 0) {
            /* Out of requests: wait for room, keeping the rest in order. */
            memmove(s->ready, s->ready + head, (size_t)(s->nready - head) * sizeof *s->ready);
            s->nready -= head;
            /* (a step that completed at once may have queued it again) */
            if (ql_linked(&s->rlink))
                ql_remove(&s->rlink);
            ql_push_tail(&e->coll.blocked, &s->rlink);
            work_rare(e);
            return 1;
        }
        head++;
    }
    s->nready = 0;
    if (s->error != 0 && !s->cancelled) {
        /* Nothing more starts; what waits to be received never will; and
         * every member still waiting for one of our messages gets an
         * abort in its place, so that the failure reaches it too. */
        s->cancelled = 1;
        for (uint32_t i = 0; i < s->nsteps; i++) {
            coll_step *st = &s->steps[i];
            if (st->kind == CS_RECV && st->req != NULL)
                req_cancel(e, st->req);
            else if (st->kind == CS_SEND && (st->state == CST_WAIT || st->state == CST_READY))
                send_abort(s, i);
        }
    }
    return 0;
}

/* Start what is ready; 1 if the schedule is finished (and freed). */
static int sched_run(coll_sched *s)
{
    s->running = 1;
    int blocked = sched_run_ready(s);
    s->running = 0;
    if (!blocked && (s->error != 0 ? s->nrunning == 0 : s->ndone == s->nsteps)) {
        sched_finish(s);
        return 1;
    }
    return 0;
}

static void sched_progress(quay_engine *e)
{
    if (e->coll.npend != 0)
        bypass_dispatch(e);
    qlink *n;
    while ((n = ql_first(&e->coll.ready)) != NULL) {
        coll_sched *s = QUAY_CONTAINER_OF(n, coll_sched, rlink);
        ql_remove(&s->rlink);
        /* A broadcast moving ahead of its call (bypass) still receiving:
         * this engine wants progress before its application comes back.
         * (It cannot finish before the call: the copy-out waits.) */
        if (!sched_run(s) && ql_linked(&s->elink) && s->nrunning != 0)
            coll_notify(e, e->rank);
    }
}
