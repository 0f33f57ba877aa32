/*
 * quay_rt.h — run one quay engine in a real process, over a transport.
 *
 * A program started by quayrun (tools/quayrun.c) creates its runtime from
 * the environment, gets the engine and the world communicator, makes quay
 * calls as usual and waits with qrt_wait, which drives the engine: it
 * pulls every action and executes it on the transport, delivers arriving
 * packets, and tells the engine the time. It polls for a while, then
 * blocks in the transport until something arrives: long polls when every
 * runnable thread on the host has a core; polls that yield to the other
 * ranks when our ranks outnumber the cores; brief ones that never yield,
 * and only while they pay, when other programs crowd the cores (so that
 * a waiting rank neither takes the core its peer needs nor hands it to a
 * computing thread for a whole time slice). Which case it is, the runtime
 * finds at run time from the kernel's count of runnable threads and from
 * how long yields take (adapters/rt/qrt_wait.h).
 *
 *     qrt *rt;
 *     if (qrt_init(NULL, &rt) != 0) return 1;
 *     quay_engine *e = qrt_engine(rt);
 *     quay_req *r;
 *     quay_irecv(e, qrt_world(rt), buf, sizeof buf, QUAY_ANY_SOURCE, 0, &r);
 *     quay_status st;
 *     qrt_wait(rt, r, &st);
 *     quay_req_free(e, r);
 *     return qrt_finalize(rt) == 0 ? 0 : 1;
 *
 * Environment (set by quayrun; see also the transport's own knobs):
 *   QUAY_RANK, QUAY_SIZE   this rank and the world size; both absent: from
 *                          a PMI-1 process manager if PMI_FD or PMI_PORT
 *                          is set (Hydra's mpiexec), else a singleton,
 *                          rank 0 of 1
 *   QUAY_TRANSPORT         "shm" or "tcp" (adapters/sockets/qrt_tcp.h);
 *                          default shm, tcp under a PMI process manager;
 *                          or the path of an adapter library (any value
 *                          with a '/'), loaded with dlopen: its exported
 *                          quay_transport_open opens the transport
 *                          (<quay/quay_adapter.h>, docs/adapters.md)
 *   QUAY_EAGER_MAX         quay_config.eager_max (bytes)
 *   QUAY_FRAG_SIZE         quay_config.frag_size (bytes)
 *   QUAY_RNDV              auto | copy | get | put (quay_config.rndv_mode)
 *   QUAY_SPIN_US           a core for every runnable thread: idle time a
 *                          wait polls before it blocks (default 200
 *                          microseconds; 0: block at once)
 *   QUAY_SPIN              more of our ranks on this host than cores, and
 *                          no other program computing: idle polls before
 *                          blocking, yielding the core in the second half
 *                          (default 64); set, it applies whatever the load
 *                          (0: every wait blocks at once)
 *   QUAY_SPIN_CROWDED_US   other programs' threads want the cores too:
 *                          the most idle time a wait polls, never
 *                          yielding, before it blocks, while polling pays
 *                          (default 20 microseconds; 0: block at once)
 *   QUAY_CROWDED           0: never take the cores for crowded; 1: always;
 *                          unset: find out at run time
 *   QUAY_ASYNC_PROGRESS    1: progress on a thread of the runtime's own
 *                          while the program computes (qrt_async_start;
 *                          the MPI binding starts it at MPI_Init, a
 *                          program of its own asks qrt_async_requested);
 *                          default 0, off
 *   QUAY_ASYNC_SPIN        1: that thread polls without napping while work
 *                          is in flight; 0: it naps; unset: it polls when
 *                          twice as many cores as ranks here are allowed
 *
 * One runtime per process; it is not thread-safe (the engine's contract),
 * and it installs no signal handlers and starts no threads unless asked
 * to (qrt_async_start, below).
 *
 * Installed as <quay/quay_rt.h>, with libquay_rt: CMake quay::rt (or
 * quay::rt_static), pkg-config quay-rt.
 */
#ifndef QUAY_RT_H
#define QUAY_RT_H

