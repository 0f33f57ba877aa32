/*
 * scn_parse.c — the scenario language (tests/ordering/README.md).
 *
 *   ranks N
 *   config eager_max=256 frag_size=128 depth=2 reorder=1 ...
 *          faults=drop:0.01,dup:0.01,...  (nicsim_fault_spec_parse)
 *   comm ID = w0 w1 ...
 *   R: isend to=D tag=T size=S [mode=std|sync|ready|buf] [comm=ID] [as=N]
 *   R: irecv from=D|any|null tag=T|any cap=S [comm=ID] [as=N]
 *   R: iprobe|probe from= tag= [comm=] [as=N]
 *   R: mprobe from= tag= [comm=] as=M        R: mrecv M cap=S [as=N]
 *   R: cancel N | free N | wait N | waitall | attach size=S | detach
 *   *: sync                                  R: expect N err=... [count=C]
 *   R: comm_create ID    (the comm exists for R only from here on)
 *   R: ibarrier [comm=ID] [as=N]
 *   R: ibcast root=C size=S [comm=ID] [as=N]
 *   R: ireduce root=C count=N type=T op=O [inplace] [comm=ID] [as=N]
 *   R: iallreduce count=N type=T op=O [inplace] [comm=ID] [as=N]
 *
 * Every member of a communicator makes the same collective calls on it in
 * the same order (kind, root, size / count, type, op): checked here.
 *
 * R is a world rank or `*` (the op for every rank). Sizes take K/M/G.
 */
#include "scn_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOK 64

typedef struct parser {
    scn *s;
    int line;
    char *err;
    size_t errlen;
    int attached[SCN_MAX_RANKS];
    unsigned created[SCN_MAX_COMMS]; /* bit r: comm_create seen for r */
    int seen_op;
    int coll_mixed;              /* config coll=mixed */
    unsigned coll_set;           /* config keys given explicitly (bits) */
} parser;

/* parser.coll_set bits: the algorithm keys are bits 0..3 (scn_collk) */
#define COLL_SET_DEGREE (1u << SCOLL_NKINDS)
#define COLL_SET_SEGMENT (1u << (SCOLL_NKINDS + 1))
#define COLL_SET_BYPASS (1u << (SCOLL_NKINDS + 2))

