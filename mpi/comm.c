/*
 * comm.c — communicators: MPI_COMM_WORLD, MPI_COMM_SELF, dup, split,
 * free, compare, rank and size, names and the predefined attributes.
 *
 * Each MPI communicator is one engine communicator (quay_comm_create)
 * with a context id every member agrees on. Agreement is one allreduce
 * (MAX) over the parent of every member's lowest unused context id, so
 * the id is unused on every member; a split sends each member's (color,
 * key) in the same allreduce (each rank fills its own slots, the others
 * hold INT32_MIN, so MAX gathers them). A dup's agreement takes a batch
 * of ids, twice as many each time (up to CTX_BATCH_MAX): the parent's
 * next dups use them with no message at all, which is safe because every
 * member makes the same collective calls on the parent in the same order.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "qmpi.h"

#define COMM_BASE 0x44000000
#define COMM_MAX (1 << 16)
/* Context ids are below the engine's collective bit and agreed on as
 * int32 (MAX). */
#define CTX_LIMIT 0x7fffffffu
#define CTX_BATCH_MAX 256u

static qmpi_comm *comms; /* [0] world, [1] self, then the program's */
static int32_t ncomms, capcomms;
/* Slots with no communicator (reused last in, first out), and slots the
 * program freed while the engine's communicator was busy: lists through
 * qmpi_comm.link, -1 ends them. */
static int32_t free_slots = -1, held_slots = -1;

/* Slot of a handle; freed slots only if allow_freed. */
static qmpi_comm *slot_of(MPI_Comm h, int allow_freed)
{
    if (h < COMM_BASE || h - COMM_BASE >= ncomms)
        return NULL;
    qmpi_comm *c = &comms[h - COMM_BASE];
    if (c->q == NULL || (c->freed && !allow_freed))
        return NULL;
    return c;
}

qmpi_comm *qmpi_comm_get(MPI_Comm comm)
{
    return slot_of(comm, 0);
}

qmpi_comm *qmpi_comm_held(MPI_Comm comm)
{
    return slot_of(comm, 1);
}

qmpi_comm *qmpi_comm_arg(const char *fn, MPI_Comm comm, const void *out, const char *out_name,
                         int *rc)
{
    qmpi_comm *c = qmpi_comm_get(comm);
    if (c == NULL)
        *rc = qmpi_raise(comm, MPI_ERR_COMM, fn, "invalid communicator");
    else if (out_name != NULL && out == NULL)
        *rc = qmpi_raise(comm, MPI_ERR_ARG, fn, "%s is NULL", out_name);
    else
        return c;
    return NULL;
}

MPI_Errhandler qmpi_comm_errhandler(MPI_Comm comm)
{
    qmpi_comm *c = slot_of(comm, 1);
    if (c == NULL)
        c = slot_of(MPI_COMM_WORLD, 0);
    return c != NULL ? c->eh : MPI_ERRORS_ARE_FATAL;
}

int qmpi_comm_has_failed(const qmpi_comm *c)
{
    if (qrt_peers_failed(qmpi.rt) == 0)
        return 0;
    for (int32_t r = 0; r < c->size; r++)
        if (qrt_peer_failed(qmpi.rt, quay_comm_world_rank(c->q, r)))
            return 1;
    return 0;
}

/* A free slot (growing the table); its handle in *h. NULL: no memory. */
static qmpi_comm *slot_new(MPI_Comm *h)
{
    int32_t i = free_slots;
    if (i >= 0) {
        free_slots = comms[i].link;
    } else {
        if (ncomms == capcomms) {
            int32_t cap = capcomms > 0 ? 2 * capcomms : 16;
            if (cap > COMM_MAX)
                return NULL;
            qmpi_comm *n = realloc(comms, (size_t)cap * sizeof *n);
            if (n == NULL)
                return NULL;
            comms = n;
            capcomms = cap;
        }
        i = ncomms++;
    }
    memset(&comms[i], 0, sizeof comms[i]);
    comms[i].link = -1;
    *h = COMM_BASE + i;
    return &comms[i];
}