#include <stdint.h>

#include <quay/quay.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The shared libquay_rt is built with hidden visibility and QRT_BUILDING:
 * what is marked here is all it exports (as QUAY_API for libquay). */
#if defined(QRT_BUILDING) && (defined(__GNUC__) || defined(__clang__))
#define QRT_API __attribute__((visibility("default")))
#else
#define QRT_API
#endif

typedef struct qrt qrt;

/**
 * Create the runtime from the environment: open the transport (for shm,
 * attach the segment quayrun made and meet every other rank there; for
 * tcp, connect to every other rank, learning their addresses from quayrun
 * or through PMI put / barrier / get), then
 * create the engine and the world communicator (context id 0, identity
 * map; use other context ids for your own communicators).
 *
 * `base` (may be NULL for quay_config_default) is copied; the runtime sets
 * rank, nranks and transport_caps, clears QUAY_CFG_COMPLETE_ACTIONS (its
 * waits test requests; nobody would see COMPLETE actions), applies the
 * QUAY_* knobs above, and,
 * when `base` is NULL or its frag_size is 0, picks the fragment size:
 * 512 KiB when the transport can do single-copy transfers (fewer round
 * trips per large message), else 64 KiB.
 * Returns 0, QUAY_EINVAL (bad environment; a message went to stderr),
 * QUAY_ENOTSUP (transport not available: for an adapter library, it
 * cannot be loaded or exports no quay_transport_open), QUAY_EVERSION (an
 * adapter built for a transport ABI this runtime does not take), QUAY_EPEER
 * (a rank died during start-up), the adapter's own open error, or the
 * engine's error.
 */
QRT_API int qrt_init(const quay_config *base, qrt **prt);

/** The engine (channel 0) and the world communicator. */
QRT_API quay_engine *qrt_engine(qrt *rt);
QRT_API quay_comm *qrt_world(qrt *rt);
QRT_API int32_t qrt_rank(const qrt *rt);
QRT_API int32_t qrt_size(const qrt *rt);
/** The QUAY_CAP_* flags the engine was given (e.g. whether rendezvous
 *  data moves single-copy: QUAY_CAP_RDMA_GET). */
QRT_API uint32_t qrt_caps(const qrt *rt);
/** The quay_config.flags the engine was created with: the program's,
 *  as the environment changed them (e.g. QUAY_SEND_COPY). */
QRT_API uint32_t qrt_config_flags(const qrt *rt);
/** The transport's name ("shm", "tcp", or an adapter's ops->name). */
QRT_API const char *qrt_transport_name(const qrt *rt);

/**
 * One step of progress: execute every action the engine has, deliver what
 * has arrived (a packet the engine answers QUAY_EAGAIN stays with the
 * transport and is offered again on later steps), learn about failed
 * peers (quay_on_peer_failed) and call quay_on_time when the engine's
 * deadline has passed. If nothing at all happened and timeout_ns > 0,
 * block in the transport for up to timeout_ns (or until the engine's
 * deadline) and step again. Returns 1 if anything happened, 0 if not, or
 * the engine's fatal code.
 */
QRT_API int qrt_progress(qrt *rt, int64_t timeout_ns);

/**
 * Execute every action the engine has now (sends leave at once), without
 * looking at arrivals or the time: what a blocking send calls right after
 * posting, since on a transport that copies small frames out the send is
 * then complete and no full progress step is needed. Returns how many
 * actions ran (>= 0), or the engine's fatal code.
 */
QRT_API int qrt_flush(qrt *rt);

/**
 * Progress until `req` is complete, then fill *st (may be NULL). The
 * request is not freed. Returns 0, or the engine's fatal code. A request
 * waiting on a peer that died completes with status.error = QUAY_EPEER.
 */
QRT_API int qrt_wait(qrt *rt, quay_req *req, quay_status *st);

/**
 * Progress until ready(ctx) returns non-zero, with the same idle policy
 * as qrt_wait (poll, perhaps yield, then block in the transport). `ready`
 * is called between steps, never from inside the engine, so it may make
 * quay calls (e.g. quay_iprobe). Returns 0, or the engine's fatal code.
 */
