/*
 * timed.h — nicsim's timed mode: a discrete-event model of N hosts and
 * their NICs on a switched network (design.md §8), for reproducing the
 * experiments of the NIC dissertation and for scaling runs.
 *
 * Every rank is a host CPU, a host<->NIC bus, a NIC processor and a
 * full-duplex link to a non-blocking switch. A packet a host engine sends
 * costs, in order (each resource serves one thing at a time, FIFO):
 *
 *   host CPU   host_send_ns + bytes * host_send_ps        (build, PIO)
 *   bus        bytes * bus_ps, then bus_ns latency        (DMA to the NIC;
 *                                                          the sender's op_done)
 *   NIC        nic_ns                                     (firmware, send)
 *   link out   bytes * wire_ps, then wire_ns latency
 *   NIC        nic_ns                                     (firmware, receive;
 *              holds one of nic_buffers receive buffers until its DMA ends)
 *   bus        bytes * bus_ps, then bus_ns
 *   host CPU   host_recv_ns + bytes * host_recv_ps        (quay_on_packet)
 *
 * Progress follows MPI without an asynchronous progress thread: a host
 * handles arrivals only while its application waits in the library
 * (tsim_wait) or has finished; packets that reach host memory while the
 * application computes wait there and are handled, in arrival order, when
 * it next waits. A rank may have an offload agent (an engine in the NIC,
 * QUAY_ROLE_AGENT): its packets go NIC to NIC, never over the bus, cost
 * nic_ns each way plus agent_step_ns per schedule step it runs, and reach
 * the host only as the one offload completion.
 *
 * Time is in ns, an integer; ties are broken by event creation order, so
 * a run is deterministic. The network is reliable (no flow control
 * needed; engines run with QUAY_FLOW_NONE).
 */
#ifndef QUAY_NICSIM_TIMED_H
#define QUAY_NICSIM_TIMED_H

#include <stddef.h>
#include <stdint.h>

#include <quay/quay.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Cost parameters (ns, and ps per byte). */
typedef struct nicsim_model {
    uint64_t host_send_ns, host_send_ps;
    uint64_t host_recv_ns, host_recv_ps;
    uint64_t host_call_ns; /**< each time the application runs (its library calls) */
    uint64_t host_post_ns;   /**< posting an offload descriptor to the NIC (PIO) */
    uint64_t host_notify_ns; /**< taking an offload completion */
    uint64_t bus_ns, bus_ps;
    uint64_t nic_ns;        /**< NIC processor per packet, each direction */
    uint64_t agent_step_ns; /**< offload agent: per local schedule step */
    uint64_t wire_ns, wire_ps;
    uint32_t nic_buffers;   /**< receive buffers per NIC; 0: unbounded */
    /** 0: remote atomics run on the target NIC (nic_ns, a DMA each way);
     *  1: on a server thread of the target host [NIC ch. 5's host-based
     *  baseline]: over the bus, host_recv_ns + host_send_ns on its own CPU,
     *  the reply back over the bus. */
    uint32_t atomic_host;
    /** A packet whose sender asked to wake its host (QUAY_ACT_NOTIFY,
     *  application bypass) interrupts a computing host: a signal and its
     *  handler cost this much on top of the receive, taken from the
     *  computation [NIC ch. 6]. */
    uint64_t host_signal_ns;
} nicsim_model;

/** A plausible 2020s cluster: 1 us host overheads, 12.5 GB/s links. */
void nicsim_model_default(nicsim_model *m);

/** Read "key = value" lines (# comments; keys as the fields above) from
 *  a file over *m (unlisted keys keep their values). 0, or -1 with a
 *  message in err. */
int nicsim_model_load(const char *path, nicsim_model *m, char *err, size_t errlen);
/** Set one parameter by its key (a field name above): 0, or -1 for an
 *  unknown key or a value out of range. */
int nicsim_model_set(nicsim_model *m, const char *key, uint64_t v);
/** The i-th key (0, 1, ...), NULL past the last. */
const char *nicsim_model_key(size_t i);

typedef struct tsim tsim;

/** The application of a rank: called when it can run (at the start,
 *  when its computation ended, when the request it waits for completed).
 *  It may call into its host engine, then calls exactly one of
 *  tsim_compute, tsim_wait or tsim_finish. */
typedef void (*tsim_app_fn)(tsim *t, int32_t rank, void *ctx);

/** A simulator for n ranks. 0, QUAY_EINVAL or QUAY_ENOMEM. */
int tsim_new(int32_t n, const nicsim_model *m, tsim **pt);
void tsim_free(tsim *t);
/** Attach rank's host engine and optionally its NIC agent (NULL). */
int tsim_attach(tsim *t, int32_t rank, quay_engine *host, quay_engine *agent);
void tsim_set_app(tsim *t, tsim_app_fn fn, void *ctx);

/** From inside the app: compute for ns (no library progress meanwhile). */
void tsim_compute(tsim *t, int32_t rank, uint64_t ns);
/** ... wait in the library until req completes (handling arrivals). */
void tsim_wait(tsim *t, int32_t rank, quay_req *req);
/** ... the application is done (the host keeps handling arrivals). */
void tsim_finish(tsim *t, int32_t rank);

/** Run until every application finished and nothing is in flight.
 *  0; 1 if stuck (applications waiting, nothing left to happen); or a
 *  negative engine code. */
int tsim_run(tsim *t);

/** Simulated time now (ns). */
uint64_t tsim_now(const tsim *t);

typedef struct tsim_stats {
    uint64_t events;     /**< events processed */
    uint64_t packets;    /**< packets delivered to an engine (host or agent) */
    uint64_t host_pkts;  /**< ... to host engines */
    uint64_t bytes;      /**< payload + header bytes delivered */
} tsim_stats;
void tsim_get_stats(const tsim *t, tsim_stats *st);
/** Host CPU time of rank spent in the library (send, receive, calls). */
uint64_t tsim_host_busy(const tsim *t, int32_t rank);

#ifdef __cplusplus
}
#endif

#endif /* QUAY_NICSIM_TIMED_H */