static int perr(parser *p, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(p->err, p->errlen, "%s:%d: ", p->s->name, p->line);
    if (n < 0)
        n = 0;
    if ((size_t)n < p->errlen) {
        va_start(ap, fmt);
        vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

static int parse_u64(const char *v, uint64_t *out)
{
    char *end;
    unsigned long long x;
    uint64_t mul = 1;
    if (*v == '\0' || *v == '-')
        return -1;
    errno = 0;
    x = strtoull(v, &end, 0);
    if (errno != 0 || end == v)
        return -1;
    if (*end == 'K' || *end == 'k')
        mul = 1024, end++;
    else if (*end == 'M' || *end == 'm')
        mul = 1024 * 1024, end++;
    else if (*end == 'G' || *end == 'g')
        mul = 1024ull * 1024 * 1024, end++;
    if (*end != '\0')
        return -1;
    if (x > UINT64_MAX / mul)
        return -1;
    *out = (uint64_t)x * mul;
    return 0;
}

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
    if (parse_u64(v, &x) != 0 || x > INT32_MAX)
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

static int find_comm(const scn *s, uint32_t ctx)
{
    int i;
    for (i = 0; i < s->ncomms; i++)
        if (s->comms[i].ctx == ctx)
            return i;
    return -1;
}

static scn_op *new_op(parser *p, int rank, int kind)
{
    scn *s = p->s;
    scn_op *op;
    if (s->nops[rank] == s->capops[rank]) {
        int ncap = s->capops[rank] ? s->capops[rank] * 2 : 16;
        scn_op *n = realloc(s->ops[rank], (size_t)ncap * sizeof *n);
        if (n == NULL)
            return NULL;
        s->ops[rank] = n;
        s->capops[rank] = ncap;
    }
    op = &s->ops[rank][s->nops[rank]++];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->line = p->line;
    op->slot = -1;
    op->sync_idx = -1;
    return op;
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

/* key=value arguments of one op */
typedef struct args {
    const char *key[MAX_TOK];
    const char *val[MAX_TOK];
    int used[MAX_TOK];
    int n;
    const char *pos[4]; /* positional tokens */
    int npos;
} args;

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
            return perr(p, "%s: unknown argument '%s'", op, a->key[i]);
    return 0;
}

static int get_comm(parser *p, args *a, int rank, int *pc)
{
    const char *v = arg(a, "comm");
    uint64_t ctx = 0;
    int c;
    if (v != NULL && parse_u64(v, &ctx) != 0)
        return perr(p, "bad comm '%s'", v);
    c = find_comm(p->s, (uint32_t)ctx);
    if (c < 0)
        return perr(p, "unknown comm %llu", (unsigned long long)ctx);
    if (p->s->comms[c].crank[rank] < 0)
        return perr(p, "rank %d is not a member of comm %llu", rank,
                    (unsigned long long)ctx);
    if ((p->s->comms[c].lazy >> rank & 1u) && !(p->created[c] >> rank & 1u))
        return perr(p, "rank %d uses comm %llu before its comm_create", rank,
                    (unsigned long long)ctx);
    *pc = c;
    return 0;
}

static int need_u64(parser *p, args *a, const char *key, uint64_t *out)
{
    const char *v = arg(a, key);
    if (v == NULL)
        return perr(p, "missing %s=", key);
    if (parse_u64(v, out) != 0)
        return perr(p, "bad %s=%s", key, v);
    return 0;
}

/* from= / to= / tag= for receive-like ops */
static int recv_pattern(parser *p, args *a, scn_slot *sl)
{
    const char *from = arg(a, "from"), *tag = arg(a, "tag");
    const scn_comm *c = &p->s->comms[sl->comm];
    if (from == NULL || tag == NULL)
        return perr(p, "needs from= and tag=");
    if (parse_rt(from, 1, 1, &sl->peer) != 0)
        return perr(p, "bad from=%s", from);
    if (parse_rt(tag, 1, 0, &sl->tag) != 0)
        return perr(p, "bad tag=%s", tag);
    if (sl->peer >= c->n)
        return perr(p, "from=%d outside comm of size %d", sl->peer, c->n);
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
        return perr(p, "bad name '%s'", as);
    if (find_slot(p->s, rank, as) >= 0)
        return perr(p, "name '%s' already used on rank %d", as, rank);
    *pname = as;
    return 0;
}

/* The target of cancel / free / wait / mrecv / expect. */
static int target(parser *p, args *a, int rank, const char *op)
{
    int t;
    if (a->npos != 1)
        return perr(p, "%s needs one request name", op);
    t = find_slot(p->s, rank, a->pos[0]);
    if (t < 0)
        return perr(p, "%s: no request '%s' on rank %d", op, a->pos[0], rank);
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
static void cinst_text(const scn_cinst *ci, char *b, size_t n)
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
            cinst_text(want, a, sizeof a);
            cinst_text(ci, b, sizeof b);
            return perr(p,
                        "rank %d's collective #%d on comm %u is '%s', but "
                        "rank %d's (line %d) is '%s' (every member must make "
                        "the same collective calls in the same order)",
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
            return perr(p, "out of memory");
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
            return perr(p, "%s: unexpected '%s'", opname, a->pos[i]);
        inplace = 1;
    }
    if (ckind == SCOLL_BCAST || ckind == SCOLL_REDUCE) {
        if (need_u64(p, a, "root", &v))
            return -1;
        if (v >= (uint64_t)s->comms[c].n)
            return perr(p, "%s: root=%llu outside comm %u of size %d", opname,
                        (unsigned long long)v, s->comms[c].ctx, s->comms[c].n);
        want.root = (int32_t)v;
    }
    if (ckind == SCOLL_BCAST && need_u64(p, a, "size", &want.size))
        return -1;
    if (ckind == SCOLL_REDUCE || ckind == SCOLL_ALLREDUCE) {
        const char *t = arg(a, "type"), *o = arg(a, "op");
        if (need_u64(p, a, "count", &want.size))
            return -1;
        if (t == NULL || scn_dtype_parse(t, &want.dtype) != 0)
            return perr(p, "%s: type=int8|uint8|int16|uint16|int32|uint32|"
                           "int64|uint64|float|double, not '%s'",
                        opname, t ? t : "");
        if (o == NULL || scn_op_parse(o, &want.opk) != 0)
            return perr(p, "%s: op=sum|prod|min|max|band|bor|bxor|land|lor|"
                           "lxor|affine, not '%s'",
                        opname, o ? o : "");
        if (!scn_op_valid(want.opk, want.dtype))
            return perr(p, "%s: op=%s is not defined on type=%s (%s)", opname,
                        o, t,
                        want.opk == SCN_OP_AFFINE
                            ? "affine takes uint64 only"
                            : "bitwise and logical ops take integer types");
        if (want.size > (1u << 20))
            return perr(p, "%s: count=%llu is too large for a scenario",
                        opname, (unsigned long long)want.size);
    }
    if (want.size > (16u << 20))
        return perr(p, "%s: size is too large for a scenario", opname);
    if ((ci = coll_instance(p, rank, c, &want)) < 0)
        return -1;
    if ((op = new_op(p, rank, SOP_COLL)) == NULL ||
        (sl = new_slot(p, rank, SLOT_COLL, name)) < 0)
        return perr(p, "out of memory");
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

static int parse_op(parser *p, int rank, const char *opname, args *a)
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
            return perr(p, "isend needs to= and tag=");
        if ((op = new_op(p, rank, SOP_ISEND)) == NULL)
            return perr(p, "out of memory");
        if ((sl = new_slot(p, rank, SLOT_SEND, name)) < 0)
            return perr(p, "out of memory");
        x = &s->slots[sl];
        op->slot = sl;
        x->comm = c;
        x->size = size;
        x->my_crank = s->comms[c].crank[rank];
        if (parse_rt(to, 0, 1, &x->peer) != 0)
            return perr(p, "bad to=%s", to);
        if (parse_rt(tag, 0, 0, &x->tag) != 0)
            return perr(p, "bad tag=%s", tag);
        if (x->peer >= s->comms[c].n)
            return perr(p, "to=%d outside comm of size %d", x->peer,
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
                return perr(p, "bad mode=%s", mode);
        }
        if (x->mode == QUAY_SEND_BUFFERED && !p->attached[rank])
            return perr(p, "buffered send with no attached buffer");
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
        if ((op = new_op(p, rank, SOP_IRECV)) == NULL ||
            (sl = new_slot(p, rank, SLOT_RECV, name)) < 0)
            return perr(p, "out of memory");
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
            return perr(p, "mprobe needs as=NAME");
        if ((op = new_op(p, rank,
                         mprobe ? SOP_MPROBE
                                : (opname[0] == 'p' ? SOP_PROBE : SOP_IPROBE))) ==
                NULL ||
            (sl = new_slot(p, rank, mprobe ? SLOT_MPROBE : SLOT_PROBE, name)) < 0)
            return perr(p, "out of memory");
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
            return perr(p, "mrecv: '%s' is not an mprobe", a->pos[0]);
        if (s->slots[t].link >= 0)
            return perr(p, "mrecv: '%s' already received", a->pos[0]);
        if (take_name(p, a, rank, &name) || need_u64(p, a, "cap", &cap))
            return -1;
        if ((op = new_op(p, rank, SOP_MRECV)) == NULL ||
            (sl = new_slot(p, rank, SLOT_MRECV, name)) < 0)
            return perr(p, "out of memory");
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
            return perr(p, "%s: '%s' is not a request", opname, a->pos[0]);
        if (sk == SLOT_COLL && k == SOP_CANCEL)
            return perr(p, "cancel: '%s' is a collective (collectives cannot "
                           "be cancelled)", a->pos[0]);
        if (finished(s, rank, t))
            return perr(p, "%s: '%s' was already waited or freed", opname,
                        a->pos[0]);
        if ((op = new_op(p, rank, k)) == NULL)
            return perr(p, "out of memory");
        op->slot = t;
        if (k == SOP_WAIT)
            s->slots[t].waited = 1;
        if (k == SOP_CANCEL)
            s->slots[t].cancelled = 1;
        return args_check(p, a, opname);
    }
    if (strcmp(opname, "waitall") == 0) {
        if (new_op(p, rank, SOP_WAITALL) == NULL)
            return perr(p, "out of memory");
        return args_check(p, a, opname);
    }
    if (strcmp(opname, "attach") == 0) {
        uint64_t size;
        if (need_u64(p, a, "size", &size))
            return -1;
        if (p->attached[rank])
            return perr(p, "attach: a buffer is already attached");
        if ((op = new_op(p, rank, SOP_ATTACH)) == NULL)
            return perr(p, "out of memory");
        op->size = size;
        p->attached[rank] = 1;
        if (size > s->attach_max[rank])
            s->attach_max[rank] = (size_t)size;
        return args_check(p, a, opname);
    }
    if (strcmp(opname, "detach") == 0) {
        if (!p->attached[rank])
            return perr(p, "detach: nothing attached");
        if (new_op(p, rank, SOP_DETACH) == NULL)
            return perr(p, "out of memory");
        p->attached[rank] = 0;
        return args_check(p, a, opname);
    }
    if (strcmp(opname, "comm_create") == 0) {
        uint64_t ctx;
        int c;
        if (a->npos != 1 || parse_u64(a->pos[0], &ctx) != 0)
            return perr(p, "comm_create ID");
        c = find_comm(s, (uint32_t)ctx);
        if (c <= 0)
            return perr(p, "comm_create: no comm line for %s", a->pos[0]);
        if (s->comms[c].crank[rank] < 0)
            return perr(p, "comm_create: rank %d is not a member", rank);
        if (s->comms[c].lazy >> rank & 1u)
            return perr(p, "comm_create: comm %s created twice", a->pos[0]);
        for (t = 0; t < s->nops[rank]; t++) {
            const scn_op *o = &s->ops[rank][t];
            if (o->slot >= 0 && s->slots[o->slot].comm == c)
                return perr(p, "comm_create: comm %s already used", a->pos[0]);
        }
        if ((op = new_op(p, rank, SOP_COMM_CREATE)) == NULL)
            return perr(p, "out of memory");
        op->sync_idx = c;
        s->comms[c].lazy |= 1u << rank;
        p->created[c] |= 1u << rank;
        return args_check(p, a, opname);
    }
    if (strcmp(opname, "expect") == 0) {
        const char *err = arg(a, "err"), *count = arg(a, "count");
        scn_slot *x;
        if ((t = target(p, a, rank, "expect")) < 0)
            return -1;
        x = &s->slots[t];
        if (!scn_is_req(x->kind))
            return perr(p, "expect: '%s' is not a request", a->pos[0]);
        if (err == NULL && count == NULL)
            return perr(p, "expect needs err= or count=");
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
                return perr(p, "expect: bad err=%s", err);
        }
        if (count != NULL) {
            uint64_t cnt;
            if (parse_u64(count, &cnt) != 0 || cnt > INT64_MAX)
                return perr(p, "expect: bad count=%s", count);
            x->expect_count = (int64_t)cnt;
        }
        return args_check(p, a, opname);
    }
    return perr(p, "unknown op '%s'", opname);
}

