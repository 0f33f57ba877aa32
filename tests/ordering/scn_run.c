/*
 * scn_run.c — run a scenario on N engines over the adversarial nicsim.
 *
 * Each scheduler step picks one enabled choice: the next op of a rank whose
 * program is not blocked, or one nicsim event (pull / deliver / op_done).
 * With a seed the pick is weighted at random (weights drawn per seed so
 * that runs range from "network first" to "programs first", and ranks are
 * skewed against each other); with a script (exhaustive enumeration) the
 * i-th step takes the script[i]-th choice of [enabled ranks][nicsim].
 * Engine and simulator events are handled in scn_trace.c, the programs'
 * ops in scn_ops.c, the checks in scn_check.c.
 */
#include "scn_int.h"

#include "nicsim_prng.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* PRNG: the bounded draw over nicsim_prng.h (nicsim's own generator) */
/* ------------------------------------------------------------------ */

/* Multiply-shift without rejection: the seed -> interleaving mapping the
 * recorded seeds rely on. */
static uint32_t xbelow(uint64_t s[4], uint32_t bound)
{
    return (uint32_t)(((nicsim_xoshiro_next(s) >> 32) * (uint64_t)bound) >> 32);
}

/* ------------------------------------------------------------------ */
/* Set-up and tear-down of one run                                      */
/* ------------------------------------------------------------------ */

static uint32_t at_least(uint32_t v, uint32_t min)
{
    return v < min ? min : v;
}

static void teardown(scn_runner *run)
{
    int r;
    if (run->sim != NULL)
        nicsim_get_stats(run->sim, &run->net);
    nicsim_free(run->sim);
    run->sim = NULL;
    for (r = 0; r < run->s->nranks; r++) {
        quay_engine_free(run->rk[r].e);
        run->rk[r].e = NULL;
    }
}

