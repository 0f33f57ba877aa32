/* crc32c.c — see crc32c.h. */
#include "flowctl/crc32c.h"

void crc32c_table_init(uint32_t table[256])
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        table[i] = c;
    }
}

uint32_t crc32c_update(const uint32_t table[256], uint32_t crc,
                       const void *data, size_t len)
{
    const uint8_t *p = data;
    crc = ~crc;
    while (len-- > 0)
        crc = table[(crc ^ *p++) & 0xffu] ^ (crc >> 8);
    return ~crc;
}