/* Give back a slot whose communicator is gone (c->q NULL). World and
 * self (slots 0 and 1) are never reused. */
static void slot_release(qmpi_comm *c)
{
    int32_t i = (int32_t)(c - comms);
    if (i < 2)
        return;
    c->link = free_slots;
    free_slots = i;
}

/* Make the engine communicator for a new MPI one (slot from slot_new). */
static int comm_make(qmpi_comm *c, uint32_t ctx, int32_t n, const int32_t *map,
                     MPI_Errhandler eh)
{
    int rc = quay_comm_create(qmpi.e, ctx, n, map, &c->q);
    if (rc != 0) {
        c->q = NULL;
        return rc;
    }
    c->eh = eh;
    c->rank = quay_comm_rank(c->q);
    c->size = quay_comm_size(c->q);
    return 0;
}

int qmpi_comms_init(void)
{
    MPI_Comm h;
    int32_t me = qmpi.rank;
    qmpi_comm *w = slot_new(&h), *s;
    if (w == NULL)
        return QUAY_ENOMEM;
    w->q = qrt_world(qmpi.rt);
    w->eh = MPI_ERRORS_ARE_FATAL;
    w->rank = quay_comm_rank(w->q);
    w->size = quay_comm_size(w->q);
    strcpy(w->name, "MPI_COMM_WORLD");
    s = slot_new(&h);
    if (s == NULL)
        return QUAY_ENOMEM;
    int rc = comm_make(s, 1, 1, &me, MPI_ERRORS_ARE_FATAL);
    if (rc != 0)
        return rc;
    strcpy(s->name, "MPI_COMM_SELF");
    qmpi.next_ctx = 2;
    return 0;
}

void qmpi_comms_reap(void)
{
    int32_t *at = &held_slots;
    while (*at >= 0) {
        qmpi_comm *c = &comms[*at];
        if (quay_comm_free(qmpi.e, c->q) == 0) {
            c->q = NULL;
            *at = c->link;
            slot_release(c);
        } else {
            at = &c->link;
        }
    }
}

void qmpi_comms_fini(void)
{
    /* The engine frees what is left (the world communicator is the
     * runtime's) when the runtime finalizes. */
    free(comms);
    comms = NULL;
    ncomms = capcomms = 0;
    free_slots = held_slots = -1;
}

/* ---- queries ------------------------------------------------------------------------ */

int MPI_Comm_rank(MPI_Comm comm, int *rank)
{
    QMPI_ENTER(__func__);
    int rc;
    qmpi_comm *c = qmpi_comm_arg(__func__, comm, rank, "rank", &rc);
    if (c == NULL)
        return rc;
    *rank = c->rank;
    return MPI_SUCCESS;
}

int MPI_Comm_size(MPI_Comm comm, int *size)
{
    QMPI_ENTER(__func__);
    int rc;
    qmpi_comm *c = qmpi_comm_arg(__func__, comm, size, "size", &rc);
    if (c == NULL)
        return rc;
    *size = c->size;
    return MPI_SUCCESS;
}

