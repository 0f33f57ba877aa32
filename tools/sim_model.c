/* sim_model.c — see sim_model.h. */
#include "sim_model.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int sim_model_set(nicsim_model *m, const char *assignment, char *err, size_t errlen)
{
    const char *eq = strchr(assignment, '=');
    if (eq == NULL) {
        snprintf(err, errlen, "--set %s: expected key=value", assignment);
        return -1;
    }
    char key[64];
    size_t klen = (size_t)(eq - assignment);
    if (klen >= sizeof key) {
        snprintf(err, errlen, "--set %s: unknown model key", assignment);
        return -2;
    }
    memcpy(key, assignment, klen);
    key[klen] = '\0';
    const char *v = eq + 1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (*v < '0' || *v > '9' || *end != '\0' || errno != 0) {
        snprintf(err, errlen, "--set %s: expected a non-negative integer", assignment);
        return -1;
    }
    int known = 0;
    for (size_t i = 0; nicsim_model_key(i) != NULL; i++)
        known |= strcmp(nicsim_model_key(i), key) == 0;
    if (!known) {
        snprintf(err, errlen, "--set %s: unknown model key", assignment);
        return -2;
    }
    if (nicsim_model_set(m, key, x) != 0) {
        snprintf(err, errlen, "--set %s: value out of range", assignment);
        return -1;
    }
    return 0;
}

void sim_model_list_keys(FILE *out)
{
    for (size_t i = 0; nicsim_model_key(i) != NULL; i++)
        fprintf(out, "%s%s", i ? " " : "", nicsim_model_key(i));
}

void sim_model_print(FILE *out, const nicsim_model *m)
{
    fprintf(out,
            "# model: host send %llu ns + %llu ps/B, recv %llu ns + %llu ps/B, call %llu ns, "
            "offload post %llu ns, completion %llu ns; "
            "bus %llu ns + %llu ps/B; NIC %llu ns/packet, agent step %llu ns; wire %llu ns + "
            "%llu ps/B; signal %llu ns; NIC buffers %u%s; atomics on the %s\n",
            (unsigned long long)m->host_send_ns, (unsigned long long)m->host_send_ps,
            (unsigned long long)m->host_recv_ns, (unsigned long long)m->host_recv_ps,
            (unsigned long long)m->host_call_ns, (unsigned long long)m->host_post_ns,
            (unsigned long long)m->host_notify_ns, (unsigned long long)m->bus_ns,
            (unsigned long long)m->bus_ps, (unsigned long long)m->nic_ns,
            (unsigned long long)m->agent_step_ns, (unsigned long long)m->wire_ns,
            (unsigned long long)m->wire_ps, (unsigned long long)m->host_signal_ns,
            m->nic_buffers, m->nic_buffers == 0 ? " (unbounded)" : "",
            m->atomic_host ? "host" : "NIC");
}
