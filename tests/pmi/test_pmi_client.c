/*
 * test_pmi_client — the PMI-1 client against scripted servers: well-formed
 * answers in both Hydra styles (coalesced, dribbled, escaped, with extra
 * fields and spaces) and malformed ones (garbage, wrong cmd, rc != 0, bad
 * or missing fields, too-long lines and values, NUL and control bytes, a
 * socket closed before or in the middle of a line, no answer at all), plus
 * bad environments, the singleton, PMI_PORT with initack, and abort.
 *
 * Each case forks a server that plays a script over a socketpair (or TCP
 * for PMI_PORT): for every step it reads one request line, checks it, and
 * writes canned bytes. The client runs in this process (under ASan in the
 * sanitizer build) and must return the right error, never crash, overflow
 * or hang (QPMI_TIMEOUT_MS bounds every wait).
 */
#include "harness.h"
#include "pmi_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------------
 * Scripted server
 * ---------------------------------------------------------------------- */

enum { ACT_NONE, ACT_CLOSE, ACT_HANG, ACT_DRIBBLE };

typedef struct {
    const char *expect; /* request line (no '\n'); "x*": prefix x; NULL: read nothing */
    const char *send;   /* bytes to write (NULL: none) */
    size_t len;         /* of send; 0: strlen */
    int act;
} step;

#define END {NULL, NULL, 0, -1}

/* The start-up exchange, Hydra 4.0 style. */
#define S_INIT {"cmd=init pmi_version=1 pmi_subversion=1", \
                "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n", 0, ACT_NONE}
#define S_MAXES {"cmd=get_maxes", "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n", \
                 0, ACT_NONE}
#define S_APPNUM {"cmd=get_appnum", "cmd=appnum appnum=3\n", 0, ACT_NONE}
#define S_KVS {"cmd=get_my_kvsname", "cmd=my_kvsname kvsname=kvs_42_0\n", 0, ACT_NONE}
#define S_START S_INIT, S_MAXES, S_APPNUM, S_KVS
#define S_FIN {"cmd=finalize", "cmd=finalize_ack\n", 0, ACT_NONE}

static int read_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    for (;;) {
        char c;
        ssize_t r = read(fd, &c, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        if (c == '\n') {
            buf[n] = '\0';
            return 0;
        }
        if (n + 1 < cap)
            buf[n++] = c;
    }
}

static void write_all(int fd, const char *b, size_t len, int dribble)
{
    while (len > 0) {
        size_t chunk = dribble ? 1 : len;
        ssize_t w = send(fd, b, chunk, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            _exit(4);
        b += w;
        len -= (size_t)w;
        if (dribble)
            usleep(300);
    }
}

/* Child: play the script on fd, then wait for the client to hang up. */
static void serve(int fd, const step *s)
{
    alarm(20);
    char line[8192];
    for (; s->act >= 0; s++) {
        if (s->expect != NULL) {
            if (read_line(fd, line, sizeof line) != 0) {
                fprintf(stderr, "# script server: EOF, expected \"%s\"\n", s->expect);
                _exit(3);
            }
            size_t el = strlen(s->expect);
            int match = (el > 0 && s->expect[el - 1] == '*')
                            ? strncmp(line, s->expect, el - 1) == 0
                            : strcmp(line, s->expect) == 0;
            if (!match) {
                fprintf(stderr, "# script server: got \"%s\", expected \"%s\"\n", line,
                        s->expect);
                _exit(3);
            }
        }
        if (s->send != NULL)
            write_all(fd, s->send, s->len ? s->len : strlen(s->send), s->act == ACT_DRIBBLE);
        if (s->act == ACT_CLOSE)
            _exit(0);
        if (s->act == ACT_HANG) {
            pause();
            _exit(0);
        }
    }
    while (read_line(fd, line, sizeof line) == 0) {
        fprintf(stderr, "# script server: unexpected request \"%s\"\n", line);
        _exit(3);
    }
    _exit(0);
}

static pid_t server_pid;
static int client_fd = -1;

/* Fork a server for `s` on a socketpair and point PMI_FD at our end. */
static void start(const step *s, int rank, int size)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        perror("socketpair");
        exit(1);
    }
    fflush(NULL);
    server_pid = fork();
    if (server_pid == 0) {
        close(sv[1]);
        serve(sv[0], s);
    }
    close(sv[0]);
    client_fd = sv[1];
    char b[32];
    snprintf(b, sizeof b, "%d", sv[1]);
    setenv("PMI_FD", b, 1);
    snprintf(b, sizeof b, "%d", rank);
    setenv("PMI_RANK", b, 1);
    snprintf(b, sizeof b, "%d", size);
    setenv("PMI_SIZE", b, 1);
    unsetenv("PMI_PORT");
    unsetenv("PMI_ID");
}

