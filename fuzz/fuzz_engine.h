/*
 * fuzz_engine.h — the input language of fuzz_engine (one engine, fake
 * peers), shared with the seed generator. fuzz/README.md documents it
 * with examples; this is the reference.
 *
 * Input = 4 header bytes, then operations until the input ends (at most
 * FE_MAX_OPS). An operation is one opcode byte (taken modulo FE_NOPS)
 * followed by its operand bytes; missing bytes read as 0.
 *
 * Header:
 *   h0  world size 2 + (h0 & 7) % 7; this engine's rank ((h0 >> 3) & 15)
 *       % size; bit 7: configuration overrides follow the header (below)
 *   h1  bits 0-1 flow control (0 none, 1 ACK/NACK, 2 credit, 3 none);
 *       bit 2 two channels (with flow control); bits 3-4 rndv_mode;
 *       bit 5 RDMA GET/PUT/ATOMIC capabilities; bit 6 rtr; bit 7 rtr_any
 *   h2  bits 0-1 eager_max (16, 64, 256, 1024); bits 2-3 frag_size (16,
 *       32, 64, 128); bits 4-5 pipeline_depth (1, 2, 4, 8); bit 6 tight
 *       pools (a few requests, descriptors, bytes, out slots); bit 7
 *       application bypass (coll_bypass)
 *   h3  bits 0-1 barrier, 2-3 bcast, 4-5 allreduce algorithm; bit 6
 *       allocation failure: the next header byte h4 (1..255) says after
 *       how many allocations (counted after the world communicator is
 *       made) one fails; bit 7 no COMPLETE actions
 *   overrides (h0 bit 7): a count byte k (k & 7 records; bit 7: the next
 *       byte + 1 names an allocation of quay_engine_new that fails), then
 *       k records [field % 40][value selector]: the field of quay_config
 *       (fuzz_engine.c overrides(): version, flags, eager_max, ... rank)
 *       takes the value (selector % 6: 0, 1, 2 + s/8, UINT32_MAX - s/8,
 *       2^(s/8), or the next 4 bytes). quay_engine_new must refuse an
 *       invalid configuration (QUAY_EINVAL / QUAY_EVERSION) or fail with
 *       QUAY_ENOMEM, leaving nothing allocated; the input then ends.
 */
#ifndef QUAY_FUZZ_ENGINE_H
#define QUAY_FUZZ_ENGINE_H

/* Operations and their operand bytes. "req" picks one of the harness's
 * live requests (index modulo their number), "out" one of the last
 * FE_MAX_OUTS packets the engine sent (0 = the newest), "peer" a world
 * rank (modulo the world size; this engine's own rank is allowed and
 * must be refused), "size" a size class (fe_size_class). */
enum fe_op {
    FE_ISEND = 0, /* dst tag size mode: dst % (n+1), n = PROC_NULL; tag % 8
                     (bit 7: tag 1000 + ...); mode bits 0-1 quay_send_mode,
                     bits 2-3 communicator index, bit 4 (standard mode):
                     quay_send_inline first, quay_isend if it answers
                     QUAY_EBUSY; bit 5: persistent (quay_send_init, then
                     quay_start; FE_TEST that finds it complete starts
                     it again: by quay_start in an even slot, in an odd
                     one by quay_startall with every other persistent
                     request found complete) */
    FE_IRECV,     /* src tag size comm: src % (n+2), n = ANY_SOURCE, n+1 =
                     PROC_NULL; tag % 9, 8 = ANY_TAG; comm bits 0-1
                     communicator index, bit 2 persistent (quay_recv_init,
                     then quay_start, as FE_ISEND's bit 5) */
    FE_IPROBE,    /* src tag comm: bit 7 of comm: improbe (matched) */
    FE_IMRECV,    /* msg size: a message taken by improbe */
    FE_CANCEL,    /* req */
    FE_FREE,      /* req */
    FE_TEST,      /* req */
    FE_PULL,      /* n: pull up to (n & 31) + 1 actions; bits 5-6 op_done
                     policy of SEND / RDMA actions: 0 at once, 1 later (see
                     FE_OPDONE), 2 at once with QUAY_EPEER, 3 later */
    FE_OPDONE,    /* idx how: finish pending token idx; how % 4: 0 ok,
                     1 QUAY_EPEER, 2 a token never issued, 3 all pending */
    FE_ENV,       /* peer kind tag size seqmode: the peer sends an
                     envelope; (kind & 7) % 6: EAGER, EAGER sync, EAGER
                     ready, RTS, RTS sync, RTS ready; bit 3: RTS with a
                     key (GET offer), bit 4: PUT_OK, bit 5: on the
                     collective twin context; tag % 16, tag >> 4:
                     communicator; seqmode % 4: next, ahead by
                     (seqmode >> 2) % 4 + 1, behind by 1, literal byte */
    FE_RESPOND,   /* out variant param: the peer answers a packet the
                     engine sent it (fe_respond in fuzz_engine.c) */
    FE_ECHO,      /* out seqmode: the packet's envelope comes back from its
                     peer (its comm rank as src, payload copied) */
    FE_FORGE,     /* peer type flags, then one value selector per field
                     (fe_pick32 / fe_pick64), then len + payload for EAGER
                     and DATA: any header wire_encode can write */
    FE_RAW,       /* peer len bytes...: len bytes as they come (framed
                     with a valid CRC under flow control if bit 7 of len
                     is clear) */
    FE_REPLAY,    /* idx how: an earlier injected packet again: how & 1:
                     its frame verbatim, else re-framed with a new channel
                     sequence number; bit 1: from another peer */
    FE_CHAN,      /* peer variant value(u32): channel frames (flow control):
                     variant % 8: ACK, NACK, PING, credit grant, literal
                     ack (value), go-back retransmission, ACK with another
                     channel's bits, frame with a literal sequence number */
    FE_TIME,      /* delta: advance the clock by 2^(delta % 40) ns and call
                     quay_on_time */
    FE_CTX,       /* what chan: what % 7: quiesce, resume, is_stable, save,
                     restore the last save, reset, save/reset/restore */
    FE_COMM,      /* what ctx members: what & 1: free comm (ctx % 4) else
                     create context ctx with members bitmask (own rank
                     added) */
    FE_MEM,       /* what a b c: register (buffer a, access b), deregister
                     (key a), resolve (key a, offset b, len c: then write
                     or read it), atomic on own memory */
    FE_RMA,       /* kind peer key off len: kind % 5: iput, iget, FADD,
                     SWAP, CAS */
    FE_COLL,      /* kind root count dtop comm: kind % 6 barrier, bcast,
                     reduce, allreduce, quay_on_offload_done (cookie of an
                     OFFLOAD action, or `root` itself with its bit 7),
                     quay_agent_post (this engine as a NIC agent; kind >> 3
                     the offload kind, kind >> 5 the algorithm); dtop:
                     dtype (low 4 bits) and op */
    FE_BUF,       /* what size: attach (size class) or detach */
    FE_PEERFAIL,  /* peer */
    FE_NOPS
};

/* Header and bounds. */
#define FE_HDR 4
#define FE_MAX_OPS 400
#define FE_MAX_INPUT 16384

#endif /* QUAY_FUZZ_ENGINE_H */
