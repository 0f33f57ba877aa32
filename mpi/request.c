/*
 * request.c — MPI_Request handles and the completion calls: Wait, Test
 * and their all / any / some forms, Request_free, Request_get_status,
 * Cancel, Test_cancelled.
 *
 * A handle is 0x2c000000 | generation << 20 | slot index. Slots live in
 * fixed chunks (their addresses never move: a reduction's context is in
 * the slot while the engine runs it), free slots on a list, and the
 * generation is bumped at release so a stale handle is an error, not
 * someone else's request.
 *
 * A persistent request (MPI_Send_init ..., p2p.c) keeps its slot and its
 * engine request from init to MPI_Request_free. Completing a round makes
 * it inactive instead of releasing it; the completion calls take an
 * inactive one as MPI_REQUEST_NULL (MPI-4.0 §3.7.3: an empty status from
 * Wait, Test and the all forms, ignored by the any and some forms), so a
 * round is reported once.
 */
#include <stdlib.h>
#include <string.h>

#include "qmpi.h"

#define REQ_BASE 0x2c000000
#define REQ_TAG_MASK (~0x03ffffff)
#define REQ_IDX_BITS 20
#define REQ_GEN_MASK 0x3f
#define CHUNK_SLOTS 256
#define MAX_CHUNKS ((1 << REQ_IDX_BITS) / CHUNK_SLOTS)

static qmpi_req *chunks[MAX_CHUNKS];
static int32_t nslots;         /* slots in the chunks so far */
static int32_t free_head = -1; /* list through next_free */
static int32_t orphans = -1;   /* freed reductions still running */

static qmpi_req *slot_at(int32_t i)
{
    uint32_t u = (uint32_t)i; /* never negative: unsigned, a shift and a mask */
    return &chunks[u / CHUNK_SLOTS][u % CHUNK_SLOTS];
}

static int32_t slot_alloc(void)
{
    if (free_head < 0) {
        if (nslots / CHUNK_SLOTS >= MAX_CHUNKS)
            return -1;
        qmpi_req *c = calloc(CHUNK_SLOTS, sizeof *c);
        if (c == NULL)
            return -1;
        chunks[nslots / CHUNK_SLOTS] = c;
        /* Index 0 would make handle 0x2c000000, MPI_REQUEST_NULL. */
        for (int i = CHUNK_SLOTS - 1; i >= 0; i--) {
            int32_t idx = nslots + i;
            c[i].idx = idx;
            if (idx == 0)
                continue;
            c[i].next_free = free_head;
            free_head = idx;
        }
        nslots += CHUNK_SLOTS;
    }
    int32_t i = free_head;
    free_head = slot_at(i)->next_free;
    return i;
}

static int32_t slot_index(const qmpi_req *r)
{
    return r->idx;
}

/* Orphans whose reduction has finished go back to the free list. */
static void reap_orphans(void)
{
    int32_t *link = &orphans;
    while (*link >= 0) {
        int32_t i = *link;
        qmpi_req *r = slot_at(i);
        if (quay_req_test(r->q, NULL)) {
            *link = r->next_free;
            quay_req_free(qmpi.e, r->q);
            r->q = NULL;
            r->kind = 0;
            r->orphan = 0;
            r->gen++;
            r->next_free = free_head;
            free_head = i;
        } else {
            link = &r->next_free;
        }
    }
}

int qmpi_req_new(quay_req *q, MPI_Comm comm, int kind, MPI_Request *h, qmpi_req **slot)
{
    if (orphans >= 0)
        reap_orphans();
    int32_t i = slot_alloc();
    if (i < 0) {
        if (q != NULL)
            quay_req_free(qmpi.e, q);
        return MPI_ERR_NO_MEM;
    }
    qmpi_req *r = slot_at(i);
    /* Field by field, the generation kept: a reduction's context (most of
     * the slot) is set by the collective that uses it (coll.c). */
    r->q = q;
    r->comm = comm;
    r->kind = (uint8_t)kind;
    r->wild = 0;
    r->ucancel = 0;
    r->orphan = 0;
    r->persist = 0;
    r->active = 0;
    r->sent = 0;
    r->next_free = -1;
    r->idx = i;
    *h = (MPI_Request)(REQ_BASE | ((r->gen & REQ_GEN_MASK) << REQ_IDX_BITS) | i);
    if (slot != NULL)
        *slot = r;
    return MPI_SUCCESS;
}