/* Close our end if the client left it open; reap the server; its status. */
static int finish(void)
{
    if (client_fd >= 0 && fcntl(client_fd, F_GETFD) != -1)
        close(client_fd);
    client_fd = -1;
    int st = 0;
    if (waitpid(server_pid, &st, 0) != server_pid)
        return -1;
    unsetenv("PMI_FD");
    unsetenv("PMI_RANK");
    unsetenv("PMI_SIZE");
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void kill_server(void)
{
    kill(server_pid, SIGKILL);
}

/* Run qpmi_init against a script that must fail it with `want`. */
static void init_fails(const step *s, int want)
{
    start(s, 0, 1);
    qpmi *p = (qpmi *)0x1;
    int rc = qpmi_init(&p);
    is_int(rc, want);
    ok(p == NULL);
    ok_msg(qpmi_init_errmsg()[0] != '\0', "init_errmsg: %s", qpmi_init_errmsg());
    if (rc == QPMI_OK)
        qpmi_finalize(p);
    is_int(finish(), 0);
}

/* ------------------------------------------------------------------------
 * Well-formed answers
 * ---------------------------------------------------------------------- */

static void t_happy_old(void)
{
    static const step s[] = {
        S_START,
        {"cmd=put kvsname=kvs_42_0 key=addr-2 value=10.0.0.3:41002",
         "cmd=put_result rc=0 msg=success\n", 0, ACT_NONE},
        {"cmd=barrier_in", "cmd=barrier_out\n", 0, ACT_NONE},
        {"cmd=get kvsname=kvs_42_0 key=addr-0",
         "cmd=get_result rc=0 msg=success value=10.0.0.1:41000\n", 0, ACT_NONE},
        S_FIN, END};
    start(s, 2, 4);
    qpmi *p = NULL;
    if (!is_int(qpmi_init(&p), QPMI_OK)) {
        kill_server();
        finish();
        return;
    }
    is_int(qpmi_rank(p), 2);
    is_int(qpmi_size(p), 4);
    is_int(qpmi_appnum(p), 3);
    is_str(qpmi_kvsname(p), "kvs_42_0");
    is_int(qpmi_is_singleton(p), 0);
    is_size(qpmi_key_max(p), 63);
    is_size(qpmi_val_max(p), 1023);
    is_int(qpmi_put_rank(p, "addr", "10.0.0.3:41002"), QPMI_OK);
    is_int(qpmi_commit(p), QPMI_OK);
    is_int(qpmi_barrier(p), QPMI_OK);
    char buf[64];
    size_t len = 0;
    is_int(qpmi_get_rank(p, "addr", 0, buf, sizeof buf, &len), QPMI_OK);
    is_str(buf, "10.0.0.1:41000");
    is_size(len, 14);
    is_int(qpmi_finalize(p), QPMI_OK);
    is_int(finish(), 0);
}

static void t_happy_new_escapes(void)
{
    /* Hydra 4.1+: rc first, no msg; extra fields, extra spaces, escapes. */
    static const step s[] = {
        {"cmd=init pmi_version=1 pmi_subversion=1",
         "cmd=response_to_init rc=0  pmi_version=1 pmi_subversion=2 flag  \n", 0, ACT_NONE},
        {"cmd=get_maxes", "cmd=maxes rc=0 kvsname_max=256 keylen_max=64 vallen_max=1024\n", 0,
         ACT_NONE},
        {"cmd=get_appnum", "cmd=appnum rc=0 appnum=0\n", 0, ACT_NONE},
        {"cmd=get_my_kvsname", "cmd=my_kvsname rc=0 kvsname=kvs_7_0 extra=1\n", 0, ACT_NONE},
        {"cmd=get kvsname=kvs_7_0 key=k1", "cmd=get_result rc=0 value=a\\ b\\\\c\\=d\n", 0,
         ACT_NONE},
        {"cmd=get kvsname=kvs_7_0 key=k2", "cmd=get_result rc=0 found=TRUE value=x=y=z\n", 0,
         ACT_NONE},
        {"cmd=barrier_in", "cmd=barrier_out tag=0\n", 0, ACT_NONE},
        {"cmd=finalize", "cmd=finalize_ack rc=0\n", 0, ACT_NONE},
        END};
    start(s, 0, 1);
    qpmi *p = NULL;
    if (!is_int(qpmi_init(&p), QPMI_OK)) {
        kill_server();
        finish();
        return;
    }
    char buf[64];
    is_int(qpmi_get(p, "k1", buf, sizeof buf, NULL), QPMI_OK);
    is_str(buf, "a b\\c=d");
    is_int(qpmi_get(p, "k2", buf, sizeof buf, NULL), QPMI_OK);
    is_str(buf, "x=y=z");
    is_int(qpmi_barrier(p), QPMI_OK);
    is_int(qpmi_finalize(p), QPMI_OK);
    is_int(finish(), 0);
}

static void t_coalesced(void)
{
    /* Every start-up answer in one write, before most are asked for. */
    static const step s[] = {
        {"cmd=init pmi_version=1 pmi_subversion=1",
         "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n"
         "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n"
         "cmd=appnum appnum=3\n"
         "cmd=my_kvsname kvsname=kvs_42_0\n",
         0, ACT_NONE},
        {"cmd=get_maxes", NULL, 0, ACT_NONE},
        {"cmd=get_appnum", NULL, 0, ACT_NONE},
        {"cmd=get_my_kvsname", NULL, 0, ACT_NONE},
        S_FIN, END};
    start(s, 0, 1);
    qpmi *p = NULL;
    if (is_int(qpmi_init(&p), QPMI_OK)) {
        is_str(qpmi_kvsname(p), "kvs_42_0");
        is_int(qpmi_finalize(p), QPMI_OK);
    } else {
        kill_server();
    }
    is_int(finish(), 0);
}

static void t_dribbled(void)
{
    static char big[1100];
    static step s[] = {
        {"cmd=init pmi_version=1 pmi_subversion=1",
         "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n", 0, ACT_DRIBBLE},
        {"cmd=get_maxes", "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n", 0,
         ACT_DRIBBLE},
        {"cmd=get_appnum", "cmd=appnum appnum=3\n", 0, ACT_DRIBBLE},
        {"cmd=get_my_kvsname", "cmd=my_kvsname kvsname=kvs_42_0\n", 0, ACT_DRIBBLE},
        {"cmd=get kvsname=kvs_42_0 key=card-1", big, 0, ACT_DRIBBLE},
        S_FIN, END};
    /* A value of exactly vallen_max - 1 bytes: the longest legal one. */
    int h = snprintf(big, sizeof big, "cmd=get_result rc=0 msg=success value=");
    memset(big + h, 'v', 1023);
    big[h + 1023] = '\n';
    big[h + 1024] = '\0';
    start(s, 0, 2);
    qpmi *p = NULL;
    if (!is_int(qpmi_init(&p), QPMI_OK)) {
        kill_server();
        finish();
        return;
    }
    char buf[1024];
    size_t len = 0;
    is_int(qpmi_get_rank(p, "card", 1, buf, sizeof buf, &len), QPMI_OK);
    is_size(len, 1023);
    ok(buf[0] == 'v' && buf[1022] == 'v' && buf[1023] == '\0');
    is_int(qpmi_finalize(p), QPMI_OK);
    is_int(finish(), 0);
}

/* ------------------------------------------------------------------------
 * Malformed answers at start-up
 * ---------------------------------------------------------------------- */

static void t_init_garbage(void)
{
    static const step s[] = {{"cmd=init*", "hello world\n", 0, ACT_NONE}, END};
    init_fails(s, QPMI_EPROTO);
}

static void t_init_wrong_cmd(void)
{
    static const step s[] = {
        {"cmd=init*", "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n", 0, ACT_NONE},
        END};
    init_fails(s, QPMI_EPROTO);
}

static void t_init_rc(void)
{
    static const step s[] = {
        {"cmd=init*", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 msg=nope\n", 0,
         ACT_NONE},
        END};
    init_fails(s, QPMI_ESERVER);
    ok_msg(strstr(qpmi_init_errmsg(), "nope") != NULL, "msg kept: %s", qpmi_init_errmsg());
}

static void t_init_bad_rc(void)
{
    static const step s1[] = {
        {"cmd=init*", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=zero\n", 0,
         ACT_NONE},
        END};
    init_fails(s1, QPMI_EPROTO);
    static const step s2[] = {
        {"cmd=init*", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc\n", 0, ACT_NONE},
        END};
    init_fails(s2, QPMI_EPROTO);
    static const step s3[] = {
        {"cmd=init*", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=99999999999\n", 0,
         ACT_NONE},
        END};
    init_fails(s3, QPMI_EPROTO);
}

static void t_init_version(void)
{
    static const step s1[] = {
        {"cmd=init*", "cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=0\n", 0, ACT_NONE},
        END};
    init_fails(s1, QPMI_EPROTO);
    static const step s2[] = {{"cmd=init*", "cmd=response_to_init rc=0\n", 0, ACT_NONE}, END};
    init_fails(s2, QPMI_EPROTO);
}

static void t_maxes_bad(void)
{
    static const step s1[] = {
        S_INIT, {"cmd=get_maxes", "cmd=maxes kvsname_max=256 keylen_max=64\n", 0, ACT_NONE},
        END};
    init_fails(s1, QPMI_EPROTO);
    static const step s2[] = {
        S_INIT,
        {"cmd=get_maxes", "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=12x\n", 0,
         ACT_NONE},
        END};
    init_fails(s2, QPMI_EPROTO);
    static const step s3[] = {
        S_INIT,
        {"cmd=get_maxes", "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=999999999\n", 0,
         ACT_NONE},
        END};
    init_fails(s3, QPMI_EPROTO);
    static const step s4[] = {
        S_INIT,
        {"cmd=get_maxes", "cmd=maxes kvsname_max=256 keylen_max=-64 vallen_max=1024\n", 0,
         ACT_NONE},
        END};
    init_fails(s4, QPMI_EPROTO);
    static const step s5[] = {
        S_INIT,
        {"cmd=get_maxes", "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=\n", 0, ACT_NONE},
        END};
    init_fails(s5, QPMI_EPROTO);
}

static void t_kvsname_bad(void)
{
    static char longname[400];
    static step s1[] = {S_INIT, S_MAXES, S_APPNUM,
                        {"cmd=get_my_kvsname", longname, 0, ACT_NONE}, END};
    int h = snprintf(longname, sizeof longname, "cmd=my_kvsname kvsname=");
    memset(longname + h, 'k', 300);
    longname[h + 300] = '\n';
    longname[h + 301] = '\0';
    init_fails(s1, QPMI_EPROTO);
    static const step s2[] = {S_INIT, S_MAXES, S_APPNUM,
                              {"cmd=get_my_kvsname", "cmd=my_kvsname\n", 0, ACT_NONE}, END};
    init_fails(s2, QPMI_EPROTO);
    static const step s3[] = {S_INIT, S_MAXES,
                              {"cmd=get_appnum", "cmd=appnum appnum=one\n", 0, ACT_NONE}, END};
    init_fails(s3, QPMI_EPROTO);
}

static void t_closed_early(void)
{
    static const step s1[] = {{"cmd=init*", NULL, 0, ACT_CLOSE}, END};
    init_fails(s1, QPMI_EIO);
    static const step s2[] = {{NULL, NULL, 0, ACT_CLOSE}, END};
    init_fails(s2, QPMI_EIO);
}

static void t_closed_mid_line(void)
{
    static const step s[] = {{"cmd=init*", "cmd=response_to_ini", 0, ACT_CLOSE}, END};
    init_fails(s, QPMI_EIO);
    ok_msg(strstr(qpmi_init_errmsg(), "mid-line") != NULL, "%s", qpmi_init_errmsg());
}

static void t_nul_and_controls(void)
{
    static const char nul[] = "cmd=response_to_init pmi_version=1\0 pmi_subversion=1 rc=0\n";
    static const step s1[] = {{"cmd=init*", nul, sizeof nul - 1, ACT_NONE}, END};
    init_fails(s1, QPMI_EPROTO);
    static const step s2[] = {
        {"cmd=init*", "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\r\n", 0,
         ACT_NONE},
        END};
    init_fails(s2, QPMI_EPROTO);
    static const step s3[] = {
        {"cmd=init*", "cmd=response_to_init\tpmi_version=1 pmi_subversion=1\n", 0, ACT_NONE},
        END};
    init_fails(s3, QPMI_EPROTO);
    static const step s4[] = {
        {"cmd=init*", "cmd=response_to_init pmi_version=1 pmi_sub$version=1\n", 0, ACT_NONE},
        END};
    init_fails(s4, QPMI_EPROTO);
    static const step s5[] = {
        {"cmd=init*", " cmd=response_to_init pmi_version=1 pmi_subversion=1\n", 0, ACT_NONE},
        END};
    init_fails(s5, QPMI_EPROTO);
    static const step s6[] = {{"cmd=init*", "cmd= pmi_version=1\n", 0, ACT_NONE}, END};
    init_fails(s6, QPMI_EPROTO);
}

static void t_overlong_line(void)
{
    /* 32 KiB without a newline: refused at the line cap, no overflow.
     * (Small enough to sit in the socket buffer after the client quits.) */
    static char junk[32 * 1024];
    memcpy(junk, "cmd=response_to_init x=", 23);
    memset(junk + 23, 'a', sizeof junk - 23);
    static step s[] = {{"cmd=init*", junk, sizeof junk, ACT_NONE}, END};
    init_fails(s, QPMI_EPROTO);
}

static void t_too_many_fields(void)
{
    static char line[512];
    static step s[] = {{"cmd=init*", line, 0, ACT_NONE}, END};
    int n = snprintf(line, sizeof line, "cmd=response_to_init pmi_version=1 pmi_subversion=1");
    for (int i = 0; i < 40; i++)
        n += snprintf(line + n, sizeof line - (size_t)n, " f%d=1", i);
    snprintf(line + n, sizeof line - (size_t)n, "\n");
    init_fails(s, QPMI_EPROTO);
}

/* ------------------------------------------------------------------------
 * Malformed answers later on
 * ---------------------------------------------------------------------- */

static qpmi *started(const step *s)
{
    start(s, 0, 2);
    qpmi *p = NULL;
    if (!is_int(qpmi_init(&p), QPMI_OK)) {
        kill_server();
        finish();
        return NULL;
    }
    return p;
}

static void t_get_value_too_long(void)
{
    static char big[1200];
    static step s[] = {S_START, {"cmd=get kvsname=kvs_42_0 key=k", big, 0, ACT_NONE}, END};
    int h = snprintf(big, sizeof big, "cmd=get_result rc=0 msg=success value=");
    memset(big + h, 'v', 1024); /* vallen_max counts the NUL: one too many */
    big[h + 1024] = '\n';
    big[h + 1025] = '\0';
    qpmi *p = started(s);
    if (p == NULL)
        return;
    char buf[2048];
    is_int(qpmi_get(p, "k", buf, sizeof buf, NULL), QPMI_EPROTO);
    ok_msg(strstr(qpmi_errmsg(p), "vallen_max") != NULL, "%s", qpmi_errmsg(p));
    /* The stream is no longer trusted. */
    is_int(qpmi_get(p, "k", buf, sizeof buf, NULL), QPMI_EDEAD);
    is_int(qpmi_put(p, "k", "v"), QPMI_EDEAD);
    is_int(qpmi_barrier(p), QPMI_EDEAD);
    is_int(qpmi_finalize(p), QPMI_EDEAD);
    is_int(finish(), 0);
}

static void t_small_maxes(void)
{
    /* vallen_max=16: a 20-byte value answer is refused, and put refuses
     * values past 15 bytes without sending them. */
    static const step s[] = {
        S_INIT,
        {"cmd=get_maxes", "cmd=maxes kvsname_max=32 keylen_max=8 vallen_max=16\n", 0, ACT_NONE},
        S_APPNUM, S_KVS,
        {"cmd=put kvsname=kvs_42_0 key=k-0 value=123456789012345", "cmd=put_result rc=0\n", 0,
         ACT_NONE},
        {"cmd=get kvsname=kvs_42_0 key=k", "cmd=get_result rc=0 value=12345678901234567890\n", 0,
         ACT_NONE},
        END};
    qpmi *p = started(s);
    if (p == NULL)
        return;
    is_size(qpmi_key_max(p), 7);
    is_size(qpmi_val_max(p), 15);
    is_int(qpmi_put(p, "k", "1234567890123456"), QPMI_EINVAL);
    is_int(qpmi_put(p, "12345678", "v"), QPMI_EINVAL);
    is_int(qpmi_put_rank(p, "longname", "v"), QPMI_EINVAL);
    is_int(qpmi_put_rank(p, "k", "123456789012345"), QPMI_OK);
    char buf[64];
    is_int(qpmi_get(p, "k", buf, sizeof buf, NULL), QPMI_EPROTO);
    is_int(qpmi_finalize(p), QPMI_EDEAD);
    is_int(finish(), 0);
}

static void t_get_not_found(void)
{
    static const step s[] = {
        S_START,
        {"cmd=get kvsname=kvs_42_0 key=a",
         "cmd=get_result rc=-1 msg=key_a_not_found value=unknown\n", 0, ACT_NONE},
        {"cmd=get kvsname=kvs_42_0 key=b", "cmd=get_result rc=1\n", 0, ACT_NONE},
        {"cmd=get kvsname=kvs_42_0 key=c", "cmd=get_result rc=0 found=FALSE\n", 0, ACT_NONE},
        {"cmd=get kvsname=kvs_42_0 key=d", "cmd=get_result rc=0 msg=success value=here\n", 0,
         ACT_NONE},
        {"cmd=get kvsname=kvs_42_0 key=e", "cmd=get_result rc=0 found=maybe value=x\n", 0,
         ACT_NONE},
        END};
    qpmi *p = started(s);
    if (p == NULL)
        return;
    char buf[16];
    is_int(qpmi_get(p, "a", buf, sizeof buf, NULL), QPMI_ENOTFOUND);
    is_int(qpmi_get(p, "b", buf, sizeof buf, NULL), QPMI_ENOTFOUND);
    is_int(qpmi_get(p, "c", buf, sizeof buf, NULL), QPMI_ENOTFOUND);
    is_int(qpmi_get(p, "d", buf, sizeof buf, NULL), QPMI_OK);
    is_str(buf, "here");
    is_int(qpmi_get(p, "e", buf, sizeof buf, NULL), QPMI_EPROTO);
    is_int(qpmi_finalize(p), QPMI_EDEAD);
    is_int(finish(), 0);
}

static void t_get_lacks_value(void)
{
    static const step s[] = {
        S_START, {"cmd=get kvsname=kvs_42_0 key=a", "cmd=get_result rc=0 msg=success\n", 0,
                  ACT_NONE},
        END};
    qpmi *p = started(s);
    if (p == NULL)
        return;
    char buf[16];
    is_int(qpmi_get(p, "a", buf, sizeof buf, NULL), QPMI_EPROTO);
    qpmi_finalize(p);
    is_int(finish(), 0);
}

static void t_short_buffer(void)
{
    static const step s[] = {
        S_START,
        {"cmd=get kvsname=kvs_42_0 key=a", "cmd=get_result rc=0 value=0123456789\n", 0,
         ACT_NONE},
        {"cmd=get kvsname=kvs_42_0 key=a", "cmd=get_result rc=0 value=0123456789\n", 0,
         ACT_NONE},
        S_FIN, END};
    qpmi *p = started(s);
    if (p == NULL)
        return;
    char buf[10];
    size_t len = 0;
    memset(buf, '!', sizeof buf);
    is_int(qpmi_get(p, "a", buf, sizeof buf, &len), QPMI_ERANGE);
    is_size(len, 10);
    ok(buf[0] == '!'); /* nothing copied */
    char big[11];
    is_int(qpmi_get(p, "a", big, sizeof big, &len), QPMI_OK);
    is_str(big, "0123456789");
    is_int(qpmi_finalize(p), QPMI_OK);
    is_int(finish(), 0);
}

static void t_put_refused(void)
{
    static const step s[] = {
        S_START,
        {"cmd=put kvsname=kvs_42_0 key=PMI_x value=1", "cmd=put_result rc=1\n", 0, ACT_NONE},
        {"cmd=put kvsname=kvs_42_0 key=y value=1",
         "cmd=put_result rc=-1 msg=duplicate_key\n", 0, ACT_NONE},
        {"cmd=barrier_in", "cmd=barrier_out\n", 0, ACT_NONE},
        S_FIN, END};
    qpmi *p = started(s);
    if (p == NULL)
        return;
    is_int(qpmi_put(p, "PMI_x", "1"), QPMI_ESERVER);
    is_int(qpmi_put(p, "y", "1"), QPMI_ESERVER);
    ok_msg(strstr(qpmi_errmsg(p), "duplicate_key") != NULL, "%s", qpmi_errmsg(p));
    is_int(qpmi_barrier(p), QPMI_OK); /* still usable */
    is_int(qpmi_finalize(p), QPMI_OK);
    is_int(finish(), 0);
}

static void t_barrier_wrong_answer(void)
{
    static const step s[] = {
        S_START, {"cmd=barrier_in", "cmd=put_result rc=0\n", 0, ACT_NONE}, END};
    qpmi *p = started(s);
    if (p == NULL)
        return;
    is_int(qpmi_barrier(p), QPMI_EPROTO);
    ok_msg(strstr(qpmi_errmsg(p), "barrier_out") != NULL, "%s", qpmi_errmsg(p));
    is_int(qpmi_finalize(p), QPMI_EDEAD);
    is_int(finish(), 0);
}

static void t_closed_mid_get(void)
{
    static const step s[] = {
        S_START,
        {"cmd=get kvsname=kvs_42_0 key=a", "cmd=get_result rc=0 value=10.0.0", 0, ACT_CLOSE},
        END};
    qpmi *p = started(s);
    if (p == NULL)
        return;
    char buf[64];
    is_int(qpmi_get(p, "a", buf, sizeof buf, NULL), QPMI_EIO);
    is_int(qpmi_get(p, "a", buf, sizeof buf, NULL), QPMI_EDEAD);
    is_int(qpmi_finalize(p), QPMI_EDEAD);
    is_int(finish(), 0);
}

static void t_server_gone(void)
{
    /* The server is gone before the put: the write may fail (EPIPE, which
     * must not raise SIGPIPE) or the read sees EOF; either way QPMI_EIO. */
    static const step s[] = {S_START, {NULL, NULL, 0, ACT_CLOSE}, END};
    qpmi *p = started(s);
    if (p == NULL)
        return;
    usleep(50 * 1000);
    is_int(qpmi_put(p, "k", "v"), QPMI_EIO);
    is_int(qpmi_put(p, "k", "v"), QPMI_EDEAD);
    is_int(qpmi_abort(p, 1, "x"), QPMI_EIO); /* tries anyway, fails cleanly */
    qpmi_finalize(p);
    is_int(finish(), 0);
}

static void t_timeout(void)
{
    static const step s[] = {S_START, {"cmd=barrier_in", NULL, 0, ACT_HANG}, END};
    qpmi *p = started(s);
    if (p == NULL)
        return;
    qpmi_set_timeout(p, 200);
    is_int(qpmi_barrier(p), QPMI_ETIMEDOUT);
    is_int(qpmi_barrier(p), QPMI_EDEAD);
    qpmi_finalize(p);
    kill_server();
    is_int(finish(), 128 + SIGKILL);
}

static void t_timeout_env(void)
{
    static const step s[] = {{"cmd=init*", NULL, 0, ACT_HANG}, END};
    setenv("QPMI_TIMEOUT_MS", "100", 1);
    start(s, 0, 1);
    qpmi *p = NULL;
    is_int(qpmi_init(&p), QPMI_ETIMEDOUT);
    kill_server();
    is_int(finish(), 128 + SIGKILL);
    setenv("QPMI_TIMEOUT_MS", "junk", 1);
    is_int(qpmi_init(&p), QPMI_EINVAL);
    setenv("QPMI_TIMEOUT_MS", "5000", 1);
}

static void t_abort(void)
{
    static const step s[] = {
        S_START, {"cmd=abort exitcode=7 message=bad_thing:_a_b_", NULL, 0, ACT_NONE},
        {"cmd=abort exitcode=-3", NULL, 0, ACT_NONE}, S_FIN, END};
    qpmi *p = started(s);
    if (p == NULL)
        return;
    is_int(qpmi_abort(p, 7, "bad thing: a=b\n"), QPMI_OK);
    is_int(qpmi_abort(p, -3, NULL), QPMI_OK);
    is_int(qpmi_finalize(p), QPMI_OK);
    is_int(finish(), 0);
}

static void t_bad_args(void)
{
    static const step s[] = {S_START, S_FIN, END};
    qpmi *p = started(s);
    if (p == NULL)
        return;
    char buf[8];
    is_int(qpmi_put(p, NULL, "v"), QPMI_EINVAL);
    is_int(qpmi_put(p, "k", NULL), QPMI_EINVAL);
    is_int(qpmi_put(p, "", "v"), QPMI_EINVAL);
    is_int(qpmi_put(p, "k\\", "v"), QPMI_EINVAL);
    is_int(qpmi_put(p, "k", "\x7f"), QPMI_EINVAL);
    is_int(qpmi_put(p, "k", "tab\there"), QPMI_EINVAL);
    is_int(qpmi_get(p, "k", NULL, 8, NULL), QPMI_EINVAL);
    is_int(qpmi_get(p, "k", buf, 0, NULL), QPMI_EINVAL);
    is_int(qpmi_get(p, "k k", buf, sizeof buf, NULL), QPMI_EINVAL);
    is_int(qpmi_get_rank(p, "k", 2, buf, sizeof buf, NULL), QPMI_EINVAL); /* size is 2 */
    is_int(qpmi_get_rank(p, "k", -1, buf, sizeof buf, NULL), QPMI_EINVAL);
    is_int(qpmi_put(NULL, "k", "v"), QPMI_EINVAL);
    is_int(qpmi_barrier(NULL), QPMI_EINVAL);
    is_int(qpmi_init(NULL), QPMI_EINVAL);
    is_int(qpmi_finalize(NULL), QPMI_OK);
    is_int(qpmi_finalize(p), QPMI_OK); /* nothing was sent by the calls above */
    is_int(finish(), 0);
}

/* ------------------------------------------------------------------------
 * Environments
 * ---------------------------------------------------------------------- */

static void clear_env(void)
{
    unsetenv("PMI_FD");
    unsetenv("PMI_PORT");
    unsetenv("PMI_ID");
    unsetenv("PMI_RANK");
    unsetenv("PMI_SIZE");
}

static int init_with(const char *fd, const char *port, const char *rank, const char *size)
{
    clear_env();
    if (fd)
        setenv("PMI_FD", fd, 1);
    if (port)
        setenv("PMI_PORT", port, 1);
    if (rank)
        setenv("PMI_RANK", rank, 1);
    if (size)
        setenv("PMI_SIZE", size, 1);
    qpmi *p = NULL;
    int rc = qpmi_init(&p);
    if (rc == QPMI_OK)
        qpmi_finalize(p);
    else if (p != NULL)
        rc = 1000; /* must stay NULL */
    clear_env();
    return rc;
}

static void t_bad_env(void)
{
    is_int(init_with("abc", NULL, NULL, NULL), QPMI_EINVAL);
    is_int(init_with("", NULL, NULL, NULL), QPMI_EINVAL);
    is_int(init_with("-1", NULL, NULL, NULL), QPMI_EINVAL);
    is_int(init_with("987", NULL, NULL, NULL), QPMI_EINVAL); /* not open */
    is_int(init_with("99999999999", NULL, NULL, NULL), QPMI_EINVAL);
    /* Rank and size are checked before anything is sent on fd 2. */
    is_int(init_with("2", NULL, "4", "4"), QPMI_EINVAL);
    is_int(init_with("2", NULL, "0", "0"), QPMI_EINVAL);
    is_int(init_with("2", NULL, "-1", "4"), QPMI_EINVAL);
    is_int(init_with("2", NULL, "1x", "4"), QPMI_EINVAL);
    is_int(init_with(NULL, "nocolon", NULL, NULL), QPMI_EINVAL);
    is_int(init_with(NULL, ":123", NULL, NULL), QPMI_EINVAL);
    is_int(init_with(NULL, "127.0.0.1:0", NULL, NULL), QPMI_EINVAL);
    is_int(init_with(NULL, "127.0.0.1:70000", NULL, NULL), QPMI_EINVAL);
    is_int(init_with(NULL, "127.0.0.1:port", NULL, NULL), QPMI_EINVAL);
}

static void t_port_refused(void)
{
    /* A port nobody listens on: bind one, close it, connect to it. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (!ok(fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
            getsockname(fd, (struct sockaddr *)&a, &len) == 0))
        return;
    close(fd);
    char port[64];
    snprintf(port, sizeof port, "127.0.0.1:%d", ntohs(a.sin_port));
    is_int(init_with(NULL, port, NULL, NULL), QPMI_EIO);
}

static void t_singleton(void)
{
    clear_env();
    qpmi *p = NULL;
    if (!is_int(qpmi_init(&p), QPMI_OK))
        return;
    is_int(qpmi_is_singleton(p), 1);
    is_int(qpmi_rank(p), 0);
    is_int(qpmi_size(p), 1);
    is_int(qpmi_appnum(p), -1);
    is_int(qpmi_fd(p), -1);
    ok(qpmi_kvsname(p) != NULL && strncmp(qpmi_kvsname(p), "singleton_kvs_", 14) == 0);
    char buf[32];
    is_int(qpmi_get(p, "addr-0", buf, sizeof buf, NULL), QPMI_ENOTFOUND);
    is_int(qpmi_put_rank(p, "addr", "127.0.0.1:5000"), QPMI_OK);
    is_int(qpmi_put(p, "x", "1"), QPMI_OK);
    is_int(qpmi_put(p, "x", "2"), QPMI_OK);
    is_int(qpmi_commit(p), QPMI_OK);
    is_int(qpmi_barrier(p), QPMI_OK);
    is_int(qpmi_get_rank(p, "addr", 0, buf, sizeof buf, NULL), QPMI_OK);
    is_str(buf, "127.0.0.1:5000");
    is_int(qpmi_get(p, "x", buf, sizeof buf, NULL), QPMI_OK);
    is_str(buf, "2");
    is_int(qpmi_get(p, "x", buf, 1, NULL), QPMI_ERANGE);
    for (int i = 0; i < 100; i++) { /* grow the local space */
        char k[16];
        snprintf(k, sizeof k, "k%d", i);
        is_int(qpmi_put(p, k, k), QPMI_OK);
    }
    is_int(qpmi_get(p, "k99", buf, sizeof buf, NULL), QPMI_OK);
    is_str(buf, "k99");
    is_int(qpmi_abort(p, 1, "nobody listens"), QPMI_OK);
    is_int(qpmi_finalize(p), QPMI_OK);
}

/* PMI_PORT: the client connects, sends initack, reads size/rank/debug. */
static void port_case(const step *s, int id, int want_rc, int want_rank, int want_size)
{
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (!ok(lfd >= 0 && bind(lfd, (struct sockaddr *)&a, sizeof a) == 0 && listen(lfd, 4) == 0 &&
            getsockname(lfd, (struct sockaddr *)&a, &len) == 0))
        return;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        alarm(20);
        int c = accept(lfd, NULL, NULL);
        if (c < 0)
            _exit(5);
        close(lfd);
        serve(c, s);
    }
    close(lfd);
    clear_env();
    char b[64];
    snprintf(b, sizeof b, "localhost:%d", ntohs(a.sin_port)); /* resolved by name */
    setenv("PMI_PORT", b, 1);
    snprintf(b, sizeof b, "%d", id);
    setenv("PMI_ID", b, 1);
    qpmi *p = NULL;
    int rc = qpmi_init(&p);
    is_int(rc, want_rc);
    if (rc == QPMI_OK) {
        is_int(qpmi_rank(p), want_rank);
        is_int(qpmi_size(p), want_size);
        ok(qpmi_fd(p) >= 0);
        is_int(qpmi_finalize(p), QPMI_OK);
    } else {
        ok_msg(p == NULL, "%s", qpmi_init_errmsg());
    }
    clear_env();
    int st = 0;
    waitpid(pid, &st, 0);
    is_int(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st), 0);
}