static int parse_config(parser *p, char **tok, int ntok)
{
    scn *s = p->s;
    int i;
    if (p->seen_op)
        return perr(p, "config must come before the ops");
    for (i = 1; i < ntok; i++) {
        char *eq = strchr(tok[i], '=');
        uint64_t v;
        if (eq == NULL)
            return perr(p, "config: expected key=value, got '%s'", tok[i]);
        *eq = '\0';
        if (strcmp(tok[i], "faults") == 0) {
            char ferr[256];
            if (nicsim_fault_spec_parse(eq + 1, &s->faults, ferr,
                                        sizeof ferr) != 0)
                return perr(p, "config: %s", ferr);
            if (scn_faults_check(&s->faults, s->nranks, ferr,
                                 sizeof ferr) != 0)
                return perr(p, "config: %s", ferr);
            continue;
        }
        if (strcmp(tok[i], "flow") == 0) {
            if (scn_flow_parse(eq + 1, &s->flow) != 0)
                return perr(p, "config: flow=none|acknack|credit, not '%s'", eq + 1);
            continue;
        }
        if (strcmp(tok[i], "coll") == 0) {
            if (strcmp(eq + 1, "mixed") == 0)
                p->coll_mixed = 1;
            else if (strcmp(eq + 1, "auto") == 0)
                p->coll_mixed = 0;
            else
                return perr(p, "config: coll=mixed|auto, not '%s'", eq + 1);
            continue;
        }
        {
            static const char *const keys[SCOLL_NKINDS] = {
                "coll_barrier", "coll_bcast", "coll_reduce", "coll_allreduce"};
            int k, found = 0;
            for (k = 0; k < SCOLL_NKINDS; k++)
                if (strcmp(tok[i], keys[k]) == 0) {
                    found = 1;
                    if (scn_coll_alg_parse(k, eq + 1, &s->coll_alg[k]) != 0)
                        return perr(p, "config: bad %s=%s (an algorithm "
                                       "number or name of quay_coll.h, or "
                                       "auto / mixed)",
                                    keys[k], eq + 1);
                    p->coll_set |= 1u << k;
                }
            if (found)
                continue;
        }
        if (strcmp(tok[i], "coll_bypass") == 0) {
            p->coll_set |= COLL_SET_BYPASS;
            if (strcmp(eq + 1, "mixed") == 0)
                s->coll_bypass = SCN_MIXED;
            else if (parse_u64(eq + 1, &v) == 0 && v <= 1)
                s->coll_bypass = (int)v;
            else
                return perr(p, "config: coll_bypass=0|1|mixed, not '%s'", eq + 1);
            continue;
        }
        if (strcmp(tok[i], "coll_tree_degree") == 0 ||
            strcmp(tok[i], "coll_segment") == 0) {
            int deg = strcmp(tok[i], "coll_tree_degree") == 0;
            p->coll_set |= deg ? COLL_SET_DEGREE : COLL_SET_SEGMENT;
            if (strcmp(eq + 1, "mixed") == 0) {
                if (deg)
                    s->coll_degree = SCN_MIXED;
                else
                    s->coll_segment = SCN_MIXED;
                continue;
            }
            if (parse_u64(eq + 1, &v) != 0 ||
                (deg && (v < 2 || v > 64)) || v > (1u << 30))
                return perr(p, "config: bad %s=%s%s", tok[i], eq + 1,
                            deg ? " (2..64 or mixed)" : "");
            if (deg)
                s->coll_degree = (int)v;
            else
                s->coll_segment = (int64_t)v;
            continue;
        }
        if (strcmp(tok[i], "rndv") == 0) {
            if (scn_rndv_parse(eq + 1, &s->rndv) != 0)
                return perr(p, "config: rndv=default|copy|get|put|mixed, not '%s'", eq + 1);
            continue;
        }
        if (parse_u64(eq + 1, &v) != 0)
            return perr(p, "config: bad value for %s", tok[i]);
        if (strcmp(tok[i], "eager_max") == 0)
            s->eager_max = (size_t)v;
        else if (strcmp(tok[i], "frag_size") == 0)
            s->frag_size = (size_t)v;
        else if (strcmp(tok[i], "depth") == 0 ||
                 strcmp(tok[i], "pipeline_depth") == 0)
            s->depth = (uint32_t)v;
        else if (strcmp(tok[i], "rtr") == 0)
            s->rtr = v > 2 ? 2 : (int)v; /* 2: and ANY_SOURCE arbitration */
        else if (strcmp(tok[i], "max_unexpected") == 0)
            s->max_unexpected = (uint32_t)v;
        else if (strcmp(tok[i], "unexpected_bytes") == 0)
            s->unexpected_bytes = (size_t)v;
        else if (strcmp(tok[i], "reorder_window") == 0)
            s->reorder_window = (uint32_t)v;
        else if (strcmp(tok[i], "max_requests") == 0)
            s->max_requests = (uint32_t)v;
        else if (strcmp(tok[i], "max_out") == 0)
            s->max_out = (uint32_t)v;
        else if (strcmp(tok[i], "max_ctrl") == 0)
            s->max_ctrl = (uint32_t)v;
        else if (strcmp(tok[i], "coll_max") == 0 && v >= 1 && v <= 65536)
            s->coll_max = (uint32_t)v;
        else if (strcmp(tok[i], "reorder") == 0 && v <= 1)
            s->reorder = (int)v;
        else if (strcmp(tok[i], "oracle") == 0 && v <= 1)
            s->flags = v ? (s->flags | QUAY_CFG_CHECK_ORACLE)
                         : (s->flags & ~(uint32_t)QUAY_CFG_CHECK_ORACLE);
        else if (strcmp(tok[i], "complete_actions") == 0 && v <= 1)
            s->flags = v ? (s->flags | QUAY_CFG_COMPLETE_ACTIONS)
                         : (s->flags & ~(uint32_t)QUAY_CFG_COMPLETE_ACTIONS);
        else
            return perr(p, "config: unknown key or bad value '%s'", tok[i]);
    }
    return 0;
}

