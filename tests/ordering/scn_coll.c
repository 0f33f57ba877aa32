/*
 * scn_coll.c — collectives in scenarios (ibarrier, ibcast, ireduce,
 * iallreduce): names, the per-seed algorithm choice, the data every call
 * starts from, making the calls, and the end-of-run checks:
 *
 *  - every collective's schedule finished once (its request reached DONE,
 *    freed early or not) and, unless freed early, ended with error 0;
 *  - buffers: a bcast leaves the root's data in every member's buffer; a
 *    reduce / allreduce leaves x0 op x1 op ... op x(n-1) (comm-rank order,
 *    computed here element by element, independently of the library's
 *    kernels) in the root's / every member's receive buffer, bit for bit;
 *    nothing past the data is written (SCN_GUARD bytes), a non-root's
 *    reduce receive buffer is not written at all, and send buffers are
 *    not changed;
 *  - timing (event clock): a barrier completes nowhere before every
 *    member called it; a bcast completes at no non-root before the root
 *    called it; a reduce at the root, an allreduce anywhere, only after
 *    every member called it (when there is something to move);
 *  - traffic on collective twins (context | 2^31): every MATCH there names
 *    an engine-owned receive (never a user receive or improbe) for a
 *    communicator the receiver is in, from a member, with the tag of a
 *    collective the receiver has called; it names a collective message the
 *    sender's PKT_OUT announced, and no message is matched twice. When
 *    every collective ended well, every collective message was matched.
 *
 * Data: the root's bcast buffer holds bytes derived from (instance,
 * communicator, root); member q's element i of a reduction is derived from
 * (instance, q, i) and chosen so that every result is exact: float / double
 * sums of small integers, products of +-1/2, +-1, +-2; integer sums and
 * products wrap (computed here in 64 bits, truncated); `affine` operands
 * have an odd multiplier. Buffers not holding data start as SCN_FILL.
 */
#include "scn_int.h"

#include "nicsim_prng.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Names                                                                */
/* ------------------------------------------------------------------ */

const char *scn_coll_name(int ckind)
{
    static const char *const n[SCOLL_NKINDS] = {"ibarrier", "ibcast",
                                                "ireduce", "iallreduce"};
    return ckind >= 0 && ckind < SCOLL_NKINDS ? n[ckind] : "?";
}

static const char *const dtype_names[] = {
    NULL,    "int8",   "uint8", "int16", "uint16", "int32",
    "uint32", "int64", "uint64", "float", "double"};

const char *scn_dtype_name(int dt)
{
    return dt >= QUAY_INT8 && dt <= QUAY_DOUBLE ? dtype_names[dt] : "?";
}

int scn_dtype_parse(const char *text, int *dt)
{
    int i;
    for (i = QUAY_INT8; i <= QUAY_DOUBLE; i++)
        if (strcmp(text, dtype_names[i]) == 0) {
            *dt = i;
            return 0;
        }
    return -1;
}

size_t scn_dtype_size(int dt)
{
    switch (dt) {
    case QUAY_INT8:
    case QUAY_UINT8: return 1;
    case QUAY_INT16:
    case QUAY_UINT16: return 2;
    case QUAY_INT32:
    case QUAY_UINT32:
    case QUAY_FLOAT: return 4;
    case QUAY_INT64:
    case QUAY_UINT64:
    case QUAY_DOUBLE: return 8;
    default: return 0;
    }
}

static const char *const op_names[] = {
    NULL, "sum", "prod", "min", "max", "band", "bor", "bxor", "land", "lor",
    "lxor", "affine"};

const char *scn_op_name(int opk)
{
    return opk >= QUAY_OP_SUM && opk <= SCN_OP_AFFINE ? op_names[opk] : "?";
}

int scn_op_parse(const char *text, int *opk)
{
    int i;
    for (i = QUAY_OP_SUM; i <= SCN_OP_AFFINE; i++)
        if (strcmp(text, op_names[i]) == 0) {
            *opk = i;
            return 0;
        }
    return -1;
}

static int is_float(int dt)
{
    return dt == QUAY_FLOAT || dt == QUAY_DOUBLE;
}

