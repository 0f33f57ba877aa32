/*
 * scn_parse_ops.c — the scenario language's op statements ("R: isend
 * ...", "R: expect ...", the collectives): one op per rank named, its
 * slot (request, probe result) and the checks that need only the lines
 * read so far. scn_parse.c reads the file and calls scn_parse_op.
 */
#include "scn_parse_int.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* rank / tag value: number, `any` (-1) or, if allow_null, `null` (-2). */
static int parse_rt(const char *v, int allow_any, int allow_null,
                    int32_t *out)
{
    uint64_t x;
    if (allow_any && strcmp(v, "any") == 0) {
        *out = -1;
        return 0;
    }
    if (allow_null && (strcmp(v, "null") == 0 || strcmp(v, "PROC_NULL") == 0)) {
        *out = QUAY_PROC_NULL;
        return 0;
    }
    if (scn_parse_u64(v, &x) != 0 || x > INT32_MAX)
        return -1;
    *out = (int32_t)x;
    return 0;
}

static int valid_name(const char *n)
{
    size_t i;
    if (!(isalpha((unsigned char)n[0]) || n[0] == '_'))
        return 0;
    for (i = 0; n[i]; i++)
        if (!(isalnum((unsigned char)n[i]) || n[i] == '_'))
            return 0;
    return i < SCN_NAME_MAX;
}

static int find_slot(const scn *s, int rank, const char *name)
{
    int i;
    for (i = 0; i < s->nslots; i++)
        if (s->slots[i].rank == rank && strcmp(s->slots[i].name, name) == 0)
            return i;
    return -1;
}

static int new_slot(parser *p, int rank, int kind, const char *name)
{
    scn *s = p->s;
    scn_slot *sl;
    if (s->nslots == s->capslots) {
        int ncap = s->capslots ? s->capslots * 2 : 32;
        scn_slot *n = realloc(s->slots, (size_t)ncap * sizeof *n);
        if (n == NULL)
            return -1;
        s->slots = n;
        s->capslots = ncap;
    }
    sl = &s->slots[s->nslots];
    memset(sl, 0, sizeof *sl);
    sl->kind = kind;
    sl->rank = rank;
    sl->op = s->nops[rank] - 1;
    sl->line = p->line;
    sl->link = -1;
    sl->expect_count = -1;
    sl->peer_world = -1;
    if (name != NULL && name[0] != '\0')
        snprintf(sl->name, sizeof sl->name, "%s", name);
    else
        snprintf(sl->name, sizeof sl->name, "L%d", p->line);
    s->nslots_rank[rank]++;
    return s->nslots++;
}

static const char *arg(args *a, const char *key)
{
    int i;
    for (i = 0; i < a->n; i++)
        if (strcmp(a->key[i], key) == 0) {
            a->used[i] = 1;
            return a->val[i];
        }
    return NULL;
}

static int args_check(parser *p, const args *a, const char *op)
{
    int i;
    for (i = 0; i < a->n; i++)
        if (!a->used[i])
            return scn_perr(p, "%s: unknown argument '%s'", op, a->key[i]);
    return 0;
}

static int get_comm(parser *p, args *a, int rank, int *pc)
{
    const char *v = arg(a, "comm");
    uint64_t ctx = 0;
    int c;
    if (v != NULL && scn_parse_u64(v, &ctx) != 0)
        return scn_perr(p, "bad comm '%s'", v);
    c = scn_find_comm(p->s, (uint32_t)ctx);
    if (c < 0)
        return scn_perr(p, "unknown comm %llu", (unsigned long long)ctx);
    if (p->s->comms[c].crank[rank] < 0)
        return scn_perr(p, "rank %d is not a member of comm %llu", rank,
                        (unsigned long long)ctx);
    if ((p->s->comms[c].lazy >> rank & 1u) && !(p->created[c] >> rank & 1u))
        return scn_perr(p, "rank %d uses comm %llu before its comm_create",
                        rank, (unsigned long long)ctx);
    *pc = c;
    return 0;
}

static int need_u64(parser *p, args *a, const char *key, uint64_t *out)
{
    const char *v = arg(a, key);
    if (v == NULL)
        return scn_perr(p, "missing %s=", key);
    if (scn_parse_u64(v, out) != 0)
        return scn_perr(p, "bad %s=%s", key, v);
    return 0;
}

