/*
 * The scheduler client's connection state, shared by the thread and
 * connection handling (client.c) and the messages (client_msg.c). Only
 * the client thread touches it after start.
 */
#ifndef VSHARE_CLIENT_INT_H
#define VSHARE_CLIENT_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CLIENT_BACKOFF_MIN_MS 50u
#define CLIENT_BACKOFF_MAX_MS 2000u
#define CLIENT_RBUF           4096u
/* A scheduler that accepts a connection and does not answer its HELLO
 * within this time (stopped, hung, or not a scheduler at all) counts as
 * absent: otherwise GPU work would wait for it for ever. */
#define CLIENT_WELCOME_MS     2000u
/* How long one frame may wait for room in the socket: a scheduler that
 * stops reading must not block the client, or an application thread
 * sending its own REQUEST, for ever. */
#define CLIENT_SEND_WAIT_MS   1000
/* A connection that lasted this long after its WELCOME was a working one:
 * its loss restarts the backoff and is reported. A scheduler that welcomes
 * and then drops (or is dropped for) every connection is retried with a
 * growing backoff and reported once. */
#define CLIENT_STABLE_MS      2000u

/*
 * Sending: the client thread and application threads (a REQUEST, see
 * client_request_direct) write frames under client_send_mu; the socket and
 * its generation change only under it too. Reading stays with the client
 * thread.
 */
/* A descriptor of the client and what it was opened on (client_fd.c). */
struct own_fd {
	int   fd;                 /* -1: none */
	dev_t dev;
	ino_t ino;
};

struct client_conn {
	int      sock;            /* -1 when not connected */
	struct own_fd sock_id;    /* sock's identity, set with it */
	unsigned gen;             /* atomic: +1 at each connect and each close
				   * (odd: connected) */
	uint64_t spin_until_ns;   /* atomic: a REQUEST went out; the thread
				   * busy-polls for the GRANT until then */
	int      version_dead;    /* protocol mismatch: stay unshared */
	int      version_seen;    /* the mismatch was logged (once) */
	int      warned;          /* the outage was logged */
	int      welcomed;        /* this connection got its WELCOME */
	uint64_t welcome_ms;      /* when */
	int      back_told;       /* "connected" was logged in this outage */
	uint64_t welcome_by_ms;   /* lost if no WELCOME by then */
	uint64_t backoff_ms;
	uint64_t next_try_ms;     /* next connection attempt */
	uint32_t client_id;
	size_t   rlen;
	unsigned char rbuf[CLIENT_RBUF];
};

extern struct client_conn client_c;
extern pthread_mutex_t client_send_mu;

/* client_fd.c: remember fd (-1: none), check that the number still names
 * it, close it only if it does. */
void own_fd_take(struct own_fd *o, int fd);
int  own_fd_valid(const struct own_fd *o);
void own_fd_close(struct own_fd *o);

/* client.c */
void client_lost(const char *why);
/* The WELCOME came: from here on the connection serves the GPUs. */
void client_welcomed(void);

/* client_msg.c */
/* Send one frame on the connection of generation gen (0: the current
 * one); -1 if it failed or the connection is gone. */
int  client_send_on(unsigned gen, uint16_t type, const void *payload,
		    uint32_t len);
int  client_send(uint16_t type, const void *payload, uint32_t len);
/* Replace the socket (fd, or -1 after closing it). */
void client_set_sock(int fd);
int  client_hello(void);
/* Attach, footprints, requests and drops of every GPU; returns the
 * longest time in ms the thread may sleep (-1: until woken). */
int  client_work(void);
/* Read what arrived and handle each frame; -1 if the connection ended. */
int  client_read(void);

#endif
