/*
 * ackn.h — per-peer channel state machine of PM's Modified ACK/NACK
 * [PM §3.3; docs/design.md, References], plus what PM left to its
 * hardware: retransmission timers with exponential backoff, loss of data,
 * ACK and NACK packets, duplicates, reordering, and peer failure after a
 * retry limit. State table, timer rules and wiring notes: docs/flowctl.md.
 *
 * Pure state machine over 32-bit sequence numbers: it never sees packets
 * or buffers, allocates nothing, reads no clock (time comes in as now_ns).
 * The engine asks it what to do (fc_tx_can_send_new, fc_tx_resend_due,
 * fc_rx_take_ack/nack, fc_tx_deadline) and tells it what happened
 * (fc_tx_on_ack/on_nack/on_time, fc_rx_accepted/refused).
 *
 * One fc_tx per (channel, destination peer) and one fc_rx per (channel,
 * source peer). The two directions of a peer pair are independent.
 *
 * Sequence numbers wrap: every comparison is serial arithmetic,
 * a before b  <=>  (int32_t)(a - b) < 0.  This is sound as long as fewer
 * than 2^31 sequence numbers separate any two values being compared, which
 * holds because at most `window` (<= FC_WINDOW_MAX) messages are unacked
 * and a packet is assumed not to outlive 2^31 later messages in the net.
 *
 * Wire convention (PM writes Ack(i) = "i and everything before arrived";
 * here the cumulative ACK value is the NEXT expected sequence number):
 *   ack a   : every seq before a was accepted (PM's Ack(a - 1));
 *   NACK k  : k was refused; every seq before k was accepted. Whenever a
 *             NACK is owed, k equals the cumulative ACK value, so on the
 *             wire a NACK can be one flag bit meaning "the ack field is
 *             also refused" (see docs/flowctl.md, "Wiring").
 */
#ifndef QUAY_FLOWCTL_ACKN_H
#define QUAY_FLOWCTL_ACKN_H

#include <stdint.h>

#include <quay/quay.h>

/* ---- result codes (the engine's own codes, so they pass straight up) --- */

/** A peer's ACK/NACK that cannot be valid now (acknowledges or refuses a
 *  sequence number never sent). Nothing changed; drop the packet. */
#define FC_ESTATE QUAY_ESTATE
/** The channel has failed (retry limit exceeded). Nothing changed. */
#define FC_EPEER QUAY_EPEER
/** The caller broke a precondition (wrong sequence number handed back). */
#define FC_EINVAL QUAY_EINVAL

/** A channel whose unacknowledged messages make no progress (no ACK
 *  advance, no NACK) for FC_STUCK_FACTOR * retry_limit expiries fails even
 *  if the peer keeps sending: its side of the link is dead. */
#define FC_STUCK_FACTOR 4u

/** Largest allowed fc_params.window: keeps serial arithmetic sound. */
#define FC_WINDOW_MAX (1u << 30)

/** Sender states [PM §3.3]. */
enum {
    FC_TX_NORMAL = 0,      /**< send new messages and retransmissions */
    FC_TX_NOT_TO_SEND = 1  /**< NACK seen: only retransmissions until the
                                NACKed message is acknowledged */
};

/** Receiver states [PM §3.3]. */
enum {
    FC_RX_NORMAL = 0,         /**< accept the next message in order */
    FC_RX_NOT_TO_RECEIVE = 1  /**< refused `refused`: discard everything
                                   else until it is accepted */
};

/** fc_rx_classify results. */
enum {
    FC_RX_DISCARD = 0,   /**< out of order (ahead of expected), or any
                              message but the refused one while
                              NOT_TO_RECEIVE: drop silently */
    FC_RX_DELIVER = 1,   /**< the next in order: offer it to the upper
                              layer, then call fc_rx_accepted or
                              fc_rx_refused */
    FC_RX_DUPLICATE = 2  /**< already accepted: drop it; an ACK is now owed
                              so a sender whose ACK was lost learns it */
};

/** Channel parameters, shared by every fc_tx of a channel. Check them with
 *  fc_params_valid; the state machine assumes they are valid. */
typedef struct fc_params {
    uint64_t rto_init_ns;  /**< first retransmission timeout (> 0) and the
                                floor of the RTT-based one */
    uint64_t rto_max_ns;   /**< backoff cap (>= rto_init_ns) */
    uint32_t retry_limit;  /**< consecutive expiries without any sign of
                                life from the peer that are retransmitted;
                                expiry retry_limit + 1 declares it failed
                                (see also FC_STUCK_FACTOR) */
    uint32_t window;       /**< max unacked messages in flight per peer, in
                                1..FC_WINDOW_MAX: bounds the sender's
                                retransmission storage, it is not a
                                receive window reserved per sender */
} fc_params;

/** Sender side, one per destination peer. Fields are read-only for the
 *  caller (inspect them in tests and stats; change them only through the
 *  functions below). Invariants: una <= resend <= next (serially);
 *  next - una <= window; deadline != UINT64_MAX exactly when
 *  una != next and !failed; in NOT_TO_SEND, una is the NACKed seq. */