static int is_signed(int dt)
{
    return dt == QUAY_INT8 || dt == QUAY_INT16 || dt == QUAY_INT32 ||
           dt == QUAY_INT64;
}

int scn_op_valid(int opk, int dt)
{
    if (scn_dtype_size(dt) == 0)
        return 0;
    switch (opk) {
    case QUAY_OP_SUM:
    case QUAY_OP_PROD:
    case QUAY_OP_MIN:
    case QUAY_OP_MAX: return 1;
    case SCN_OP_AFFINE: return dt == QUAY_UINT64;
    default: return opk > QUAY_OP_MAX && opk <= QUAY_OP_LXOR && !is_float(dt);
    }
}

/* Algorithm names per kind, by number (quay_coll.h); [0] is "auto". */
static const char *const alg_names[SCOLL_NKINDS][5] = {
    {"auto", "dissemination", "pairwise", "tree", NULL},
    {"auto", "binomial", "optimal", "chain", "scatter"},
    {"auto", "binomial", NULL, NULL, NULL},
    {"auto", "rd", "rabenseifner", "ring", NULL},
};

static int alg_count(int ckind)
{
    int n = 0;
    while (n < 5 && alg_names[ckind][n] != NULL)
        n++;
    return n;
}

int scn_coll_alg_parse(int ckind, const char *text, int *alg)
{
    int i, n = alg_count(ckind);
    uint32_t v = 0;
    const char *c;
    if (strcmp(text, "mixed") == 0) {
        *alg = SCN_MIXED;
        return 0;
    }
    for (i = 0; i < n; i++)
        if (strcmp(text, alg_names[ckind][i]) == 0) {
            *alg = i;
            return 0;
        }
    if (*text == '\0')
        return -1;
    for (c = text; *c != '\0'; c++) {
        if (*c < '0' || *c > '9' || v > 100)
            return -1;
        v = v * 10 + (uint32_t)(*c - '0');
    }
    if (v >= (uint32_t)n)
        return -1;
    *alg = (int)v;
    return 0;
}

const char *scn_coll_alg_name(int ckind, uint32_t alg)
{
    return alg < (uint32_t)alg_count(ckind) ? alg_names[ckind][alg] : "?";
}

uint64_t scn_coll_bytes(const scn *s, const scn_cinst *ci)
{
    (void)s;
    switch (ci->ckind) {
    case SCOLL_BCAST: return ci->size;
    case SCOLL_REDUCE:
    case SCOLL_ALLREDUCE: return ci->size * scn_dtype_size(ci->dtype);
    default: return 0;
    }
}

/* ------------------------------------------------------------------ */
/* Data                                                                 */
/* ------------------------------------------------------------------ */

static uint64_t mix3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t x = a * 0x9E3779B97F4A7C15ull ^ (b + 0x632BE59BD9B4E019ull) *
                                                  0xBF58476D1CE4E5B9ull;
    x ^= (c + 1) * 0x94D049BB133111EBull;
    x ^= x >> 31;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 29;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 32);
}

/* Byte j of the root's buffer of bcast instance g. */
static unsigned char bcast_byte(const scn *s, int g, uint64_t j)
{
    const scn_cinst *ci = &s->cinst[g];
    uint64_t who = (uint64_t)s->comms[ci->comm].ctx << 8 | (uint64_t)ci->root;
    return (unsigned char)mix3(0xB0000000u + (uint64_t)g, who, j);
}

/* An element while computing: integers sign- or zero-extended from their
 * width into 64 bits, floating ones as double. */
typedef union num {
    uint64_t u;
    int64_t i;
    double d;
} num;

static num int_value(int dt, uint64_t bits)
{
    size_t w = scn_dtype_size(dt);
    num v;
    v.u = bits;
    if (w < 8) {
        uint64_t mask = (1ull << (8 * w)) - 1;
        v.u &= mask;
        if (is_signed(dt) && (v.u >> (8 * w - 1) & 1u))
            v.u |= ~mask;
    }
    return v;
}

