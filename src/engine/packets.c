/*
 * packets.c — the packet types' table, made from the registry
 * (packets.h), and their names.
 */
#include "engine/internal.h"

/* Every type is a small number, not 0 (the unknown type's line), and
 * its header fits QUAY_MAX_HEADER. */
#define PKT_CHECK(type, name, props, hlen, flags, decode, encode, on_packet, on_turn,         \
                  on_sent)                                                                    \
    _Static_assert((type) > 0 && (type) < PKT_TYPES, "packet type out of the table: " name);  \
    _Static_assert((hlen) + ((props) & PK_KEY_EXT ? WIRE_KEY_LEN : 0) <= QUAY_MAX_HEADER,     \
                   "packet header too long: " name);
QUAY_PACKETS(PKT_CHECK)
#undef PKT_CHECK

#define PKT_LINE(type, name, props, hlen, flags, decode, encode, on_packet, on_turn, on_sent) \
    [type] = {name, (props), (flags), (hlen), decode, encode, on_packet, on_turn, on_sent},
const pkt_type pkt_table[PKT_TYPES] = {QUAY_PACKETS(PKT_LINE)};
#undef PKT_LINE

const char *quay_pkt_name(int type)
{
    const char *name = type >= 0 ? pkt_info((unsigned)type)->name : NULL;
    return name != NULL ? name : "?";
}
