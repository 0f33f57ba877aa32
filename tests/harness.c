/*
 * harness.c — state and output of the TAP harness (see harness.h).
 *
 * Test-only code: the one place in the tree where global mutable state is
 * tolerated, because a test executable is one single-threaded process.
 */
#include "harness.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HARNESS_MAX_DEPTH 16

/* One level of nesting: the top level, then one per running subtest. */
typedef struct harness_level {
    int count;  /* checks recorded at this level */
    int failed; /* of which failed */
} harness_level;

static harness_level levels[HARNESS_MAX_DEPTH];
static int depth; /* index of the current level */

static void indent(void)
{
    for (int i = 0; i < depth; i++)
        fputs("    ", stdout);
}

/* __FILE__ is often an absolute path; the last component is enough. */
static const char *short_file(const char *file)
{
    const char *slash = strrchr(file, '/');
    return slash ? slash + 1 : file;
}

static int record(int pass, const char *file, int line, const char *fmt,
                  va_list ap)
{
    harness_level *lv = &levels[depth];
    lv->count++;
    if (!pass)
        lv->failed++;
    indent();
    printf("%s %d - ", pass ? "ok" : "not ok", lv->count);
    if (file)
        printf("%s:%d ", short_file(file), line);
    vprintf(fmt, ap);
    putchar('\n');
    fflush(stdout);
    return pass;
}

int harness_ok(int pass, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    record(pass, file, line, fmt, ap);
    va_end(ap);
    return pass;
}

void harness_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    indent();
    fputs("# ", stdout);
    vprintf(fmt, ap);
    putchar('\n');
    fflush(stdout);
    va_end(ap);
}

int harness_is_int(intmax_t got, intmax_t want, const char *file, int line,
                   const char *got_expr, const char *want_expr)
{
    int pass = got == want;
    harness_ok(pass, file, line, "%s == %s", got_expr, want_expr);
    if (!pass) {
        harness_note("     got: %" PRIdMAX, got);
        harness_note("expected: %" PRIdMAX, want);
    }
    return pass;
}

int harness_is_size(uintmax_t got, uintmax_t want, const char *file,
                    int line, const char *got_expr, const char *want_expr)
{
    int pass = got == want;
    harness_ok(pass, file, line, "%s == %s", got_expr, want_expr);
    if (!pass) {
        harness_note("     got: %" PRIuMAX, got);
        harness_note("expected: %" PRIuMAX, want);
    }
    return pass;
}

int harness_is_str(const char *got, const char *want, const char *file,
                   int line, const char *got_expr, const char *want_expr)
{
    int pass = (got == NULL || want == NULL) ? got == want
                                             : strcmp(got, want) == 0;
    harness_ok(pass, file, line, "%s eq %s", got_expr, want_expr);
    if (!pass) {
        harness_note("     got: %s%s%s", got ? "\"" : "",
                     got ? got : "NULL", got ? "\"" : "");
        harness_note("expected: %s%s%s", want ? "\"" : "",
                     want ? want : "NULL", want ? "\"" : "");
    }
    return pass;
}

int harness_subtest(const char *name, void (*fn)(void), const char *file,
                    int line)
{
    const char *only = getenv("HARNESS_ONLY");
    if (depth == 0 && only && *only && strcmp(only, name) != 0)
        return harness_ok(1, NULL, 0, "%s # SKIP not selected by HARNESS_ONLY",
                          name);
    if (depth + 1 >= HARNESS_MAX_DEPTH)
        return harness_ok(0, file, line, "%s: subtests nested too deeply", name);

    depth++;
    levels[depth].count = 0;
    levels[depth].failed = 0;
    harness_note("Subtest: %s", name);
    fn();
    indent();
    printf("1..%d\n", levels[depth].count);
    int pass = levels[depth].failed == 0;
    depth--;
    return harness_ok(pass, NULL, 0, "%s", name);
}

int harness_subtest_both(const char *name, void (*fn)(void), int *flag, const char *on,
                         const char *off, const char *file, int line)
{
    char buf[256];
    *flag = 1;
    snprintf(buf, sizeof buf, "%s (%s)", name, on);
    int a = harness_subtest(buf, fn, file, line);
    *flag = 0;
    snprintf(buf, sizeof buf, "%s (%s)", name, off);
    int b = harness_subtest(buf, fn, file, line);
    return a && b;
}

int harness_failures(void)
{
    return levels[depth].failed;
}

int harness_done_testing(void)
{
    if (depth != 0) {
        harness_note("done_testing() called inside a subtest");
        return 1;
    }
    printf("1..%d\n", levels[0].count);
    if (levels[0].failed)
        printf("# failed %d of %d\n", levels[0].failed, levels[0].count);
    fflush(stdout);
    return levels[0].failed ? 1 : 0;
}
