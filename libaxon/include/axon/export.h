/* AXON_API marks the symbols libaxon exports; everything else is built with hidden visibility. */
#ifndef AXON_EXPORT_H
#define AXON_EXPORT_H

#if defined(__GNUC__)
#define AXON_API __attribute__((visibility("default")))
#else
#define AXON_API
#endif

#ifdef __cplusplus
#define AXON_EXTERN_C_BEGIN extern "C" {
#define AXON_EXTERN_C_END }
#else
#define AXON_EXTERN_C_BEGIN
#define AXON_EXTERN_C_END
#endif

#endif