int MPI_Comm_compare(MPI_Comm comm1, MPI_Comm comm2, int *result)
{
    QMPI_ENTER(__func__);
    qmpi_comm *a = qmpi_comm_get(comm1), *b = qmpi_comm_get(comm2);
    if (a == NULL || b == NULL)
        return qmpi_raise(a == NULL ? comm1 : comm2, MPI_ERR_COMM, __func__,
                          "invalid communicator");
    if (result == NULL)
        return qmpi_raise(comm1, MPI_ERR_ARG, __func__, "result is NULL");
    if (comm1 == comm2) {
        *result = MPI_IDENT;
        return MPI_SUCCESS;
    }
    if (a->size != b->size) {
        *result = MPI_UNEQUAL;
        return MPI_SUCCESS;
    }
    int same_order = 1;
    for (int32_t r = 0; r < a->size && same_order; r++)
        same_order = quay_comm_world_rank(a->q, r) == quay_comm_world_rank(b->q, r);
    if (same_order) {
        *result = MPI_CONGRUENT;
        return MPI_SUCCESS;
    }
    /* Same members in another order? Each of a's is somewhere in b. */
    for (int32_t r = 0; r < a->size; r++) {
        int32_t w = quay_comm_world_rank(a->q, r), found = 0;
        for (int32_t k = 0; k < b->size && !found; k++)
            found = quay_comm_world_rank(b->q, k) == w;
        if (!found) {
            *result = MPI_UNEQUAL;
            return MPI_SUCCESS;
        }
    }
    *result = MPI_SIMILAR;
    return MPI_SUCCESS;
}

/* ---- creation ----------------------------------------------------------------------- */

typedef struct req_wait {
    quay_req *q;
} req_wait;

static int q_done(void *ctx)
{
    return quay_req_test(((req_wait *)ctx)->q, NULL);
}

/* Allreduce MAX of n int32 in place over c (the binding's own traffic,
 * on c's collective context like any collective the program makes). */
static int agree_max(const char *fn, MPI_Comm comm, qmpi_comm *c, int32_t *v, size_t n)
{
    static const quay_op max = {QUAY_OP_MAX, 1, NULL, NULL};
    qmpi_retry rt = QMPI_RETRY_INIT;
    req_wait w;
    quay_status st;
    int rc;
    while ((rc = quay_iallreduce(qmpi.e, c->q, QUAY_IN_PLACE, v, n, QUAY_INT32, &max, &w.q)) ==
               QUAY_EAGAIN &&
           qmpi_again(&rt, rc))
        ;
    if (rc != 0)
        return qmpi_raise(comm, qmpi_class_of(rc), fn, "agreeing on a context id: %s",
                          quay_strerror(rc));
    qmpi_wait_until(fn, q_done, &w);
    quay_req_test(w.q, &st);
    quay_req_free(qmpi.e, w.q);
    if (st.error != 0)
        return qmpi_raise(comm, qmpi_class_of(st.error), fn, "agreeing on a context id: %s",
                          quay_strerror(st.error));
    return MPI_SUCCESS;
}

/* Create the communicator of n members (world ranks map) with context
 * ctx under handle *newcomm. */
static int comm_new(const char *fn, MPI_Comm parent, uint32_t ctx, int32_t n,
                    const int32_t *map, MPI_Errhandler eh, MPI_Comm *newcomm)
{
    MPI_Comm h;
    qmpi_comms_reap();
    qmpi_comm *c = slot_new(&h);
    if (c == NULL)
        return qmpi_raise(parent, MPI_ERR_NO_MEM, fn, "too many communicators");
    int rc = comm_make(c, ctx, n, map, eh);
    if (rc != 0) {
        slot_release(c);
        return qmpi_raise(parent, rc == QUAY_EAGAIN ? MPI_ERR_OTHER : qmpi_class_of(rc), fn,
                          "creating the communicator: %s%s", quay_strerror(rc),
                          rc == QUAY_EAGAIN ? " (too many communicators alive)" : "");
    }
    *newcomm = h;
    return MPI_SUCCESS;
}

/* The context id of a dup of c: the next of c's batch, else agreed on
 * with a new batch (a member that saw a failure agrees, and so fails). */