/* Comm rank q's element i of reduction instance g. */
static num operand(const scn *s, int g, int32_t q, uint64_t i)
{
    const scn_cinst *ci = &s->cinst[g];
    uint64_t h = mix3(0xC0000000u + (uint64_t)g, (uint64_t)q, i);
    num v;
    if (ci->opk == SCN_OP_AFFINE) {
        v.u = h | 1ull << 32 | 1u; /* odd multiplier: nothing is lost */
        return v;
    }
    if (is_float(ci->dtype)) {
        static const double factors[6] = {-2, -1, -0.5, 0.5, 1, 2};
        if (ci->opk == QUAY_OP_SUM)
            v.d = (double)((int64_t)(h % 129) - 64); /* exact sums */
        else if (ci->opk == QUAY_OP_PROD)
            v.d = factors[h % 6]; /* exact products, never zero */
        else /* min / max: exact in float too (21 significant bits) */
            v.d = (double)((int64_t)(h % 2000001) - 1000000) / 8.0;
        return v;
    }
    switch (ci->opk) {
    case QUAY_OP_PROD:
        h |= 1; /* odd: products keep their low bits */
        break;
    case QUAY_OP_LAND:
    case QUAY_OP_LOR:
    case QUAY_OP_LXOR: {
        /* Zeros often in some elements, rarely or never in others. */
        uint64_t odds = i % 3 == 0 ? 2 : (i % 3 == 1 ? 16 : 0);
        if (odds != 0 && (h >> 40) % odds == 0)
            h = 0;
        else if (int_value(ci->dtype, h).u == 0)
            h = 0x80; /* nonzero in every width */
        break;
    }
    default:
        break;
    }
    return int_value(ci->dtype, h);
}

static void num_store(int dt, num v, unsigned char *out)
{
    switch (scn_dtype_size(dt)) {
    case 1: {
        uint8_t x = (uint8_t)v.u;
        memcpy(out, &x, 1);
        break;
    }
    case 2: {
        uint16_t x = (uint16_t)v.u;
        memcpy(out, &x, 2);
        break;
    }
    case 4:
        if (dt == QUAY_FLOAT) {
            float f = (float)v.d;
            memcpy(out, &f, 4);
        } else {
            uint32_t x = (uint32_t)v.u;
            memcpy(out, &x, 4);
        }
        break;
    default:
        if (dt == QUAY_DOUBLE)
            memcpy(out, &v.d, 8);
        else
            memcpy(out, &v.u, 8);
        break;
    }
}

/* The affine maps x -> a x + b mod 2^32 (a in the high half): u after v. */
static uint64_t affine(uint64_t u, uint64_t v)
{
    uint32_t ua = (uint32_t)(u >> 32), ub = (uint32_t)u;
    uint32_t va = (uint32_t)(v >> 32), vb = (uint32_t)v;
    return (uint64_t)(uint32_t)(ua * va) << 32 | (uint32_t)(ua * vb + ub);
}

/* The oracle's step: a (the lower ranks' result) op b (the next rank's). */
static num combine(int opk, int dt, num a, num b)
{
    num r = a;
    int fl = is_float(dt), sg = is_signed(dt);
    switch (opk) {
    case QUAY_OP_SUM:
        if (fl)
            r.d = a.d + b.d;
        else
            r.u = a.u + b.u;
        break;
    case QUAY_OP_PROD:
        if (fl)
            r.d = a.d * b.d;
        else
            r.u = a.u * b.u;
        break;
    case QUAY_OP_MIN:
        if (fl ? b.d < a.d : (sg ? b.i < a.i : b.u < a.u))
            r = b;
        break;
    case QUAY_OP_MAX:
        if (fl ? b.d > a.d : (sg ? b.i > a.i : b.u > a.u))
            r = b;
        break;
    case QUAY_OP_BAND: r.u = a.u & b.u; break;
    case QUAY_OP_BOR: r.u = a.u | b.u; break;
    case QUAY_OP_BXOR: r.u = a.u ^ b.u; break;
    case QUAY_OP_LAND: r.u = a.u != 0 && b.u != 0; break;
    case QUAY_OP_LOR: r.u = a.u != 0 || b.u != 0; break;
    case QUAY_OP_LXOR: r.u = (a.u != 0) != (b.u != 0); break;
    case SCN_OP_AFFINE: r.u = affine(a.u, b.u); break;
    default: break;
    }
    if (dt == QUAY_FLOAT)
        r.d = (double)(float)r.d;
    else if (!fl)
        r = int_value(dt, r.u);
    return r;
}

