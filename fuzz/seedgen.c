/*
 * seedgen.c — writes the structured seeds of every harness and the
 * dictionaries, so that the checked-in corpora are reproducible:
 *
 *   fuzz_seedgen DIR           write DIR/corpus/<harness>/seed-<name> and
 *                              DIR/dict/<harness>.dict
 *   fuzz_seedgen --check DIR   compare what it would write with DIR's
 *                              files; exit 1 on any difference (CTest
 *                              fuzz_seeds_fresh)
 *
 * Seeds: fuzz_decode one valid packet per wire type (and a few near
 * misses); fuzz_engine one program per protocol path (fuzz_engine.h's
 * language); fuzz_sim one program per protocol path and per network
 * configuration (fuzz_sim.h's language); fuzz_restore a context saved by
 * a real engine in each restore configuration, in several states (built
 * by a small in-process network below). Restore seeds use only
 * zero-length user buffers, so that no address of this process ends up
 * in a blob and the output is the same on every run.
 */
#include "fuzz.h"
#include "fuzz_engine.h"
#include "fuzz_sim.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/wire.h"

static const char *g_dir;
static int g_check;
static int g_bad;
static int g_count;

/* ---- output ---------------------------------------------------------------- */

static void mkdirs(const char *path)
{
    char tmp[1024];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            mkdir(tmp, 0777);
            *p = '/';
        }
    }
    mkdir(tmp, 0777);
}

/* Write (or check) DIR/<sub>/<name>. */
static void emit(const char *sub, const char *name, const void *data, size_t len)
{
    char dir[1024], path[1200];
    snprintf(dir, sizeof dir, "%s/%s", g_dir, sub);
    snprintf(path, sizeof path, "%s/%s", dir, name);
    g_count++;
    if (g_check) {
        FILE *f = fopen(path, "rb");
        uint8_t *buf = malloc(len + 1);
        size_t got = 0;
        if (f != NULL && buf != NULL) {
            got = fread(buf, 1, len + 1, f);
            fclose(f);
        }
        if (f == NULL || buf == NULL || got != len || memcmp(buf, data, len) != 0) {
            fprintf(stderr, "stale or missing: %s (run fuzz_seedgen %s)\n", path, g_dir);
            g_bad = 1;
        }
        free(buf);
        return;
    }
    mkdirs(dir);
    FILE *f = fopen(path, "wb");
    if (f == NULL || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
        fprintf(stderr, "%s: %s\n", path, strerror(errno));
        exit(2);
    }
}

/* ---- a byte program ---------------------------------------------------------------- */

typedef struct prog {
    uint8_t b[8192];
    size_t n;
} prog;

static void put(prog *p, int count, ...)
{
    va_list ap;
    va_start(ap, count);
    for (int i = 0; i < count; i++) {
        int v = va_arg(ap, int);
        if (p->n < sizeof p->b)
            p->b[p->n++] = (uint8_t)v;
    }
    va_end(ap);
}

static void put32(prog *p, uint32_t v)
{
    put(p, 4, (int)(v & 0xff), (int)(v >> 8 & 0xff), (int)(v >> 16 & 0xff), (int)(v >> 24));
}

/* ---- fuzz_decode ------------------------------------------------------------------- */

static void dec_seed(const char *name, const wire_hdr *h, size_t plen)
{
    uint8_t b[QUAY_MAX_HEADER + 256];
    size_t n = wire_encode(h, b);
    for (size_t i = 0; i < plen; i++)
        b[n + i] = (uint8_t)(0x30 + i);
    emit("corpus/decode", name, b, n + plen);
}

static void seeds_decode(void)
{
    wire_hdr h;
#define H(t) (memset(&h, 0, sizeof h), h.type = (t))
    H(QUAY_PKT_EAGER);
    h.seq = 3, h.ctx = 0, h.src = 1, h.tag = 7, h.sreq = 0, h.len = 5;
    dec_seed("seed-eager", &h, 5);
    h.flags = WIRE_F_SYNC, h.sreq = 0x100001, h.len = 0;
    dec_seed("seed-eager-sync-empty", &h, 0);
    H(QUAY_PKT_RTS);
    h.seq = 4, h.ctx = 0x80000001u, h.src = 2, h.tag = 9, h.sreq = 0x200002, h.len = 100000;
    h.flags = WIRE_F_READY;
    dec_seed("seed-rts-ready", &h, 0);
    h.flags = WIRE_F_KEY | WIRE_F_PUT_OK, h.key = 0x123456789abcdef0ull;
    dec_seed("seed-rts-key", &h, 0);
    H(QUAY_PKT_CTS);
    h.sreq = 0x100001, h.rreq = 0x300003, h.grant = 4, h.frag = 64, h.index = 1, h.len = 1000;
    dec_seed("seed-cts", &h, 0);
    h.flags = WIRE_F_KEY, h.key = 42;
    dec_seed("seed-cts-key", &h, 0);
    H(QUAY_PKT_DATA);
    h.rreq = 0x300003, h.offset = 128;
    dec_seed("seed-data", &h, 64);
    H(QUAY_PKT_ACK);
    h.sreq = 0x100001, h.status = QUAY_ENOTPOSTED;
    dec_seed("seed-ack", &h, 0);
    H(QUAY_PKT_CANCEL_REQ);
    h.seq = 9, h.ctx = 1, h.sreq = 0x100001, h.target = 8;
    dec_seed("seed-cancel-req", &h, 0);
    H(QUAY_PKT_CANCEL_REP);
    h.flags = WIRE_F_FOR_RECV, h.sreq = 0x100001, h.status = 1;
    dec_seed("seed-cancel-rep", &h, 0);
    H(QUAY_PKT_FIN);
    h.flags = WIRE_F_TO_RECV, h.sreq = 0x100001, h.rreq = 0x300003, h.status = QUAY_EPEER;
    dec_seed("seed-fin", &h, 0);
    H(QUAY_PKT_RTR);
    h.seq = 2, h.ctx = 0, h.src = 1, h.tag = QUAY_ANY_TAG, h.rreq = 0x300003, h.x = 5;
    h.len = 4096, h.key = 0xfeed;
    dec_seed("seed-rtr", &h, 0);
    h.flags = WIRE_F_CANCEL, h.x = 0, h.len = 0, h.key = 0;
    dec_seed("seed-rtr-cancel", &h, 0);
    H(QUAY_PKT_SC);
    h.seq = 6, h.ctx = 0, h.src = 0, h.tag = 3, h.sreq = 0x100001, h.rreq = 0x300003;
    h.len = 777;
    dec_seed("seed-sc", &h, 0);
    H(QUAY_PKT_ENA_ANY);
    h.seq = 1, h.tag = QUAY_ANY_TAG, h.slot = 0x101;
    dec_seed("seed-ena-any", &h, 0);
    H(QUAY_PKT_ANY_FLAG);
    h.seq = 2, h.tag = 4, h.sreq = 0x100001, h.slot = 0x101, h.len = 5000;
    dec_seed("seed-any-flag", &h, 0);
    H(QUAY_PKT_RTR_ANY);
    h.seq = 3, h.rreq = 0x300003, h.sreq = 0x100001, h.len = 5000, h.key = 77;
    dec_seed("seed-rtr-any", &h, 0);
    H(QUAY_PKT_DISABLE_ANY);
    h.seq = 5, h.flags = WIRE_F_DROP, h.sreq = 0x100001, h.slot = 0x101;
    dec_seed("seed-disable-any", &h, 0);
#undef H
    /* near misses: a byte short, a bad version */
    {
        static const uint8_t shortrts[31] = {1, 2};
        static const uint8_t badver[12] = {2, 5, 0, 0, 1};
        emit("corpus/decode", "seed-short", shortrts, sizeof shortrts);
        emit("corpus/decode", "seed-badversion", badver, sizeof badver);
    }
}

