/*
 * fuzz_restore.c — quay_engine_restore on arbitrary blobs.
 *
 * Input: one control byte, then the blob.
 *   control bits 0-2  configuration (fz_restore_config, mod FZ_RESTORE_NCFG;
 *                     variant 2 restores into channel 1 of two)
 *           bit 3     recompute the blob's CRC32C (its last 4 bytes), so
 *                     that mutations reach the checks behind the checksum
 *           bit 4     write the blob's length into its length field (12)
 *           bit 5     after a taken blob, free the engine with the
 *                     restored context in place (else reset the channel
 *                     and use it)
 * Seeds are blobs saved by real engines (fuzz/seedgen.c) in each
 * configuration, with bits 3 and 4 set.
 *
 * Invariants (abort on violation):
 *   - restore answers 0, QUAY_ECORRUPT, QUAY_EFOREIGN or QUAY_EVERSION;
 *   - a refused blob leaves the channel as it was: it saves to the same
 *     bytes as before;
 *   - a taken blob leaves the channel quiesced and stable, within its
 *     pools (statistics), and what it saves restores again and saves to
 *     the same bytes (a saved context is a fixed point);
 *   - after a reset the channel carries a self message correctly;
 *   - memory: peak within the creation footprint plus three times the
 *     unexpected-bytes budget plus 64 KiB, and nothing left after
 *     quay_engine_free.
 * A taken blob may hold addresses of user memory that this process never
 * had (quay.h: blobs are for the process that saved them), so nothing is
 * done with a restored context that would touch user memory: no packets,
 * no actions, no completions.
 */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "flowctl/crc32c.h"

#define RST_MAX_BLOB 65536

typedef struct rst {
    fz_mem mem;
    quay_config cfg;
    quay_engine *e;  /* the engine (channel 0) */
    quay_engine *ch; /* the channel restored */
    size_t base;     /* bytes held right after creation */
} rst;

static uint8_t *save(quay_engine *ch, size_t *len)
{
    size_t need = 0, got = 0;
    uint8_t *b;
    int rc = quay_engine_save(ch, NULL, 0, &need);
    if (rc != QUAY_ENOBUFS || need == 0)
        fz_fail("save size: %s (%zu bytes)", quay_strerror(rc), need);
    b = malloc(need);
    if (b == NULL)
        fz_fail("out of memory");
    rc = quay_engine_save(ch, b, need, &got);
    if (rc != 0 || got != need)
        fz_fail("save: %s (%zu of %zu bytes)", quay_strerror(rc), got, need);
    *len = got;
    return b;
}

static void saves_as(quay_engine *ch, const uint8_t *want, size_t len, const char *what)
{
    size_t l2 = 0;
    uint8_t *b = save(ch, &l2);
    if (l2 != len || memcmp(b, want, len) != 0)
        fz_fail("%s: the channel saves differently (%zu vs %zu bytes)", what, l2, len);
    free(b);
}

static void check_stats(const rst *t)
{
    quay_stats st;
    quay_engine_stats(t->ch, &st);
    if (st.reqs_in_use > t->cfg.max_requests || st.umsgs_in_use > t->cfg.max_unexpected ||
        st.outs_in_use > t->cfg.max_out || st.bytes_unexpected > t->cfg.unexpected_bytes_max ||
        st.comms_in_use > t->cfg.max_comms || st.regions_in_use > t->cfg.max_regions ||
        st.ctrl_queued > t->cfg.max_ctrl)
        fz_fail("restored context beyond its pools: reqs %u umsgs %u outs %u bytes %llu "
                "comms %u regions %u ctrl %u",
                st.reqs_in_use, st.umsgs_in_use, st.outs_in_use,
                (unsigned long long)st.bytes_unexpected, st.comms_in_use, st.regions_in_use,
                st.ctrl_queued);
}

static void check_mem(const rst *t)
{
    /* (+ restore's validation scratch, at most a quarter of creation: as
     * fuzz_engine's bound) */
    size_t bound = t->base + t->base / 4 + 3 * t->cfg.unexpected_bytes_max + 65536;
    if (t->mem.peak > bound)
        fz_fail("memory: peak %zu bytes, bound %zu (creation %zu)", t->mem.peak, bound,
                t->base);
}

