/*
 * qrt_shm.h — the shm transport's constructor, for the runtime (quay_rt).
 *
 * Knobs (environment, read by every rank):
 *   QUAY_SHM_FD        the segment quayrun made (set by quayrun)
 *   QUAY_SHM_RDMA=0    no single-copy transfers (no process_vm_* probe);
 *                      rendezvous data then goes through the rings
 *   QUAY_SHM_POLL_MS   longest single sleep before dead peers are looked
 *                      for again (default 20; quayrun's notice is faster)
 * Ring sizes are quayrun's (QUAY_SHM_RING_KB, QUAY_SHM_CTL_KB).
 */
#ifndef QRT_SHM_H
#define QRT_SHM_H

#include <quay/quay_adapter.h>

/** Open the shm transport for `rank` of `size`: from QUAY_SHM_FD, or a
 *  private segment when size is 1 and no segment was given. Meets every
 *  other rank (two start-up barriers in the segment) before it returns.
 *  0, QUAY_EINVAL (bad environment or segment; message on stderr),
 *  QUAY_EPEER (a rank exited before it arrived), QUAY_ENOMEM. */
int qrt_shm_open(int32_t rank, int32_t size, const quay_transport_sink *sink, quay_transport **pt);

#endif /* QRT_SHM_H */