/* ---- fuzz_engine ------------------------------------------------------------------- */

/* header: ranks, rank, flow bits (h1), sizes (h2), collectives (h3) */
static void fe_hdr(prog *p, int nranks, int rank, int h1, int h2, int h3)
{
    p->n = 0;
    put(p, 4, (nranks - 2) | (rank << 3), h1, h2, h3);
}

#define PULL(p) put(p, 2, FE_PULL, 31)
#define PULL_LATER(p) put(p, 2, FE_PULL, 31 | (1 << 5))
#define OPDONE_ALL(p) put(p, 3, FE_OPDONE, 0, 3)
/* env: peer kind tag size seqmode */
#define ENV(p, peer, kind, tag, size) put(p, 6, FE_ENV, peer, kind, tag, size, 0)
#define RESPOND(p, out, v, prm) put(p, 4, FE_RESPOND, out, v, prm)
#define ISEND(p, dst, tag, size, mode) put(p, 5, FE_ISEND, dst, tag, size, mode)
#define IRECV(p, src, tag, size) put(p, 5, FE_IRECV, src, tag, size, 0)

/* size classes (fuzz_engine.c size_class): 2 small, 4 eager_max, 5 just
 * above, 6 two fragments, 7 a pipeline's worth, 8 1000 bytes */
