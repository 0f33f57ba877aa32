/*
 * policy_acknack.c — QUAY_FLOW_ACKNACK: the channel (chan.c) as PM's
 * Modified ACK/NACK has it, nothing added. The window (flow_window) alone
 * bounds what is in flight; a receiver short of room refuses (NACK), and
 * the sender goes back to the refused packet [PM §3.3].
 */
#include "engine/snap.h"
#include "flowctl/chan.h"

/* Field 12 is the NACKed seq, which always equals the ack field, or 0;
 * this policy uses no flag of its own (a CREDIT frame is malformed here:
 * the two ends must run the same policy). */
static int acknack_frame_check(uint16_t flags, uint32_t ack, uint32_t field)
{
    if ((flags & CHAN_F_NACK) ? field != ack : field != 0)
        return QUAY_EPROTO;
    return 0;
}

/* No state of its own, but a peer record keeps, at the policy's place,
 * what credit mode keeps there (two u32 and a u8): this policy writes what
 * it always held there (its configured credits twice, not blocked) and
 * reads them back unused, so that blobs keep their layout. */
static int acknack_sx(snap *s, fc_peer *fp)
{
    QUAY_UNUSED(fp);
    uint32_t limit = s->e->cfg.flow_credits, sent = limit;
    uint8_t blocked = 0;
    sx_u32(s, &limit);
    sx_u32(s, &sent);
    sx_u8(s, &blocked);
    return blocked <= 1;
}

static const fc_policy acknack_policy = {
    .frame_check = acknack_frame_check,
    .sx = acknack_sx,
};

const link_ops acknack_link = CHAN_LINK("ack/nack", &acknack_policy, chan_config_check, 0);