void qmpi_req_set(qmpi_req *r, quay_req *q)
{
    r->q = q;
}

qmpi_req *qmpi_req_get(MPI_Request h)
{
    if ((h & REQ_TAG_MASK) != REQ_BASE)
        return NULL;
    int32_t i = h & ((1 << REQ_IDX_BITS) - 1);
    uint16_t gen = (uint16_t)((h >> REQ_IDX_BITS) & REQ_GEN_MASK);
    if (i <= 0 || i >= nslots)
        return NULL;
    qmpi_req *r = slot_at(i);
    if (r->kind == 0 || r->orphan || (r->gen & REQ_GEN_MASK) != gen)
        return NULL;
    return r;
}

void qmpi_req_release(qmpi_req *r)
{
    int32_t i = slot_index(r);
    if (r->q != NULL)
        quay_req_free(qmpi.e, r->q);
    r->q = NULL;
    r->kind = 0;
    r->gen++;
    r->next_free = free_head;
    free_head = i;
}

void qmpi_reqs_fini(void)
{
    for (int32_t c = 0; c * CHUNK_SLOTS < nslots; c++) {
        free(chunks[c]);
        chunks[c] = NULL;
    }
    nslots = 0;
    free_head = -1;
    orphans = -1;
}

/* ---- statuses --------------------------------------------------------------------- */

void qmpi_status_empty(MPI_Status *st)
{
    if (st == MPI_STATUS_IGNORE || st == NULL)
        return;
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
    st->MPI_ERROR = MPI_SUCCESS;
    st->quay_cancelled = 0;
    st->quay_bytes = 0;
}

int qmpi_status_set(MPI_Status *st, const quay_status *qs)
{
    if (st != MPI_STATUS_IGNORE && st != NULL) {
        /* MPI_ERROR is left alone: only the multiple-completion calls
         * set it, when they return MPI_ERR_IN_STATUS (MPI-3.1 §3.2.5). */
        st->MPI_SOURCE = qs->source;
        st->MPI_TAG = qs->tag;
        st->quay_cancelled = qs->cancelled != 0;
        st->quay_bytes = (long long)qs->count;
    }
    return qs->cancelled ? MPI_SUCCESS : qmpi_class_of(qs->error);
}

/* ---- completion ------------------------------------------------------------------- */

int qmpi_req_ready(qmpi_req *r)
{
    if (r->sent || quay_req_test(r->q, NULL))
        return 1;
    if (r->wild == 1) {
        /* The program may have freed the communicator since. */
        qmpi_comm *c = qmpi_comm_held(r->comm);
        if (c != NULL && qmpi_comm_has_failed(c)) {
            /* ULFM's rule: a wildcard receive cannot tell whether the
             * dead process would have sent; it fails rather than hang.
             * A receive already matched is not cancelled and finishes. */
            r->wild = 2;
            quay_cancel(qmpi.e, r->q);
            return quay_req_test(r->q, NULL);
        }
    }
    return 0;
}

/* The status and error class of a ready request. */
static int finish_status(const qmpi_req *r, MPI_Status *st)
{
    quay_status qs = {0}; /* stays so for a send complete at its call */
    quay_req_test(r->q, &qs);
    int cls = qmpi_status_set(st, &qs);
    if (qs.cancelled && r->wild == 2 && !r->ucancel) {
        cls = MPI_ERR_PROC_FAILED;
        if (st != MPI_STATUS_IGNORE && st != NULL)
            st->quay_cancelled = 0;
    }
    return cls;
}

int qmpi_req_finish(qmpi_req *r, MPI_Request *h, MPI_Status *st)
{
    int cls = finish_status(r, st);
    if (r->persist) {
        r->active = 0; /* reported: the engine's status is stale from now */
        return cls;
    }
    qmpi_req_release(r);
    *h = MPI_REQUEST_NULL;
    return cls;
}

