/*
 * quay_adapter.h — the contract between quay's runtime (libquay_rt,
 * <quay/quay_rt.h>) and a transport: what an adapter implements so that
 * quay programs, MPI programs included, run over its network unchanged.
 *
 * A transport moves whole packets between the ranks of one job and, if it
 * says so in its caps, executes the engine's RDMA actions. It never calls
 * the engine: what it learns goes to the runtime through the sink the
 * runtime gives it, and the runtime drives the engine. The runtime's own
 * transports (shm, tcp) implement exactly this interface.
 *
 * Naming: every public name here begins with quay_transport_ (types,
 * functions) or QUAY_TRANSPORT_ (constants). An "adapter" is the library
 * that provides a transport; the header is named for it.
 *
 * Loading. QUAY_TRANSPORT=/path/to/libmyadapter.so (any value with a '/')
 * makes the runtime dlopen that library and call its exported function
 * quay_transport_open (below) instead of opening shm or tcp; quayrun
 * --transport /path/to/libmyadapter.so starts a job that way.
 * docs/adapters.md has a walk through an example adapter
 * (examples/adapter/) and how to test one.
 *
 * Versioning (as ngtcp2's versioned structs, and quay_config here): the
 * runtime passes QUAY_TRANSPORT_ABI_VERSION of the header it was built
 * with to quay_transport_open, which says which sink layout it gave; the
 * adapter stamps its ops table with the version of the header it was
 * built with. Fields are only ever appended, each addition with a version
 * bump, so either side uses a field only if the other's version has it.
 * Both refuse a version below what they need with QUAY_EVERSION.
 *
 * Threading. The runtime calls a transport from one thread at a time
 * (the thread that drives it), never two calls at once. (With
 * asynchronous progress, QUAY_ASYNC_PROGRESS=1, two threads of the
 * runtime take turns: keep no per-thread state.) Every sink
 * function is called by the transport from inside its poll, on that
 * thread, and never from send, rdma, bye, busy, wake or close. Only wake
 * may be called from elsewhere (another thread, a signal handler). A
 * transport may run threads of its own, but they never call the sink.
 *
 * Codes are quay's (<quay/quay.h>): 0 or a negative QUAY_E*.
 */
#ifndef QUAY_ADAPTER_H
#define QUAY_ADAPTER_H

#include <stddef.h>
#include <stdint.h>

#include <quay/quay.h>