typedef struct fc_tx {
    uint32_t next;      /**< seq the next new message takes */
    uint32_t una;       /**< every seq before una is acknowledged */
    uint32_t resend;    /**< next seq to retransmit; == next when none */
    uint32_t retries;   /**< expiries since the peer last showed life */
    uint32_t stuck;     /**< expiries since the last ACK advance / NACK */
    uint64_t rto;       /**< current timeout (rto_init_ns .. rto_max_ns) */
    uint64_t rto_base;  /**< timeout after progress: from the RTT estimate,
                             clamped to [rto_init_ns, rto_max_ns] */
    uint64_t srtt;      /**< smoothed RTT (valid when has_rtt) */
    uint64_t rttvar;    /**< RTT mean deviation */
    uint8_t has_rtt;    /**< at least one RTT sample taken */
    uint8_t backed_off; /**< an expiry since the last RTT sample: progress
                             keeps the backed-off rto (Karn) */
    uint64_t deadline;  /**< retransmission timer, UINT64_MAX when off */
    uint8_t state;      /**< FC_TX_NORMAL or FC_TX_NOT_TO_SEND */
    uint8_t failed;     /**< 1 once the retry limit was exceeded (final) */
} fc_tx;

/** Receiver side, one per source peer. Read-only for the caller.
 *  Invariant: in NOT_TO_RECEIVE, refused == expected. */
typedef struct fc_rx {
    uint32_t expected;  /**< next seq to accept; the cumulative ACK value */
    uint32_t refused;   /**< NOT_TO_RECEIVE: the refused seq */
    uint8_t state;      /**< FC_RX_NORMAL or FC_RX_NOT_TO_RECEIVE */
    uint8_t ack_owed;   /**< an ACK should reach the sender */
    uint8_t nack_owed;  /**< a NACK(refused) should reach the sender */
} fc_rx;

/* ---- serial arithmetic ------------------------------------------------ */

/** 1 if a comes before b in sequence space (wrap-safe). */
static inline int fc_seq_lt(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) < 0;
}

/** 1 if a comes before or equals b in sequence space (wrap-safe). */
static inline int fc_seq_le(uint32_t a, uint32_t b)
{
    return (int32_t)(a - b) <= 0;
}

/** 1 if p satisfies the constraints documented on fc_params. */
int fc_params_valid(const fc_params *p);

/* ---- sender ------------------------------------------------------------ */

/** Start a channel: nothing sent, NORMAL, timer off, first new message
 *  takes initial_seq (which the peer's fc_rx_init must also use). */
void fc_tx_init(fc_tx *t, const fc_params *p, uint32_t initial_seq);

/** 1 if a new message may take a sequence number now: not failed, NORMAL,
 *  no retransmission pending (resend == next, so retransmissions always go
 *  out before new messages and the wire stays in order), and fewer than
 *  window messages unacked. */
int fc_tx_can_send_new(const fc_tx *t, const fc_params *p);

/** Give the next new message its seq (returned) and count it as sent. The
 *  caller checked fc_tx_can_send_new, transmits the message now, and keeps
 *  it (or the means to re-send it) until a freed range covers its seq. Arms
 *  the timer at now + rto when it is the only unacknowledged message. */
uint32_t fc_tx_assign(fc_tx *t, const fc_params *p, uint64_t now_ns);

/** If a retransmission is due, store its seq in *seq, advance the resend
 *  pointer and return 1: the caller transmits that message now. Returns 0
 *  when nothing is to be retransmitted (or the channel has failed). Call it
 *  until it returns 0 whenever the link can take packets, before sending
 *  anything new. Does not touch the timer. */
int fc_tx_resend_due(fc_tx *t, uint32_t *seq);

/** A cumulative ACK arrived (every seq before ack was accepted). Frees
 *  [una, ack): *freed_from = old una, *freed_to = ack (empty range when
 *  from == to); the caller releases those messages' buffers. On progress:
 *  NOT_TO_SEND -> NORMAL (the NACKed message was accepted: PM "on Ack(r,k)
 *  free Buf(r,k), go back to NORMAL"), retries = stuck = 0, rto = rto_base,
 *  timer
 *  re-armed at now + rto if messages stay unacked, else disarmed.
 *  A stale ACK (ack <= una) is not an error: returns 0, frees nothing,
 *  changes nothing. Returns FC_ESTATE for ack beyond next (never sent) and
 *  FC_EPEER on a failed channel, changing nothing; the range is then
 *  empty. freed_from/freed_to must not be NULL. */
int fc_tx_on_ack(fc_tx *t, const fc_params *p, uint32_t ack, uint64_t now_ns,
                 uint32_t *freed_from, uint32_t *freed_to);