/* A handle given to a completion call: MPI_SUCCESS and *r (NULL for
 * MPI_REQUEST_NULL and for an inactive persistent request, which the
 * completion calls treat alike), or MPI_ERR_REQUEST. */
static int lookup(MPI_Request h, qmpi_req **r)
{
    *r = NULL;
    if (h == MPI_REQUEST_NULL)
        return MPI_SUCCESS;
    qmpi_req *q = qmpi_req_get(h);
    if (q == NULL)
        return MPI_ERR_REQUEST;
    if (!q->persist || q->active)
        *r = q;
    return MPI_SUCCESS;
}

static int ready_one(void *ctx)
{
    return qmpi_req_ready(ctx);
}

int qmpi_wait_one(const char *fn, MPI_Request *h, MPI_Status *st)
{
    qmpi_req *r;
    if (h == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "request is NULL");
    if (lookup(*h, &r) != MPI_SUCCESS)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_REQUEST, fn, "invalid request");
    if (r == NULL) {
        qmpi_status_empty(st);
        return MPI_SUCCESS;
    }
    if (!qmpi_req_ready(r))
        qmpi_wait_until(fn, ready_one, r);
    MPI_Comm comm = r->comm;
    int cls = qmpi_req_finish(r, h, st);
    return qmpi_raise(comm, cls, fn, "request failed");
}

int qmpi_wait_q(const char *fn, quay_req *q, MPI_Comm comm, int wild, MPI_Status *st)
{
    /* A request no handle was made for: the blocking calls. */
    qmpi_req r; /* what ready and finish read: not the reduction context */
    r.q = q;
    r.comm = comm;
    r.wild = (uint8_t)(wild != 0);
    r.ucancel = 0;
    r.sent = 0;
    if (!qmpi_req_ready(&r))
        qmpi_wait_until(fn, ready_one, &r);
    int cls = finish_status(&r, st);
    quay_req_free(qmpi.e, q);
    return qmpi_status_raise(fn, comm, cls);
}

int qmpi_status_raise(const char *fn, MPI_Comm comm, int cls)
{
    if (cls == MPI_SUCCESS)
        return MPI_SUCCESS; /* the common case, without the error path's arguments */
    return qmpi_raise(comm, cls, fn, cls == MPI_ERR_TRUNCATE ? "message truncated"
                                     : cls == MPI_ERR_PROC_FAILED
                                         ? "a process it depends on failed"
                                         : "the operation failed");
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    QMPI_ENTER(__func__);
    return qmpi_wait_one(__func__, request, status);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status)
{
    qmpi_req *r;
    QMPI_ENTER(__func__);
    if (request == NULL || flag == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "request or flag is NULL");
    if (lookup(*request, &r) != MPI_SUCCESS)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_REQUEST, __func__, "invalid request");
    if (r == NULL) {
        *flag = 1;
        qmpi_status_empty(status);
        return MPI_SUCCESS;
    }
    if (!qmpi_req_ready(r)) {
        qmpi_poll();
        if (!qmpi_req_ready(r)) {
            *flag = 0;
            return MPI_SUCCESS;
        }
    }
    *flag = 1;
    MPI_Comm comm = r->comm;
    int cls = qmpi_req_finish(r, request, status);
    return qmpi_raise(comm, cls, __func__, "request failed");
}

int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status)
{
    qmpi_req *r;
    QMPI_ENTER(__func__);
    if (flag == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "flag is NULL");
    if (lookup(request, &r) != MPI_SUCCESS)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_REQUEST, __func__, "invalid request");
    if (r == NULL) {
        *flag = 1;
        qmpi_status_empty(status);
        return MPI_SUCCESS;
    }
    qmpi_poll();
    if (!qmpi_req_ready(r)) {
        *flag = 0;
        return MPI_SUCCESS;
    }
    /* Neither released nor made inactive: a later Wait reports it again. */
    *flag = 1;
    return qmpi_raise(r->comm, finish_status(r, status), __func__, "request failed");
}

/* ---- all / any / some -------------------------------------------------------------- */

