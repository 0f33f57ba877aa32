/*
 * abi.c — the public contract's versions: the library's own, the layout
 * each version of quay_config and quay_stats had, and the conversion of
 * a caller's config to the latest layout (ngtcp2's settings pattern).
 *
 * A new field goes at the end of its struct, with a version bump here:
 * the old layout's size is the offset of the first field it lacks. A
 * program built against an older header passes its own version, so the
 * library never writes or reads past the struct that program has.
 */
#include <stddef.h>

#include "engine/internal.h"

/* Bytes of quay_config's layout `version`, 0 for one not known here. */
static size_t config_size(int version)
{
    switch (version) {
    case 7: return sizeof(quay_config);
    default: return 0;
    }
}

/* Bytes of quay_stats' layout `version`, 0 for one not known here. */
static size_t stats_size(int version)
{
    switch (version) {
    case 1: return offsetof(quay_stats, forged_keys);
    case 2: return sizeof(quay_stats);
    default: return 0;
    }
}

void quay_config_default_versioned(int version, quay_config *cfg)
{
    size_t n = config_size(version);
    if (cfg == NULL || n == 0)
        return;
    quay_config c;
    config_default(&c);
    c.version = (uint32_t)version;
    memcpy(cfg, &c, n);
}

/* The exported name, for programs that call it as a function. */
void(quay_config_default)(quay_config *cfg)
{
    quay_config_default_versioned(QUAY_CONFIG_VERSION, cfg);
}

int quay_config_upgrade(const quay_config *cfg, quay_config *out)
{
    if (cfg == NULL || out == NULL)
        return QUAY_EINVAL;
    size_t n = config_size((int)cfg->version);
    if (n == 0)
        return QUAY_EVERSION;
    config_default(out);
    memcpy(out, cfg, n);
    out->version = QUAY_CONFIG_VERSION;
    return 0;
}

int quay_engine_stats_versioned(const quay_engine *e, int version, quay_stats *st)
{
    if (e == NULL || st == NULL)
        return QUAY_EINVAL;
    size_t n = stats_size(version);
    if (n == 0)
        return QUAY_EVERSION;
    quay_stats all;
    engine_stats(e, &all);
    memcpy(st, &all, n);
    return 0;
}

void(quay_engine_stats)(const quay_engine *e, quay_stats *st)
{
    (void)quay_engine_stats_versioned(e, QUAY_STATS_VERSION, st);
}

int quay_next_action_versioned(quay_engine *e, int version, quay_action *a)
{
    if (version != 1)
        return QUAY_EVERSION; /* (layout 1 is the only one so far) */
    return quay_next_action(e, a);
}

uint32_t quay_version(const char **str)
{
    if (str != NULL)
        *str = QUAY_VERSION;
    return QUAY_VERSION_NUM;
}