static int parse_comm(parser *p, char **tok, int ntok)
{
    scn *s = p->s;
    uint64_t ctx;
    scn_comm *c;
    int i, first;
    if (p->seen_op)
        return perr(p, "comm lines must come before the ops");
    if (s->nranks == 0)
        return perr(p, "comm before ranks");
    if (ntok < 3)
        return perr(p, "comm ID = r0 r1 ...");
    /* "comm 3 = 0 1" or "comm 3= 0 1" */
    {
        char *id = tok[1];
        size_t l = strlen(id);
        first = 2;
        if (l > 1 && id[l - 1] == '=')
            id[l - 1] = '\0';
        else if (strcmp(tok[2], "=") == 0)
            first = 3;
        else
            return perr(p, "comm ID = r0 r1 ...");
        if (parse_u64(id, &ctx) != 0 || ctx == 0 || ctx >= SCN_CTX_COLL)
            return perr(p, "bad comm id '%s' (0 is the world; ids are below "
                           "2^31, the rest name collective twins)", id);
    }
    if (find_comm(s, (uint32_t)ctx) >= 0)
        return perr(p, "comm %llu defined twice", (unsigned long long)ctx);
    if (s->ncomms == SCN_MAX_COMMS)
        return perr(p, "too many comms");
    c = &s->comms[s->ncomms];
    memset(c, 0, sizeof *c);
    c->ctx = (uint32_t)ctx;
    for (i = 0; i < SCN_MAX_RANKS; i++)
        c->crank[i] = -1;
    for (i = first; i < ntok; i++) {
        uint64_t w;
        if (parse_u64(tok[i], &w) != 0 || w >= (uint64_t)s->nranks)
            return perr(p, "bad member '%s'", tok[i]);
        if (c->crank[w] >= 0)
            return perr(p, "member %s twice", tok[i]);
        if (c->n == SCN_MAX_RANKS)
            return perr(p, "too many members");
        c->crank[w] = c->n;
        c->world[c->n++] = (int32_t)w;
    }
    if (c->n == 0)
        return perr(p, "empty comm");
    s->ncomms++;
    return 0;
}