static void seeds_engine(void)
{
    prog p;
    const char *d = "corpus/engine";
    /* h2 = 0x15: eager 64, frag 32, depth 2 */
    const int SZ = 0x15;

    fe_hdr(&p, 2, 0, 3, SZ, 0); /* eager, late receive */
    ENV(&p, 1, 0, 1, 2);
    IRECV(&p, 1, 1, 8);
    PULL(&p);
    emit(d, "seed-eager-late-recv", p.b, p.n);

    fe_hdr(&p, 3, 1, 3, SZ, 0); /* eager, early receive, any source */
    IRECV(&p, 3, 1, 8);
    ENV(&p, 0, 0, 1, 4);
    ENV(&p, 2, 0, 1, 4);
    IRECV(&p, 2, 8, 8);
    PULL(&p);
    emit(d, "seed-eager-wildcard", p.b, p.n);

    fe_hdr(&p, 2, 0, 3, SZ, 0); /* eager send, sync: ACK */
    ISEND(&p, 1, 1, 2, 1);
    PULL(&p);
    RESPOND(&p, 0, 0, 0);
    PULL(&p);
    emit(d, "seed-ssend-eager", p.b, p.n);

    fe_hdr(&p, 2, 0, 3, SZ, 0); /* ready send refused */
    ISEND(&p, 1, 1, 2, 2);
    PULL(&p);
    RESPOND(&p, 0, 1, 0);
    PULL(&p);
    ENV(&p, 1, 2, 3, 2); /* and a ready message for nobody */
    PULL(&p);
    emit(d, "seed-ready", p.b, p.n);

    fe_hdr(&p, 2, 0, 3, SZ, 0); /* rendezvous send: RTS, CTS, DATA */
    ISEND(&p, 1, 1, 7, 0);
    PULL(&p);
    RESPOND(&p, 0, 0, 1);      /* CTS 1: fragments [0, 2) */
    PULL_LATER(&p);
    OPDONE_ALL(&p);
    RESPOND(&p, 2, 0x10, 4);   /* CTS 2 (to the RTS, 3rd newest): [0, 5) */
    PULL(&p);
    emit(d, "seed-rndv-send", p.b, p.n);

    fe_hdr(&p, 2, 1, 3, SZ, 0); /* rendezvous receive, early */
    IRECV(&p, 0, 1, 7);
    ENV(&p, 0, 3, 1, 7);
    for (int i = 0; i < 3; i++) {
        PULL(&p);
        RESPOND(&p, 0, 0, 0); /* DATA for what each CTS newly grants */
    }
    PULL(&p);
    emit(d, "seed-rndv-recv-early", p.b, p.n);

    /* rendezvous receive, late, pipelined: frag 128, depth 4, 1000 bytes */
    fe_hdr(&p, 2, 1, 3, 0x01 | 3 << 2 | 2 << 4, 0);
    ENV(&p, 0, 3, 1, 8);
    IRECV(&p, 0, 1, 8);
    for (int i = 0; i < 4; i++) {
        PULL(&p);
        RESPOND(&p, 0, 0, 0);
    }
    PULL(&p);
    emit(d, "seed-rndv-pipelined", p.b, p.n);

    fe_hdr(&p, 2, 0, 3, SZ, 0); /* buffered */
    put(&p, 3, FE_BUF, 0, 7);
    ISEND(&p, 1, 1, 6, 3);
    PULL(&p);
    RESPOND(&p, 0, 0, 0);
    PULL(&p);
    put(&p, 3, FE_BUF, 1, 0);
    emit(d, "seed-bsend", p.b, p.n);

    fe_hdr(&p, 3, 0, 3, SZ, 0); /* probe, mprobe, mrecv */
    ENV(&p, 1, 0, 2, 2);
    ENV(&p, 2, 3, 2, 7);
    put(&p, 4, FE_IPROBE, 3, 2, 0);
    put(&p, 4, FE_IPROBE, 3, 2, 0x80);
    put(&p, 4, FE_IPROBE, 2, 2, 0x80);
    put(&p, 3, FE_IMRECV, 0, 8);
    put(&p, 3, FE_IMRECV, 1, 2);
    for (int i = 0; i < 3; i++) {
        PULL(&p);
        RESPOND(&p, 0, 0, 0);
    }
    PULL(&p);
    emit(d, "seed-probe-mprobe", p.b, p.n);

    /* QUAY_CFG_SEND_COPY (an override: flags = CHECK_ORACLE |
     * COMPLETE_ACTIONS | SEND_COPY): three small isends complete at the
     * call and ride one packet, a cancel of one finds nothing to do, then
     * a rendezvous send and a small one queued behind it (posted) */
    fe_hdr(&p, 2, 0, 3, SZ, 0);
    p.b[0] |= 0x80;
    put(&p, 7, 1, 1, 5, QUAY_CFG_CHECK_ORACLE | QUAY_CFG_COMPLETE_ACTIONS | QUAY_CFG_SEND_COPY,
        0, 0, 0);
    for (int i = 0; i < 3; i++)
        ISEND(&p, 1, 1, 2, 0);
    put(&p, 2, FE_CANCEL, 0);
    put(&p, 2, FE_TEST, 0);
    ISEND(&p, 1, 2, 7, 0);
    ISEND(&p, 1, 2, 2, 0);
    PULL(&p);
    RESPOND(&p, 0, 0, 1);
    PULL(&p);
    OPDONE_ALL(&p);
    emit(d, "seed-send-copy", p.b, p.n);

    fe_hdr(&p, 2, 0, 3, SZ, 0); /* cancel a receive and a rendezvous send */
    IRECV(&p, 1, 4, 2);
    put(&p, 2, FE_CANCEL, 0);
    ISEND(&p, 1, 5, 7, 0);
    PULL(&p);
    put(&p, 2, FE_CANCEL, 1);
    PULL(&p);
    RESPOND(&p, 0, 1, 0);
    PULL(&p);
    put(&p, 2, FE_TEST, 1);
    emit(d, "seed-cancel", p.b, p.n);

    /* RDMA GET: caps, rndv_mode GET (2 << 3) */
    fe_hdr(&p, 2, 0, 3 | 0x20 | (2 << 3), SZ, 0);
    ISEND(&p, 1, 1, 8, 0);
    PULL(&p);
    RESPOND(&p, 0, 1, 0);
    PULL(&p);
    IRECV(&p, 1, 2, 8);
    ENV(&p, 1, 3 | 0x08, 2, 8); /* an RTS with a key: the engine reads */
    PULL_LATER(&p);
    OPDONE_ALL(&p);
    PULL(&p);
    emit(d, "seed-rdma-get", p.b, p.n);

    /* RDMA PUT: rndv_mode PUT (3 << 3) */
    fe_hdr(&p, 2, 0, 3 | 0x20 | (3 << 3), SZ, 0);
    ISEND(&p, 1, 1, 8, 0);
    PULL(&p);
    RESPOND(&p, 0, 2, 0);
    PULL(&p);
    IRECV(&p, 1, 2, 8);
    ENV(&p, 1, 3 | 0x10, 2, 8); /* an RTS that can write: keyed CTS */
    PULL(&p);
    RESPOND(&p, 0, 0, 0);
    PULL(&p);
    emit(d, "seed-rdma-put", p.b, p.n);

    /* receiver-initiated: our receive delegated (RTR), the peer writes + SC */
    fe_hdr(&p, 2, 0, 3 | 0x40, SZ, 0);
    IRECV(&p, 1, 1, 8);
    PULL(&p);
    RESPOND(&p, 0, 0, 0);
    PULL(&p);
    /* and the peer delegates to us: FORGE an RTR, then our send writes */
    put(&p, 4, FE_FORGE, 1, QUAY_PKT_RTR - 1, 0);
    put(&p, 1, 0);            /* seq: next */
    put(&p, 4, 0, 1, 3, 0x41); /* ctx 0, src 1, tag 3, rreq: harvested */
    put(&p, 1, 0);            /* x */
    put(&p, 1, 0x80 | 20);    /* len 1280 */
    put(&p, 1, 0xFF);
    put32(&p, 0x12345678);
    put32(&p, 0);
    ISEND(&p, 1, 3, 8, 0);
    PULL(&p);
    emit(d, "seed-rtr", p.b, p.n);

    /* ANY_SOURCE arbitration: ENA_ANY, the peer's flag, RTR_ANY, SC */
    fe_hdr(&p, 3, 0, 3 | 0x40 | 0x80, SZ, 0);
    IRECV(&p, 3, 2, 8);
    PULL(&p);
    RESPOND(&p, 0, 0, 2);
    PULL(&p);
    RESPOND(&p, 0, 0, 2);
    PULL(&p);
    RESPOND(&p, 1, 0, 2);
    PULL(&p);
    emit(d, "seed-arbitration", p.b, p.n);

    /* flow control: frames, ACK, NACK, timeout, retransmission */
    fe_hdr(&p, 2, 0, 1, SZ, 0);
    ISEND(&p, 1, 1, 2, 0);
    ENV(&p, 1, 0, 1, 2);
    IRECV(&p, 1, 1, 8);
    PULL(&p);
    put(&p, 7, FE_CHAN, 1, 1, 0, 0, 0, 0); /* NACK the engine's frame */
    PULL(&p);
    put(&p, 2, FE_TIME, 12);
    PULL(&p);
    put(&p, 7, FE_CHAN, 1, 0, 0, 0, 0, 0); /* ACK */
    put(&p, 7, FE_CHAN, 1, 5, 0, 0, 0, 0); /* go back */
    put(&p, 7, FE_CHAN, 1, 2, 0, 0, 0, 0); /* PING */
    PULL(&p);
    put(&p, 2, FE_TIME, 30);
    PULL(&p);
    emit(d, "seed-flow-acknack", p.b, p.n);

    fe_hdr(&p, 3, 2, 2, SZ, 0); /* credit */
    ISEND(&p, 0, 1, 2, 0);
    ISEND(&p, 1, 1, 7, 0);
    PULL(&p);
    put(&p, 7, FE_CHAN, 0, 3, 8, 0, 0, 0);
    ENV(&p, 0, 0, 2, 2);
    PULL(&p);
    put(&p, 2, FE_TIME, 14);
    PULL(&p);
    emit(d, "seed-flow-credit", p.b, p.n);

    /* context switch: traffic both ways, acknowledged, then quiesce,
     * save / reset / restore on both channels, reset, resume */
    fe_hdr(&p, 2, 0, 1 | 0x04, SZ, 0);
    IRECV(&p, 1, 2, 8);
    ISEND(&p, 1, 2, 2, 0);
    ENV(&p, 1, 0, 2, 2);
    PULL(&p);
    put(&p, 7, FE_CHAN, 1, 0, 0, 0, 0, 0);
    put(&p, 2, FE_TIME, 16);
    PULL(&p);
    put(&p, 3, FE_CTX, 0, 0);
    PULL(&p);
    put(&p, 3, FE_CTX, 2, 0);
    put(&p, 3, FE_CTX, 6, 0);
    put(&p, 3, FE_CTX, 3, 1);
    put(&p, 3, FE_CTX, 0, 1);
    put(&p, 3, FE_CTX, 6, 1);
    put(&p, 3, FE_CTX, 5, 0);
    put(&p, 4, FE_COMM, 0, 0, 0xff);
    put(&p, 3, FE_CTX, 1, 0);
    emit(d, "seed-context-switch", p.b, p.n);

    /* collectives: every kind, the peers' parts echoed back */
    fe_hdr(&p, 3, 0, 3, SZ, 0);
    put(&p, 6, FE_COLL, 0, 0, 0, 0, 0);
    put(&p, 6, FE_COLL, 1, 0, 40, 0, 0);
    put(&p, 6, FE_COLL, 2, 1, 4, 0x14, 0);
    put(&p, 6, FE_COLL, 3, 0, 4, 0x05, 0);
    for (int i = 0; i < 4; i++) {
        PULL(&p);
        put(&p, 3, FE_ECHO, 0, 0);
        put(&p, 3, FE_ECHO, 1, 0x80);
    }
    PULL(&p);
    emit(d, "seed-collectives", p.b, p.n);

    /* one-sided and atomics: register, put/get/atomics, resolve */
    fe_hdr(&p, 2, 0, 3 | 0x20, SZ, 0);
    put(&p, 5, FE_MEM, 0, 0, 3, 0);
    put(&p, 6, FE_RMA, 2, 1, 0x40, 8, 8);
    put(&p, 6, FE_RMA, 4, 1, 0x40, 16, 8);
    put(&p, 6, FE_RMA, 0, 1, 0x40, 0, 32);
    put(&p, 6, FE_RMA, 1, 0, 0x40, 0, 32);
    PULL(&p);
    put(&p, 5, FE_MEM, 3, 0, 2, 1);
    put(&p, 5, FE_MEM, 2 | 4 | 8, 0, 4, 16);
    put(&p, 5, FE_MEM, 1, 0, 0, 0);
    emit(d, "seed-rma-atomics", p.b, p.n);

    /* a failed peer, communicators, forged and replayed packets */
    fe_hdr(&p, 4, 0, 3, SZ, 0);
    put(&p, 4, FE_COMM, 2, 7, 0x0e);
    ISEND(&p, 1, 1, 7, 4);
    IRECV(&p, 2, 1, 2);
    ENV(&p, 2, 0, 1, 2);
    put(&p, 3, FE_REPLAY, 0, 0);
    PULL(&p);
    put(&p, 2, FE_PEERFAIL, 1);
    /* a CTS: sreq harvested, rreq 5, grant 1, frag 32, index 1, 1 KiB */
    put(&p, 8, FE_FORGE, 3, QUAY_PKT_CTS - 1, 0, 0x40, 5, 1, 32);
    put(&p, 3, 1, 0x80 | 16, 0);
    PULL(&p);
    emit(d, "seed-peerfail-forged", p.b, p.n);

    /* raw bytes under flow control, and an allocation that fails */
    fe_hdr(&p, 2, 0, 1, SZ, 0x40);
    put(&p, 1, 40);
    ISEND(&p, 1, 1, 2, 0);
    put(&p, 3 + 8, FE_RAW, 1, 4, 0xC1, 2, 0, 0, 0, 0, 0, 0);
    for (int i = 0; i < 8; i++)
        ENV(&p, 1, 0, 3, 2);
    PULL(&p);
    emit(d, "seed-raw-allocfail", p.b, p.n);
}

