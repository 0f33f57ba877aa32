/*
 * ackn.c — Modified ACK/NACK channel state machine [PM §3.3] with timers,
 * loss/duplicate/reorder tolerance and peer failure. Contracts: ackn.h;
 * state tables and rationale: docs/flowctl.md.
 */
#include "flowctl/ackn.h"

/* now + d without wrapping into the past; UINT64_MAX stays "timer off". */
static uint64_t ackn_after(uint64_t now, uint64_t d)
{
    if (d >= UINT64_MAX - 1 - now)
        return UINT64_MAX - 1;
    return now + d;
}

int fc_params_valid(const fc_params *p)
{
    return p != 0 && p->rto_init_ns > 0 && p->rto_max_ns >= p->rto_init_ns &&
           p->window >= 1 && p->window <= FC_WINDOW_MAX;
}

/* ---- sender ------------------------------------------------------------ */

void fc_tx_init(fc_tx *t, const fc_params *p, uint32_t initial_seq)
{
    t->next = initial_seq;
    t->una = initial_seq;
    t->resend = initial_seq;
    t->retries = 0;
    t->stuck = 0;
    t->rto = p->rto_init_ns;
    t->rto_base = p->rto_init_ns;
    t->srtt = 0;
    t->rttvar = 0;
    t->has_rtt = 0;
    t->backed_off = 0;
    t->deadline = UINT64_MAX;
    t->state = FC_TX_NORMAL;
    t->failed = 0;
}

int fc_tx_can_send_new(const fc_tx *t, const fc_params *p)
{
    return !t->failed && t->state == FC_TX_NORMAL && t->resend == t->next &&
           t->next - t->una < p->window;
}

uint32_t fc_tx_assign(fc_tx *t, const fc_params *p, uint64_t now_ns)
{
    uint32_t seq = t->next;
    (void)p;
    if (t->una == t->next) {
        /* The only unacked message: start timing it. (An idle channel
         * already has its rto and stuck == 0 from the last progress.) */
        t->stuck = 0;
        t->deadline = ackn_after(now_ns, t->rto);
    }
    t->next = seq + 1u;
    /* resend == next held (can_send_new); keep "nothing to resend". */
    t->resend = t->next;
    return seq;
}

int fc_tx_resend_due(fc_tx *t, uint32_t *seq)
{
    if (t->failed || t->resend == t->next)
        return 0;
    *seq = t->resend;
    t->resend++;
    return 1;
}

/* Free [una, upto) and record progress: the peer is alive and moving. */
static void ackn_advance(fc_tx *t, uint32_t upto,
                         uint64_t now_ns, uint32_t *freed_from,
                         uint32_t *freed_to)
{
    *freed_from = t->una;
    *freed_to = upto;
    t->una = upto;
    if (fc_seq_lt(t->resend, upto))
        t->resend = upto;  /* never retransmit what is known received */
    t->retries = 0;
    t->stuck = 0;
    /* After an expiry the round trip may have grown past rto_base; until a
     * message sent once times it again, keep the backed-off timeout (Karn:
     * resetting it here makes a congested channel time out, go back N and
     * congest itself further). */
    if (!t->backed_off)
        t->rto = t->rto_base;
    t->deadline = t->una == t->next ? UINT64_MAX : ackn_after(now_ns, t->rto);
}

int fc_tx_check(const fc_tx *t, int is_nack, uint32_t v)
{
    if (t->failed)
        return FC_EPEER;
    if (is_nack ? fc_seq_le(t->next, v) : fc_seq_lt(t->next, v))
        return FC_ESTATE;
    return 0;
}

int fc_tx_on_ack(fc_tx *t, const fc_params *p, uint32_t ack, uint64_t now_ns,
                 uint32_t *freed_from, uint32_t *freed_to)
{
    (void)p; /* the timeout after progress lives in t (rto_base) */
    *freed_from = t->una;
    *freed_to = t->una;
    int rc = fc_tx_check(t, 0, ack); /* (acknowledges what was never sent) */
    if (rc != 0)
        return rc;
    if (fc_seq_le(ack, t->una))
        return 0;                  /* stale or repeated: nothing new */
    ackn_advance(t, ack, now_ns, freed_from, freed_to);
    /* In NOT_TO_SEND una was the NACKed message; ack > una covers it. */
    t->state = FC_TX_NORMAL;
    return 0;
}