static int parse_line(parser *p, char *line)
{
    scn *s = p->s;
    char *tok[MAX_TOK];
    int ntok = 0, i, r0, r1, r;
    char *c = strchr(line, '#');
    if (c != NULL)
        *c = '\0';
    c = line;
    for (;;) {
        while (*c == ' ' || *c == '\t' || *c == '\r' || *c == '\n')
            c++;
        if (*c == '\0')
            break;
        if (ntok == MAX_TOK)
            return perr(p, "line too long");
        tok[ntok++] = c;
        while (*c != '\0' && *c != ' ' && *c != '\t' && *c != '\r' &&
               *c != '\n')
            c++;
        if (*c != '\0')
            *c++ = '\0';
    }
    if (ntok == 0)
        return 0;
    if (strcmp(tok[0], "ranks") == 0) {
        uint64_t n;
        if (s->nranks != 0)
            return perr(p, "ranks given twice");
        if (ntok != 2 || parse_u64(tok[1], &n) != 0 || n < SCN_MIN_RANKS ||
            n > SCN_MAX_RANKS)
            return perr(p, "ranks N (N = %d..%d)", SCN_MIN_RANKS,
                        SCN_MAX_RANKS);
        s->nranks = (int)n;
        /* comm 0: the world */
        memset(&s->comms[0], 0, sizeof s->comms[0]);
        s->comms[0].n = s->nranks;
        for (i = 0; i < SCN_MAX_RANKS; i++) {
            s->comms[0].world[i] = i < s->nranks ? i : -1;
            s->comms[0].crank[i] = i < s->nranks ? i : -1;
        }
        s->ncomms = 1;
        return 0;
    }
    if (strcmp(tok[0], "config") == 0)
        return parse_config(p, tok, ntok);
    if (strcmp(tok[0], "comm") == 0)
        return parse_comm(p, tok, ntok);

    /* "R: op ..." ; also "R:op" */
    {
        char *colon = strchr(tok[0], ':');
        char *opname;
        int first = 1;
        args a;
        if (colon == NULL)
            return perr(p, "expected 'R: op', 'ranks', 'config' or 'comm'");
        if (s->nranks == 0)
            return perr(p, "ops before 'ranks N'");
        *colon = '\0';
        if (strcmp(tok[0], "*") == 0) {
            r0 = 0;
            r1 = s->nranks - 1;
        } else {
            uint64_t rr;
            if (parse_u64(tok[0], &rr) != 0 || rr >= (uint64_t)s->nranks)
                return perr(p, "bad rank '%s'", tok[0]);
            r0 = r1 = (int)rr;
        }
        if (colon[1] != '\0') {
            opname = colon + 1;
        } else {
            if (ntok < 2)
                return perr(p, "missing op");
            opname = tok[1];
            first = 2;
        }
        p->seen_op = 1;
        if (strcmp(opname, "sync") == 0) {
            if (ntok > first)
                return perr(p, "sync takes no arguments");
            if (r0 != 0 || r1 != s->nranks - 1)
                return perr(p, "sync is '*: sync'");
            for (r = 0; r < s->nranks; r++) {
                scn_op *op = new_op(p, r, SOP_SYNC);
                if (op == NULL)
                    return perr(p, "out of memory");
                op->sync_idx = s->nsyncs;
            }
            s->nsyncs++;
            return 0;
        }
        memset(&a, 0, sizeof a);
        for (i = first; i < ntok; i++) {
            char *eq = strchr(tok[i], '=');
            if (eq == NULL) {
                if (a.npos == 4)
                    return perr(p, "too many positional arguments");
                a.pos[a.npos++] = tok[i];
            } else {
                *eq = '\0';
                a.key[a.n] = tok[i];
                a.val[a.n] = eq + 1;
                a.n++;
            }
        }
        for (r = r0; r <= r1; r++) {
            args b = a; /* fresh `used` flags for every rank */
            if (parse_op(p, r, opname, &b) != 0)
                return -1;
        }
        return 0;
    }
}

