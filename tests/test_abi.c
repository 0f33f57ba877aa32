/*
 * test_abi.c — the public contract's versions (src/engine/abi.c): the
 * library's version at run time, quay_config and quay_stats filled only as
 * far as the caller's layout goes, configs of unknown layouts refused,
 * and a config converted to the latest layout with defaults.
 */
#include <stddef.h>
#include <string.h>

#include <quay/quay.h>

#include "harness.h"

static void t_version(void)
{
    const char *s = NULL;
    ok(quay_version(&s) == QUAY_VERSION_NUM);
    ok(s != NULL && strcmp(s, QUAY_VERSION) == 0);
    ok(quay_version(NULL) == QUAY_VERSION_NUM);
}

static void t_config(void)
{
    /* The caller's layout and not a byte more. */
    unsigned char buf[sizeof(quay_config) + 16];
    memset(buf, 0xAA, sizeof buf);
    quay_config_default_versioned(QUAY_CONFIG_VERSION, (quay_config *)(void *)buf);
    int untouched = 1;
    for (size_t i = sizeof(quay_config); i < sizeof buf; i++)
        untouched &= buf[i] == 0xAA;
    ok_msg(untouched, "nothing written past the layout");
    quay_config c;
    memcpy(&c, buf, sizeof c);
    is_int((int)c.version, QUAY_CONFIG_VERSION);
    is_int((int)c.malformed_limit, 64);
    /* Unknown layouts: left alone, and refused by the engine. */
    memset(buf, 0xAA, sizeof buf);
    quay_config_default_versioned(QUAY_CONFIG_VERSION + 1, (quay_config *)(void *)buf);
    quay_config_default_versioned(QUAY_CONFIG_VERSION_MIN - 1, (quay_config *)(void *)buf);
    ok_msg(buf[0] == 0xAA && buf[sizeof(quay_config) - 1] == 0xAA, "unknown versions write nothing");
    quay_engine *e = NULL;
    quay_config_default(&c);
    c.version = QUAY_CONFIG_VERSION + 1;
    is_int(quay_engine_new(&c, &e), QUAY_EVERSION);
    c.version = QUAY_CONFIG_VERSION_MIN - 1;
    is_int(quay_engine_new(&c, &e), QUAY_EVERSION);
    ok(e == NULL);
    c.version = QUAY_CONFIG_VERSION;
    is_int(quay_engine_new(&c, &e), 0);
    quay_engine_free(e);
    /* The conversion a runtime uses. */
    quay_config in, out;
    quay_config_default(&in);
    in.eager_max = 1234;
    memset(&out, 0x55, sizeof out);
    is_int(quay_config_upgrade(&in, &out), 0);
    ok(out.eager_max == 1234 && out.version == QUAY_CONFIG_VERSION && out.forged_key_limit == 8);
    in.version = 99;
    is_int(quay_config_upgrade(&in, &out), QUAY_EVERSION);
    is_int(quay_config_upgrade(NULL, &out), QUAY_EINVAL);
}

static void t_stats(void)
{
    quay_config c;
    quay_config_default(&c);
    quay_engine *e = NULL;
    is_int(quay_engine_new(&c, &e), 0);
    unsigned char buf[sizeof(quay_stats) + 16];
    /* Layout 1 ends before forged_keys: nothing written from there on. */
    memset(buf, 0xAA, sizeof buf);
    is_int(quay_engine_stats_versioned(e, 1, (quay_stats *)(void *)buf), 0);
    int untouched = 1;
    for (size_t i = offsetof(quay_stats, forged_keys); i < sizeof buf; i++)
        untouched &= buf[i] == 0xAA;
    ok_msg(untouched, "layout 1: nothing past its last counter");
    ok_msg(buf[0] == 0, "layout 1: its counters written (pkts_in 0)");
    memset(buf, 0xAA, sizeof buf);
    is_int(quay_engine_stats_versioned(e, QUAY_STATS_VERSION, (quay_stats *)(void *)buf), 0);
    untouched = 1;
    for (size_t i = sizeof(quay_stats); i < sizeof buf; i++)
        untouched &= buf[i] == 0xAA;
    ok_msg(untouched && buf[offsetof(quay_stats, forged_keys)] == 0, "layout 2: whole, no more");
    memset(buf, 0xAA, sizeof buf);
    is_int(quay_engine_stats_versioned(e, QUAY_STATS_VERSION + 1, (quay_stats *)(void *)buf),
           QUAY_EVERSION);
    is_int(quay_engine_stats_versioned(e, 0, (quay_stats *)(void *)buf), QUAY_EVERSION);
    ok(buf[0] == 0xAA);
    is_int(quay_engine_stats_versioned(NULL, 2, (quay_stats *)(void *)buf), QUAY_EINVAL);
    quay_engine_free(e);
}

static void t_actions(void)
{
    quay_config c;
    quay_config_default(&c);
    c.nranks = 2;
    quay_engine *e = NULL;
    is_int(quay_engine_new(&c, &e), 0);
    quay_comm *w = NULL;
    is_int(quay_comm_create(e, 1, 2, NULL, &w), 0);
    static const char msg[8] = "layout1";
    quay_req *r = NULL;
    is_int(quay_isend(e, w, msg, sizeof msg, 1, 5, QUAY_SEND_STANDARD, &r), 0);
    quay_action a;
    memset(&a, 0xAA, sizeof a);
    /* An unknown layout: refused, nothing written, nothing taken. */
    is_int(quay_next_action_versioned(e, QUAY_ACTION_VERSION + 1, &a), QUAY_EVERSION);
    is_int(quay_next_action_versioned(e, 0, &a), QUAY_EVERSION);
    ok(((unsigned char *)&a)[0] == 0xAA);
    /* This header's layout: the action quay_next_action would give. */
    is_int(quay_next_action_versioned(e, QUAY_ACTION_VERSION, &a), 1);
    is_int(a.kind, QUAY_ACT_SEND);
    is_int(a.peer, 1);
    is_int(quay_next_action_versioned(NULL, QUAY_ACTION_VERSION, &a), QUAY_EINVAL);
    quay_engine_free(e);
}

int main(void)
{
    subtest("quay_version", t_version);
    subtest("quay_config by layout", t_config);
    subtest("quay_stats by layout", t_stats);
    subtest("quay_action by layout", t_actions);
    return harness_done_testing();
}