static int dup_ctx(const char *fn, MPI_Comm comm, qmpi_comm *c, uint32_t *ctx)
{
    if (c->ctx_next < c->ctx_end && !qmpi_comm_has_failed(c)) {
        *ctx = c->ctx_next++;
        return MPI_SUCCESS;
    }
    uint32_t want = c->ctx_batch > 0 ? c->ctx_batch : 1;
    int32_t v = (int32_t)qmpi.next_ctx;
    int rc = agree_max(fn, comm, c, &v, 1);
    if (rc != MPI_SUCCESS)
        return rc;
    if ((uint32_t)v > CTX_LIMIT - want)
        return qmpi_raise(comm, MPI_ERR_OTHER, fn, "out of context ids");
    *ctx = (uint32_t)v;
    c->ctx_next = (uint32_t)v + 1;
    c->ctx_end = qmpi.next_ctx = (uint32_t)v + want;
    c->ctx_batch = want < CTX_BATCH_MAX ? 2 * want : CTX_BATCH_MAX;
    return MPI_SUCCESS;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    QMPI_ENTER(__func__);
    int rc;
    qmpi_comm *c = qmpi_comm_arg(__func__, comm, newcomm, "newcomm", &rc);
    if (c == NULL)
        return rc;
    int32_t n = c->size;
    uint32_t ctx = 0;
    MPI_Errhandler eh = c->eh;
    int32_t *map = malloc((size_t)n * sizeof *map);
    if (map == NULL)
        return qmpi_raise(comm, MPI_ERR_NO_MEM, __func__, "out of memory");
    for (int32_t r = 0; r < n; r++)
        map[r] = quay_comm_world_rank(c->q, r);
    rc = dup_ctx(__func__, comm, c, &ctx);
    if (rc == MPI_SUCCESS)
        rc = comm_new(__func__, comm, ctx, n, map, eh, newcomm);
    free(map);
    return rc;
}

typedef struct member {
    int32_t key, rank;
} member;

static int member_cmp(const void *a, const void *b)
{
    const member *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
    QMPI_ENTER(__func__);
    int rc;
    qmpi_comm *c = qmpi_comm_arg(__func__, comm, newcomm, "newcomm", &rc);
    if (c == NULL)
        return rc;
    if (color < 0 && color != MPI_UNDEFINED)
        return qmpi_raise(comm, MPI_ERR_ARG, __func__, "invalid color %d", color);
    int32_t n = c->size, me = c->rank;
    MPI_Errhandler eh = c->eh;
    int32_t *v = malloc((1 + 2 * (size_t)n) * sizeof *v);
    member *m = malloc((size_t)n * sizeof *m);
    int32_t *map = malloc((size_t)n * sizeof *map);
    int32_t *world = malloc((size_t)n * sizeof *world);
    rc = MPI_SUCCESS;
    if (v == NULL || m == NULL || map == NULL || world == NULL) {
        rc = qmpi_raise(comm, MPI_ERR_NO_MEM, __func__, "out of memory");
        goto out;
    }
    for (int32_t r = 0; r < n; r++)
        world[r] = quay_comm_world_rank(c->q, r);
    v[0] = (int32_t)qmpi.next_ctx;
    for (int32_t r = 0; r < n; r++)
        v[1 + 2 * r] = v[2 + 2 * r] = INT32_MIN;
    v[1 + 2 * me] = color;
    v[2 + 2 * me] = key;
    rc = agree_max(__func__, comm, c, v, 1 + 2 * (size_t)n);
    if (rc != MPI_SUCCESS)
        goto out;
    if ((uint32_t)v[0] >= CTX_LIMIT) {
        rc = qmpi_raise(comm, MPI_ERR_OTHER, __func__, "out of context ids");
        goto out;
    }
    qmpi.next_ctx = (uint32_t)v[0] + 1;
    if (color == MPI_UNDEFINED) {
        *newcomm = MPI_COMM_NULL;
        goto out;
    }
    int32_t k = 0;
    for (int32_t r = 0; r < n; r++)
        if (v[1 + 2 * r] == color)
            m[k++] = (member){v[2 + 2 * r], r};
    qsort(m, (size_t)k, sizeof *m, member_cmp);
    for (int32_t i = 0; i < k; i++)
        map[i] = world[m[i].rank];
    rc = comm_new(__func__, comm, (uint32_t)v[0], k, map, eh, newcomm);
out:
    free(v);
    free(m);
    free(map);
    free(world);
    return rc;
}