/* Collectives, once every line is read: every member calls every
 * instance; `coll=mixed`; engine resources the schedules may hold. */
static int finish_coll(parser *p)
{
    scn *s = p->s;
    int i, k;
    if (p->coll_mixed) {
        for (k = 0; k < SCOLL_NKINDS; k++)
            if (!(p->coll_set >> k & 1u))
                s->coll_alg[k] = SCN_MIXED;
        if (!(p->coll_set & COLL_SET_DEGREE))
            s->coll_degree = SCN_MIXED;
        if (!(p->coll_set & COLL_SET_SEGMENT))
            s->coll_segment = SCN_MIXED;
        if (!(p->coll_set & COLL_SET_BYPASS))
            s->coll_bypass = SCN_MIXED;
    }
    for (i = 0; i < s->ncinst; i++) {
        const scn_cinst *ci = &s->cinst[i];
        const scn_comm *c = &s->comms[ci->comm];
        for (k = 0; k < c->n; k++)
            if (!(ci->callers >> c->world[k] & 1u)) {
                char a[128];
                cinst_text(ci, a, sizeof a);
                p->line = ci->line;
                return perr(p,
                            "collective #%d on comm %u ('%s') is not called "
                            "by rank %d, a member (every member must make "
                            "the same collective calls in the same order)",
                            ci->seq, c->ctx, a, (int)c->world[k]);
            }
    }
    /* Sizing: what one call may hold at a rank at once (a chain posts a
     * receive and a send per segment, segments of 64 bytes or more; the
     * other algorithms a few per peer), and what may wait at a rank as
     * unexpected messages (as much, per instance). */
    for (i = 0; i < s->nslots; i++) {
        const scn_slot *x = &s->slots[i];
        const scn_cinst *ci;
        uint64_t n, est;
        if (x->kind != SLOT_COLL)
            continue;
        ci = &s->cinst[x->cinst];
        n = (uint64_t)s->comms[ci->comm].n;
        est = 4 * n + 8;
        if (ci->ckind == SCOLL_BCAST) {
            uint64_t segs = scn_coll_bytes(s, ci) / 64 + 1;
            est += 2 * (segs < 256 ? segs : 256);
        }
        s->coll_reqs[x->rank] += (uint32_t)est;
        if (x->my_crank == 0) /* once per instance */
            s->coll_msgs += (uint32_t)est;
    }
    return 0;
}