static int setup(scn_runner *run, uint64_t seed, int auto_pull)
{
    const scn *s = run->s;
    nicsim_config nc;
    int r, c, i, rc;
    uint32_t nsends = 0;

    for (r = 0; r < s->nranks; r++)
        nsends += (uint32_t)s->nsends[r];
    run->failed = 0;
    run->err[0] = '\0';
    run->t = 0;
    run->step = 0;
    run->nmatches = 0;
    run->deferred = 0;
    run->any_claimed = run->any_declined = 0;
    run->seed = seed;
    run->tjump = 0;
    run->timer_fires = 0;
    run->engine_rejects = 0;
    run->retransmits = run->nacks = run->dups_dropped = 0;
    run->switches = run->switches_forced = run->restores = 0;
    run->qjumps = 0;
    run->ncmatches = 0;
    run->switches_refused = 0;
    run->sends = run->inline_sends = run->inline_busy = run->copied_sends = 0;
    run->recv_inlines = run->recv_inline_busy = 0;
    run->flow = run->flow_override >= 0 ? run->flow_override : s->flow;
    {
        /* Timeouts from "fires while the ACK is on its way" to "only when
         * the network went quiet": a stream of its own, so that runs
         * without flow control keep their seed -> interleaving mapping. */
        static const uint64_t rto_steps[4] = {8, 40, 200, 2000};
        uint64_t x = seed ^ 0x7f4a7c159e3779b9ull;
        run->rto_ns = rto_steps[nicsim_splitmix64(&x) & 3] * SCN_NS_PER_STEP;
    }
    for (r = 0; r < s->nranks; r++)
        for (c = 0; c < s->nranks; c++)
            run->seqs[r][c].n = 0;
    for (i = 0; i < s->nslots; i++) {
        slot_dyn *d = &run->dyn[i];
        memset(d, 0, sizeof *d);
        d->match = -1;
        d->got = -1;
        d->recv_by = -1;
        d->match_t = SCN_NEVER;
        d->cancel_t = SCN_NEVER;
    }

    nicsim_config_default(&nc);
    nc.nranks = s->nranks;
    nc.seed = seed;
    nc.reorder = (uint32_t)s->reorder;
    nc.auto_pull = (uint32_t)auto_pull;
    nicsim_fault_spec_to_config(scn_run_faults(run), &nc);
    rc = nicsim_new(&nc, &run->sim);
    if (rc != 0) {
        scn_fail(run, "nicsim_new: %s", scn_errname(rc));
        return -1;
    }
    rc = nicsim_fault_spec_schedule(run->sim, scn_run_faults(run));
    if (rc != 0) {
        scn_fail(run, "faults: %s", scn_errname(rc));
        return -1;
    }
    nicsim_set_completion_cb(run->sim, scn_on_complete, run);
    nicsim_set_event_cb(run->sim, scn_on_sim_event, run);
    scn_coll_setup(run, seed); /* the same algorithms at every rank */

    for (r = 0; r < s->nranks; r++) {
        rank_rt *rk = &run->rk[r];
        quay_config qc;
        uint64_t x = seed ^ ((uint64_t)r << 48);
        rk->pc = 0;
        rk->syncs = 0;
        rk->blocked_epoch = SCN_NEVER;
        rk->in_call = 0;
        rk->improbe_slot = -1;
        rk->call_slot = -1;
        rk->ndefer = 0;
        rk->inl_head = rk->inl_tail = 0;
        rk->attached = 0;
        rk->quiesced = 0;
        for (i = 0; i < SCN_MAX_RANKS; i++)
            rk->seq_hi[i] = -1;
        run->outstanding[r] = 0;
        for (i = 0; i < (int)rk->idmap_cap; i++)
            rk->idmap_val[i] = -1;
        if (run->arena_image[r] != NULL)
            memcpy(rk->arena, run->arena_image[r], s->arena_len[r]);
        else if (s->arena_len[r] > 0)
            memset(rk->arena, SCN_FILL, s->arena_len[r]);
        memset(rk->comms, 0, sizeof rk->comms);

        quay_config_default(&qc);
        memset(qc.key_secret, 0x5a, sizeof qc.key_secret); /* (tests: any fixed secret) */
        qc.flags = s->flags;
        /* Odd seeds run without the linear oracle: then the engine's
         * inline exact matcher (match_fast.h) is what matches, checked by
         * this runner's own properties (c) and (b) alone. */
        if (seed & 1)
            qc.flags &= ~(uint32_t)QUAY_CFG_CHECK_ORACLE;
        /* Seeds with bit 3 set copy small standard isends at the call
         * (QUAY_CFG_SEND_COPY): those requests complete at once. */
        if (seed & 8)
            qc.flags |= QUAY_CFG_SEND_COPY;
        qc.rank = r;
        qc.nranks = s->nranks;
        qc.seed = nicsim_splitmix64(&x);
        qc.eager_max = s->eager_max;
        qc.frag_size = s->frag_size;
        qc.pipeline_depth = s->depth;
        /* (collectives: what their schedules may hold besides) */
        qc.max_requests =
            s->max_requests ? s->max_requests
                            : at_least(4u * (uint32_t)s->nslots_rank[r] + 16 +
                                           s->coll_reqs[r],
                                       64);
        qc.max_unexpected = s->max_unexpected
                                ? s->max_unexpected
                                : at_least(4u * nsends + 16 + s->coll_msgs, 64);
        if (s->unexpected_bytes)
            qc.unexpected_bytes_max = s->unexpected_bytes;
        if (s->reorder_window)
            qc.reorder_window = s->reorder_window;
        qc.max_out = s->max_out ? s->max_out : 256;
        qc.max_ctrl = s->max_ctrl ? s->max_ctrl : 256;
        qc.max_comms = (uint32_t)s->ncomms + 4;
        {
            int rm = run->rndv_override >= 0 ? run->rndv_override : s->rndv;
            if (rm != SCN_RNDV_DEFAULT) {
                /* Its own stream, so the other draws keep their values. */
                static const uint32_t modes[3] = {QUAY_RNDV_COPY, QUAY_RNDV_GET,
                                                  QUAY_RNDV_PUT};
                uint64_t y = seed ^ 0x52444d4152444d41ull ^ (uint64_t)r;
                qc.transport_caps = QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT;
                qc.rndv_mode = rm == SCN_RNDV_MIXED ? modes[nicsim_splitmix64(&y) % 3]
                                                    : modes[rm - SCN_RNDV_COPY];
            }
        }
        int rtr_level = run->rtr_override >= 0 ? run->rtr_override : s->rtr;
        if (rtr_level) {
            qc.rtr = 1;
            qc.rtr_any = rtr_level >= 2; /* ANY_SOURCE arbitration too */
            qc.transport_caps = QUAY_CAP_RDMA_GET | QUAY_CAP_RDMA_PUT;
        }
        qc.coll_barrier = run->coll.alg[SCOLL_BARRIER];
        qc.coll_bcast = run->coll.alg[SCOLL_BCAST];
        qc.coll_reduce = run->coll.alg[SCOLL_REDUCE];
        qc.coll_allreduce = run->coll.alg[SCOLL_ALLREDUCE];
        if (run->coll.degree != 0)
            qc.coll_tree_degree = run->coll.degree;
        qc.coll_segment = run->coll.segment;
        qc.coll_bypass = run->coll.bypass;
        if (s->coll_max != 0)
            qc.coll_max = s->coll_max;
        qc.flow = run->flow;
        if (run->flow != QUAY_FLOW_NONE) {
            qc.rto_init_ns = run->rto_ns;
            qc.rto_max_ns = 1024 * run->rto_ns;
            /* A starved schedule is slow, not dead (with 8 ranks a packet
             * may wait thousands of steps among those in flight): failure
             * detection is test_flow's business, not the ordering runs'. */
            qc.retry_limit = 1000;
            if (qc.max_out < 2)
                qc.max_out = 2; /* one is kept for ACK-only frames */
        }
        if (run->cfg_hook != NULL)
            run->cfg_hook(run->cfg_hook_ctx, r, &qc);
        rc = quay_engine_new(&qc, &rk->e);
        if (rc != 0) {
            scn_fail(run, "rank %d: quay_engine_new: %s", r, scn_errname(rc));
            return -1;
        }
        quay_set_trace(rk->e, scn_on_trace, rk);
        for (c = 0; c < s->ncomms; c++) {
            const scn_comm *cm = &s->comms[c];
            if (cm->crank[r] < 0 || (cm->lazy >> r & 1u))
                continue;
            rc = quay_comm_create(rk->e, cm->ctx, cm->n,
                                  c == 0 ? NULL : cm->world, &rk->comms[c]);
            if (rc != 0) {
                scn_fail(run, "rank %d: quay_comm_create(ctx %u): %s", r,
                         cm->ctx, scn_errname(rc));
                return -1;
            }
        }
        rc = nicsim_attach(run->sim, r, rk->e);
        if (rc != 0) {
            scn_fail(run, "nicsim_attach(%d): %s", r, scn_errname(rc));
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Choosing                                                             */
/* ------------------------------------------------------------------ */

static void chooser_seed(chooser *ch, uint64_t seed, int nranks)
{
    uint64_t x = seed;
    int i;
    ch->script_mode = 0;
    for (i = 0; i < 4; i++)
        ch->rng[i] = nicsim_splitmix64(&x);
    /* Weights 1..32 per rank and per nicsim event group: some runs move
     * the network first, some the programs, some one rank far ahead. */
    for (i = 0; i < nranks; i++)
        ch->wrank[i] = 1u << xbelow(ch->rng, 6);
    ch->wpull = 1u << xbelow(ch->rng, 6);
    ch->wdeliver = 1u << xbelow(ch->rng, 6);
    ch->wopdone = 1u << xbelow(ch->rng, 6);
    {
        uint64_t y = seed ^ 0x2545f4914f6cdd1dull; /* keeps rng's stream */
        ch->wtimer = 1u << (nicsim_splitmix64(&y) % 6);
        ch->wswitch = 1u << (nicsim_splitmix64(&y) % 3);
    }
    ch->depth = 0;
    ch->bytes = NULL;
    ch->nbytes = 0;
    ch->bpos = 0;
}

static int chooser_record(chooser *ch, uint32_t taken, uint32_t width)
{
    if (ch->depth == ch->cap) {
        size_t ncap = ch->cap ? ch->cap * 2 : 256;
        uint32_t *a = realloc(ch->taken, ncap * sizeof *a);
        uint32_t *b;
        if (a == NULL)
            return -1;
        ch->taken = a;
        b = realloc(ch->width, ncap * sizeof *b);
        if (b == NULL)
            return -1;
        ch->width = b;
        ch->cap = ncap;
    }
    ch->taken[ch->depth] = taken;
    ch->width[ch->depth] = width;
    ch->depth++;
    return 0;
}

/* Index in [0, nprog + npull + ndel + nopd + ntimer + nswitch). */
static int64_t choose(scn_runner *run, const int *ranks, uint32_t nprog,
                      uint32_t npull, uint32_t ndel, uint32_t nopd,
                      uint32_t ntimer, uint32_t nswitch)
{
    chooser *ch = &run->ch;
    uint32_t width = nprog + npull + ndel + nopd + ntimer + nswitch;
    uint64_t total = 0, x;
    uint32_t i;
    if (ch->script_mode) {
        uint32_t c = ch->depth < ch->nscript ? ch->script[ch->depth] : 0;
        if (c >= width) {
            ch->diverged = 1;
            scn_fail(run, "choice script diverged at step %zu (%u >= %u)",
                     ch->depth, c, width);
            return -1;
        }
        if (chooser_record(ch, c, width) != 0) {
            scn_fail(run, "out of memory");
            return -1;
        }
        return c;
    }
    if (ch->bpos < ch->nbytes) {
        uint32_t v = ch->bytes[ch->bpos++];
        if (width > 256 && ch->bpos < ch->nbytes)
            v = v << 8 | ch->bytes[ch->bpos++];
        return v % width;
    }
    for (i = 0; i < nprog; i++)
        total += ch->wrank[ranks[i]];
    if (npull)
        total += ch->wpull;
    if (ndel)
        total += ch->wdeliver;
    if (nopd)
        total += ch->wopdone;
    if (ntimer)
        total += ch->wtimer;
    if (nswitch)
        total += ch->wswitch;
    x = xbelow(ch->rng, (uint32_t)total);
    for (i = 0; i < nprog; i++) {
        if (x < ch->wrank[ranks[i]])
            return i;
        x -= ch->wrank[ranks[i]];
    }
    if (npull) {
        if (x < ch->wpull)
            return nprog + xbelow(ch->rng, npull);
        x -= ch->wpull;
    }
    if (ndel) {
        if (x < ch->wdeliver)
            return nprog + npull + xbelow(ch->rng, ndel);
        x -= ch->wdeliver;
    }
    if (nopd) {
        if (x < ch->wopdone)
            return nprog + npull + ndel + xbelow(ch->rng, nopd);
        x -= ch->wopdone;
    }
    if (ntimer) {
        if (x < ch->wtimer)
            return nprog + npull + ndel + nopd + xbelow(ch->rng, ntimer);
    }
    return nprog + npull + ndel + nopd + ntimer + xbelow(ch->rng, nswitch);
}

/* ------------------------------------------------------------------ */
/* Context switches (flow control)                                      */
/* ------------------------------------------------------------------ */

/* Switch choices: quiesce a running rank (rarely: 1 in 64 steps' worth
 * of weight is plenty), or resume a quiesced one that is stable. */
static uint32_t switch_choices(scn_runner *run, int *ranks)
{
    uint32_t n = 0;
    int r;
    if (!run->switches_on || run->flow == QUAY_FLOW_NONE || run->ch.script_mode)
        return 0;
    for (r = 0; r < run->s->nranks; r++) {
        const rank_rt *rk = &run->rk[r];
        if (rk->quiesced ? quay_channel_is_stable(rk->e) == 1
                         : (run->step % 64) == (uint64_t)r)
            ranks[n++] = r;
    }
    return n;
}

/* A stable rank's context goes out and comes back (PM's C6, C7): save it,
 * replace it by an empty context with another key, restore it. The
 * restored channel must save to the same bytes, and the run must go on as
 * if nothing happened. A channel refuses (QUAY_EBUSY) while a collective
 * schedule runs, and only then: the rank just resumes (counted apart).
 * A stable channel with self traffic not yet pulled refuses too
 * (quay_engine_save wants it pulled first; it may also be waiting for
 * room that only a resumed channel can make): the same.
 * Returns 0, or 1 if the save was refused. */
static int save_restore(scn_runner *run, int r)
{
    quay_engine *e = run->rk[r].e;
    size_t len = 0, len2 = 0;
    int running = scn_coll_running(run, r);
    int rc = quay_engine_save(e, NULL, 0, &len);
    /* (with application bypass a schedule may run before its call) */
    if (rc == QUAY_EBUSY && (running || run->coll.bypass)) {
        run->switches_refused++;
        return 1;
    }
    if (rc == QUAY_EBUSY && quay_has_actions(e)) {
        run->switches_refused++;
        return 1;
    }
    if (rc != QUAY_ENOBUFS || len == 0) {
        scn_fail(run, "rank %d: save size: %s", r, scn_errname(rc));
        return 0;
    }
    if (running) {
        scn_fail(run, "rank %d: quay_engine_save accepted while a collective "
                      "schedule runs",
                 r);
        return 0;
    }
    unsigned char *blob = malloc(len), *again = malloc(len);
    if (blob == NULL || again == NULL) {
        free(blob);
        free(again);
        scn_fail(run, "out of memory");
        return 0;
    }
    rc = quay_engine_save(e, blob, len, &len);
    if (rc == 0)
        rc = quay_channel_reset(e, 0x5eed0000u + (uint32_t)run->switches);
    if (rc == 0)
        rc = quay_engine_restore(e, blob, len);
    if (rc == 0)
        rc = quay_engine_save(e, again, len, &len2);
    if (rc != 0)
        scn_fail(run, "rank %d: save/reset/restore: %s", r, scn_errname(rc));
    else if (len2 != len || memcmp(blob, again, len) != 0)
    {
        size_t at = 0;
        while (at < len && at < len2 && blob[at] == again[at])
            at++;
        scn_fail(run, "rank %d: the restored context saves differently (%zu vs %zu bytes, first at %zu)",
                 r, len, len2, at);
    }
    free(blob);
    free(again);
    run->restores++;
    return 0;
}

static void do_switch(scn_runner *run, int r, int forced)
{
    rank_rt *rk = &run->rk[r];
    int rc, refused = 0;
    run->qjumps = 0;
    if (!rk->quiesced) {
        rc = quay_channel_quiesce(rk->e);
        rk->quiesced = 1;
    } else {
        if (!forced)
            refused = save_restore(run, r);
        rc = quay_channel_resume(rk->e);
        rk->quiesced = 0;
        if (forced)
            run->switches_forced++;
        else if (!refused)
            run->switches++;
        nicsim_touch(run->sim, r); /* held packets may go now */
    }
    if (run->trace != NULL)
        fprintf(run->trace, "step %" PRIu64 " rank %d: %s%s\n", run->step, r,
                rk->quiesced ? "quiesce" : "resume",
                forced    ? " (not stable)"
                : refused ? " (save refused: a collective schedule runs, or self traffic waits)"
                          : "");
    if (rc != 0)
        scn_fail(run, "rank %d: quiesce/resume: %s", r, scn_errname(rc));
}

static int any_quiesced(const scn_runner *run)
{
    int r;
    for (r = 0; r < run->s->nranks; r++)
        if (run->rk[r].quiesced)
            return 1;
    return 0;
}

/* Nothing else can move: resume a quiesced rank (its switch cannot
 * complete). Returns 1 if one was resumed. */
static int force_resume(scn_runner *run)
{
    int r;
    for (r = 0; r < run->s->nranks; r++)
        if (run->rk[r].quiesced) {
            do_switch(run, r, 1);
            return 1;
        }
    return 0;
}

void scn_check_quiesced_send(scn_runner *run, int32_t rank, int32_t peer,
                             const void *data, uint64_t len)
{
    rank_rt *rk;
    const unsigned char *b = data;
    int32_t seq;
    if (run->flow == QUAY_FLOW_NONE || rank < 0 || rank >= run->s->nranks ||
        peer < 0 || peer >= run->s->nranks || len < 8 || b[1] != 1 /* DATA */)
        return;
    rk = &run->rk[rank];
    seq = (int32_t)((uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 |
                    (uint32_t)b[7] << 24);
    if (seq <= rk->seq_hi[peer])
        return; /* a retransmission */
    if (rk->quiesced)
        scn_fail(run, "rank %d sent new seq %d to %d while quiesced", rank,
                 seq, peer);
    rk->seq_hi[peer] = seq;
}

/* ------------------------------------------------------------------ */
/* Virtual time (flow control)                                          */
/* ------------------------------------------------------------------ */

uint64_t scn_now_ns(const scn_runner *run)
{
    return (run->step + run->tjump) * SCN_NS_PER_STEP;
}

/* Ranks whose engine has a deadline that has passed. */
static uint32_t due_timers(const scn_runner *run, int *ranks)
{
    uint64_t now = scn_now_ns(run);
    uint32_t n = 0;
    int r;
    if (run->flow == QUAY_FLOW_NONE)
        return 0;
    for (r = 0; r < run->s->nranks; r++)
        if (quay_next_deadline(run->rk[r].e) <= now)
            ranks[n++] = r;
    return n;
}

/* Nothing else can happen: move the clock to the earliest deadline.
 * Returns 1 if there is one. */
static int jump_to_deadline(scn_runner *run)
{
    uint64_t first = QUAY_TIME_NONE, now = scn_now_ns(run);
    int r;
    if (run->flow == QUAY_FLOW_NONE)
        return 0;
    for (r = 0; r < run->s->nranks; r++) {
        uint64_t d = quay_next_deadline(run->rk[r].e);
        if (d < first)
            first = d;
    }
    if (first == QUAY_TIME_NONE)
        return 0;
    if (first > now)
        run->tjump += (first - now + SCN_NS_PER_STEP - 1) / SCN_NS_PER_STEP;
    return 1;
}

static void fire_timer(scn_runner *run, int r)
{
    int rc = quay_on_time(run->rk[r].e, scn_now_ns(run));
    run->timer_fires++;
    if (run->trace != NULL)
        fprintf(run->trace, "step %" PRIu64 " rank %d: on_time %" PRIu64 "\n",
                run->step, r, scn_now_ns(run));
    if (rc != 0)
        scn_fail(run, "rank %d: quay_on_time: %s", r, scn_errname(rc));
    nicsim_touch(run->sim, r); /* re-sends may be pullable now */
}

/* ------------------------------------------------------------------ */
/* The run                                                              */
/* ------------------------------------------------------------------ */

/* Where a stuck rank's resources are, for whoever reads the trace. */
static void trace_stats(FILE *f, int r, const quay_stats *qs)
{
    fprintf(f,
            "# rank %d: reqs %u, unexpected %u (%" PRIu64 " B), held %u, "
            "outs %u, ctrl %u (+%u reserved), deferred %" PRIu64
            ", nacks %" PRIu64 ", retransmits %" PRIu64 ", regions %u\n",
            r, qs->reqs_in_use, qs->umsgs_in_use, qs->bytes_unexpected,
            qs->held_out_of_order, qs->outs_in_use, qs->ctrl_queued,
            qs->ctrl_reserved, qs->pkts_deferred, qs->nacks_sent,
            qs->retransmits, qs->regions_in_use);
}

static void deadlock(scn_runner *run, const char *why)
{
    const scn *s = run->s;
    char buf[1024];
    size_t n = 0;
    int r, i;
    nicsim_stats st;
    nicsim_get_stats(run->sim, &st);
    n += (size_t)snprintf(buf + n, sizeof buf - n,
                          "%s (%" PRIu64 " packets in flight, %" PRIu64
                          " op_done pending)",
                          why, st.inflight, st.pending_op_done);
    for (r = 0; r < s->nranks && n < sizeof buf; r++) {
        const rank_rt *rk = &run->rk[r];
        quay_stats qs;
        if (rk->pc < s->nops[r])
            n += (size_t)snprintf(buf + n, sizeof buf - n,
                                  "; rank %d blocked at line %d", r,
                                  s->ops[r][rk->pc].line);
        quay_engine_stats(rk->e, &qs);
        if (run->trace != NULL)
            trace_stats(run->trace, r, &qs);
        if (qs.umsgs_in_use != 0 && n < sizeof buf)
            n += (size_t)snprintf(buf + n, sizeof buf - n,
                                  "; rank %d holds %u unmatched message(s)",
                                  r, qs.umsgs_in_use);
    }
    for (i = 0; i < s->nslots && n < sizeof buf; i++) {
        const slot_dyn *d = &run->dyn[i];
        int k = s->slots[i].kind, done;
        if (!scn_is_req(k) || !d->posted || d->released || d->user_freed ||
            d->inline_sent)
            continue;
        /* Without COMPLETE actions the engine's own state is all there
         * is; with them, a request it calls complete but never announced
         * is the news. */
        done = quay_req_test(d->req, NULL) == 1;
        if (run->complete_actions ? d->completes == 0 : !done)
            n += (size_t)snprintf(buf + n, sizeof buf - n,
                                  "; rank %d '%s' (line %d) incomplete%s",
                                  s->slots[i].rank, s->slots[i].name,
                                  s->slots[i].line,
                                  done ? " (but quay_req_test says complete)"
                                       : "");
    }
    scn_fail(run, "%s", buf);
}

/* Everything ran and the network is quiet: finish and check. */
static void end_of_run(scn_runner *run)
{
    const scn *s = run->s;
    int r, i, c, rc;
    for (i = 0; i < s->nslots; i++) {
        const slot_dyn *d = &run->dyn[i];
        int k = s->slots[i].kind;
        if (scn_is_req(k) && d->posted && !d->released && !d->user_freed &&
            !scn_slot_finished(run, i)) {
            deadlock(run, "deadlock at the end");
            return;
        }
    }
    for (r = 0; r < s->nranks; r++) {
        const rank_rt *rk = &run->rk[r];
        if (rk->inl_head < rk->inl_tail) {
            const scn_slot *x = &s->slots[rk->inl[rk->inl_head]];
            scn_fail(run, "rank %d: inline send '%s' (line %d): its packet "
                          "never left (%d inline packet(s) missing)",
                     r, x->name, x->line, rk->inl_tail - rk->inl_head);
            return;
        }
    }
    for (i = 0; i < s->nslots && !run->failed; i++) {
        const slot_dyn *d = &run->dyn[i];
        int k = s->slots[i].kind;
        if (scn_is_req(k) && d->posted && !d->released && !d->user_freed)
            scn_finalize(run, i);
    }
    for (r = 0; r < s->nranks && !run->failed; r++) {
        rank_rt *rk = &run->rk[r];
        quay_stats st;
        if (rk->attached) {
            void *pb;
            size_t pl;
            rc = quay_buffer_detach(rk->e, &pb, &pl);
            if (rc != 0)
                scn_fail(run, "rank %d: final detach: %s", r, scn_errname(rc));
            rk->attached = 0;
        }
        quay_engine_stats(rk->e, &st);
        run->retransmits += st.retransmits;
        run->nacks += st.nacks_sent;
        run->dups_dropped += st.dups_dropped;
        run->any_claimed += st.any_claimed;
        run->any_declined += st.any_declined;
        if (st.reqs_in_use != 0 || st.umsgs_in_use != 0 ||
            st.outs_in_use != 0 || st.held_out_of_order != 0 ||
            st.bytes_unexpected != 0 || st.regions_in_use != 0 ||
            st.ctrl_reserved != 0 ||
            (run->flow == QUAY_FLOW_NONE && st.pkts_rejected != 0))
            scn_fail(run,
                     "rank %d: engine not clean at the end: reqs_in_use %u "
                     "umsgs_in_use %u outs_in_use %u held_out_of_order %u "
                     "bytes_unexpected %" PRIu64 " pkts_rejected %" PRIu64
                     " regions_in_use %u ctrl_reserved %u",
                     r, st.reqs_in_use, st.umsgs_in_use, st.outs_in_use,
                     st.held_out_of_order, st.bytes_unexpected,
                     st.pkts_rejected, st.regions_in_use, st.ctrl_reserved);
        for (c = s->ncomms - 1; c >= 0 && !run->failed; c--) {
            if (rk->comms[c] == NULL)
                continue;
            rc = quay_comm_free(rk->e, rk->comms[c]);
            if (rc != 0)
                scn_fail(run, "rank %d: quay_comm_free(ctx %u): %s", r,
                         s->comms[c].ctx, scn_errname(rc));
            rk->comms[c] = NULL;
        }
    }
    if (!run->failed) {
        nicsim_stats ns;
        nicsim_get_stats(run->sim, &ns);
        /* Under flow control the engines must reject exactly the packets
         * nicsim corrupted (CRC32C catches every 1-3 bit error); intact
         * copies are dropped as duplicates, silently. */
        uint64_t allowed = run->flow != QUAY_FLOW_NONE ? ns.corrupt_rejected : 0;
        if (ns.rejects != allowed || run->engine_rejects != allowed ||
            ns.errors || ns.fatal || ns.rdma_refused)
            scn_fail(run,
                     "nicsim: %" PRIu64 " rejects (%" PRIu64
                     " by the engines, %" PRIu64 " allowed: corrupted), %" PRIu64
                     " errors, %" PRIu64 " fatal, %" PRIu64 " RDMA accesses refused",
                     ns.rejects, run->engine_rejects, allowed, ns.errors,
                     ns.fatal, ns.rdma_refused);
        else if (run->flow != QUAY_FLOW_NONE && ns.corrupt_accepted != 0)
            scn_fail(run, "flow control: %" PRIu64 " corrupted packets "
                          "accepted", ns.corrupt_accepted);
    }
    if (!run->failed)
        scn_check_run(run);
}

static int run_once(scn_runner *run, uint64_t seed, int auto_pull)
{
    const scn *s = run->s;
    int ranks[SCN_MAX_RANKS], timers[SCN_MAX_RANKS], sw[SCN_MAX_RANKS];
    if (setup(run, seed, auto_pull) != 0) {
        teardown(run);
        return -1;
    }
    while (!run->failed) {
        uint32_t nprog = 0, npull, ndel, nopd, ntimer, nswitch;
        int r, all_done = 1;
        int64_t c;
        for (r = 0; r < s->nranks; r++) {
            if (run->rk[r].pc < s->nops[r]) {
                all_done = 0;
                if (scn_rank_enabled(run, r))
                    ranks[nprog++] = r;
            }
        }
        nicsim_enabled_detail(run->sim, &npull, &ndel, &nopd);
        ntimer = due_timers(run, timers);
        nswitch = switch_choices(run, sw);
        if ((all_done || nprog == 0) && npull + ndel + nopd + ntimer == 0) {
            /* Only time can move things: let it (retransmissions drain a
             * quiesced rank), but a switch still stuck after a few jumps
             * cannot complete (its peers wait for what it holds back). */
            if (run->qjumps >= 8 && force_resume(run)) {
                run->qjumps = 0;
                continue;
            }
            if (jump_to_deadline(run)) {
                run->qjumps += any_quiesced(run);
                continue;
            }
            if (force_resume(run))
                continue;
        }
        if (all_done && npull + ndel + nopd + ntimer == 0)
            nswitch = 0; /* only switches left: the run is over */
        if (all_done && npull + ndel + nopd + ntimer == 0) {
            if (!nicsim_idle(run->sim))
                deadlock(run, "deadlock: packets in flight are all deferred");
            else
                end_of_run(run);
            break;
        }
        if (nprog + npull + ndel + nopd + ntimer == 0) {
            deadlock(run, "deadlock");
            break;
        }
        if (run->step >= run->max_steps) {
            deadlock(run, "livelock: step limit reached");
            break;
        }
        c = choose(run, ranks, nprog, npull, ndel, nopd, ntimer, nswitch);
        if (c < 0)
            break;
        run->step++;
        if (c < (int64_t)nprog) {
            scn_exec_op(run, ranks[c]);
        } else if (c >= (int64_t)(nprog + npull + ndel + nopd + ntimer)) {
            do_switch(run, sw[c - (nprog + npull + ndel + nopd + ntimer)], 0);
        } else if (c >= (int64_t)(nprog + npull + ndel + nopd)) {
            fire_timer(run, timers[c - (nprog + npull + ndel + nopd)]);
        } else {
            int rc = nicsim_step_choose(run->sim, (uint32_t)(c - nprog));
            if (rc < 0)
                scn_fail(run, "engine returned %s (fatal)", scn_errname(rc));
        }
    }
    scn_settle(run);
    teardown(run);
    return run->failed ? 1 : 0;
}

/* ------------------------------------------------------------------ */
/* Public entry points                                                  */
/* ------------------------------------------------------------------ */

int scn_runner_new(const scn *s, scn_runner **pr)
{
    scn_runner *run;
    int r, i;
    *pr = NULL;
    run = calloc(1, sizeof *run);
    if (run == NULL)
        return -1;
    run->s = s;
    run->flow_override = -1;
    run->rndv_override = -1;
    run->rtr_override = -1;
    run->complete_actions = (s->flags & QUAY_CFG_COMPLETE_ACTIONS) != 0;
    run->max_steps = 200000 + 2000 * (uint64_t)s->nslots;
    for (i = 0; i < s->nslots; i++) {
        uint64_t frags = s->slots[i].size / (s->frag_size ? s->frag_size : 1);
        if (s->slots[i].kind == SLOT_COLL) /* every member moves the data */
            frags = (scn_coll_bytes(s, &s->cinst[s->slots[i].cinst]) /
                         (s->frag_size ? s->frag_size : 1) + 8) *
                    (uint64_t)s->comms[s->slots[i].comm].n;
        run->max_steps += 4 * frags;
    }
    run->dyn = calloc((size_t)s->nslots + 1, sizeof *run->dyn);
    if (run->dyn == NULL)
        goto fail;
    for (r = 0; r < s->nranks; r++) {
        rank_rt *rk = &run->rk[r];
        uint32_t cap = 16;
        rk->run = run;
        rk->rank = r;
        rk->arena = malloc(s->arena_len[r] ? s->arena_len[r] : 1);
        rk->attach_buf = malloc(s->attach_max[r] ? s->attach_max[r] : 1);
        while (cap < 4u * (uint32_t)s->nslots_rank[r] + 4)
            cap *= 2;
        rk->idmap_cap = cap;
        rk->idmap_key = calloc(cap, sizeof *rk->idmap_key);
        rk->idmap_val = calloc(cap, sizeof *rk->idmap_val);
        /* each send goes inline at most once a run */
        rk->inl = malloc(((size_t)s->nsends[r] + 1) * sizeof *rk->inl);
        run->rank_slots[r] =
            calloc((size_t)s->nslots_rank[r] + 1, sizeof *run->rank_slots[r]);
        if (rk->arena == NULL || rk->attach_buf == NULL ||
            rk->idmap_key == NULL || rk->idmap_val == NULL ||
            rk->inl == NULL || run->rank_slots[r] == NULL)
            goto fail;
    }
    for (i = 0; i < s->nslots; i++) {
        r = s->slots[i].rank;
        run->rank_slots[r][run->nrank_slots[r]++] = i;
    }
    if (scn_coll_prepare(run) != 0)
        goto fail;
    *pr = run;
    return 0;
fail:
    scn_runner_free(run);
    return -1;
}

void scn_runner_free(scn_runner *run)
{
    int r, c;
    if (run == NULL)
        return;
    teardown(run);
    for (r = 0; r < SCN_MAX_RANKS; r++) {
        rank_rt *rk = &run->rk[r];
        free(rk->arena);
        free(rk->attach_buf);
        free(rk->idmap_key);
        free(rk->idmap_val);
        free(rk->inl);
        free(rk->defer);
        free(run->rank_slots[r]);
        free(run->arena_image[r]);
        for (c = 0; c < SCN_MAX_RANKS; c++)
            free(run->seqs[r][c].v);
    }
    free(run->dyn);
    free(run->matches);
    free(run->cmatches);
    free(run->coll_expect);
    free(run->coll_expect_off);
    free(run->ch.taken);
    free(run->ch.width);
    free(run->fail_script);
    free(run);
}

/* ------------------------------------------------------------------ */
/* Faults                                                               */
/* ------------------------------------------------------------------ */

const nicsim_fault_spec *scn_run_faults(const scn_runner *run)
{
    return run->has_faults_override ? &run->faults_override : &run->s->faults;
}

int scn_runner_set_faults(scn_runner *run, const char *spec, char *err,
                          size_t errlen)
{
    nicsim_fault_spec f;
    if (spec == NULL) {
        run->has_faults_override = 0;
        return 0;
    }
    if (nicsim_fault_spec_parse(spec, &f, err, errlen) != 0 ||
        scn_faults_check(&f, run->s->nranks, err, errlen) != 0)
        return -1;
    run->faults_override = f;
    run->has_faults_override = 1;
    return 0;
}

void scn_runner_faults_text(const scn_runner *run, char *buf, size_t len)
{
    nicsim_fault_spec_format(scn_run_faults(run), buf, len);
}

int scn_runner_faults_active(const scn_runner *run)
{
    return nicsim_fault_spec_active(scn_run_faults(run));
}

void scn_runner_set_flow(scn_runner *run, int mode)
{
    run->flow_override = mode;
}

void scn_runner_set_rndv(scn_runner *run, int mode)
{
    run->rndv_override = mode;
}

void scn_runner_set_rtr(scn_runner *run, int on)
{
    run->rtr_override = on;
}

void scn_runner_set_switches(scn_runner *run, int on)
{
    run->switches_on = on;
}

uint64_t scn_runner_switches(const scn_runner *run, uint64_t *forced)
{
    if (forced != NULL)
        *forced = run->switches_forced;
    return run->switches;
}

uint64_t scn_runner_timer_fires(const scn_runner *run)
{
    return run->timer_fires;
}

void scn_runner_net_stats(const scn_runner *run, nicsim_stats *st)
{
    *st = run->net;
}

static void trace_faults(const scn_runner *run)
{
    char buf[1024];
    if (!scn_runner_faults_active(run))
        return;
    scn_runner_faults_text(run, buf, sizeof buf);
    fprintf(run->trace, "# faults %s\n", buf);
}

int scn_run_seed(scn_runner *run, uint64_t seed, const scn_opts *o)
{
    run->trace = o != NULL ? o->trace : NULL;
    if (o != NULL && o->max_steps != 0)
        run->max_steps = o->max_steps;
    chooser_seed(&run->ch, seed, run->s->nranks);
    if (run->trace != NULL) {
        fprintf(run->trace, "# scenario %s seed %" PRIu64 "\n", run->s->name,
                seed);
        trace_faults(run);
    }
    return run_once(run, seed, 0);
}

int scn_run_bytes(scn_runner *run, const uint8_t *bytes, size_t n, uint64_t seed,
                  const scn_opts *o)
{
    run->trace = o != NULL ? o->trace : NULL;
    if (o != NULL && o->max_steps != 0)
        run->max_steps = o->max_steps;
    chooser_seed(&run->ch, seed, run->s->nranks);
    run->ch.bytes = bytes;
    run->ch.nbytes = bytes != NULL ? n : 0;
    if (run->trace != NULL) {
        fprintf(run->trace, "# scenario %s, %zu schedule bytes, then seed %" PRIu64 "\n",
                run->s->name, run->ch.nbytes, seed);
        trace_faults(run);
    }
    return run_once(run, seed, 0);
}

void scn_runner_set_config_hook(scn_runner *run, scn_config_fn fn, void *ctx)
{
    run->cfg_hook = fn;
    run->cfg_hook_ctx = ctx;
}

int scn_run_script(scn_runner *run, const uint32_t *script, size_t n,
                   const scn_opts *o)
{
    run->trace = o != NULL ? o->trace : NULL;
    if (o != NULL && o->max_steps != 0)
        run->max_steps = o->max_steps;
    run->ch.script_mode = 1;
    run->ch.diverged = 0;
    run->ch.script = script;
    run->ch.nscript = n;
    run->ch.depth = 0;
    if (run->trace != NULL) {
        fprintf(run->trace, "# scenario %s, choice script of %zu steps\n",
                run->s->name, n);
        trace_faults(run);
    }
    return run_once(run, 0, 1);
}

int scn_run_exhaustive(scn_runner *run, uint64_t max_runs, scn_exh *ex)
{
    uint32_t *script = NULL;
    size_t nscript = 0, capscript = 0;
    int rc = 0;
    memset(ex, 0, sizeof *ex);
    run->trace = NULL;
    for (;;) {
        size_t i;
        rc = scn_run_script(run, script, nscript, NULL);
        ex->runs++;
        if (run->ch.depth > ex->max_depth)
            ex->max_depth = run->ch.depth;
        if (rc != 0) {
            free(run->fail_script);
            run->fail_script = malloc((run->ch.depth + 1) * sizeof(uint32_t));
            if (run->fail_script != NULL) {
                memcpy(run->fail_script, run->ch.taken,
                       run->ch.depth * sizeof(uint32_t));
                run->fail_len = run->ch.depth;
            }
            ex->fail_script = run->fail_script;
            ex->fail_len = run->fail_len;
            break;
        }
        /* backtrack to the deepest step with an untried choice */
        i = run->ch.depth;
        while (i > 0 && run->ch.taken[i - 1] + 1 >= run->ch.width[i - 1])
            i--;
        if (i == 0) {
            ex->complete = 1;
            break;
        }
        if (ex->runs >= max_runs)
            break;
        if (i > capscript) {
            uint32_t *ns = realloc(script, i * 2 * sizeof *ns);
            if (ns == NULL) {
                rc = -1;
                break;
            }
            script = ns;
            capscript = i * 2;
        }
        memcpy(script, run->ch.taken, i * sizeof *script);
        script[i - 1]++;
        nscript = i;
    }
    free(script);
    return rc;
}

const char *scn_runner_error(const scn_runner *run)
{
    return run->err;
}

uint64_t scn_runner_steps(const scn_runner *run)
{
    return run->step;
}

int scn_runner_diverged(const scn_runner *run)
{
    return run->ch.script_mode && run->ch.diverged;
}
