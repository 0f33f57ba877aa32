/*
 * crc32c.h — CRC-32C (Castagnoli), the per-packet checksum of the flow-
 * control channel: it turns wire corruption into a drop, which the
 * retransmission machinery then repairs. Table-driven; the table lives in
 * the engine (built at creation), so there is no global state.
 */
#ifndef QUAY_FLOWCTL_CRC32C_H
#define QUAY_FLOWCTL_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/** Fill the 256-entry table for the reflected polynomial 0x82F63B78. */
void crc32c_table_init(uint32_t table[256]);
/** Continue a CRC over `len` bytes (start with crc = 0). */
uint32_t crc32c_update(const uint32_t table[256], uint32_t crc,
                       const void *data, size_t len);

#endif /* QUAY_FLOWCTL_CRC32C_H */
