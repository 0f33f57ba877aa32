/*
 * qrt_transport.h — what a transport implements for the runtime (quay_rt).
 *
 * A transport moves frames between the ranks of one job and executes the
 * engine's RDMA actions. It never calls the engine: everything it learns
 * goes to the runtime through the sink below, and only from inside poll.
 * shm (adapters/shm) is the first; TCP will be the second.
 *
 * Target-side RDMA: the initiator of an RDMA action knows only (peer, key,
 * offset). The address behind a key is known by the target's engine, so a
 * transport that moves data in software asks its own runtime, at the
 * target, through sink->mem_resolve / sink->mem_atomic, and reports the
 * result back to the initiator, whose runtime then gets sink->op_done.
 */
#ifndef QRT_TRANSPORT_H
#define QRT_TRANSPORT_H

#include <stdint.h>

#include <quay/quay.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qrt_transport qrt_transport;

/** The runtime's side: called by the transport from inside poll only. */
typedef struct qrt_sink {
    void *ctx;
    /** A whole packet from `peer`. 0: consumed. QUAY_EAGAIN: not
     *  consumed; keep it, deliver nothing more from that peer, and offer
     *  it again on a later poll. The bytes are read during the call only. */
    int (*packet)(void *ctx, int32_t peer, const void *bytes, size_t len);
    /** A SEND the transport queued, or an RDMA action, is finished. */
    void (*op_done)(void *ctx, uint64_t token, int status);
    /** Target side of an RDMA GET/PUT from `peer` (the rank the
     *  transport knows sent the request): quay_mem_resolve on this rank. */
    int (*mem_resolve)(void *ctx, int32_t peer, uint64_t key, uint64_t offset, uint64_t len,
                       uint32_t access, void **addr);
    /** Target side of an RDMA atomic from `peer`: quay_mem_atomic on this
     *  rank. */
    int (*mem_atomic)(void *ctx, int32_t peer, uint64_t key, uint64_t offset, uint32_t op,
                      uint64_t operand, uint64_t compare, uint64_t *old);
    /** `peer` said it sends nothing more (its bye, after its last frame). */
    void (*peer_bye)(void *ctx, int32_t peer);
    /** `peer` is gone without a bye (its process died). Everything it had
     *  sent was delivered before; the transport has already answered
     *  op_done(QUAY_EPEER) for every action toward it. */
    void (*peer_failed)(void *ctx, int32_t peer);
} qrt_sink;

typedef struct qrt_transport_ops {
    const char *name;
    /**
     * Send iov[0..iovcnt) to `peer` as one packet (peer != own rank: the
     * engine loops self-sends back itself). 1: the bytes were copied out,
     * the iovecs may be reused now (no op_done follows). 0: queued; the
     * iovecs are read until sink->op_done(token). < 0: not sent (e.g.
     * QUAY_EPEER: the peer has failed); no op_done follows.
     */
    int (*send)(qrt_transport *t, int32_t peer, const quay_iov *iov, uint32_t iovcnt,
                uint64_t token);
    /** Start an RDMA_GET / RDMA_PUT / RDMA_ATOMIC action; it finishes with
     *  sink->op_done(a->token, status). < 0: refused at once (no op_done
     *  follows). */
    int (*rdma)(qrt_transport *t, const quay_action *a);
    /**
     * Move queued frames out, deliver arrivals to the sink, detect dead
     * peers. If that did nothing and timeout_ns > 0, block for up to
     * timeout_ns until something arrives (or wake), then do it again.
     * Returns the amount of work done (0: nothing), or < 0 on a broken
     * transport.
     */
    int (*poll)(qrt_transport *t, int64_t timeout_ns);
    /** Make a blocked poll of this rank return soon (async-signal-safe). */
    void (*wake)(qrt_transport *t);
    /** Queue a bye to every live peer, behind everything sent before. */
    int (*bye)(qrt_transport *t);
    /** 1 while frames for live peers wait inside the transport (poll
     *  moves them out), else 0. */
    int (*busy)(const qrt_transport *t);
    /** Release everything. Peers that still need this rank are the
     *  runtime's business (it closes after the bye handshake). */
    void (*close)(qrt_transport *t);
} qrt_transport_ops;

/** The common head of every transport object. */
struct qrt_transport {
    const qrt_transport_ops *ops;
    const qrt_sink *sink;
    int32_t rank;
    int32_t size;
    /** QUAY_CAP_* this transport gives the engine. */
    uint32_t caps;
};

#ifdef __cplusplus
}
#endif

#endif /* QRT_TRANSPORT_H */
