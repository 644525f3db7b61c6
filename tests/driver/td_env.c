/*
 * Device configuration from the environment:
 *   VSHARE_TD_DEVICES         number of devices (default 1, at most 16)
 *   VSHARE_TD_MEM             memory per device, e.g. 16G, 512M (default 16G)
 *   VSHARE_TD_NAME            device name
 *   VSHARE_TD_DRIVER_VERSION  cuDriverGetVersion's answer (default 13000)
 *   CUDA_VISIBLE_DEVICES      indices or UUIDs, honoured as the driver does
 * UUIDs are fixed per configured index: bytes 76 73 74 64 ("vstd"), then
 * zeros, then the index big-endian in the last four bytes.
 */
#include "td.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TD_DEFAULT_MEM (16ull << 30)
#define TD_DEFAULT_NAME "vshare test device"

/* "16G", "512M", "1048576", "1.5G" -> bytes. Returns 0 on success. */
int td_parse_size(const char *str, size_t *out)
{
	char *end;
	double v;
	double mult = 1;

	if (!str || !*str)
		return -1;
	v = strtod(str, &end);
	if (end == str || v < 0)
		return -1;
	switch (toupper((unsigned char)*end)) {
	case 'K': mult = 1024.0; end++; break;
	case 'M': mult = 1024.0 * 1024; end++; break;
	case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
	case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
	default: break;
	}
	if (*end == 'i' || *end == 'B' || *end == 'b')
		end++;
	if (*end == 'B')
		end++;
	if (*end)
		return -1;
	*out = (size_t)(v * mult);
	return 0;
}

static void make_uuid(CUuuid *u, int index)
{
	memset(u, 0, sizeof(*u));
	memcpy(u->bytes, "vstd", 4);
	u->bytes[12] = (char)((index >> 24) & 0xff);
	u->bytes[13] = (char)((index >> 16) & 0xff);
	u->bytes[14] = (char)((index >> 8) & 0xff);
	u->bytes[15] = (char)(index & 0xff);
}

static void format_uuid(const CUuuid *u, char *buf, size_t len)
{
	const unsigned char *b = (const unsigned char *)u->bytes;

	snprintf(buf, len,
		 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9],
		 b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* One CUDA_VISIBLE_DEVICES entry -> configured index, or -1. An entry is a
 * decimal index or a (prefix of a) "GPU-..." UUID. */
static int visible_entry(const char *tok, int nconf)
{
	char buf[64];
	char *end;
	long v;
	int i;
	int found = -1;

	while (isspace((unsigned char)*tok))
		tok++;
	if (strncmp(tok, "GPU-", 4) == 0) {
		for (i = 0; i < nconf; i++) {
			CUuuid u;

			make_uuid(&u, i);
			format_uuid(&u, buf, sizeof(buf));
			if (strncmp(buf, tok, strlen(tok)) == 0) {
				if (found >= 0)
					return -1;	/* ambiguous prefix */
				found = i;
			}
		}
		return found;
	}
	v = strtol(tok, &end, 10);
	if (end == tok || v < 0 || v >= nconf)
		return -1;
	return (int)v;
}

/* Fills map[] with the configured index of each visible device; returns
 * the number of visible devices. Parsing stops at the first invalid entry,
 * as the real driver does. */
static int visible_map(int nconf, int *map)
{
	const char *env = getenv("CUDA_VISIBLE_DEVICES");
	char buf[1024];
	char *save = NULL;
	char *tok;
	int n = 0;
	int i;

	if (!env) {
		for (i = 0; i < nconf; i++)
			map[i] = i;
		return nconf;
	}
	snprintf(buf, sizeof(buf), "%s", env);
	for (tok = strtok_r(buf, ",", &save); tok && n < TD_MAX_DEVICES;
	     tok = strtok_r(NULL, ",", &save)) {
		int idx = visible_entry(tok, nconf);
		int dup = 0;

		if (idx < 0)
			break;
		for (i = 0; i < n; i++)
			dup |= map[i] == idx;
		if (dup)
			break;
		map[n++] = idx;
	}
	return n;
}

void td_env_load(struct td_state *s)
{
	const char *e;
	int nconf = 1;
	size_t mem = TD_DEFAULT_MEM;
	int map[TD_MAX_DEVICES];
	int i;

	if ((e = getenv("VSHARE_TD_DEVICES")) && *e) {
		nconf = atoi(e);
		if (nconf < 0)
			nconf = 0;
		if (nconf > TD_MAX_DEVICES)
			nconf = TD_MAX_DEVICES;
	}
	if ((e = getenv("VSHARE_TD_MEM")) && td_parse_size(e, &mem) != 0)
		mem = TD_DEFAULT_MEM;
	s->driver_version = 13000;
	if ((e = getenv("VSHARE_TD_DRIVER_VERSION")) && *e)
		s->driver_version = atoi(e);
	s->ndev = visible_map(nconf, map);
	for (i = 0; i < s->ndev; i++) {
		struct td_device *d = &s->dev[i];

		d->phys = map[i];
		e = getenv("VSHARE_TD_NAME");
		snprintf(d->name, sizeof(d->name), "%s",
			 e && *e ? e : TD_DEFAULT_NAME);
		make_uuid(&d->uuid, map[i]);
		d->total = mem;
	}
}