/* The user op `affine`, as the library calls it: inout = in op inout, in
 * holding the lower ranks' operand. */
static void affine_fn(const void *in, void *inout, size_t count, quay_dtype dt,
                      void *ctx)
{
    const unsigned char *a = in;
    unsigned char *b = inout;
    size_t i;
    (void)dt;
    (void)ctx;
    for (i = 0; i < count; i++) {
        uint64_t x, y;
        memcpy(&x, a + 8 * i, 8);
        memcpy(&y, b + 8 * i, 8);
        y = affine(x, y);
        memcpy(b + 8 * i, &y, 8);
    }
}

/* ------------------------------------------------------------------ */
/* Set-up and calls                                                     */
/* ------------------------------------------------------------------ */

void scn_coll_setup(scn_runner *run, uint64_t seed)
{
    const scn *s = run->s;
    /* Its own stream: the other draws of the seed keep their values. */
    uint64_t z = seed ^ 0x636f6c6c6d697864ull;
    static const size_t segments[4] = {0, 64, 200, 1000};
    int k;
    for (k = 0; k < SCOLL_NKINDS; k++) {
        uint64_t v = nicsim_splitmix64(&z);
        run->coll.alg[k] = s->coll_alg[k] == SCN_MIXED
                               ? (uint32_t)(v % (uint64_t)alg_count(k))
                               : (uint32_t)s->coll_alg[k];
    }
    {
        uint64_t v = nicsim_splitmix64(&z), w = nicsim_splitmix64(&z);
        run->coll.degree = s->coll_degree == SCN_MIXED ? 2 + (uint32_t)(v % 3)
                                                      : (uint32_t)s->coll_degree;
        run->coll.segment = s->coll_segment == SCN_MIXED
                                ? segments[w % 4]
                                : (size_t)s->coll_segment;
        /* (drawn last: the draws above keep their values per seed) */
        uint64_t b = nicsim_splitmix64(&z);
        run->coll.bypass = s->coll_bypass == SCN_MIXED ? (uint32_t)(b % 3 == 0)
                                                      : (uint32_t)s->coll_bypass;
    }
    if (run->trace != NULL && s->ncinst > 0)
        fprintf(run->trace,
                "# collectives: barrier %s, bcast %s, reduce %s, allreduce "
                "%s, tree degree %u, segment %zu%s\n",
                scn_coll_alg_name(SCOLL_BARRIER, run->coll.alg[0]),
                scn_coll_alg_name(SCOLL_BCAST, run->coll.alg[1]),
                scn_coll_alg_name(SCOLL_REDUCE, run->coll.alg[2]),
                scn_coll_alg_name(SCOLL_ALLREDUCE, run->coll.alg[3]),
                run->coll.degree, run->coll.segment,
                run->coll.bypass ? ", application bypass" : "");
}

/* The expected contents of instance g's buffer: the root's data (bcast),
 * the reduction in comm-rank order (reduce / allreduce). */
static void expected(const scn *s, int g, unsigned char *out)
{
    const scn_cinst *ci = &s->cinst[g];
    uint64_t i;
    int32_t q, n = s->comms[ci->comm].n;
    size_t es = scn_dtype_size(ci->dtype);
    if (ci->ckind == SCOLL_BCAST) {
        for (i = 0; i < ci->size; i++)
            out[i] = bcast_byte(s, g, i);
        return;
    }
    for (i = 0; i < ci->size; i++) {
        num acc = operand(s, g, 0, i);
        for (q = 1; q < n; q++)
            acc = combine(ci->opk, ci->dtype, acc, operand(s, g, q, i));
        num_store(ci->dtype, acc, out + i * es);
    }
}