/* Whole-scenario checks and layout, once every line is read. */
static int finish(parser *p)
{
    scn *s = p->s;
    int i, r;
    size_t off;

    p->line = 0;
    if (s->nranks == 0)
        return perr(p, "no 'ranks N' line");
    {
        char ferr[256];
        if (scn_faults_check(&s->faults, s->nranks, ferr, sizeof ferr) != 0)
            return perr(p, "%s", ferr);
    }
    if (s->frag_size == 0 || s->depth == 0)
        return perr(p, "frag_size and depth must be > 0");
    for (i = 0; i < s->nslots; i++) {
        scn_slot *x = &s->slots[i];
        if (x->kind == SLOT_MPROBE && x->link < 0) {
            p->line = x->line;
            return perr(p, "mprobe '%s' is never received (mrecv)", x->name);
        }
    }
    if (finish_coll(p) != 0)
        return -1;
    /* payloads */
    off = 0;
    for (i = 0; i < s->nslots; i++) {
        scn_slot *x = &s->slots[i];
        if (x->kind != SLOT_SEND)
            continue;
        x->off = off;
        off += ((size_t)x->size + 7) & ~(size_t)7;
    }
    s->payload_len = off;
    s->payload = malloc(off ? off : 1);
    if (s->payload == NULL)
        return perr(p, "out of memory");
    for (i = 0; i < s->nslots; i++) {
        scn_slot *x = &s->slots[i];
        uint64_t j;
        if (x->kind != SLOT_SEND)
            continue;
        for (j = 0; j < x->size; j++)
            s->payload[x->off + j] = scn_pattern(x->rank, x->send_k, j);
    }
    /* receive arenas */
    for (i = 0; i < s->nslots; i++) {
        scn_slot *x = &s->slots[i];
        if (x->kind != SLOT_RECV && x->kind != SLOT_MRECV)
            continue;
        x->off = s->arena_len[x->rank];
        s->arena_len[x->rank] +=
            ((size_t)x->size + SCN_GUARD + 7) & ~(size_t)7;
    }
    /* collective buffers: bcast buffer / receive buffer, then the send
     * buffer of a reduction not in place, each with guard bytes */
    for (i = 0; i < s->nslots; i++) {
        scn_slot *x = &s->slots[i];
        size_t bytes;
        if (x->kind != SLOT_COLL || x->ckind == SCOLL_BARRIER)
            continue;
        bytes = (size_t)scn_coll_bytes(s, &s->cinst[x->cinst]);
        x->off = s->arena_len[x->rank];
        s->arena_len[x->rank] += (bytes + SCN_GUARD + 7) & ~(size_t)7;
        if (x->ckind != SCOLL_BCAST && !x->inplace) {
            x->off2 = s->arena_len[x->rank];
            s->arena_len[x->rank] += (bytes + SCN_GUARD + 7) & ~(size_t)7;
        }
    }
    /* probe -> the next receive with the same pattern */
    for (r = 0; r < s->nranks; r++) {
        for (i = 0; i < s->nops[r]; i++) {
            const scn_op *o = &s->ops[r][i];
            scn_slot *pr;
            int j;
            if (o->kind != SOP_PROBE && o->kind != SOP_IPROBE)
                continue;
            pr = &s->slots[o->slot];
            for (j = i + 1; j < s->nops[r]; j++) {
                const scn_op *q = &s->ops[r][j];
                const scn_slot *y;
                if (q->kind != SOP_IRECV && q->kind != SOP_MPROBE &&
                    q->kind != SOP_PROBE && q->kind != SOP_IPROBE)
                    continue;
                y = &s->slots[q->slot];
                if ((q->kind == SOP_IRECV || q->kind == SOP_MPROBE) &&
                    y->comm == pr->comm && y->peer == pr->peer &&
                    y->tag == pr->tag)
                    pr->link = q->slot;
                break;
            }
        }
    }
    return 0;
}

