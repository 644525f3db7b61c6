/*
 * Sizes as people write them in vshare's settings: "4096", "64k", "8G",
 * "8GiB", "512MB", "1.5T" (binary units). One grammar for the scheduler's
 * config and the shim's environment.
 */
#ifndef VSHARE_SIZE_H
#define VSHARE_SIZE_H

#include <stddef.h>
#include <stdint.h>

/* A lower-case "b" may end the size ("512mb"): the shim's environment
 * variables take it; the scheduler's config does not. */
#define VS_SIZE_LOWER_B 0x1u

/* For a memory limit: a number with no unit at all, from 1 to 1 MiB - 1,
 * is refused (-2). No GPU program runs within a few kilobytes, so "8" is
 * a size whose unit was left out ("8G" meant), which as 8 bytes would
 * fail the program's first allocation. 0 and plain byte counts of 1 MiB
 * and more stay valid, and so does "8B", bytes said explicitly. */
#define VS_SIZE_NEED_UNIT 0x2u
#define VS_SIZE_MIN_PLAIN (1024u * 1024u)

/* Plain decimals only (no sign, hex, exponent, inf or nan), an optional
 * K/M/G/T (either case), "i", "B"; a fraction only with a unit ("1.5G",
 * not "1.5B"). 0 and *out set; -1 when not a size;
 * -2 for a small size with no unit under VS_SIZE_NEED_UNIT. */
int vs_parse_size(const char *s, unsigned flags, uint64_t *out);

/* Why vs_parse_size refused text (its -1 or -2), in the words every
 * program of vshare says it with, so that the scheduler's config, the
 * shim, vsharectl and the cluster plugins never say it differently:
 *   '8': a size needs a unit (K, M, G, T); a bare number below 1 MiB is
 *   refused, write 8G or 8B
 *   '3X': not a size (like 8G, 512M or 1.5T; bytes like 4096B)
 * The caller puts what was refused in front ("--shard-mem ", "capacity:
 * "). Written into out (n bytes; VS_SIZE_ERR_LEN always holds it, the
 * value shown cut to 64 bytes); returns out. */
#define VS_SIZE_ERR_LEN 256
char *vs_size_error(char *out, size_t n, const char *text, int rc);

#endif
