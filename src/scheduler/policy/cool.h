/*
 * The cool-down of uids whose connections are refused in bursts
 * (cool.c): plain data, no I/O, kept in the daemon's struct srv.
 */
#ifndef VSHARE_COOL_H
#define VSHARE_COOL_H

#include <stdint.h>

/* A uid refused COOL_BURST times within COOL_WINDOW_MS has its new
 * connections closed at once for COOL_MS. A shim retries a refused
 * connection after 50 ms at the soonest, doubling (docs/gate.md), so a
 * program never comes near the burst; a loop that connects as fast as
 * it can reaches it within milliseconds. */
#define COOL_BURST      64u
#define COOL_WINDOW_MS  1000u
#define COOL_MS         5000u
/* uids tracked at once; past them the least recent gives its slot. */
#define COOL_SLOTS      64u

struct cool_slot {
	uint32_t uid;
	uint32_t n;          /* refusals in the window */
	uint64_t window;     /* its start, ms */
	uint64_t until;      /* cooling down until then, ms (0: not) */
};

struct cool {
	struct cool_slot slot[COOL_SLOTS];
	unsigned used;
};

/* Charge a refused connection of uid at now (ms): 1 when it starts the
 * uid's cool-down (to be logged once), else 0. */
int cool_refused(struct cool *c, uint32_t uid, uint64_t now);
/* Is uid cooling down at now? Its new connections are then closed at
 * once. Root and the admin group are never charged (conn.c). */
int cool_active(struct cool *c, uint32_t uid, uint64_t now);

#endif