/* from= / to= / tag= for receive-like ops */
static int recv_pattern(parser *p, args *a, scn_slot *sl)
{
    const char *from = arg(a, "from"), *tag = arg(a, "tag");
    const scn_comm *c = &p->s->comms[sl->comm];
    if (from == NULL || tag == NULL)
        return scn_perr(p, "needs from= and tag=");
    if (parse_rt(from, 1, 1, &sl->peer) != 0)
        return scn_perr(p, "bad from=%s", from);
    if (parse_rt(tag, 1, 0, &sl->tag) != 0)
        return scn_perr(p, "bad tag=%s", tag);
    if (sl->peer >= c->n)
        return scn_perr(p, "from=%d outside comm of size %d", sl->peer, c->n);
    if (sl->peer >= 0)
        sl->peer_world = c->world[sl->peer];
    else
        sl->peer_world = sl->peer == QUAY_PROC_NULL ? -2 : -1;
    return 0;
}

static int take_name(parser *p, args *a, int rank, const char **pname)
{
    const char *as = arg(a, "as");
    *pname = NULL;
    if (as == NULL)
        return 0;
    if (!valid_name(as))
        return scn_perr(p, "bad name '%s'", as);
    if (find_slot(p->s, rank, as) >= 0)
        return scn_perr(p, "name '%s' already used on rank %d", as, rank);
    *pname = as;
    return 0;
}

/* The target of cancel / free / wait / mrecv / expect. */
static int target(parser *p, args *a, int rank, const char *op)
{
    int t;
    if (a->npos != 1)
        return scn_perr(p, "%s needs one request name", op);
    t = find_slot(p->s, rank, a->pos[0]);
    if (t < 0)
        return scn_perr(p, "%s: no request '%s' on rank %d", op, a->pos[0],
                        rank);
    return t;
}

/* Has slot t been waited or freed by an earlier op? */
static int finished(const scn *s, int rank, int t)
{
    int i;
    for (i = 0; i < s->nops[rank]; i++) {
        const scn_op *o = &s->ops[rank][i];
        if ((o->kind == SOP_WAIT || o->kind == SOP_FREE) && o->slot == t)
            return 1;
    }
    return 0;
}

/* How a collective's arguments read back in messages ("ibcast root=1
 * size=300"). */
void scn_cinst_text(const scn_cinst *ci, char *b, size_t n)
{
    switch (ci->ckind) {
    case SCOLL_BCAST:
        snprintf(b, n, "ibcast root=%d size=%llu", ci->root,
                 (unsigned long long)ci->size);
        break;
    case SCOLL_REDUCE:
        snprintf(b, n, "ireduce root=%d count=%llu type=%s op=%s", ci->root,
                 (unsigned long long)ci->size, scn_dtype_name(ci->dtype),
                 scn_op_name(ci->opk));
        break;
    case SCOLL_ALLREDUCE:
        snprintf(b, n, "iallreduce count=%llu type=%s op=%s",
                 (unsigned long long)ci->size, scn_dtype_name(ci->dtype),
                 scn_op_name(ci->opk));
        break;
    default:
        snprintf(b, n, "ibarrier");
        break;
    }
}

/* The rank's next collective on comm c is `want`: the same as what the
 * other members call at that point (their first statement made the
 * instance), or a new instance. Returns its index, or -1 (error). */