static void t_port(void)
{
    static const step old[] = {
        {"cmd=initack pmiid=1", "cmd=initack\ncmd=set size=3\ncmd=set rank=1\ncmd=set debug=0\n",
         0, ACT_NONE},
        S_START, S_FIN, END};
    port_case(old, 1, QPMI_OK, 1, 3);
    static const step new_[] = {
        {"cmd=initack pmiid=2",
         "cmd=initack rc=0 rank=2 size=5 appnum=0 debug=0\ncmd=set size=5\ncmd=set rank=2\n"
         "cmd=set debug=0\n",
         0, ACT_DRIBBLE},
        S_START, S_FIN, END};
    port_case(new_, 2, QPMI_OK, 2, 5);
}

static void t_port_bad(void)
{
    static const step s1[] = {
        {"cmd=initack pmiid=0", "cmd=initack\ncmd=set size=3\ncmd=set rank=5\ncmd=set debug=0\n",
         0, ACT_NONE},
        END};
    port_case(s1, 0, QPMI_EPROTO, 0, 0);
    static const step s2[] = {
        {"cmd=initack pmiid=0", "cmd=initack\ncmd=set size=3\n", 0, ACT_CLOSE}, END};
    port_case(s2, 0, QPMI_EIO, 0, 0);
    static const step s3[] = {
        {"cmd=initack pmiid=0", "cmd=initack\ncmd=set rank=0\ncmd=set size=1\ncmd=set debug=0\n",
         0, ACT_NONE},
        END};
    port_case(s3, 0, QPMI_EPROTO, 0, 0);
    static const step s4[] = {
        {"cmd=initack pmiid=0", "cmd=initack rc=3 msg=who_are_you\n", 0, ACT_NONE}, END};
    port_case(s4, 0, QPMI_ESERVER, 0, 0);
}