/* ---- fuzz_sim ------------------------------------------------------------------------ */

/* header: ranks, h1 (flow, switches, rndv, rtr), h2 (faults), h3 (sizes),
 * h4 (collectives), seed */
static void sim_hdr(prog *p, int ranks, int h1, int h2, int h3, int h4, int nmotifs, int seed)
{
    p->n = 0;
    put(p, 8, ranks - 2, h1, h2, h3, h4, nmotifs, seed & 0xff, seed >> 8);
}

static void motif(prog *p, int kind, int a, int b, int c, int dd, int e)
{
    put(p, 6, kind, a, b, c, dd, e);
}

static void seeds_sim(void)
{
    prog p;
    const char *d = "corpus/sim";
    const int SZ = 0x11; /* eager 256, frag 32, depth 2 */

    sim_hdr(&p, 2, 3, 0, SZ, 0, 2, 1); /* eager both ways, self */
    motif(&p, SIM_P2P, 0, 1, 2, 2, 0);
    motif(&p, SIM_P2P, 1, 1, 1, 1, 0);
    emit(d, "seed-eager", p.b, p.n);

    sim_hdr(&p, 2, 3, 0, SZ, 0, 2, 2); /* rendezvous, pipelined, truncated */
    motif(&p, SIM_P2P, 0, 1, 1, 6, 0);
    motif(&p, SIM_P2P, 1, 0, 0x40, 7, 0);
    emit(d, "seed-rndv-pipelined", p.b, p.n);
    p.n = 20; /* the same with a hand-made schedule: programs first */
    for (int i = 0; i < 40; i++)
        put(&p, 1, i < 8 ? 0 : 1 + i % 3);
    emit(d, "seed-rndv-schedule", p.b, p.n);

    sim_hdr(&p, 3, 3, 0, SZ, 0, 2, 3); /* sync, ready, buffered */
    motif(&p, SIM_P2P, 0, 1, 2, 4, 1 | 2 << 2 | 3 << 4);
    motif(&p, SIM_P2P, 2, 1, 1, 6, 3 | 1 << 2);
    emit(d, "seed-modes", p.b, p.n);

    sim_hdr(&p, 3, 3, 0, SZ, 0, 3, 4); /* probe, mprobe, iprobe */
    motif(&p, SIM_PROBE, 0, 1, 1 | 0 << 1, 2, 0);
    motif(&p, SIM_PROBE, 2, 1, 1 | 3 << 1 | 1 << 3, 6, 0);
    motif(&p, SIM_PROBE, 1, 0, 2 << 1, 5, 2);
    emit(d, "seed-probe", p.b, p.n);

    sim_hdr(&p, 2, 3, 0, SZ, 0, 4, 5); /* cancels */
    motif(&p, SIM_CANCEL_RECV, 0, 1, 0, 0, 0);
    motif(&p, SIM_CANCEL_RECV, 0, 1, 1, 2, 0);
    motif(&p, SIM_CANCEL_RECV, 1, 0, 2, 0, 0);
    motif(&p, SIM_CANCEL_SEND, 0, 1, 2, 6, 2);
    emit(d, "seed-cancel", p.b, p.n);

    sim_hdr(&p, 4, 3, 0, SZ, 0, 3, 6); /* wildcards, ANY_TAG on its comm */
    motif(&p, SIM_WILDCARD, 0, 0x0e, 0x05, 0, 2);
    motif(&p, SIM_WILDCARD, 1, 0x0d, 0x00, 4 | 1, 6);
    motif(&p, SIM_P2P, 2, 3, 2 | 2 << 4, 2, 0x55);
    emit(d, "seed-wildcard", p.b, p.n);

    sim_hdr(&p, 3, 3 | 2 << 3, 0, SZ, 0, 2, 7); /* RDMA GET */
    motif(&p, SIM_P2P, 0, 1, 1, 6, 0);
    motif(&p, SIM_STREAM, 2, 1, 0, 4, 0);
    emit(d, "seed-rdma-get", p.b, p.n);

    sim_hdr(&p, 3, 3 | 3 << 3, 0, SZ, 0, 2, 8); /* RDMA PUT */
    motif(&p, SIM_P2P, 0, 1, 1, 7, 0);
    motif(&p, SIM_WILDCARD, 2, 0x03, 0, 0, 7);
    emit(d, "seed-rdma-put", p.b, p.n);

    sim_hdr(&p, 3, 3 | 4 << 3 | 1 << 6, 0, SZ, 0, 3, 9); /* RTR, mixed rndv */
    motif(&p, SIM_P2P, 0, 1, 2, 6, 0);
    motif(&p, SIM_CANCEL_RECV, 2, 1, 2, 0, 0);
    motif(&p, SIM_PROBE, 1, 2, 1 << 1, 7, 0);
    emit(d, "seed-rtr", p.b, p.n);

    sim_hdr(&p, 4, 3 | 4 << 3 | 2 << 6, 0, SZ, 0, 3, 10); /* arbitration */
    motif(&p, SIM_WILDCARD, 0, 0x0e, 0x0f, 0, 6);
    motif(&p, SIM_P2P, 1, 0, 2 | 2 << 4, 7, 0);
    motif(&p, SIM_STREAM, 2, 0, 0x3c, 6, 0);
    emit(d, "seed-arbitration", p.b, p.n);

    sim_hdr(&p, 3, 1, 0x3f | 2 << 6, SZ, 0, 3, 11); /* ACK/NACK under every fault */
    motif(&p, SIM_P2P, 0, 1, 2, 6, 0);
    motif(&p, SIM_STREAM, 1, 2, 1, 3, 0x5);
    motif(&p, SIM_WILDCARD, 2, 0x03, 0, 0, 1);
    emit(d, "seed-flow-acknack-faults", p.b, p.n);

    sim_hdr(&p, 3, 2, 0x38 | 1 << 6, SZ | 0x80, 0, 2, 12); /* credit, tight */
    motif(&p, SIM_STREAM, 0, 1, 3, 2, 0);
    motif(&p, SIM_WILDCARD, 1, 0x05, 0x05, 0, 5);
    emit(d, "seed-flow-credit-tight", p.b, p.n);

    sim_hdr(&p, 3, 1 | 4, 0x09, SZ, 0, 3, 13); /* context switches */
    motif(&p, SIM_P2P, 0, 1, 2, 6, 0);
    motif(&p, SIM_P2P, 2, 0, 1, 2, 0);
    motif(&p, SIM_COLL, 1, 0, 0, 0, 40);
    emit(d, "seed-context-switch", p.b, p.n);

    sim_hdr(&p, 5, 3, 0, SZ, 1, 4, 14); /* collectives, mixed algorithms */
    motif(&p, SIM_COLL, 0, 0, 0, 0, 0);
    motif(&p, SIM_COLL, 1, 0, 0, 2, 6);
    motif(&p, SIM_COLL, 2, 7 << 1 | 7 << 5, 0x80, 1, 5);
    motif(&p, SIM_COLL, 3, 1 | 9 << 1, 0x0b, 3, 3);
    emit(d, "seed-collectives", p.b, p.n);

    sim_hdr(&p, 4, 3, 0, SZ, 2 | 1 << 3, 3, 15); /* bypass, subcomm, early free */
    motif(&p, SIM_COLL, 1, 1, 0x0f, 0x10 | 1, 7);
    motif(&p, SIM_COLL, 2, 4 << 1, 0, 2, 9);
    motif(&p, SIM_P2P, 3, 0, 1 | 1 << 7, 2, 0);
    emit(d, "seed-coll-bypass", p.b, p.n);

    sim_hdr(&p, 3, 3, 0x07 | 1 << 6, SZ | 0x40, 0, 4, 16); /* comms late, null, ring */
    motif(&p, SIM_COMM_LATE, 1, 0, 1 | 2, 2, 0);
    motif(&p, SIM_COMM_LATE, 2, 0, 4, 6, 0);
    motif(&p, SIM_PROC_NULL, 0, 0, 0, 2, 0);
    motif(&p, SIM_RING, 1, 0x1b, 0, 6, 0);
    emit(d, "seed-comms-ring", p.b, p.n);

    sim_hdr(&p, 8, 3, 0, SZ, 0, 3, 17); /* eight ranks */
    motif(&p, SIM_RING, 0, 0, 0, 2, 0);
    motif(&p, SIM_WILDCARD, 0, 0xfe, 0, 0, 3);
    motif(&p, SIM_COLL, 3, 0, 0, 0, 4);
    emit(d, "seed-eight-ranks", p.b, p.n);
}