QRT_API int qrt_wait_until(qrt *rt, int (*ready)(void *ctx), void *ctx);

/** 1 if world rank `peer` has failed (its process died, its connection
 *  broke), else 0. */
QRT_API int qrt_peer_failed(const qrt *rt, int32_t peer);
/** How many peers have failed so far (0 in a healthy job: a cheap test
 *  before asking about each). */
QRT_API int32_t qrt_peers_failed(const qrt *rt);

/**
 * End the whole job now with exit status `code` (MPI_Abort): under a PMI
 * process manager ask it to abort the job (Hydra then ends every rank
 * and exits with `code`); then _exit(code), whose status quayrun passes
 * on while it ends the other ranks. `msg` goes to the process manager.
 * Never returns. `rt` may be NULL (not started yet: just the exit).
 */
#if defined(__GNUC__) || defined(__clang__)
__attribute__((noreturn))
#endif
QRT_API void qrt_abort(qrt *rt, int code, const char *msg);

/**
 * Asynchronous progress, off unless started. qrt_async_start starts a
 * thread of the runtime's own that drives the engine while the program
 * does not (what qrt_progress does), so rendezvous transfers and
 * non-blocking collectives advance while the program computes. From then
 * on the engine is shared: the program calls quay and the runtime from
 * one thread only, holding qrt_lock around every call that touches the
 * engine, its communicators and requests, or the transport (every quay_*
 * call and every qrt_* call except qrt_rank, qrt_size, qrt_caps,
 * qrt_config_flags, qrt_transport_name, qrt_abort and these below).
 * Engine callbacks (a quay_op's function) may then run on the progress
 * thread, which holds the lock while it steps. It steps only while the
 * program neither holds nor waits for the lock, in short steps that do
 * not block, and naps in between; without a spare core it runs as
 * SCHED_IDLE.
 * Returns 0 (also when already running), QUAY_EINVAL, QUAY_ENOMEM or
 * QUAY_EINTERNAL (no thread). Call it without holding the lock.
 */
QRT_API int qrt_async_start(qrt *rt);
/**
 * Stop the progress thread and wait for it to end (nothing if none runs);
 * call it without holding the lock. Afterwards qrt_lock does nothing and
 * one thread drives again. qrt_finalize stops it first. Returns 0, or the
 * engine's fatal code if the thread met one (it stops stepping then).
 */
QRT_API int qrt_async_stop(qrt *rt);
/** 1 while the progress thread runs, else 0. */
QRT_API int qrt_async_running(const qrt *rt);
/** 1 if QUAY_ASYNC_PROGRESS=1 asks for asynchronous progress, else 0. */
QRT_API int qrt_async_requested(const qrt *rt);
/** Take / release the runtime's lock (not recursive; from the program's
 *  one thread); nothing while no progress thread runs. qrt_unlock sends
 *  nothing: what the call queued leaves with qrt_flush, the program's
 *  next call, or the thread's next step. */
QRT_API void qrt_lock(qrt *rt);
QRT_API void qrt_unlock(qrt *rt);

/** qrt_wait for each of reqs[0..n); sts may be NULL. */
QRT_API int qrt_wait_all(qrt *rt, int n, quay_req *const *reqs, quay_status *sts);

/**
 * Shut down: finish executing what the engine and the transport still
 * hold, tell every peer that this rank sends nothing more, keep serving
 * peers (their packets, their single-copy requests) until each has said
 * the same or has failed, then free the engine, the communicator and the
 * transport. Every request should be complete and freed before (MPI's
 * rule); packets that arrive for nobody are dropped. Returns 0, or the
 * engine's fatal code (everything is freed either way). NULL is ok.
 * A progress thread is stopped first (call it without holding the lock).
 */
QRT_API int qrt_finalize(qrt *rt);

#ifdef __cplusplus
}
#endif

#endif /* QUAY_RT_H */
