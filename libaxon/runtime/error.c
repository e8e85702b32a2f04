/* Status names and the per-thread error slot. Per thread rather than per object because many host threads share a
 * device, and each needs the reason for its own last failure (SQLite keeps one per connection for the same reason). */
#include <stdio.h>
#include <stdlib.h>

#include "internal.h"

#define AXON_ERROR_MESSAGE_MAX 1024

static _Thread_local char error_message[AXON_ERROR_MESSAGE_MAX];
static _Thread_local axon_status_t error_status = AXON_OK;

static const char *const status_names[] = {
    "AXON_OK",
    "AXON_ERROR_INVALID_ARG",
    "AXON_ERROR_OUT_OF_MEMORY",
    "AXON_ERROR_NOT_READY",
    "AXON_ERROR_UNSUPPORTED",
    "AXON_ERROR_DEVICE",
    "AXON_ERROR_MISUSE",
    "AXON_ERROR_CONFIG",
    "AXON_ERROR_INTERNAL",
};
_Static_assert(sizeof status_names / sizeof status_names[0] == AXON_STATUS_COUNT,
               "every axon_status_t needs a name");

const char *axon_status_name(axon_status_t s) {
    if ((unsigned)s >= AXON_STATUS_COUNT) return "AXON_STATUS_UNKNOWN";
    return status_names[s];
}

const char *axon_last_error(void) { return error_message; }

axon_status_t axon_last_status(void) { return error_status; }

void axon_clear_error(void) {
    error_status = AXON_OK;
    error_message[0] = '\0';
}

axon_status_t axon_vfail(axon_status_t s, const char *fmt, va_list ap) {
    /* Format into a scratch buffer first: callers may pass axon_last_error() itself as an argument. */
    char buf[AXON_ERROR_MESSAGE_MAX];
    vsnprintf(buf, sizeof buf, fmt, ap);
    snprintf(error_message, sizeof error_message, "%s", buf);
    error_status = s;
    return s;
}

axon_status_t axon_set_error(axon_status_t s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    axon_vfail(s, fmt, ap);
    va_end(ap);
    return s;
}

void axon_assert_fail(const char *expr, const char *file, int line) {
    fprintf(stderr, "libaxon: internal error: assertion `%s' failed at %s:%d\n", expr, file, line);
    fflush(stderr);
    abort();
}