/* ---- fuzz_restore: blobs from engines on a small in-process network ---------- */

typedef struct net {
    int n;
    int ch; /* the channel the program runs on */
    quay_engine *e[8];
    quay_engine *c[8];
    quay_comm *w[8];
    uint64_t now;
} net;

static void net_pump(net *t)
{
    uint8_t b[4096];
    for (int moved = 1, rounds = 0; moved && rounds < 10000; rounds++) {
        moved = 0;
        for (int r = 0; r < t->n; r++) {
            quay_action a;
            while (quay_next_action(t->e[r], &a) == 1) {
                moved = 1;
                if (a.kind == QUAY_ACT_SEND) {
                    size_t n = 0;
                    for (uint32_t i = 0; i < a.iovcnt; i++) {
                        memcpy(b + n, a.iov[i].base, a.iov[i].len);
                        n += a.iov[i].len;
                    }
                    quay_on_packet(t->e[a.peer], r, b, n);
                    quay_on_op_done(t->e[r], a.token, 0);
                } else if (a.kind == QUAY_ACT_RDMA_PUT || a.kind == QUAY_ACT_RDMA_GET) {
                    void *addr = NULL;
                    uint32_t acc = a.kind == QUAY_ACT_RDMA_PUT ? QUAY_MEM_WRITE : QUAY_MEM_READ;
                    int rc = quay_mem_resolve(t->e[a.peer], r, a.rdma.key, a.rdma.offset,
                                              a.rdma.len, acc, &addr);
                    if (rc == 0 && a.rdma.len != 0) {
                        if (acc == QUAY_MEM_WRITE)
                            memcpy(addr, a.rdma.local, a.rdma.len);
                        else
                            memcpy(a.rdma.local, addr, a.rdma.len);
                    }
                    quay_on_op_done(t->e[r], a.token, rc);
                }
            }
        }
    }
}

