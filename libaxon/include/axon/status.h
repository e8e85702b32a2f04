/* Status codes and error messages.
 *
 * Every libaxon call that can fail returns an axon_status_t; results go out through pointers. When a call fails it
 * also leaves a readable reason in a per-thread slot (axon_last_error), so the caller on that thread can report what
 * went wrong with the device, sizes and state involved. Successful calls do not clear the slot. */
#ifndef AXON_STATUS_H
#define AXON_STATUS_H

#include "axon/export.h"

AXON_EXTERN_C_BEGIN

/* Append only: the values are part of the ABI and the name table is checked against AXON_STATUS_COUNT. */
typedef enum axon_status {
    AXON_OK = 0,
    AXON_ERROR_INVALID_ARG = 1,   /* the caller passed a bad value: NULL, out of range, a foreign pointer */
    AXON_ERROR_OUT_OF_MEMORY = 2, /* device or host memory exhausted, after freeing cached blocks and retrying */
    AXON_ERROR_NOT_READY = 3,     /* a query's answer (work still pending), not a failure */
    AXON_ERROR_UNSUPPORTED = 4,   /* valid request that this device or build cannot do */
    AXON_ERROR_DEVICE = 5,        /* a command failed while it executed; reported at a synchronization point */
    AXON_ERROR_MISUSE = 6,        /* the API contract was broken: double free, destroying what is in use */
    AXON_ERROR_CONFIG = 7,        /* malformed configuration, e.g. an environment variable */
    AXON_ERROR_INTERNAL = 8,      /* a libaxon bug or an unexpected system failure */
    AXON_STATUS_COUNT
} axon_status_t;

/* Static name of a status ("AXON_ERROR_OUT_OF_MEMORY"); never NULL, "AXON_STATUS_UNKNOWN" for bad values. */
AXON_API const char *axon_status_name(axon_status_t s);

/* This thread's message for its last failed call; "" if none. Valid until this thread's next failing call. */
AXON_API const char *axon_last_error(void);

/* This thread's status of its last failed call, AXON_OK if none or after axon_clear_error. */
AXON_API axon_status_t axon_last_status(void);

/* Set this thread's error to s with a printf-style message and return s. For code outside libaxon that runs inside
 * commands (kernels, callbacks) and must say why it failed; the stream reports the message at its next sync. */
AXON_API axon_status_t axon_set_error(axon_status_t s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Forget this thread's last error. Cannot fail. */
AXON_API void axon_clear_error(void);

AXON_EXTERN_C_END

#endif