static void scn_init(scn *s, const char *name)
{
    const char *base = strrchr(name, '/');
    size_t l;
    memset(s, 0, sizeof *s);
    base = base ? base + 1 : name;
    snprintf(s->name, sizeof s->name, "%s", base);
    l = strlen(s->name);
    if (l > 4 && strcmp(s->name + l - 4, ".scn") == 0)
        s->name[l - 4] = '\0';
    s->eager_max = 256;
    s->frag_size = 128;
    s->depth = 2;
    s->reorder = 1;
    s->flags = QUAY_CFG_COMPLETE_ACTIONS | QUAY_CFG_CHECK_ORACLE;
}

int scn_parse_string(const char *name, const char *text, scn **ps, char *err,
                     size_t errlen)
{
    parser p;
    scn *s;
    const char *cur = text;
    char *buf = NULL;
    size_t bcap = 0;

    *ps = NULL;
    s = malloc(sizeof *s);
    if (s == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    scn_init(s, name);
    memset(&p, 0, sizeof p);
    p.s = s;
    p.err = err;
    p.errlen = errlen;
    err[0] = '\0';
    while (*cur != '\0') {
        const char *nl = strchr(cur, '\n');
        size_t len = nl ? (size_t)(nl - cur) : strlen(cur);
        p.line++;
        if (len + 1 > bcap) {
            char *nb = realloc(buf, len + 1);
            if (nb == NULL) {
                perr(&p, "out of memory");
                goto fail;
            }
            buf = nb;
            bcap = len + 1;
        }
        memcpy(buf, cur, len);
        buf[len] = '\0';
        if (parse_line(&p, buf) != 0)
            goto fail;
        cur += len;
        if (*cur == '\n')
            cur++;
    }
    if (finish(&p) != 0)
        goto fail;
    free(buf);
    *ps = s;
    return 0;
fail:
    free(buf);
    scn_free(s);
    return -1;
}

int scn_parse_file(const char *path, scn **ps, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    char *text;
    long n;
    int rc;
    *ps = NULL;
    if (f == NULL) {
        snprintf(err, errlen, "%s: cannot open", path);
        return -1;
    }
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        snprintf(err, errlen, "%s: cannot read", path);
        return -1;
    }
    text = malloc((size_t)n + 1);
    if (text == NULL || fread(text, 1, (size_t)n, f) != (size_t)n) {
        free(text);
        fclose(f);
        snprintf(err, errlen, "%s: cannot read", path);
        return -1;
    }
    fclose(f);
    text[n] = '\0';
    rc = scn_parse_string(path, text, ps, err, errlen);
    free(text);
    return rc;
}

void scn_free(scn *s)
{
    int r;
    if (s == NULL)
        return;
    for (r = 0; r < SCN_MAX_RANKS; r++)
        free(s->ops[r]);
    free(s->slots);
    free(s->cinst);
    free(s->payload);
    free(s);
}

const char *scn_name(const scn *s)
{
    return s->name;
}

int scn_nranks(const scn *s)
{
    return s->nranks;
}

int scn_rndv_parse(const char *text, int *mode)
{
    static const char *const names[] = {"default", "copy", "get", "put", "mixed"};
    for (int i = 0; i < 5; i++)
        if (strcmp(text, names[i]) == 0) {
            *mode = i;
            return 0;
        }
    return -1;
}

int scn_flow_parse(const char *text, int *mode)
{
    if (strcmp(text, "none") == 0)
        *mode = QUAY_FLOW_NONE;
    else if (strcmp(text, "acknack") == 0)
        *mode = QUAY_FLOW_ACKNACK;
    else if (strcmp(text, "credit") == 0)
        *mode = QUAY_FLOW_CREDIT;
    else
        return -1;
    return 0;
}

int scn_faults_check(const nicsim_fault_spec *spec, int nranks, char *err,
                     size_t errlen)
{
    uint32_t i;
    if (nranks <= 0)
        return 0; /* checked again once `ranks` is known */
    for (i = 0; i < spec->nkill; i++)
        if (spec->kill[i].rank >= nranks) {
            snprintf(err, errlen, "faults: kill:%d, but ranks %d",
                     (int)spec->kill[i].rank, nranks);
            return -1;
        }
    for (i = 0; i < spec->nblackhole; i++)
        if (spec->blackhole[i].src >= nranks ||
            spec->blackhole[i].dst >= nranks) {
            snprintf(err, errlen, "faults: blackhole:%d>%d, but ranks %d",
                     (int)spec->blackhole[i].src, (int)spec->blackhole[i].dst,
                     nranks);
            return -1;
        }
    return 0;
}

int scn_slot_matches(const scn *s, const scn_slot *r, const scn_slot *m)
{
    const scn_comm *c;
    if (r->comm != m->comm || m->peer_world < 0)
        return 0;
    c = &s->comms[m->comm];
    if (c->world[m->peer] != r->rank)
        return 0; /* not sent to r's owner */
    if (r->peer == QUAY_PROC_NULL)
        return 0;
    if (r->peer != QUAY_ANY_SOURCE && r->peer != m->my_crank)
        return 0;
    if (r->tag != QUAY_ANY_TAG && r->tag != m->tag)
        return 0;
    return 1;
}