typedef struct req_set {
    int n;
    int ready_upto; /* all_ready: [0, ready_upto) were ready (they stay so) */
    MPI_Request *h;
    qmpi_req **r; /* resolved slots, NULL for MPI_REQUEST_NULL (or inactive) */
    qmpi_req *small[16];
} req_set;

/* Resolve every handle up front: one bad handle fails the call before
 * anything is waited for or released. */
static int set_open(req_set *s, const char *fn, int n, MPI_Request *h, int *active)
{
    s->n = n;
    s->ready_upto = 0;
    s->h = h;
    s->r = s->small;
    if (n < 0)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_COUNT, fn, "negative count %d", n);
    if (n > 0 && h == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "array_of_requests is NULL");
    if (n > (int)(sizeof s->small / sizeof s->small[0])) {
        s->r = malloc((size_t)n * sizeof *s->r);
        if (s->r == NULL)
            return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    *active = 0;
    for (int i = 0; i < n; i++) {
        if (lookup(h[i], &s->r[i]) != MPI_SUCCESS) {
            if (s->r != s->small)
                free(s->r);
            s->r = s->small;
            return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_REQUEST, fn,
                              "invalid request at index %d", i);
        }
        *active += s->r[i] != NULL;
    }
    return MPI_SUCCESS;
}

static void set_close(req_set *s)
{
    if (s->r != s->small)
        free(s->r);
}

static MPI_Status *status_at(MPI_Status *sts, int i)
{
    return sts == MPI_STATUSES_IGNORE || sts == NULL ? MPI_STATUS_IGNORE : &sts[i];
}

/* Finish request i of the set into *st; returns its class. */
static int set_finish(req_set *s, int i, MPI_Status *st, MPI_Comm *comm)
{
    *comm = s->r[i]->comm;
    int cls = qmpi_req_finish(s->r[i], &s->h[i], st);
    s->r[i] = NULL;
    return cls;
}

static int all_ready(void *ctx)
{
    req_set *s = ctx;
    for (int i = s->ready_upto; i < s->n; i++)
        if (s->r[i] != NULL && !qmpi_req_ready(s->r[i])) {
            s->ready_upto = i; /* a wait asks again: start here */
            return 0;
        }
    s->ready_upto = s->n;
    return 1;
}

static int any_ready(void *ctx)
{
    req_set *s = ctx;
    for (int i = 0; i < s->n; i++)
        if (s->r[i] != NULL && qmpi_req_ready(s->r[i]))
            return 1;
    return 0;
}

/* Finish every request of the set (all ready). MPI_ERR_IN_STATUS when
 * one failed: then every status's MPI_ERROR says how its request went. */
static int finish_all(req_set *s, const char *fn, MPI_Status *sts)
{
    int failed = 0;
    MPI_Comm fcomm = MPI_COMM_WORLD;
    int *cls = NULL, cls_small[16];
    cls = s->n <= 16 ? cls_small : malloc((size_t)s->n * sizeof *cls);
    if (cls == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, fn, "out of memory");
    for (int i = 0; i < s->n; i++) {
        MPI_Status *st = status_at(sts, i);
        if (s->r[i] == NULL) {
            qmpi_status_empty(st);
            cls[i] = MPI_SUCCESS;
            continue;
        }
        MPI_Comm comm;
        cls[i] = set_finish(s, i, st, &comm);
        if (cls[i] != MPI_SUCCESS && !failed) {
            failed = 1;
            fcomm = comm;
        }
    }
    if (failed && sts != MPI_STATUSES_IGNORE && sts != NULL)
        for (int i = 0; i < s->n; i++)
            sts[i].MPI_ERROR = cls[i];
    if (cls != cls_small)
        free(cls);
    return failed ? qmpi_raise(fcomm, MPI_ERR_IN_STATUS, fn, "a request failed") : MPI_SUCCESS;
}

int MPI_Waitall(int count, MPI_Request *array_of_requests, MPI_Status *array_of_statuses)
{
    req_set s;
    int active, rc;
    QMPI_ENTER(__func__);
    if ((rc = set_open(&s, __func__, count, array_of_requests, &active)) != MPI_SUCCESS)
        return rc;
    if (active > 0 && !all_ready(&s))
        qmpi_wait_until(__func__, all_ready, &s);
    rc = finish_all(&s, __func__, array_of_statuses);
    set_close(&s);
    return rc;
}

