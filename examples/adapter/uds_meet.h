/*
 * uds_meet.h — the example adapter's start-up (uds_meet.c).
 */
#ifndef UDS_MEET_H
#define UDS_MEET_H

#include <stdint.h>

/**
 * Connect rank `rank` of `size` (> 1) with every other rank through
 * UNIX-domain sockets in QUAY_UDS_DIR (else QUAY_JOB_DIR): fds[r] is the
 * connected, non-blocking socket to rank r (-1 for this rank). 0, or a
 * message on stderr, every socket closed and QUAY_EINVAL (bad
 * environment), QUAY_EPEER (a rank died, or did not come in time:
 * QUAY_UDS_CONNECT_MS) or QUAY_ENOMEM.
 */
int uds_meet(int32_t rank, int32_t size, int *fds);

#endif /* UDS_MEET_H */