static void net_settle(net *t)
{
    for (int i = 0; i < 400; i++) {
        uint64_t dl = QUAY_TIME_NONE;
        net_pump(t);
        for (int r = 0; r < t->n; r++) {
            uint64_t x = quay_next_deadline(t->e[r]);
            if (x < dl)
                dl = x;
        }
        if (dl == QUAY_TIME_NONE)
            return;
        if (dl > t->now)
            t->now = dl;
        for (int r = 0; r < t->n; r++)
            quay_on_time(t->e[r], t->now);
    }
}

static int net_new(net *t, unsigned variant)
{
    quay_config c;
    memset(t, 0, sizeof *t);
    fz_restore_config(variant, &c);
    t->n = c.nranks;
    t->ch = (int)c.channels - 1;
    for (int r = 0; r < t->n; r++) {
        c.rank = r;
        if (quay_engine_new(&c, &t->e[r]) != 0)
            return -1;
        t->c[r] = quay_engine_channel(t->e[r], (uint32_t)t->ch);
        if (quay_comm_create(t->c[r], 0, t->n, NULL, &t->w[r]) != 0)
            return -1;
    }
    return 0;
}

static void net_free(net *t)
{
    for (int r = 0; r < t->n; r++)
        quay_engine_free(t->e[r]);
}