int MPI_Testall(int count, MPI_Request *array_of_requests, int *flag,
                MPI_Status *array_of_statuses)
{
    req_set s;
    int active, rc;
    QMPI_ENTER(__func__);
    if (flag == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "flag is NULL");
    if ((rc = set_open(&s, __func__, count, array_of_requests, &active)) != MPI_SUCCESS)
        return rc;
    if (active > 0 && !all_ready(&s)) {
        qmpi_poll();
        if (!all_ready(&s)) {
            *flag = 0;
            set_close(&s);
            return MPI_SUCCESS;
        }
    }
    *flag = 1;
    rc = finish_all(&s, __func__, array_of_statuses);
    set_close(&s);
    return rc;
}

/* The first ready request of the set, or -1. */
static int first_ready(req_set *s)
{
    for (int i = 0; i < s->n; i++)
        if (s->r[i] != NULL && qmpi_req_ready(s->r[i]))
            return i;
    return -1;
}

static int any_common(const char *fn, int count, MPI_Request *reqs, int *indx, int *flag,
                      MPI_Status *status, int block)
{
    req_set s;
    int active, rc;
    if (indx == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "indx is NULL");
    if ((rc = set_open(&s, fn, count, reqs, &active)) != MPI_SUCCESS)
        return rc;
    *indx = MPI_UNDEFINED;
    if (active == 0) { /* MPI: an empty status, and done */
        if (flag != NULL)
            *flag = 1;
        qmpi_status_empty(status);
        set_close(&s);
        return MPI_SUCCESS;
    }
    int i = first_ready(&s);
    if (i < 0) {
        if (block) {
            qmpi_wait_until(fn, any_ready, &s);
        } else {
            qmpi_poll();
        }
        i = first_ready(&s);
    }
    if (i < 0) {
        *flag = 0;
        set_close(&s);
        return MPI_SUCCESS;
    }
    if (flag != NULL)
        *flag = 1;
    MPI_Comm comm;
    int cls = set_finish(&s, i, status, &comm);
    *indx = i;
    set_close(&s);
    return qmpi_raise(comm, cls, fn, "request %d failed", i);
}

int MPI_Waitany(int count, MPI_Request *array_of_requests, int *indx, MPI_Status *status)
{
    QMPI_ENTER(__func__);
    return any_common(__func__, count, array_of_requests, indx, NULL, status, 1);
}

int MPI_Testany(int count, MPI_Request *array_of_requests, int *indx, int *flag,
                MPI_Status *status)
{
    QMPI_ENTER(__func__);
    if (flag == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "flag is NULL");
    return any_common(__func__, count, array_of_requests, indx, flag, status, 0);
}

static int some_common(const char *fn, int incount, MPI_Request *reqs, int *outcount,
                       int *indices, MPI_Status *sts, int block)
{
    req_set s;
    int active, rc;
    if (outcount == NULL || (incount > 0 && indices == NULL))
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "outcount or indices is NULL");
    if ((rc = set_open(&s, fn, incount, reqs, &active)) != MPI_SUCCESS)
        return rc;
    if (active == 0) {
        *outcount = MPI_UNDEFINED;
        set_close(&s);
        return MPI_SUCCESS;
    }
    if (first_ready(&s) < 0) {
        if (block)
            qmpi_wait_until(fn, any_ready, &s);
        else
            qmpi_poll();
    }
    int n = 0, failed = 0, cls_small[16];
    int *cls = s.n <= 16 ? cls_small : malloc((size_t)s.n * sizeof *cls);
    MPI_Comm fcomm = MPI_COMM_WORLD;
    if (cls == NULL) {
        set_close(&s);
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_NO_MEM, fn, "out of memory");
    }
    for (int i = 0; i < s.n; i++) {
        if (s.r[i] == NULL || !qmpi_req_ready(s.r[i]))
            continue;
        MPI_Comm comm;
        cls[n] = set_finish(&s, i, status_at(sts, n), &comm);
        if (cls[n] != MPI_SUCCESS && !failed) {
            failed = 1;
            fcomm = comm;
        }
        indices[n++] = i;
    }
    *outcount = n;
    /* MPI_ERROR is set only when the call returns MPI_ERR_IN_STATUS. */
    if (failed && sts != MPI_STATUSES_IGNORE && sts != NULL)
        for (int k = 0; k < n; k++)
            sts[k].MPI_ERROR = cls[k];
    if (cls != cls_small)
        free(cls);
    set_close(&s);
    return failed ? qmpi_raise(fcomm, MPI_ERR_IN_STATUS, fn, "a request failed") : MPI_SUCCESS;
}

