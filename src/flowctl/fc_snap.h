/*
 * fc_snap.h — the link's part of each peer record of a context blob
 * (fc_snap.c). The engine's PEER section reaches it only through the
 * snap_link hooks (engine/snap.h); the context driver hands it this table.
 */
#ifndef QUAY_FLOWCTL_FC_SNAP_H
#define QUAY_FLOWCTL_FC_SNAP_H

#include "engine/snap.h"

/** The flow-control channel's per-peer state as the walker's link hooks. */
extern const snap_link fc_snap_link;

#endif /* QUAY_FLOWCTL_FC_SNAP_H */
