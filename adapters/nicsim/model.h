/*
 * model.h — the cost model of nicsim's timed mode (timed.h): what each
 * resource of a host, its bus, its NIC and its link costs per packet and
 * per byte, with defaults, and set by key or from a file.
 */
#ifndef QUAY_NICSIM_MODEL_H
#define QUAY_NICSIM_MODEL_H

#include <stddef.h>
#include <stdint.h>

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

#ifdef __cplusplus
}
#endif

#endif /* QUAY_NICSIM_MODEL_H */