static int coll_instance(parser *p, int rank, int c, const scn_cinst *want)
{
    scn *s = p->s;
    int seq = s->ncoll[c][rank]++, i;
    scn_cinst *ci;
    for (i = 0; i < s->ncinst; i++) {
        char a[128], b[128];
        ci = &s->cinst[i];
        if (ci->comm != c || ci->seq != seq)
            continue;
        if (ci->ckind != want->ckind || ci->root != want->root ||
            ci->size != want->size || ci->dtype != want->dtype ||
            ci->opk != want->opk) {
            scn_cinst_text(want, a, sizeof a);
            scn_cinst_text(ci, b, sizeof b);
            return scn_perr(p,
                            "rank %d's collective #%d on comm %u is '%s', but "
                            "rank %d's (line %d) is '%s' (every member must "
                            "make the same collective calls in the same "
                            "order)",
                            rank, seq, s->comms[c].ctx, a, ci->first_rank,
                            ci->line, b);
        }
        ci->callers |= 1u << rank;
        return i;
    }
    if (s->ncinst == s->capcinst) {
        int ncap = s->capcinst ? s->capcinst * 2 : 8;
        scn_cinst *n = realloc(s->cinst, (size_t)ncap * sizeof *n);
        if (n == NULL)
            return scn_perr(p, "out of memory");
        s->cinst = n;
        s->capcinst = ncap;
    }
    ci = &s->cinst[s->ncinst];
    *ci = *want;
    ci->comm = c;
    ci->seq = seq;
    ci->line = p->line;
    ci->first_rank = rank;
    ci->callers = 1u << rank;
    return s->ncinst++;
}

/* R: ibarrier | ibcast | ireduce | iallreduce ... */
static int parse_coll(parser *p, int rank, int ckind, const char *opname,
                      args *a)
{
    scn *s = p->s;
    scn_cinst want;
    scn_op *op;
    scn_slot *x;
    const char *name;
    int c, sl, ci, inplace = 0, i;
    uint64_t v;

    memset(&want, 0, sizeof want);
    want.ckind = ckind;
    /* (a rank outside the communicator is refused here, as for p2p) */
    if (get_comm(p, a, rank, &c) || take_name(p, a, rank, &name))
        return -1;
    for (i = 0; i < a->npos; i++) {
        if (strcmp(a->pos[i], "inplace") != 0 ||
            (ckind != SCOLL_REDUCE && ckind != SCOLL_ALLREDUCE))
            return scn_perr(p, "%s: unexpected '%s'", opname, a->pos[i]);
        inplace = 1;
    }
    if (ckind == SCOLL_BCAST || ckind == SCOLL_REDUCE) {
        if (need_u64(p, a, "root", &v))
            return -1;
        if (v >= (uint64_t)s->comms[c].n)
            return scn_perr(p, "%s: root=%llu outside comm %u of size %d",
                            opname, (unsigned long long)v, s->comms[c].ctx,
                            s->comms[c].n);
        want.root = (int32_t)v;
    }
    if (ckind == SCOLL_BCAST && need_u64(p, a, "size", &want.size))
        return -1;
    if (ckind == SCOLL_REDUCE || ckind == SCOLL_ALLREDUCE) {
        const char *t = arg(a, "type"), *o = arg(a, "op");
        if (need_u64(p, a, "count", &want.size))
            return -1;
        if (t == NULL || scn_dtype_parse(t, &want.dtype) != 0)
            return scn_perr(p, "%s: type=int8|uint8|int16|uint16|int32|uint32|"
                               "int64|uint64|float|double, not '%s'",
                            opname, t ? t : "");
        if (o == NULL || scn_op_parse(o, &want.opk) != 0)
            return scn_perr(p, "%s: op=sum|prod|min|max|band|bor|bxor|land|lor|"
                               "lxor|affine, not '%s'",
                            opname, o ? o : "");
        if (!scn_op_valid(want.opk, want.dtype))
            return scn_perr(p, "%s: op=%s is not defined on type=%s (%s)",
                            opname, o, t,
                            want.opk == SCN_OP_AFFINE
                                ? "affine takes uint64 only"
                                : "bitwise and logical ops take integer types");
        if (want.size > (1u << 20))
            return scn_perr(p, "%s: count=%llu is too large for a scenario",
                            opname, (unsigned long long)want.size);
    }
    if (want.size > (16u << 20))
        return scn_perr(p, "%s: size is too large for a scenario", opname);
    if ((ci = coll_instance(p, rank, c, &want)) < 0)
        return -1;
    if ((op = scn_new_op(p, rank, SOP_COLL)) == NULL ||
        (sl = new_slot(p, rank, SLOT_COLL, name)) < 0)
        return scn_perr(p, "out of memory");
    x = &s->slots[sl];
    op->slot = sl;
    x->comm = c;
    x->my_crank = s->comms[c].crank[rank];
    x->ckind = ckind;
    x->cinst = ci;
    /* MPI: a reduce's send buffer is IN_PLACE at the root only. */
    x->inplace = inplace && (ckind == SCOLL_ALLREDUCE ||
                             x->my_crank == want.root);
    return args_check(p, a, opname);
}