/* Save rank `me`'s channel once it is quiesced and stable; emit it. */
static void save_seed(net *t, int me, unsigned variant, const char *name)
{
    uint8_t *b = NULL;
    size_t len = 0;
    quay_channel_quiesce(t->c[me]);
    for (int i = 0; i < 50 && quay_channel_is_stable(t->c[me]) != 1; i++)
        net_settle(t);
    if (quay_channel_is_stable(t->c[me]) != 1 ||
        quay_engine_save(t->c[me], NULL, 0, &len) != QUAY_ENOBUFS ||
        (b = malloc(len + 1)) == NULL ||
        quay_engine_save(t->c[me], b, len, &len) != 0) {
        fprintf(stderr, "restore seed %s: the channel does not save\n", name);
        g_bad = 1;
        free(b);
        return;
    }
    /* control byte: configuration, fix the CRC and the length */
    b = realloc(b, len + 1);
    memmove(b + 1, b, len);
    b[0] = (uint8_t)(variant | 0x08 | 0x10);
    emit("corpus/restore", name, b, len + 1);
    free(b);
}

static void seeds_restore(void)
{
    static uint8_t payload[300];
    char name[64];
    for (int i = 0; i < (int)sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7);
    for (unsigned v = 0; v < FZ_RESTORE_NCFG; v++) {
        quay_config c;
        net t;
        quay_req *r;
        int me, other;
        fz_restore_config(v, &c);
        me = c.rank;
        other = (me + 1) % c.nranks;

        /* empty, but for the world */
        if (net_new(&t, v) != 0) {
            g_bad = 1;
            return;
        }
        snprintf(name, sizeof name, "seed-v%u-empty", v);
        save_seed(&t, me, v, name);
        net_free(&t);

        /* busy: posted receives of every pattern (zero-length buffers),
         * unexpected eager and rendezvous messages, a taken message,
         * completed requests not freed, a send queued while quiesced */
        if (net_new(&t, v) != 0) {
            g_bad = 1;
            return;
        }
        quay_irecv(t.c[me], t.w[me], NULL, 0, other, 1, &r);
        quay_irecv(t.c[me], t.w[me], NULL, 0, QUAY_ANY_SOURCE, 2, &r);
        quay_irecv(t.c[me], t.w[me], NULL, 0, other, QUAY_ANY_TAG, &r);
        quay_irecv(t.c[me], t.w[me], NULL, 0, QUAY_ANY_SOURCE, QUAY_ANY_TAG, &r);
        net_settle(&t);
        for (int k = 0; k < 4; k++) {
            quay_isend(t.c[other], t.w[other], payload, (size_t)(k * 20), me, 10 + k,
                       QUAY_SEND_STANDARD, &r);
            quay_req_free(t.c[other], r);
        }
        quay_isend(t.c[other], t.w[other], payload, sizeof payload, me, 20, QUAY_SEND_STANDARD,
                   &r);
        quay_isend(t.c[other], t.w[other], NULL, 0, me, 1, QUAY_SEND_SYNC, &r);
        net_settle(&t);
        {
            quay_msg *m = NULL;
            quay_improbe(t.c[me], t.w[me], other, 11, &m, NULL);
        }
        snprintf(name, sizeof name, "seed-v%u-busy", v);
        quay_channel_quiesce(t.c[me]);
        quay_isend(t.c[me], t.w[me], NULL, 0, other, 30, QUAY_SEND_STANDARD, &r);
        save_seed(&t, me, v, name);
        net_free(&t);
    }
}

/* ---- dictionaries ---------------------------------------------------------------- */

static void dict(const char *name, const char *text)
{
    char sub[64];
    snprintf(sub, sizeof sub, "%s.dict", name);
    emit("dict", sub, text, strlen(text));
}

