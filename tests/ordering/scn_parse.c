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
 *   *: sync         R: expect N [err=...] [count=C] [source=C|null] [tag=T]
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
 * This file reads the lines and the ranks / config / comm statements and
 * checks the whole scenario; the op statements are scn_parse_ops.c's.
 */
#include "scn_parse_int.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* parser.coll_set bits: the algorithm keys are bits 0..3 (scn_collk) */
#define COLL_SET_DEGREE (1u << SCOLL_NKINDS)
#define COLL_SET_SEGMENT (1u << (SCOLL_NKINDS + 1))
#define COLL_SET_BYPASS (1u << (SCOLL_NKINDS + 2))

int scn_perr(parser *p, const char *fmt, ...)
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

int scn_parse_u64(const char *v, uint64_t *out)
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

int scn_find_comm(const scn *s, uint32_t ctx)
{
    int i;
    for (i = 0; i < s->ncomms; i++)
        if (s->comms[i].ctx == ctx)
            return i;
    return -1;
}

scn_op * scn_new_op(parser *p, int rank, int kind)
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

static int parse_config(parser *p, char **tok, int ntok)
{
    scn *s = p->s;
    int i;
    if (p->seen_op)
        return scn_perr(p, "config must come before the ops");
    for (i = 1; i < ntok; i++) {
        char *eq = strchr(tok[i], '=');
        uint64_t v;
        if (eq == NULL)
            return scn_perr(p, "config: expected key=value, got '%s'", tok[i]);
        *eq = '\0';
        if (strcmp(tok[i], "faults") == 0) {
            char ferr[256];
            if (nicsim_fault_spec_parse(eq + 1, &s->faults, ferr,
                                        sizeof ferr) != 0)
                return scn_perr(p, "config: %s", ferr);
            if (scn_faults_check(&s->faults, s->nranks, ferr,
                                 sizeof ferr) != 0)
                return scn_perr(p, "config: %s", ferr);
            continue;
        }
        if (strcmp(tok[i], "flow") == 0) {
            if (scn_flow_parse(eq + 1, &s->flow) != 0)
                return scn_perr(p, "config: flow=none|acknack|credit, not '%s'",
                                eq + 1);
            continue;
        }
        if (strcmp(tok[i], "coll") == 0) {
            if (strcmp(eq + 1, "mixed") == 0)
                p->coll_mixed = 1;
            else if (strcmp(eq + 1, "auto") == 0)
                p->coll_mixed = 0;
            else
                return scn_perr(p, "config: coll=mixed|auto, not '%s'", eq + 1);
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
                        return scn_perr(p, "config: bad %s=%s (an algorithm "
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
            else if (scn_parse_u64(eq + 1, &v) == 0 && v <= 1)
                s->coll_bypass = (int)v;
            else
                return scn_perr(p, "config: coll_bypass=0|1|mixed, not '%s'",
                                eq + 1);
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
            if (scn_parse_u64(eq + 1, &v) != 0 ||
                (deg && (v < 2 || v > 64)) || v > (1u << 30))
                return scn_perr(p, "config: bad %s=%s%s", tok[i], eq + 1,
                                deg ? " (2..64 or mixed)" : "");
            if (deg)
                s->coll_degree = (int)v;
            else
                s->coll_segment = (int64_t)v;
            continue;
        }
        if (strcmp(tok[i], "rndv") == 0) {
            if (scn_rndv_parse(eq + 1, &s->rndv) != 0)
                return scn_perr(p, "config: rndv=default|copy|get|put|mixed, "
                                   "not '%s'", eq + 1);
            continue;
        }
        if (scn_parse_u64(eq + 1, &v) != 0)
            return scn_perr(p, "config: bad value for %s", tok[i]);
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
            return scn_perr(p, "config: unknown key or bad value '%s'", tok[i]);
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
        return scn_perr(p, "comm lines must come before the ops");
    if (s->nranks == 0)
        return scn_perr(p, "comm before ranks");
    if (ntok < 3)
        return scn_perr(p, "comm ID = r0 r1 ...");
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
            return scn_perr(p, "comm ID = r0 r1 ...");
        if (scn_parse_u64(id, &ctx) != 0 || ctx == 0 || ctx >= SCN_CTX_COLL)
            return scn_perr(p, "bad comm id '%s' (0 is the world; ids are "
                               "below 2^31, the rest name collective twins)",
                            id);
    }
    if (scn_find_comm(s, (uint32_t)ctx) >= 0)
        return scn_perr(p, "comm %llu defined twice", (unsigned long long)ctx);
    if (s->ncomms == SCN_MAX_COMMS)
        return scn_perr(p, "too many comms");
    c = &s->comms[s->ncomms];
    memset(c, 0, sizeof *c);
    c->ctx = (uint32_t)ctx;
    for (i = 0; i < SCN_MAX_RANKS; i++)
        c->crank[i] = -1;
    for (i = first; i < ntok; i++) {
        uint64_t w;
        if (scn_parse_u64(tok[i], &w) != 0 || w >= (uint64_t)s->nranks)
            return scn_perr(p, "bad member '%s'", tok[i]);
        if (c->crank[w] >= 0)
            return scn_perr(p, "member %s twice", tok[i]);
        if (c->n == SCN_MAX_RANKS)
            return scn_perr(p, "too many members");
        c->crank[w] = c->n;
        c->world[c->n++] = (int32_t)w;
    }
    if (c->n == 0)
        return scn_perr(p, "empty comm");
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
            return scn_perr(p, "line too long");
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
            return scn_perr(p, "ranks given twice");
        if (ntok != 2 || scn_parse_u64(tok[1], &n) != 0 || n < SCN_MIN_RANKS ||
            n > SCN_MAX_RANKS)
            return scn_perr(p, "ranks N (N = %d..%d)", SCN_MIN_RANKS,
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
            return scn_perr(p, "expected 'R: op', 'ranks', 'config' or 'comm'");
        if (s->nranks == 0)
            return scn_perr(p, "ops before 'ranks N'");
        *colon = '\0';
        if (strcmp(tok[0], "*") == 0) {
            r0 = 0;
            r1 = s->nranks - 1;
        } else {
            uint64_t rr;
            if (scn_parse_u64(tok[0], &rr) != 0 || rr >= (uint64_t)s->nranks)
                return scn_perr(p, "bad rank '%s'", tok[0]);
            r0 = r1 = (int)rr;
        }
        if (colon[1] != '\0') {
            opname = colon + 1;
        } else {
            if (ntok < 2)
                return scn_perr(p, "missing op");
            opname = tok[1];
            first = 2;
        }
        p->seen_op = 1;
        if (strcmp(opname, "sync") == 0) {
            if (ntok > first)
                return scn_perr(p, "sync takes no arguments");
            if (r0 != 0 || r1 != s->nranks - 1)
                return scn_perr(p, "sync is '*: sync'");
            for (r = 0; r < s->nranks; r++) {
                scn_op *op = scn_new_op(p, r, SOP_SYNC);
                if (op == NULL)
                    return scn_perr(p, "out of memory");
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
                    return scn_perr(p, "too many positional arguments");
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
            if (scn_parse_op(p, r, opname, &b) != 0)
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
                scn_cinst_text(ci, a, sizeof a);
                p->line = ci->line;
                return scn_perr(p,
                                "collective #%d on comm %u ('%s') is not "
                                "called by rank %d, a member (every member "
                                "must make the same collective calls in the "
                                "same order)",
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
        return scn_perr(p, "no 'ranks N' line");
    {
        char ferr[256];
        if (scn_faults_check(&s->faults, s->nranks, ferr, sizeof ferr) != 0)
            return scn_perr(p, "%s", ferr);
    }
    if (s->frag_size == 0 || s->depth == 0)
        return scn_perr(p, "frag_size and depth must be > 0");
    for (i = 0; i < s->nslots; i++) {
        scn_slot *x = &s->slots[i];
        if (x->kind == SLOT_MPROBE && x->link < 0) {
            p->line = x->line;
            return scn_perr(p, "mprobe '%s' is never received (mrecv)",
                            x->name);
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
        return scn_perr(p, "out of memory");
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
                scn_perr(&p, "out of memory");
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
