/*
 * harness.h — a small TAP test harness for quay's unit tests.
 *
 * Every check prints one TAP line and returns 1 (pass) or 0 (fail), so a
 * test can stop early when continuing makes no sense:
 *
 *     static void test_create(void)
 *     {
 *         quay_engine *e = NULL;
 *         if (!is_int(quay_engine_new(&cfg, &e), QUAY_OK))
 *             return;
 *         ok(quay_engine_size(e) == 1);
 *         quay_engine_free(e);
 *     }
 *
 *     int main(void)
 *     {
 *         subtest("create", test_create);
 *         return done_testing();
 *     }
 *
 * Output ("ok 3 - test_x.c:42 expr", "not ok ..." followed by "# " lines
 * saying what was got and expected). Subtests nest; their lines are
 * indented four spaces per level and numbered from 1; a subtest passes
 * when every check inside it passed. done_testing() prints the plan and
 * returns the process exit status: 0 if all passed, 1 otherwise.
 *
 * Setting the environment variable HARNESS_ONLY=<name> runs only the
 * top-level subtest of that name (others are reported as skipped).
 *
 * The state lives in tests/harness.c, which every test executable links
 * (tests/CMakeLists.txt), so any number of .c files in one test can use
 * these macros. Not thread-safe; quay's tests are single-threaded.
 */
#ifndef QUAY_TEST_HARNESS_H
#define QUAY_TEST_HARNESS_H

#include <stdint.h>

#if defined(__GNUC__) || defined(__clang__)
#define HARNESS_PRINTF(fmt_idx, arg_idx) \
    __attribute__((format(printf, fmt_idx, arg_idx)))
#else
#define HARNESS_PRINTF(fmt_idx, arg_idx)
#endif

/** Record a check. `fmt` describes it. Returns `pass`. */
int harness_ok(int pass, const char *file, int line, const char *fmt, ...)
    HARNESS_PRINTF(4, 5);
/** Integer equality (any integer type up to intmax_t). */
int harness_is_int(intmax_t got, intmax_t want, const char *file, int line,
                   const char *got_expr, const char *want_expr);
/** Unsigned equality (size_t, uint64_t, ...). */
int harness_is_size(uintmax_t got, uintmax_t want, const char *file,
                    int line, const char *got_expr, const char *want_expr);
/** String equality; NULL equals only NULL. */
int harness_is_str(const char *got, const char *want, const char *file,
                   int line, const char *got_expr, const char *want_expr);
/** Print a "# " comment line at the current nesting level. */
void harness_note(const char *fmt, ...) HARNESS_PRINTF(1, 2);
/** Run `fn` as a nested test; it counts as one check of the caller. */
int harness_subtest(const char *name, void (*fn)(void), const char *file,
                    int line);
/** Run `fn` as two subtests: with *flag 1, named "<name> (on)", then
 *  with *flag 0, "<name> (off)" (e.g. the oracle alongside or not). */
int harness_subtest_both(const char *name, void (*fn)(void), int *flag, const char *on,
                         const char *off, const char *file, int line);
/** Print the plan; return 0 if every top-level check passed, else 1. */
int harness_done_testing(void);
/** Number of failed checks so far at the current nesting level. */
int harness_failures(void);

#define ok(cond) harness_ok(!!(cond), __FILE__, __LINE__, "%s", #cond)
#define ok_msg(cond, ...) harness_ok(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

/** A failed check inside a forked child, which has no TAP stream of its
 *  own: a message on stderr and `fail` set (the child's exit reports it).
 *  The caller includes <stdio.h> and <unistd.h>. */
#define HARNESS_CHILD_CHECK(fail, cond)                                                   \
    do {                                                                                  \
        if (!(cond)) {                                                                    \
            fprintf(stderr, "  check failed (pid %d): %s (%s:%d)\n", (int)getpid(), #cond, \
                    __FILE__, __LINE__);                                                  \
            (fail) = 1;                                                                   \
        }                                                                                 \
    } while (0)
#define is_int(got, want)                                                   \
    harness_is_int((intmax_t)(got), (intmax_t)(want), __FILE__, __LINE__,  \
                   #got, #want)
#define is_size(got, want)                                                  \
    harness_is_size((uintmax_t)(got), (uintmax_t)(want), __FILE__,         \
                    __LINE__, #got, #want)
#define is_str(got, want)                                                   \
    harness_is_str((got), (want), __FILE__, __LINE__, #got, #want)
#define note(...) harness_note(__VA_ARGS__)
#define subtest(name, fn) harness_subtest((name), (fn), __FILE__, __LINE__)
#define subtest_both(name, fn, flag, on, off) \
    harness_subtest_both((name), (fn), (flag), (on), (off), __FILE__, __LINE__)
#define done_testing() harness_done_testing()

/* Sanitizer builds run several times slower: tests take shorter lists
 * there (memory errors show on few runs; plain builds cover everything). */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QUAY_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define QUAY_TEST_SANITIZED 1
#endif

#endif /* QUAY_TEST_HARNESS_H */
