/*
 * The scheduler client, as the shim's top sees it: one background thread
 * that owns the connection to vshare-scheduler and the protocol state of
 * every GPU, and opens and takes back the gates (gate_ctl.h). It reaches
 * CUDA only through the callbacks below, so its tests can drive it with
 * fakes.
 */
#ifndef VSHARE_CLIENT_H
#define VSHARE_CLIENT_H

#include <stdint.h>

/* The swap-in a grant cost, as the granted callback measured it. */
struct client_swap {
	uint64_t us;      /* microseconds */
	uint64_t bytes;   /* moved to the GPU; 0: no swap-in happened */
};

/* What the client needs from the layers above it. Each is called on the
 * client thread, never from an application thread; none may be NULL. */
struct client_callbacks {
	void *arg;
	/* dev was granted to this process, which did not hold it (flags:
	 * VS_GRANTF_*). Called before the gate opens, so what it does comes
	 * before the first kernel (the bulk swap-in of an oversubscribed
	 * grant). It fills *swap (zeroed by the caller) with what a swap-in
	 * cost, which the client reports to a scheduler that takes it
	 * (VS_MSG_SWAPPED, protocol version 2). */
	void (*granted)(void *arg, int dev, uint32_t flags,
			struct client_swap *swap);
	/* dev was taken from this process (gate_take: no call in flight, the
	 * device synchronized), before RELEASED goes out. swap_out: the
	 * memory should move to the host now (VSHARE_SWAP_OUT=eager); what
	 * that cost goes in *swap (zeroed by the caller), which the client
	 * reports (VS_MSG_USAGE, protocol version 9). */
	void (*released)(void *arg, int dev, int swap_out,
			 struct client_swap *swap);
	/* This process's footprint on dev, in bytes. */
	void (*footprint)(void *arg, int dev, uint64_t *managed,
			  uint64_t *pinned);
	/* The scheduler's memory limit for this process's user (bytes per
	 * GPU, 0: none), from its VS_MSG_POLICY (protocol version 3): at
	 * registration and after each reload. Kept while the scheduler is
	 * away: an outage does not lift the admin's limit. */
	void (*policy)(void *arg, uint64_t mem_limit);
};

/* Called once from the shim's init, after gate_init and shim_node_read:
 * reads the client's settings (socket, label, idle time, swap mode,
 * VSHARE_REQUIRE_SCHEDULER, footprint step; the node's client
 * configuration over the environment for the socket and require). The
 * thread starts at the first client_prepare, client_policy_wait or
 * client_wanted. */
void client_init(const struct client_callbacks *cb);

/*
 * gate_events.wanted: a thread waits at dev's gate. Sets dev's wanted bit
 * and wakes the client thread (starting it the first time). Takes no lock
 * of the client's and waits for nothing: the wake-up channel is written
 * without a mutex.
 */
void client_wanted(void *arg, int dev);

/*
 * The process opened a context on dev, whose gate knows the GPU
 * (gate_prepare): start the client thread if it does not run yet, so that
 * connecting, HELLO, ATTACH and the footprint are done before the first
 * submission. The first call for a GPU waits (CLIENT_PREPARE_WAIT_MS at
 * most) until the scheduler confirmed the ATTACH on a connection with a
 * lock page, or settled without one, so that the first submission can
 * take a free GPU at once. Asks for no lock: nothing is requested until
 * a thread waits at the gate.
 */
void client_prepare(int dev);

/*
 * Before the process's first allocation: start the client thread and
 * wait (at most CLIENT_WELCOME_MS and a little) until the scheduler's
 * policy is known, or known to be absent (no scheduler, or one older
 * than protocol version 3), so that the admin's memory limit binds the
 * first allocation too. Later calls return at once.
 */
void client_policy_wait(void);

/* The memory layer changed this process's footprint on dev (any thread,
 * no lock): the client reports it when it moved enough. */
void client_footprint_changed(int dev);

/* Whether the client thread runs (tests). */
int  client_started(void);

/* Process exit, after gate_shutdown: stop the thread, waiting for it a
 * bounded time (it may be inside a synchronize that the exiting driver
 * never finishes). */
void client_stop(void);

/* pthread_atfork child handler: the child has no client thread; drop the
 * inherited connection and protocol state without touching the parent's. */
void client_atfork_child(void);

#endif
