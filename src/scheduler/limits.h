/*
 * Limits that keep one peer, or one user, from using up what every user
 * of the socket shares: connections, GPU records, queues, the daemon's
 * memory and its loop. One list, with units and ranges, so that the
 * defaults, the checks and the documentation (docs/scheduler.md) agree.
 * Every peer in the socket's group may be hostile; uid 0 and the admin
 * group are exempt from the per-uid limits (they can stop the daemon
 * anyway), not from the per-connection ones.
 */
#ifndef VSHARE_LIMITS_H
#define VSHARE_LIMITS_H

#include <stdint.h>

/* X(name, default, min, max, unit, what) */
#define LIMITS_LIST(X) \
	X(uid_conns,    256,       1, 262144,     "connections", \
	  "connections of one uid at once") \
	X(uid_gpus,     64,        1, 1024,       "GPUs", \
	  "distinct GPUs the clients of one uid attach") \
	X(uid_requests, 4096,      1, 1u << 20,   "requests", \
	  "requests of one uid waiting at once") \
	X(hello_ms,     10000,     100, 3600000,  "ms", \
	  "time a new or unregistered connection has to send a whole frame") \
	X(frame_ms,     5000,      100, 3600000,  "ms", \
	  "time a peer has to finish a frame it started") \
	X(outq_pause,   16384,     4096, 1u << 20, "bytes", \
	  "bytes queued to a peer before its requests are no longer read") \
	X(outq_max,     2u << 20,  1u << 20, 64u << 20, "bytes", \
	  "bytes queued to one peer before it is disconnected") \
	X(outq_total,   32u << 20, 2u << 20, 1u << 30, "bytes", \
	  "bytes queued to all peers before a peer that adds to it is " \
	  "disconnected")

struct limits {
#define LIMITS_FIELD(name, def, lo, hi, unit, what) uint32_t name;
	LIMITS_LIST(LIMITS_FIELD)
#undef LIMITS_FIELD
};

static inline void limits_defaults(struct limits *l)
{
#define LIMITS_DEF(name, def, lo, hi, unit, what) l->name = (def);
	LIMITS_LIST(LIMITS_DEF)
#undef LIMITS_DEF
}

#endif