int main(void)
{
    setenv("QPMI_TIMEOUT_MS", "5000", 1); /* no case may hang */
    unsetenv("QPMI_DEBUG");
    subtest("happy_old_style", t_happy_old);
    subtest("happy_new_style_escapes", t_happy_new_escapes);
    subtest("coalesced_answers", t_coalesced);
    subtest("dribbled_answers", t_dribbled);
    subtest("init_garbage_line", t_init_garbage);
    subtest("init_wrong_cmd", t_init_wrong_cmd);
    subtest("init_rc_nonzero", t_init_rc);
    subtest("init_bad_rc", t_init_bad_rc);
    subtest("init_version", t_init_version);
    subtest("maxes_bad", t_maxes_bad);
    subtest("kvsname_appnum_bad", t_kvsname_bad);
    subtest("closed_before_answer", t_closed_early);
    subtest("closed_mid_line", t_closed_mid_line);
    subtest("nul_and_control_bytes", t_nul_and_controls);
    subtest("overlong_line", t_overlong_line);
    subtest("too_many_fields", t_too_many_fields);
    subtest("get_value_too_long", t_get_value_too_long);
    subtest("small_maxes", t_small_maxes);
    subtest("get_not_found", t_get_not_found);
    subtest("get_lacks_value", t_get_lacks_value);
    subtest("short_buffer", t_short_buffer);
    subtest("put_refused", t_put_refused);
    subtest("barrier_wrong_answer", t_barrier_wrong_answer);
    subtest("closed_mid_get", t_closed_mid_get);
    subtest("server_gone", t_server_gone);
    subtest("timeout", t_timeout);
    subtest("timeout_env", t_timeout_env);
    subtest("abort", t_abort);
    subtest("bad_args", t_bad_args);
    subtest("bad_env", t_bad_env);
    subtest("port_refused", t_port_refused);
    subtest("singleton", t_singleton);
    subtest("pmi_port_initack", t_port);
    subtest("pmi_port_bad", t_port_bad);
    return done_testing();
}