/** A NACK for k arrived: k was refused, every seq before k was accepted
 *  [PM: free Buf(j) for j < k, retransmit k..i, enter NOT_TO_SEND]. Frees
 *  [una, k) as fc_tx_on_ack does, sets resend = k (retransmit k..next-1),
 *  enters NOT_TO_SEND; a NACK again (in either state) does the same, so it
 *  retransmits k..next-1 again. The peer answered, so retries = stuck = 0,
 *  rto = rto_base, timer re-armed at now + rto. A stale NACK (k < una) is
 *  ignored: returns 0, changes nothing. Returns FC_ESTATE for k at or
 *  beyond next (never sent) and FC_EPEER on a failed channel, changing
 *  nothing. freed_from/freed_to must not be NULL. */
int fc_tx_on_nack(fc_tx *t, const fc_params *p, uint32_t k, uint64_t now_ns,
                  uint32_t *freed_from, uint32_t *freed_to);

/** Any valid packet arrived from the peer (even a stale ACK or a
 *  duplicate): it is alive, so retries = 0. Unacknowledged messages that
 *  still make no progress are bounded by FC_STUCK_FACTOR instead. */
/** Would fc_tx_on_nack (is_nack) or fc_tx_on_ack take `v`? 0, or the code
 *  they would return; changes nothing. */
int fc_tx_check(const fc_tx *t, int is_nack, uint32_t v);
void fc_tx_heard(fc_tx *t);

/** A round-trip sample: the time from the first transmission of a message
 *  that was never retransmitted (Karn) to the ACK that covered it. Updates
 *  srtt / rttvar as RFC 6298 does and rto_base = srtt + 4 rttvar, clamped
 *  to [rto_init_ns, rto_max_ns]; used from the next progress on. */
void fc_tx_rtt_sample(fc_tx *t, const fc_params *p, uint64_t rtt_ns);

/** Run the retransmission timer. Before the deadline (or when off):
 *  returns 0. At or after it: retries++ and stuck++; if retries >
 *  retry_limit or stuck > FC_STUCK_FACTOR * retry_limit the channel fails (timer off, nothing more to send) and FC_EPEER is returned
 *  this once — the caller fails the peer's requests; else go back N
 *  (resend = una: lost data, lost ACKs and lost NACKs all recover this
 *  way), rto = min(2 rto, rto_max), timer re-armed at now + rto, and 1 is
 *  returned (retransmissions are due). The state is kept: in NOT_TO_SEND it
 *  still waits for the ACK of the NACKed message. */
int fc_tx_on_time(fc_tx *t, const fc_params *p, uint64_t now_ns);

/** The retransmission deadline, UINT64_MAX when nothing is unacked or the
 *  channel failed. The engine's next deadline is the minimum over its
 *  channels. */
uint64_t fc_tx_deadline(const fc_tx *t);

/** Messages sent and not yet acknowledged (next - una). */
uint32_t fc_tx_unacked(const fc_tx *t);

/* ---- receiver ---------------------------------------------------------- */

/** Start a channel: NORMAL, nothing owed, first expected seq initial_seq
 *  (the peer's fc_tx_init value). */
void fc_rx_init(fc_rx *r, uint32_t initial_seq);

/** Classify a sequenced packet before the upper layer sees it (see the
 *  FC_RX_* values). DELIVER only for seq == expected — in NOT_TO_RECEIVE
 *  that is exactly the refused one. DUPLICATE (seq before expected) makes
 *  an ACK owed. DISCARD changes nothing: PM replies nothing; a lost message
 *  ahead of it is recovered by the sender's timer. */
int fc_rx_classify(fc_rx *r, uint32_t seq);

/** The upper layer took the DELIVER-ed message seq: expected++, ACK owed,
 *  NOT_TO_RECEIVE -> NORMAL (a NACK still owed is withdrawn: the message
 *  it would ask for has arrived). Returns 0, or FC_EINVAL (nothing
 *  changed) if seq != expected. */
int fc_rx_accepted(fc_rx *r, uint32_t seq);

/** The upper layer had no buffer for the DELIVER-ed message seq (it was
 *  discarded): NACK(seq) owed, enter (or stay in) NOT_TO_RECEIVE recording
 *  seq. Refusing the same seq again when its retransmission arrives owes
 *  the NACK again. Returns 0, or FC_EINVAL (nothing changed) if
 *  seq != expected. */
int fc_rx_refused(fc_rx *r, uint32_t seq);

/** Take the ACK for an outgoing packet to this peer. Always stores the
 *  cumulative value (expected) in *ack — put it in every packet's ack
 *  field, owed or not — and returns 1 if an ACK was owed (cleared now),
 *  else 0. One ACK covers every message accepted since the last one (PM's
 *  coalescing of adjacent messages). */
int fc_rx_take_ack(fc_rx *r, uint32_t *ack);

/** If a NACK is owed: store the refused seq in *seq (always equal to the
 *  cumulative ACK value), clear the NACK and the ACK owed (NACK(k) also
 *  says that everything before k arrived), return 1. Else return 0. */
int fc_rx_take_nack(fc_rx *r, uint32_t *seq);

/** 1 if an ACK or NACK is owed: when no packet to this peer goes out
 *  soon, send an ACK-only packet (which carries no seq and is never
 *  acknowledged). */
int fc_rx_owes(const fc_rx *r);

#endif /* QUAY_FLOWCTL_ACKN_H */
