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

#include "model.h"

#ifdef __cplusplus
extern "C" {
#endif

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