int MPI_Comm_free(MPI_Comm *comm)
{
    QMPI_ENTER(__func__);
    if (comm == NULL)
        return qmpi_raise(MPI_COMM_WORLD, MPI_ERR_ARG, __func__, "comm is NULL");
    qmpi_comm *c = qmpi_comm_get(*comm);
    if (c == NULL || *comm == MPI_COMM_WORLD || *comm == MPI_COMM_SELF)
        return qmpi_raise(*comm, MPI_ERR_COMM, __func__, "invalid communicator");
    /* MPI: pending operations on it complete normally; the engine's
     * communicator goes once nothing uses it (qmpi_comms_reap). */
    c->freed = 1;
    if (quay_comm_free(qmpi.e, c->q) == 0) {
        c->q = NULL;
        slot_release(c);
    } else {
        c->link = held_slots;
        held_slots = (int32_t)(c - comms);
    }
    *comm = MPI_COMM_NULL;
    return MPI_SUCCESS;
}

/* ---- names and attributes ------------------------------------------------------------ */

int MPI_Comm_set_name(MPI_Comm comm, const char *comm_name)
{
    QMPI_ENTER(__func__);
    int rc;
    qmpi_comm *c = qmpi_comm_arg(__func__, comm, comm_name, "comm_name", &rc);
    if (c == NULL)
        return rc;
    size_t n = strnlen(comm_name, MPI_MAX_OBJECT_NAME - 1);
    memcpy(c->name, comm_name, n);
    c->name[n] = '\0';
    return MPI_SUCCESS;
}

int MPI_Comm_get_name(MPI_Comm comm, char *comm_name, int *resultlen)
{
    QMPI_ENTER(__func__);
    int rc;
    qmpi_comm *c = qmpi_comm_arg(__func__, comm, NULL, NULL, &rc);
    if (c == NULL)
        return rc;
    if (comm_name == NULL || resultlen == NULL)
        return qmpi_raise(comm, MPI_ERR_ARG, __func__, "comm_name or resultlen is NULL");
    size_t n = strlen(c->name);
    memcpy(comm_name, c->name, n + 1);
    *resultlen = (int)n;
    return MPI_SUCCESS;
}

int MPI_Comm_get_attr(MPI_Comm comm, int comm_keyval, void *attribute_val, int *flag)
{
    /* The values live as long as the program: MPI hands out pointers. */
    static int tag_ub = QUAY_TAG_MAX, host = MPI_PROC_NULL, io = MPI_ANY_SOURCE,
               wtime_is_global = 0, universe_size, appnum = 0;
    int *val;
    QMPI_ENTER(__func__);
    int rc;
    if (qmpi_comm_arg(__func__, comm, NULL, NULL, &rc) == NULL)
        return rc;
    if (attribute_val == NULL || flag == NULL)
        return qmpi_raise(comm, MPI_ERR_ARG, __func__, "attribute_val or flag is NULL");
    switch (comm_keyval) {
    case MPI_TAG_UB:
        val = &tag_ub;
        break;
    case MPI_HOST:
        val = &host;
        break;
    case MPI_IO:
        val = &io;
        break;
    case MPI_WTIME_IS_GLOBAL:
        val = &wtime_is_global;
        break;
    case MPI_UNIVERSE_SIZE:
        universe_size = qmpi.size;
        val = &universe_size;
        break;
    case MPI_APPNUM:
        val = &appnum;
        break;
    default:
        return qmpi_raise(comm, MPI_ERR_KEYVAL, __func__, "invalid keyval %d", comm_keyval);
    }
    *(int **)attribute_val = val;
    *flag = 1;
    return MPI_SUCCESS;
}