int scn_coll_prepare(scn_runner *run)
{
    const scn *s = run->s;
    size_t total = 0;
    int i, r, g;
    if (s->ncinst == 0)
        return 0;
    /* Arena images: poison everywhere, then what the calls start from. */
    for (r = 0; r < s->nranks; r++) {
        if (s->arena_len[r] == 0)
            continue;
        run->arena_image[r] = malloc(s->arena_len[r]);
        if (run->arena_image[r] == NULL)
            return -1;
        memset(run->arena_image[r], SCN_FILL, s->arena_len[r]);
    }
    for (i = 0; i < s->nslots; i++) {
        const scn_slot *x = &s->slots[i];
        const scn_cinst *ci;
        unsigned char *b;
        uint64_t j;
        if (x->kind != SLOT_COLL)
            continue;
        ci = &s->cinst[x->cinst];
        if (x->ckind == SCOLL_BCAST) {
            if (x->my_crank != ci->root)
                continue; /* poison (SCN_FILL) */
            b = run->arena_image[x->rank] + x->off;
            for (j = 0; j < ci->size; j++)
                b[j] = bcast_byte(s, x->cinst, j);
        } else if (x->ckind != SCOLL_BARRIER) {
            size_t es = scn_dtype_size(ci->dtype);
            b = run->arena_image[x->rank] + (x->inplace ? x->off : x->off2);
            for (j = 0; j < ci->size; j++)
                num_store(ci->dtype, operand(s, x->cinst, x->my_crank, j),
                          b + j * es);
        }
    }
    /* The oracle's results, once: they do not depend on the seed. */
    run->coll_expect_off = calloc((size_t)s->ncinst, sizeof *run->coll_expect_off);
    if (run->coll_expect_off == NULL)
        return -1;
    for (g = 0; g < s->ncinst; g++) {
        run->coll_expect_off[g] = total;
        total += (size_t)scn_coll_bytes(s, &s->cinst[g]);
    }
    run->coll_expect = malloc(total ? total : 1);
    if (run->coll_expect == NULL)
        return -1;
    for (g = 0; g < s->ncinst; g++)
        expected(s, g, run->coll_expect + run->coll_expect_off[g]);
    return 0;
}

int scn_coll_call(scn_runner *run, rank_rt *rk, int sl, quay_req **req)
{
    const scn *s = run->s;
    const scn_slot *x = &s->slots[sl];
    const scn_cinst *ci = &s->cinst[x->cinst];
    quay_comm *c = rk->comms[x->comm];
    unsigned char *buf = rk->arena + x->off;
    quay_op op;
    const void *sbuf;
    switch (x->ckind) {
    case SCOLL_BARRIER:
        return quay_ibarrier(rk->e, c, req);
    case SCOLL_BCAST:
        return quay_ibcast(rk->e, c, buf, (size_t)ci->size, ci->root, req);
    default:
        break;
    }
    memset(&op, 0, sizeof op);
    op.kind = (quay_op_kind)ci->opk;
    op.commutative = 1;
    if (ci->opk == SCN_OP_AFFINE) {
        op.commutative = 0;
        op.fn = affine_fn;
    }
    sbuf = x->inplace ? QUAY_IN_PLACE : (const void *)(rk->arena + x->off2);
    if (x->ckind == SCOLL_REDUCE)
        return quay_ireduce(rk->e, c, sbuf, buf, (size_t)ci->size,
                            (quay_dtype)ci->dtype, &op, ci->root, req);
    return quay_iallreduce(rk->e, c, sbuf, buf, (size_t)ci->size,
                           (quay_dtype)ci->dtype, &op, req);
}