int fc_tx_on_nack(fc_tx *t, const fc_params *p, uint32_t k, uint64_t now_ns,
                  uint32_t *freed_from, uint32_t *freed_to)
{
    (void)p; /* the timeout after progress lives in t (rto_base) */
    *freed_from = t->una;
    *freed_to = t->una;
    int rc = fc_tx_check(t, 1, k); /* (refuses what was never sent) */
    if (rc != 0)
        return rc;
    if (fc_seq_lt(k, t->una))
        return 0;                  /* stale: k was acknowledged since */
    ackn_advance(t, k, now_ns, freed_from, freed_to);
    /* The peer answered, but it may still be the deadline that has to
     * bring k back if this retransmission or the next NACK is lost: the
     * timer stays armed (ackn_advance left una != next). */
    t->resend = k;
    t->state = FC_TX_NOT_TO_SEND;
    return 0;
}

void fc_tx_heard(fc_tx *t)
{
    t->retries = 0;
}

static uint64_t ackn_absdiff(uint64_t a, uint64_t b)
{
    return a > b ? a - b : b - a;
}

void fc_tx_rtt_sample(fc_tx *t, const fc_params *p, uint64_t rtt_ns)
{
    uint64_t rto;
    if (rtt_ns > p->rto_max_ns)
        rtt_ns = p->rto_max_ns; /* keeps the arithmetic far from overflow */
    if (!t->has_rtt) {
        t->srtt = rtt_ns;
        t->rttvar = rtt_ns / 2;
        t->has_rtt = 1;
    } else {
        t->rttvar = (3 * t->rttvar + ackn_absdiff(t->srtt, rtt_ns)) / 4;
        t->srtt = (7 * t->srtt + rtt_ns) / 8;
    }
    rto = t->srtt + 4 * t->rttvar;
    if (rto < p->rto_init_ns)
        rto = p->rto_init_ns;
    if (rto > p->rto_max_ns)
        rto = p->rto_max_ns;
    t->rto_base = rto;
    t->rto = rto;
    t->backed_off = 0;
}

int fc_tx_on_time(fc_tx *t, const fc_params *p, uint64_t now_ns)
{
    if (t->failed || t->deadline == UINT64_MAX || now_ns < t->deadline)
        return 0;
    t->retries++;
    t->stuck++;
    if (t->retries > p->retry_limit ||
        (uint64_t)t->stuck > (uint64_t)FC_STUCK_FACTOR * p->retry_limit) {
        t->failed = 1;
        t->deadline = UINT64_MAX;
        t->resend = t->next;
        return FC_EPEER;
    }
    t->resend = t->una;  /* go back N */
    t->backed_off = 1;
    t->rto = t->rto > p->rto_max_ns / 2 ? p->rto_max_ns : 2 * t->rto;
    t->deadline = ackn_after(now_ns, t->rto);
    return 1;
}

uint64_t fc_tx_deadline(const fc_tx *t)
{
    return t->failed ? UINT64_MAX : t->deadline;
}

uint32_t fc_tx_unacked(const fc_tx *t)
{
    return t->next - t->una;
}

/* ---- receiver ---------------------------------------------------------- */

void fc_rx_init(fc_rx *r, uint32_t initial_seq)
{
    r->expected = initial_seq;
    r->refused = initial_seq;
    r->state = FC_RX_NORMAL;
    r->ack_owed = 0;
    r->nack_owed = 0;
}

int fc_rx_classify(fc_rx *r, uint32_t seq)
{
    /* In NOT_TO_RECEIVE refused == expected, so "seq == expected" is PM's
     * "only the refused one" and everything ahead is PM's silent discard. */
    if (seq == r->expected)
        return FC_RX_DELIVER;
    if (fc_seq_lt(seq, r->expected)) {
        r->ack_owed = 1;
        return FC_RX_DUPLICATE;
    }
    return FC_RX_DISCARD;
}

int fc_rx_accepted(fc_rx *r, uint32_t seq)
{
    if (seq != r->expected)
        return FC_EINVAL;
    r->expected = seq + 1u;
    r->ack_owed = 1;
    r->nack_owed = 0;
    r->state = FC_RX_NORMAL;
    return 0;
}

int fc_rx_refused(fc_rx *r, uint32_t seq)
{
    if (seq != r->expected)
        return FC_EINVAL;
    r->refused = seq;
    r->nack_owed = 1;
    r->state = FC_RX_NOT_TO_RECEIVE;
    return 0;
}

int fc_rx_take_ack(fc_rx *r, uint32_t *ack)
{
    int owed = r->ack_owed;
    *ack = r->expected;
    r->ack_owed = 0;
    return owed;
}

int fc_rx_take_nack(fc_rx *r, uint32_t *seq)
{
    if (!r->nack_owed)
        return 0;
    *seq = r->refused;
    r->nack_owed = 0;
    r->ack_owed = 0;
    return 1;
}

int fc_rx_owes(const fc_rx *r)
{
    return r->ack_owed || r->nack_owed;
}