static void dicts(void)
{
    dict("decode",
         "# fuzz_decode: wire version + type, flags, statuses (fuzz/seedgen.c)\n"
         "eager=\"\\x01\\x01\"\nrts=\"\\x01\\x02\"\ncts=\"\\x01\\x03\"\ndata=\"\\x01\\x04\"\n"
         "ack=\"\\x01\\x05\"\ncancel_req=\"\\x01\\x06\"\ncancel_rep=\"\\x01\\x07\"\n"
         "fin=\"\\x01\\x08\"\nrtr=\"\\x01\\x09\"\nsc=\"\\x01\\x0a\"\nena_any=\"\\x01\\x0b\"\n"
         "any_flag=\"\\x01\\x0c\"\nrtr_any=\"\\x01\\x0d\"\n"
         "disable_any=\"\\x01\\x0f\"\n"
         "f_sync=\"\\x01\\x00\"\nf_ready=\"\\x02\\x00\"\n"
         "f_key=\"\\x04\\x00\"\nf_put_ok=\"\\x08\\x00\"\nf_more=\"\\x10\\x00\"\n"
         "any_tag=\"\\xff\\xff\\xff\\xff\"\nenotposted=\"\\x2f\\xff\\xff\\xff\"\n"
         "epeer=\"\\x30\\xff\\xff\\xff\"\neproto=\"\\x2e\\xff\\xff\\xff\"\n"
         "estate=\"\\x2d\\xff\\xff\\xff\"\nctx_coll=\"\\x00\\x00\\x00\\x80\"\n"
         "big=\"\\xff\\xff\\xff\\xff\\xff\\xff\\xff\\x7f\"\n");
    dict("restore",
         "# fuzz_restore: blob magic, version, section tags (fuzz/seedgen.c)\n"
         "magic=\"QUAYCTX\\x00\"\nversion=\"\\x01\\x00\\x00\\x00\"\n"
         "idnt=\"IDNT\"\nengn=\"ENGN\"\nrids=\"RIDS\"\nregn=\"REGN\"\ncomm=\"COMM\"\n"
         "reqs=\"REQS\"\nmsgs=\"MSGS\"\npeer=\"PEER\"\nctrl=\"CTRL\"\nrtrs=\"RTRS\"\n"
         "minus1=\"\\xff\\xff\\xff\\xff\"\nzero=\"\\x00\\x00\\x00\\x00\"\n"
         "chan_frame=\"\\xc1\\x01\"\nwire_eager=\"\\x01\\x01\"\n");
    {
        /* fuzz_engine: whole operations (fuzz_engine.h) and frame bytes */
        char buf[4096];
        size_t k = 0;
        static const struct {
            const char *name;
            uint8_t b[7];
            int n;
        } ops[] = {
            {"pull", {FE_PULL, 31}, 2},
            {"pull_later", {FE_PULL, 63}, 2},
            {"opdone_all", {FE_OPDONE, 0, 3}, 3},
            {"env_eager", {FE_ENV, 1, 0, 1, 2, 0}, 6},
            {"env_rts", {FE_ENV, 1, 3, 1, 7, 0}, 6},
            {"env_rts_key", {FE_ENV, 1, 11, 1, 8, 0}, 6},
            {"env_train", {FE_ENV, 1, 0xC0, 1, 2, 4}, 6},
            {"env_train_bad", {FE_ENV, 1, 0xC0, 1, 2, 0x44}, 6},
            {"respond", {FE_RESPOND, 0, 1, 0}, 4},
            {"respond_key", {FE_RESPOND, 0, 2, 0}, 4},
            {"echo", {FE_ECHO, 0, 0}, 3},
            {"isend", {FE_ISEND, 1, 1, 2, 0}, 5},
            {"isend_rndv", {FE_ISEND, 1, 1, 7, 0}, 5},
            {"irecv", {FE_IRECV, 1, 1, 8, 0}, 5},
            {"irecv_any", {FE_IRECV, 9, 8, 8, 0}, 5},
            {"improbe", {FE_IPROBE, 9, 8, 0x80}, 4},
            {"chan_ack", {FE_CHAN, 1, 0, 0, 0, 0, 0}, 7},
            {"chan_nack", {FE_CHAN, 1, 1, 0, 0, 0, 0}, 7},
            {"chan_goback", {FE_CHAN, 1, 5, 0, 0, 0, 0}, 7},
            {"time", {FE_TIME, 20}, 2},
            {"ctx_switch", {FE_CTX, 6, 0}, 3},
            {"quiesce", {FE_CTX, 0, 0}, 3},
            {"resume", {FE_CTX, 1, 0}, 3},
            {"coll", {FE_COLL, 3, 0, 4, 5, 0}, 6},
            {"rma_fadd", {FE_RMA, 2, 1, 0x40, 8, 8}, 6},
            {"register", {FE_MEM, 0, 0, 3, 0}, 5},
        };
        k += (size_t)snprintf(buf + k, sizeof buf - k,
                              "# fuzz_engine: whole operations (fuzz_engine.h; fuzz/seedgen.c)\n");
        for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
            k += (size_t)snprintf(buf + k, sizeof buf - k, "%s=\"", ops[i].name);
            for (int j = 0; j < ops[i].n; j++)
                k += (size_t)snprintf(buf + k, sizeof buf - k, "\\x%02x", ops[i].b[j]);
            k += (size_t)snprintf(buf + k, sizeof buf - k, "\"\n");
        }
        emit("dict", "engine.dict", buf, k);
    }
    {
        char buf[2048];
        size_t k = 0;
        k += (size_t)snprintf(buf + k, sizeof buf - k,
                              "# fuzz_sim: one motif record per kind (fuzz_sim.h; "
                              "fuzz/seedgen.c)\n");
        for (int kind = 0; kind < SIM_NKINDS; kind++)
            k += (size_t)snprintf(buf + k, sizeof buf - k,
                                  "motif%d=\"\\x%02x\\x00\\x01\\x02\\x06\\x00\"\n", kind, kind);
        emit("dict", "sim.dict", buf, k);
    }
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--check") == 0) {
        g_check = 1;
        g_dir = argv[2];
    } else if (argc == 2 && argv[1][0] != '-') {
        g_dir = argv[1];
    } else {
        fprintf(stderr, "usage: %s [--check] FUZZDIR\n", argv[0]);
        return 2;
    }
    seeds_decode();
    seeds_engine();
    seeds_sim();
    seeds_restore();
    dicts();
    if (g_bad)
        return 1;
    printf("%d seed and dictionary files %s\n", g_count,
           g_check ? "match the generator" : "written");
    return 0;
}