int scn_parse_op(parser *p, int rank, const char *opname, args *a)
{
    scn *s = p->s;
    scn_op *op;
    const char *name;
    int sl, t;

    if (strcmp(opname, "isend") == 0) {
        const char *to, *tag, *mode;
        uint64_t size;
        scn_slot *x;
        int c;
        if (get_comm(p, a, rank, &c) || take_name(p, a, rank, &name))
            return -1;
        if (need_u64(p, a, "size", &size))
            return -1;
        to = arg(a, "to");
        tag = arg(a, "tag");
        mode = arg(a, "mode");
        if (to == NULL || tag == NULL)
            return scn_perr(p, "isend needs to= and tag=");
        if ((op = scn_new_op(p, rank, SOP_ISEND)) == NULL)
            return scn_perr(p, "out of memory");
        if ((sl = new_slot(p, rank, SLOT_SEND, name)) < 0)
            return scn_perr(p, "out of memory");
        x = &s->slots[sl];
        op->slot = sl;
        x->comm = c;
        x->size = size;
        x->my_crank = s->comms[c].crank[rank];
        if (parse_rt(to, 0, 1, &x->peer) != 0)
            return scn_perr(p, "bad to=%s", to);
        if (parse_rt(tag, 0, 0, &x->tag) != 0)
            return scn_perr(p, "bad tag=%s", tag);
        if (x->peer >= s->comms[c].n)
            return scn_perr(p, "to=%d outside comm of size %d", x->peer,
                            s->comms[c].n);
        x->peer_world = x->peer >= 0 ? s->comms[c].world[x->peer] : -2;
        x->mode = QUAY_SEND_STANDARD;
        if (mode != NULL) {
            if (strcmp(mode, "std") == 0)
                x->mode = QUAY_SEND_STANDARD;
            else if (strcmp(mode, "sync") == 0)
                x->mode = QUAY_SEND_SYNC;
            else if (strcmp(mode, "ready") == 0)
                x->mode = QUAY_SEND_READY;
            else if (strcmp(mode, "buf") == 0)
                x->mode = QUAY_SEND_BUFFERED;
            else
                return scn_perr(p, "bad mode=%s", mode);
        }
        if (x->mode == QUAY_SEND_BUFFERED && !p->attached[rank])
            return scn_perr(p, "buffered send with no attached buffer");
        x->send_k = s->nsends[rank]++;
        if (x->peer_world >= 0)
            s->nincoming[x->peer_world]++;
        return args_check(p, a, opname);
    }
    if (strcmp(opname, "irecv") == 0) {
        uint64_t cap;
        int c;
        scn_slot *x;
        if (get_comm(p, a, rank, &c) || take_name(p, a, rank, &name))
            return -1;
        if (need_u64(p, a, "cap", &cap))
            return -1;
        if ((op = scn_new_op(p, rank, SOP_IRECV)) == NULL ||
            (sl = new_slot(p, rank, SLOT_RECV, name)) < 0)
            return scn_perr(p, "out of memory");
        x = &s->slots[sl];
        op->slot = sl;
        x->comm = c;
        x->size = cap;
        x->my_crank = s->comms[c].crank[rank];
        if (recv_pattern(p, a, x))
            return -1;
        return args_check(p, a, opname);
    }
    if (strcmp(opname, "iprobe") == 0 || strcmp(opname, "probe") == 0 ||
        strcmp(opname, "mprobe") == 0) {
        int mprobe = opname[0] == 'm';
        int c;
        scn_slot *x;
        if (get_comm(p, a, rank, &c) || take_name(p, a, rank, &name))
            return -1;
        if (mprobe && name == NULL)
            return scn_perr(p, "mprobe needs as=NAME");
        if ((op = scn_new_op(p, rank,
                             mprobe ? SOP_MPROBE
                             : opname[0] == 'p' ? SOP_PROBE
                                                : SOP_IPROBE)) == NULL ||
            (sl = new_slot(p, rank, mprobe ? SLOT_MPROBE : SLOT_PROBE, name)) < 0)
            return scn_perr(p, "out of memory");
        x = &s->slots[sl];
        op->slot = sl;
        x->comm = c;
        x->my_crank = s->comms[c].crank[rank];
        if (recv_pattern(p, a, x))
            return -1;
        return args_check(p, a, opname);
    }
    if (strcmp(opname, "mrecv") == 0) {
        uint64_t cap;
        scn_slot *x;
        if ((t = target(p, a, rank, "mrecv")) < 0)
            return -1;
        if (s->slots[t].kind != SLOT_MPROBE)
            return scn_perr(p, "mrecv: '%s' is not an mprobe", a->pos[0]);
        if (s->slots[t].link >= 0)
            return scn_perr(p, "mrecv: '%s' already received", a->pos[0]);
        if (take_name(p, a, rank, &name) || need_u64(p, a, "cap", &cap))
            return -1;
        if ((op = scn_new_op(p, rank, SOP_MRECV)) == NULL ||
            (sl = new_slot(p, rank, SLOT_MRECV, name)) < 0)
            return scn_perr(p, "out of memory");
        x = &s->slots[sl];
        op->slot = sl;
        x->comm = s->slots[t].comm;
        x->peer = s->slots[t].peer;
        x->peer_world = s->slots[t].peer_world;
        x->tag = s->slots[t].tag;
        x->my_crank = s->slots[t].my_crank;
        x->size = cap;
        x->link = t;
        s->slots[t].link = sl;
        return args_check(p, a, opname);
    }
    if (strcmp(opname, "ibarrier") == 0)
        return parse_coll(p, rank, SCOLL_BARRIER, opname, a);
    if (strcmp(opname, "ibcast") == 0)
        return parse_coll(p, rank, SCOLL_BCAST, opname, a);
    if (strcmp(opname, "ireduce") == 0)
        return parse_coll(p, rank, SCOLL_REDUCE, opname, a);
    if (strcmp(opname, "iallreduce") == 0)
        return parse_coll(p, rank, SCOLL_ALLREDUCE, opname, a);
    if (strcmp(opname, "cancel") == 0 || strcmp(opname, "free") == 0 ||
        strcmp(opname, "wait") == 0) {
        int k = opname[0] == 'c' ? SOP_CANCEL
                                 : (opname[0] == 'f' ? SOP_FREE : SOP_WAIT);
        int sk;
        if ((t = target(p, a, rank, opname)) < 0)
            return -1;
        sk = s->slots[t].kind;
        if (!scn_is_req(sk))
            return scn_perr(p, "%s: '%s' is not a request", opname, a->pos[0]);
        if (sk == SLOT_COLL && k == SOP_CANCEL)
            return scn_perr(p, "cancel: '%s' is a collective (collectives "
                               "cannot be cancelled)", a->pos[0]);
        if (finished(s, rank, t))
            return scn_perr(p, "%s: '%s' was already waited or freed", opname,
                            a->pos[0]);
        if ((op = scn_new_op(p, rank, k)) == NULL)
            return scn_perr(p, "out of memory");
        op->slot = t;
        if (k == SOP_WAIT)
            s->slots[t].waited = 1;
        if (k == SOP_CANCEL)
            s->slots[t].cancelled = 1;
        return args_check(p, a, opname);
    }
    if (strcmp(opname, "waitall") == 0) {
        if (scn_new_op(p, rank, SOP_WAITALL) == NULL)
            return scn_perr(p, "out of memory");
        return args_check(p, a, opname);
    }
    if (strcmp(opname, "attach") == 0) {
        uint64_t size;
        if (need_u64(p, a, "size", &size))
            return -1;
        if (p->attached[rank])
            return scn_perr(p, "attach: a buffer is already attached");
        if ((op = scn_new_op(p, rank, SOP_ATTACH)) == NULL)
            return scn_perr(p, "out of memory");
        op->size = size;
        p->attached[rank] = 1;
        if (size > s->attach_max[rank])
            s->attach_max[rank] = (size_t)size;
        return args_check(p, a, opname);
    }
    if (strcmp(opname, "detach") == 0) {
        if (!p->attached[rank])
            return scn_perr(p, "detach: nothing attached");
        if (scn_new_op(p, rank, SOP_DETACH) == NULL)
            return scn_perr(p, "out of memory");
        p->attached[rank] = 0;
        return args_check(p, a, opname);
    }
    if (strcmp(opname, "comm_create") == 0) {
        uint64_t ctx;
        int c;
        if (a->npos != 1 || scn_parse_u64(a->pos[0], &ctx) != 0)
            return scn_perr(p, "comm_create ID");
        c = scn_find_comm(s, (uint32_t)ctx);
        if (c <= 0)
            return scn_perr(p, "comm_create: no comm line for %s", a->pos[0]);
        if (s->comms[c].crank[rank] < 0)
            return scn_perr(p, "comm_create: rank %d is not a member", rank);
        if (s->comms[c].lazy >> rank & 1u)
            return scn_perr(p, "comm_create: comm %s created twice", a->pos[0]);
        for (t = 0; t < s->nops[rank]; t++) {
            const scn_op *o = &s->ops[rank][t];
            if (o->slot >= 0 && s->slots[o->slot].comm == c)
                return scn_perr(p, "comm_create: comm %s already used",
                                a->pos[0]);
        }
        if ((op = scn_new_op(p, rank, SOP_COMM_CREATE)) == NULL)
            return scn_perr(p, "out of memory");
        op->sync_idx = c;
        s->comms[c].lazy |= 1u << rank;
        p->created[c] |= 1u << rank;
        return args_check(p, a, opname);
    }
    if (strcmp(opname, "expect") == 0) {
        const char *err = arg(a, "err"), *count = arg(a, "count");
        const char *src = arg(a, "source"), *tag = arg(a, "tag");
        scn_slot *x;
        if ((t = target(p, a, rank, "expect")) < 0)
            return -1;
        x = &s->slots[t];
        if (!scn_is_req(x->kind))
            return scn_perr(p, "expect: '%s' is not a request", a->pos[0]);
        if (err == NULL && count == NULL && src == NULL && tag == NULL)
            return scn_perr(p, "expect needs err=, count=, source= or tag=");
        /* A send's or a collective's status has no source or tag to
         * speak of (MPI leaves them undefined). */
        if ((src != NULL || tag != NULL) && x->kind != SLOT_RECV &&
            x->kind != SLOT_MRECV)
            return scn_perr(p, "expect: source= and tag= need a receive, and "
                               "'%s' is not one", a->pos[0]);
        /* `any` is not a value here: err=any already means "unchecked" */
        if (src != NULL) {
            if (parse_rt(src, 0, 1, &x->expect_src) != 0)
                return scn_perr(p, "expect: bad source=%s", src);
            if (x->expect_src >= s->comms[x->comm].n)
                return scn_perr(p, "expect: source=%d outside comm of size %d",
                                x->expect_src, s->comms[x->comm].n);
            x->has_expect_src = 1;
        }
        if (tag != NULL) {
            if (parse_rt(tag, 0, 0, &x->expect_tag) != 0)
                return scn_perr(p, "expect: bad tag=%s", tag);
            x->has_expect_tag = 1;
        }
        x->has_expect = 1;
        x->expect_any = 1;
        if (err != NULL) {
            x->expect_any = 0;
            if (strcmp(err, "any") == 0)
                x->expect_any = 1;
            else if (strcmp(err, "0") == 0 || strcmp(err, "ok") == 0)
                x->expect_err = 0;
            else if (strcmp(err, "ETRUNCATE") == 0)
                x->expect_err = QUAY_ETRUNCATE;
            else if (strcmp(err, "ENOTPOSTED") == 0)
                x->expect_err = QUAY_ENOTPOSTED;
            else if (strcmp(err, "ECANCELLED") == 0)
                x->expect_err = QUAY_ECANCELLED;
            else
                return scn_perr(p, "expect: bad err=%s", err);
        }
        if (count != NULL) {
            uint64_t cnt;
            if (scn_parse_u64(count, &cnt) != 0 || cnt > INT64_MAX)
                return scn_perr(p, "expect: bad count=%s", count);
            x->expect_count = (int64_t)cnt;
        }
        return args_check(p, a, opname);
    }
    return scn_perr(p, "unknown op '%s'", opname);
}
