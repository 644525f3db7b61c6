/*
 * The scheduler client's connection state, shared by the thread and
 * connection handling (client.c) and the messages (client_msg.c). Only
 * the client thread touches it after start.
 */
#ifndef VSHARE_CLIENT_INT_H
#define VSHARE_CLIENT_INT_H

#include <stddef.h>
#include <stdint.h>

#define CLIENT_BACKOFF_MIN_MS 50u
#define CLIENT_BACKOFF_MAX_MS 2000u
#define CLIENT_RBUF           4096u

struct client_conn {
	int      sock;            /* -1 when not connected */
	int      version_dead;    /* protocol mismatch: stay unshared */
	int      version_seen;    /* the mismatch was logged (once) */
	int      warned;          /* the outage was logged */
	uint64_t backoff_ms;
	uint64_t next_try_ms;     /* next connection attempt */
	uint32_t client_id;
	size_t   rlen;
	unsigned char rbuf[CLIENT_RBUF];
};

extern struct client_conn client_c;

/* client.c */
void client_lost(const char *why);

/* client_msg.c */
int  client_send(uint16_t type, const void *payload, uint32_t len);
int  client_hello(void);
/* Attach, footprints, requests and drops of every GPU; returns the
 * longest time in ms the thread may sleep (-1: until woken). */
int  client_work(void);
/* Read what arrived and handle each frame; -1 if the connection ended. */
int  client_read(void);

#endif