#ifdef __cplusplus
extern "C" {
#endif

/** This header's version of the contract. 1: quay 0.2. */
#define QUAY_TRANSPORT_ABI_VERSION 1
/** The oldest version the runtime still takes from an adapter. */
#define QUAY_TRANSPORT_ABI_VERSION_MIN 1

/** The name of the function an adapter library exports (dlsym). */
#define QUAY_TRANSPORT_OPEN_SYMBOL "quay_transport_open"

/** Mark the adapter's quay_transport_open for export, also when the
 *  library is compiled with -fvisibility=hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define QUAY_TRANSPORT_EXPORT __attribute__((visibility("default")))
#else
#define QUAY_TRANSPORT_EXPORT
#endif

typedef struct quay_transport quay_transport;

/**
 * The runtime's side, given to quay_transport_open; valid until close.
 * Every function is called by the transport from inside its poll only
 * (see Threading above), with ctx as its first argument.
 */
typedef struct quay_transport_sink {
    void *ctx;
    /**
     * A whole packet from `peer`, exactly the bytes that peer's send
     * gave (readable during the call only). 0: taken. QUAY_EAGAIN: not
     * taken (the engine has no room now): keep it, deliver nothing more
     * from that peer, and offer the same packet again on a later poll;
     * stopping to read that peer is the back-pressure the contract
     * expects (keep a bounded amount, never grow without limit). Packets
     * from one peer are delivered in the order it sent them if the
     * transport has QUAY_CAP_ORDERED; otherwise the engine re-sequences
     * them (quay_config.reorder_window).
     */
    int (*packet)(void *ctx, int32_t peer, const void *bytes, size_t len);
    /**
     * A send that returned 0, or an RDMA action that was accepted, is
     * finished: its memory may be reused. Exactly once per token; status
     * 0, or a negative QUAY_E* (QUAY_EPEER: the peer failed first).
     * Queued sends toward one peer finish in the order they were sent.
     */
    void (*op_done)(void *ctx, uint64_t token, int status);
    /**
     * Target side of an RDMA GET / PUT that `peer` started (the rank the
     * transport knows sent the request, never what the request claims):
     * quay_mem_resolve on this rank's engine. 0 and *addr; or a code to
     * send back to the initiator as its op_done status. Only for
     * transports with QUAY_CAP_RDMA_GET / _PUT that move data in
     * software.
     */
    int (*mem_resolve)(void *ctx, int32_t peer, uint64_t key, uint64_t offset, uint64_t len,
                       uint32_t access, void **addr);
    /** Target side of an RDMA atomic from `peer`: quay_mem_atomic on this
     *  rank's engine (QUAY_CAP_RDMA_ATOMIC). */
    int (*mem_atomic)(void *ctx, int32_t peer, uint64_t key, uint64_t offset, uint32_t op,
                      uint64_t operand, uint64_t compare, uint64_t *old);
    /** `peer` sends nothing more: its bye arrived, after every packet it
     *  sent was delivered (a packet held after QUAY_EAGAIN included). At
     *  most once per peer, never together with peer_failed. */
    void (*peer_bye)(void *ctx, int32_t peer);
    /**
     * `peer` is gone without a bye: its process died, its connection
     * broke, or it broke the wire protocol. Called once, after every
     * packet received from it was delivered, and after op_done(
     * QUAY_EPEER) for every send and RDMA action toward it that had not
     * finished. Sends toward it fail with QUAY_EPEER from then on.
     */
    void (*peer_failed)(void *ctx, int32_t peer);
} quay_transport_sink;

/**
 * What a transport does. The adapter keeps one table (usually static
 * const) and points every transport it opens at it. Every function takes
 * the object quay_transport_open returned.
 */
typedef struct quay_transport_ops {
    /** QUAY_TRANSPORT_ABI_VERSION of the header the adapter was built
     *  with: the runtime reads the fields that version has. */
    uint32_t abi_version;
    /** A short name for messages ("shm", "tcp", "uds"). */
    const char *name;
    /**
     * Send iov[0..iovcnt) to `peer` as one packet (peer is never this
     * rank: the engine delivers self-sends itself; iovcnt is 1 or 2).
     * 1: the bytes were copied out, the iovecs may be reused now (no
     * op_done follows). 0: queued: the iovecs stay valid, and are read,
     * until sink->op_done(token), which a later poll calls. < 0: not sent,
     * no op_done follows: QUAY_EPEER (the peer has failed or is failing;
     * peer_failed comes from a later poll), QUAY_EINVAL (e.g. larger than
     * the transport's packet limit: say so on stderr), QUAY_ENOMEM.
     * Never QUAY_EAGAIN: a transport queues what it cannot send now. Its
     * queue is bounded by the engine, which starts no more sends than
     * it has descriptors for (quay_config.max_out, max_ctrl), each held
     * until its op_done.
     */
    int (*send)(quay_transport *t, int32_t peer, const quay_iov *iov, uint32_t iovcnt,
                uint64_t token);
    /**
     * Start a QUAY_ACT_RDMA_GET / _PUT / _ATOMIC action (only those the
     * caps offer are ever given); it finishes with sink->op_done(
     * a->token, status) from a later poll. 0: started. < 0: refused at
     * once, no op_done follows. May be NULL when caps offer no RDMA.
     */
    int (*rdma)(quay_transport *t, const quay_action *a);
    /**
     * Do the transport's work: move queued frames out, deliver arrivals
     * to the sink, serve peers' RDMA requests, detect dead peers. If
     * that did nothing and timeout_ns > 0, block for up to timeout_ns
     * until something arrives or wake is called (a wake that came since
     * the last poll also ends the wait at once), then do the work again.
     * Returns how much was done (0: nothing, > 0: something), or < 0 if
     * the transport itself is broken (the runtime then stops).
     */
    int (*poll)(quay_transport *t, int64_t timeout_ns);
    /** Make a poll that blocks, or the next one, return soon. Callable
     *  from any thread and from signal handlers (async-signal-safe). */
    void (*wake)(quay_transport *t);
    /**
     * Queue a bye to every peer that has neither said bye nor failed,
     * behind everything sent to it before: the peer's peer_bye. Called
     * once, at the runtime's finalize, when nothing of this rank's is
     * outstanding; no send follows. 0 or QUAY_ENOMEM.
     */
    int (*bye)(quay_transport *t);
    /** 1 while frames toward live peers (a bye included) wait inside the
     *  transport for poll to move them out, else 0. The runtime keeps
     *  polling until 0 before it closes. */
    int (*busy)(const quay_transport *t);
    /**
     * Release everything (sockets, memory, threads, the object itself).
     * No sink call, no op_done for what is still queued. Called once;
     * after a finalize that saw every peer's bye or failure, or at once
     * when start-up fails after a successful open.
     */
    void (*close)(quay_transport *t);
} quay_transport_ops;

/**
 * The head of every transport object: the adapter's own struct starts
 * with one, and the runtime sees only this part. Filled by
 * quay_transport_open; the adapter changes nothing in it afterwards.
 */
struct quay_transport {
    const quay_transport_ops *ops;
    /** The sink quay_transport_open was given. */
    const quay_transport_sink *sink;
    /** This rank and the job's size, as given to open. */
    int32_t rank;
    int32_t size;
    /** QUAY_CAP_* the transport gives the engine (0: plain packets; the
     *  engine then moves rendezvous data in packets). Bits the runtime
     *  does not know are cleared at open: offer, don't rely. */
    uint32_t caps;
};

/**
 * Open the transport for `rank` of `size` (0 <= rank < size; size 1 is a
 * job of one, with no peers to meet). Returns once this rank can send to
 * every other rank (it met them all: a start-up barrier of sorts), with
 * *pt set; or, with *pt NULL and a message on stderr saying why:
 * QUAY_EINVAL (bad environment or arguments), QUAY_EVERSION
 * (abi_version, the runtime's QUAY_TRANSPORT_ABI_VERSION, is older than
 * the adapter needs), QUAY_EPEER (a rank did not arrive, or died, during
 * start-up), QUAY_ENOMEM, QUAY_ENOTSUP (this host cannot run it).
 *
 * `sink` stays valid until close; the transport keeps the pointer in its
 * head. Called once per process, on the thread that then drives the
 * transport. Knobs come from the environment (the runtime's own are
 * QUAY_*; name an adapter's after it: QUAY_UDS_DIR, ...). quayrun sets
 * QUAY_RANK, QUAY_SIZE and QUAY_JOB_DIR, a private directory (mode 0700)
 * for the job's rendezvous, removed with its contents when the job ends.
 *
 * An adapter library defines exactly this function (the type is
 * quay_transport_open_fn) and exports it: QUAY_TRANSPORT_EXPORT.
 */
typedef int (*quay_transport_open_fn)(int abi_version, int32_t rank, int32_t size,
                                      const quay_transport_sink *sink, quay_transport **pt);

QUAY_TRANSPORT_EXPORT int quay_transport_open(int abi_version, int32_t rank, int32_t size,
                                              const quay_transport_sink *sink,
                                              quay_transport **pt);

#ifdef __cplusplus
}
#endif

#endif /* QUAY_ADAPTER_H */