int MPI_Waitsome(int incount, MPI_Request *array_of_requests, int *outcount,
                 int *array_of_indices, MPI_Status *array_of_statuses)
{
    QMPI_ENTER(__func__);
    return some_common(__func__, incount, array_of_requests, outcount, array_of_indices,
                       array_of_statuses, 1);
}

int MPI_Testsome(int incount, MPI_Request *array_of_requests, int *outcount,
                 int *array_of_indices, MPI_Status *array_of_statuses)
{
    QMPI_ENTER(__func__);
    return some_common(__func__, incount, array_of_requests, outcount, array_of_indices,
                       array_of_statuses, 0);
}

/* ---- free, cancel ------------------------------------------------------------------ */

/* The live request *request names (MPI_REQUEST_NULL is not one), for
 * MPI_Request_free and MPI_Cancel; NULL after raising the error. */
static qmpi_req *live_request(const char *fn, const MPI_Request *request, int *rc)
{
    qmpi_req *r = NULL;
    if (request == NULL)
        *rc = qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, fn, "request is NULL");
    else if (*request == MPI_REQUEST_NULL || (r = qmpi_req_get(*request)) == NULL)
        *rc = qmpi_raise(MPI_COMM_WORLD, MPI_ERR_REQUEST, fn, "invalid request");
    return r;
}

int MPI_Request_free(MPI_Request *request)
{
    int rc;
    QMPI_ENTER(__func__);
    qmpi_req *r = live_request(__func__, request, &rc);
    if (r == NULL)
        return rc;
    /* A persistent one, active or not, goes the plain way: the engine
     * releases it now if inactive, else when its round completes. */
    *request = MPI_REQUEST_NULL;
    if (r->kind == QMPI_REQ_COLL && r->red.op.kind == QUAY_OP_USER &&
        !quay_req_test(r->q, NULL)) {
        /* The engine still calls the reduction with this slot as its
         * context: keep the slot until the collective is done. */
        int32_t i = slot_index(r);
        r->orphan = 1;
        r->next_free = orphans;
        orphans = i;
        return MPI_SUCCESS;
    }
    qmpi_req_release(r); /* the engine frees an unfinished one when done */
    qmpi_poll();
    return MPI_SUCCESS;
}

int MPI_Cancel(MPI_Request *request)
{
    int rc;
    QMPI_ENTER(__func__);
    qmpi_req *r = live_request(__func__, request, &rc);
    if (r == NULL)
        return rc;
    if (r->kind == QMPI_REQ_COLL)
        return qmpi_raise(r->comm, MPI_ERR_REQUEST, __func__,
                          "a collective operation cannot be cancelled");
    if ((r->persist && !r->active) || r->sent)
        return MPI_SUCCESS; /* nothing (left) to cancel: no effect */
    r->ucancel = 1;
    rc = quay_cancel(qmpi.e, r->q);
    if (rc != 0)
        return qmpi_raise(r->comm, qmpi_class_of(rc), __func__, "%s", quay_strerror(rc));
    qmpi_poll();
    return MPI_SUCCESS;
}

int MPI_Test_cancelled(const MPI_Status *status, int *flag)
{
    QMPI_ENTER(__func__);
    if (status == NULL || status == MPI_STATUS_IGNORE || flag == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "status or flag is NULL");
    *flag = status->quay_cancelled != 0;
    return MPI_SUCCESS;
}
