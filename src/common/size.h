/*
 * Sizes as people write them in vshare's settings: "4096", "64k", "8G",
 * "8GiB", "512MB", "1.5T" (binary units). One grammar for the scheduler's
 * config and the shim's environment.
 */
#ifndef VSHARE_SIZE_H
#define VSHARE_SIZE_H

#include <stdint.h>

/* A lower-case "b" may end the size ("512mb"): the shim's environment
 * variables take it; the scheduler's config does not. */
#define VS_SIZE_LOWER_B 0x1u

/* Plain decimals only (no sign, hex, exponent, inf or nan), an optional
 * K/M/G/T (either case), "i", "B". 0 and *out set, or -1. */
int vs_parse_size(const char *s, unsigned flags, uint64_t *out);

#endif