/* After a reset: a self message on a fresh world communicator. */
static void self_message(rst *t)
{
    quay_comm *c = NULL;
    quay_req *s = NULL, *r = NULL;
    quay_action a;
    quay_status st;
    char out[8] = "restore", in[8] = {0};
    int rc = quay_comm_create(t->ch, 0, t->cfg.nranks, NULL, &c);
    if (rc != 0)
        fz_fail("after reset: comm_create: %s", quay_strerror(rc));
    rc = quay_irecv(t->ch, c, in, sizeof in, t->cfg.rank, 5, &r);
    if (rc == 0)
        rc = quay_isend(t->ch, c, out, sizeof out, t->cfg.rank, 5, QUAY_SEND_STANDARD, &s);
    if (rc != 0)
        fz_fail("after reset: self send/receive: %s", quay_strerror(rc));
    for (int i = 0; i < 16 && (rc = quay_next_action(t->e, &a)) == 1; i++)
        if (a.kind != QUAY_ACT_COMPLETE)
            fz_fail("after reset: self traffic made an action of kind %d", a.kind);
    if (rc < 0)
        fz_fail("after reset: next_action: %s", quay_strerror(rc));
    if (quay_req_test(r, &st) != 1 || st.error != 0 || st.count != sizeof out ||
        memcmp(in, out, sizeof out) != 0 || quay_req_test(s, NULL) != 1)
        fz_fail("after reset: the self message did not arrive intact");
    quay_req_free(t->ch, s);
    quay_req_free(t->ch, r);
    rc = quay_comm_free(t->ch, c);
    if (rc != 0)
        fz_fail("after reset: comm_free: %s", quay_strerror(rc));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const int refusals[] = {QUAY_ECORRUPT, QUAY_EFOREIGN, QUAY_EVERSION, -1};
    rst t;
    uint8_t ctl, *blob, *pre, *s1, *s2;
    size_t len, lpre = 0, l1 = 0, l2 = 0;
    int rc;

    fz_harness = "fuzz_restore";
    if (size == 0)
        return 0;
    ctl = data[0];
    len = size - 1 > RST_MAX_BLOB ? RST_MAX_BLOB : size - 1;
    memset(&t, 0, sizeof t);
    fz_restore_config(ctl & 7u, &t.cfg);
    fz_mem_use(&t.mem, &t.cfg);
    rc = quay_engine_new(&t.cfg, &t.e);
    if (rc != 0)
        fz_fail("engine_new: %s", quay_strerror(rc));
    t.base = t.mem.live;
    t.ch = quay_engine_channel(t.e, t.cfg.channels - 1);
    rc = quay_channel_quiesce(t.ch);
    if (rc != 0 || quay_channel_is_stable(t.ch) != 1)
        fz_fail("a fresh channel does not quiesce stable (%s)", quay_strerror(rc));
    pre = save(t.ch, &lpre);

    /* An exact-size copy (ASan sees a read past its end), fixed up. */
    blob = malloc(len ? len : 1);
    if (blob == NULL)
        fz_fail("out of memory");
    if (len != 0)
        memcpy(blob, data + 1, len);
    if ((ctl & 0x10u) && len >= 16) {
        for (int i = 0; i < 4; i++)
            blob[12 + i] = (uint8_t)(len >> (8 * i));
    }
    if ((ctl & 0x08u) && len >= 4) {
        uint32_t table[256], c;
        crc32c_table_init(table);
        c = crc32c_update(table, 0, blob, len - 4);
        for (int i = 0; i < 4; i++)
            blob[len - 4 + (size_t)i] = (uint8_t)(c >> (8 * i));
    }

    rc = quay_engine_restore(t.ch, blob, len);
    if (rc != 0) {
        if (!fz_code_in(rc, refusals))
            fz_fail("restore of %zu bytes answered %s", len, quay_strerror(rc));
        saves_as(t.ch, pre, lpre, "refused blob");
    } else {
        if (quay_channel_is_stable(t.ch) != 1)
            fz_fail("a restored context is not quiesced and stable");
        check_stats(&t);
        s1 = save(t.ch, &l1);
        rc = quay_engine_restore(t.ch, s1, l1);
        if (rc != 0)
            fz_fail("a saved context does not restore: %s", quay_strerror(rc));
        s2 = save(t.ch, &l2);
        if (l1 != l2 || memcmp(s1, s2, l1) != 0)
            fz_fail("save(restore(s)) != s for s = save(restore(input)) (%zu vs %zu bytes)", l1,
                    l2);
        free(s1);
        free(s2);
        if (!(ctl & 0x20u)) {
            rc = quay_channel_reset(t.ch, 0x1234u);
            if (rc != 0)
                fz_fail("reset after restore: %s", quay_strerror(rc));
            self_message(&t);
        }
    }
    check_mem(&t);
    quay_engine_free(t.e);
    if (t.mem.live != 0)
        fz_fail("memory: %zu bytes left after quay_engine_free", t.mem.live);
    free(pre);
    free(blob);
    return 0;
}