int scn_coll_running(const scn_runner *run, int r)
{
    const scn *s = run->s;
    int i;
    for (i = 0; i < run->nrank_slots[r]; i++) {
        int sl = run->rank_slots[r][i];
        if (s->slots[sl].kind == SLOT_COLL && run->dyn[sl].posted &&
            run->dyn[sl].coll_done == 0)
            return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Traffic on collective twins                                          */
/* ------------------------------------------------------------------ */

void scn_coll_on_match(scn_runner *run, rank_rt *rk,
                       const quay_trace_event *ev, uint64_t t)
{
    const scn *s = run->s;
    uint32_t uctx = ev->ctx & ~SCN_CTX_COLL;
    const scn_comm *cm = NULL;
    int c, i, called = 0;
    coll_match *m;
    for (c = 0; c < s->ncomms; c++)
        if (s->comms[c].ctx == uctx) {
            cm = &s->comms[c];
            break;
        }
    if (cm == NULL || cm->crank[rk->rank] < 0) {
        scn_fail(run, "rank %d: MATCH on collective context %#x, the twin of "
                      "no communicator of this rank",
                 rk->rank, ev->ctx);
        return;
    }
    if (ev->src < 0 || ev->src >= cm->n || cm->world[ev->src] != ev->peer) {
        scn_fail(run, "rank %d: MATCH on collective context %#x from rank %d "
                      "names src %d",
                 rk->rank, ev->ctx, ev->peer, ev->src);
        return;
    }
    for (i = 0; i < run->nrank_slots[rk->rank]; i++) {
        int sl = run->rank_slots[rk->rank][i];
        called += s->slots[sl].kind == SLOT_COLL && s->slots[sl].comm == c &&
                  run->dyn[sl].posted;
    }
    /* (application bypass: a broadcast's or reduce's messages are taken
     * in before the call, by the receives of an early schedule) */
    int early_ok = run->coll.bypass && ev->tag >= 0 && (ev->tag & 0x7FFF) >= 0x4000;
    if (ev->tag < 0 || ((ev->tag >> 15) >= called && !early_ok)) {
        scn_fail(run, "rank %d: MATCH on collective context %#x with tag %#x "
                      "(collective #%d), but this rank called %d collective(s) "
                      "on comm %u",
                 rk->rank, ev->ctx, (unsigned)ev->tag, ev->tag >> 15, called,
                 uctx);
        return;
    }
    if (run->ncmatches == run->capcmatches) {
        int ncap = run->capcmatches ? run->capcmatches * 2 : 64;
        coll_match *nm = realloc(run->cmatches, (size_t)ncap * sizeof *nm);
        if (nm == NULL) {
            scn_fail(run, "out of memory");
            return;
        }
        run->cmatches = nm;
        run->capcmatches = ncap;
    }
    m = &run->cmatches[run->ncmatches++];
    m->t = t;
    m->rank = rk->rank;
    m->peer = ev->peer;
    m->seq = ev->seq;
    m->ctx = ev->ctx;
    m->src = ev->src;
    m->tag = ev->tag;
}

/* Every MATCH on a twin names a collective message that was sent, none
 * twice; with every collective ended well, every message was matched. */
static void check_msgs(scn_runner *run, int all_well)
{
    const scn *s = run->s;
    int i, j, a, b;
    for (i = 0; i < run->ncmatches && !run->failed; i++) {
        const coll_match *m = &run->cmatches[i];
        seq_list *l;
        if (m->peer < 0 || m->peer >= s->nranks) {
            scn_fail(run, "rank %d: MATCH names bad peer %d", m->rank, m->peer);
            return;
        }
        l = &run->seqs[m->peer][m->rank];
        for (j = 0; j < l->n; j++)
            if (l->v[j].ctx == SCN_CTX_COLL && l->v[j].seq == m->seq)
                break;
        if (j == l->n) {
            scn_fail(run,
                     "rank %d: a collective receive matched (rank %d, seq %u, "
                     "ctx %#x, tag %#x), but rank %d sent no collective "
                     "message with that seq (no PKT_OUT)",
                     m->rank, m->peer, m->seq, m->ctx, (unsigned)m->tag,
                     m->peer);
            return;
        }
        if (++l->v[j].nmatch > 1) {
            scn_fail(run,
                     "rank %d: collective message (rank %d, seq %u, ctx %#x, "
                     "tag %#x) matched twice",
                     m->rank, m->peer, m->seq, m->ctx, (unsigned)m->tag);
            return;
        }
    }
    if (!all_well)
        return;
    for (a = 0; a < s->nranks && !run->failed; a++)
        for (b = 0; b < s->nranks && !run->failed; b++) {
            const seq_list *l = &run->seqs[a][b];
            for (j = 0; j < l->n; j++)
                if (l->v[j].ctx == SCN_CTX_COLL && l->v[j].nmatch != 1) {
                    scn_fail(run,
                             "rank %d: collective message to rank %d (seq %u, "
                             "req %u) was never matched",
                             a, b, l->v[j].seq, l->v[j].req_id);
                    break;
                }
        }
}

/* ------------------------------------------------------------------ */
/* Buffers, statuses, timing                                            */
/* ------------------------------------------------------------------ */

/* `what` of slot x at arena offset off: the first n bytes equal `want`
 * and the SCN_GUARD bytes after them are SCN_FILL. */
static int check_region(scn_runner *run, const scn_slot *x, const char *what,
                        size_t off, const unsigned char *want, size_t n,
                        size_t esize)
{
    const unsigned char *b = run->rk[x->rank].arena + off;
    size_t j;
    if (n == 0 || memcmp(b, want, n) == 0) { /* the common case, quickly */
        for (j = n; j < n + SCN_GUARD && b[j] == SCN_FILL; j++)
            ;
        if (j == n + SCN_GUARD)
            return 0;
    }
    for (j = 0; j < n + SCN_GUARD; j++) {
        unsigned char w = j < n ? want[j] : SCN_FILL;
        if (b[j] == w)
            continue;
        if (j >= n)
            scn_fail(run,
                     "rank %d: %s '%s' (line %d): %s byte %zu written past "
                     "its %zu bytes (0x%02x)",
                     x->rank, scn_coll_name(x->ckind), x->name, x->line, what,
                     j, n, b[j]);
        else if (esize > 1) {
            size_t e = j / esize, k;
            char got[40], exp[40];
            for (k = 0; k < esize && k < 16; k++) {
                snprintf(got + 2 * k, 3, "%02x", b[e * esize + k]);
                snprintf(exp + 2 * k, 3, "%02x", want[e * esize + k]);
            }
            scn_fail(run,
                     "rank %d: %s '%s' (line %d): %s element %zu is %s (bytes "
                     "in memory order), expected %s",
                     x->rank, scn_coll_name(x->ckind), x->name, x->line, what,
                     e, got, exp);
        } else
            scn_fail(run,
                     "rank %d: %s '%s' (line %d): %s byte %zu is 0x%02x, "
                     "expected 0x%02x",
                     x->rank, scn_coll_name(x->ckind), x->name, x->line, what,
                     j, b[j], w);
        return -1;
    }
    return 0;
}

static void check_slot(scn_runner *run, int sl)
{
    const scn *s = run->s;
    const scn_slot *x = &s->slots[sl];
    const slot_dyn *d = &run->dyn[sl];
    const scn_cinst *ci = &s->cinst[x->cinst];
    size_t n = (size_t)scn_coll_bytes(s, ci), es = scn_dtype_size(ci->dtype);
    const unsigned char *want = run->coll_expect + run->coll_expect_off[x->cinst];
    const unsigned char *image = run->arena_image[x->rank];
    if (!d->posted)
        return;
    if (d->coll_done != 1) {
        scn_fail(run,
                 "rank %d: %s '%s' (line %d): its request reached DONE %u "
                 "times%s",
                 x->rank, scn_coll_name(x->ckind), x->name, x->line,
                 d->coll_done, d->coll_done ? "" : " (the schedule never finished)");
        return;
    }
    if (d->have_status && (d->st.error != 0 || d->st.cancelled)) {
        if (!x->has_expect) /* else the `expect` line judges it */
            scn_fail(run, "rank %d: %s '%s' (line %d) ended with err %s%s",
                     x->rank, scn_coll_name(x->ckind), x->name, x->line,
                     scn_errname(d->st.error),
                     d->st.cancelled ? " (cancelled)" : "");
        return; /* the buffers of a failed collective are undefined */
    }
    switch (x->ckind) {
    case SCOLL_BCAST:
        check_region(run, x, "buffer", x->off, want, n, 1);
        break;
    case SCOLL_REDUCE:
        if (x->my_crank == ci->root)
            check_region(run, x, "result", x->off, want, n, es);
        else /* untouched */
            check_region(run, x, "receive buffer (not the root's)", x->off,
                         image + x->off, n, es);
        break;
    case SCOLL_ALLREDUCE:
        check_region(run, x, "result", x->off, want, n, es);
        break;
    default:
        break;
    }
    if (!run->failed && (x->ckind == SCOLL_REDUCE ||
                         x->ckind == SCOLL_ALLREDUCE) && !x->inplace)
        check_region(run, x, "send buffer", x->off2, image + x->off2, n, es);
}

/* Nothing completes before what it depends on was called. */
static void check_timing(scn_runner *run, int g, const int *sl, int nsl)
{
    const scn *s = run->s;
    const scn_cinst *ci = &s->cinst[g];
    int i, j;
    if (s->comms[ci->comm].n < 2 ||
        (ci->ckind != SCOLL_BARRIER && ci->size == 0))
        return; /* nothing moves: every call may complete at once */
    for (i = 0; i < nsl; i++) {
        const scn_slot *x = &s->slots[sl[i]];
        const slot_dyn *d = &run->dyn[sl[i]];
        if (!d->posted || (ci->ckind == SCOLL_REDUCE && x->my_crank != ci->root))
            continue;
        for (j = 0; j < nsl; j++) {
            const scn_slot *y = &s->slots[sl[j]];
            const slot_dyn *e = &run->dyn[sl[j]];
            if (j == i || !e->posted)
                continue;
            if (ci->ckind == SCOLL_BCAST &&
                (x->my_crank == ci->root || y->my_crank != ci->root))
                continue;
            if (d->done_t < e->post_t) {
                scn_fail(run,
                         "rank %d: %s '%s' (line %d) completed before rank "
                         "%d called it ('%s', line %d)",
                         x->rank, scn_coll_name(x->ckind), x->name, x->line,
                         y->rank, y->name, y->line);
                return;
            }
        }
    }
}

void scn_coll_check_run(scn_runner *run)
{
    const scn *s = run->s;
    int g, i, all_well = 1;
    int sl[SCN_MAX_RANKS];
    for (g = 0; g < s->ncinst && !run->failed; g++) {
        int nsl = 0;
        for (i = 0; i < s->nslots && nsl < SCN_MAX_RANKS; i++)
            if (s->slots[i].kind == SLOT_COLL && s->slots[i].cinst == g)
                sl[nsl++] = i;
        for (i = 0; i < nsl && !run->failed; i++) {
            const slot_dyn *d = &run->dyn[sl[i]];
            check_slot(run, sl[i]);
            if (!d->posted || d->coll_done != 1 ||
                (d->have_status && d->st.error != 0))
                all_well = 0;
        }
        if (!run->failed)
            check_timing(run, g, sl, nsl);
    }
    if (!run->failed)
        check_msgs(run, all_well);
}

void scn_coll_summary(const scn_runner *run, int sl, FILE *out)
{
    const scn *s = run->s;
    const scn_slot *x = &s->slots[sl];
    const slot_dyn *d = &run->dyn[sl];
    const scn_cinst *ci = &s->cinst[x->cinst];
    const char *how;
    fprintf(out, "rank %d %s: %s", x->rank, x->name, scn_coll_name(x->ckind));
    if (x->ckind == SCOLL_BCAST || x->ckind == SCOLL_REDUCE)
        fprintf(out, " root=%d", ci->root);
    if (x->ckind == SCOLL_BCAST)
        fprintf(out, " size=%" PRIu64, ci->size);
    if (x->ckind == SCOLL_REDUCE || x->ckind == SCOLL_ALLREDUCE)
        fprintf(out, " count=%" PRIu64 " type=%s op=%s%s", ci->size,
                scn_dtype_name(ci->dtype), scn_op_name(ci->opk),
                x->inplace ? " inplace" : "");
    if (!d->have_status)
        how = d->user_freed ? (d->coll_done ? "freed before completion, finished"
                                            : "freed before completion")
                            : "incomplete";
    else
        how = d->st.error == 0 ? "ok" : scn_errname(d->st.error);
    fprintf(out, " comm %u #%d, %s%s\n", s->comms[x->comm].ctx, ci->seq, how,
            d->settled ? " (not waited)" : "");
}
