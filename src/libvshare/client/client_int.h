/*
 * The scheduler client's state, shared by the thread and connection
 * handling (client.c), the messages (client_msg.c) and the per-GPU work
 * (client_work.c). Only the client thread touches it after start, but for
 * the atomic bits that other threads set (client_gpu.wanted, fp_dirty),
 * and a waiting thread's REQUEST (client_gpu.fast, client_work.c).
 */
#ifndef VSHARE_CLIENT_INT_H
#define VSHARE_CLIENT_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "client.h"
#include "gate_ctl.h"
#include "vshare/proto.h"

#define CLIENT_BACKOFF_MIN_MS 50u
#define CLIENT_BACKOFF_MAX_MS 2000u
#define CLIENT_RBUF           4096u
/* A scheduler that accepts a connection and does not answer its HELLO
 * within this time (stopped, hung, or not a scheduler at all) counts as
 * absent: otherwise GPU work would wait for it for ever. */
#define CLIENT_WELCOME_MS     2000u
/* How long one frame may wait for room in the socket: a scheduler that
 * stops reading must not block the client thread for ever. */
#define CLIENT_SEND_WAIT_MS   1000
/* A connection that lasted this long after its WELCOME was a working one:
 * its loss restarts the backoff and is reported. A scheduler that welcomes
 * and then drops (or is dropped for) every connection is retried with a
 * growing backoff and reported once. */
#define CLIENT_STABLE_MS      2000u
/* A full listen queue (connect says EAGAIN) is a busy scheduler: GPU
 * work waits, and each further try waits in the queue for
 * CLIENT_BUSY_WAIT_MS at most (client_connect.c); full for
 * CLIENT_BUSY_FOR_MS, it counts as no scheduler. Shorter than the wait
 * of an allocation for the first connection's outcome
 * (client_policy_wait), so that a scheduler that stays busy settles it;
 * the wait of one try is short beside the 300 ms that client_stop
 * gives the thread. */
#define CLIENT_BUSY_WAIT_MS   50u
#define CLIENT_BUSY_FOR_MS    3000u

/* A descriptor of the client and what it was opened on (client_fd.c). */
struct own_fd {
	int   fd;                 /* -1: none */
	dev_t dev;
	ino_t ino;
};

struct client_conn {
	int      sock;            /* -1 when not connected */
	struct own_fd sock_id;    /* sock's identity, set with it */
	uint64_t spin_until_ns;   /* a REQUEST went out; the thread
				   * busy-polls for the GRANT until then */
	uint16_t version;         /* spoken on the connection (0: ours);
				   * lower after an older scheduler refused
				   * ours (client_msg.c: on_version) */
	int      downgrade;       /* the connection ends to be made again
				   * at once in `version`: no outage */
	int      version_dead;    /* protocol mismatch: stay unshared */
	int      version_seen;    /* the mismatch was logged (once) */
	int      warned;          /* the outage was logged */
	int      welcomed;        /* this connection got its WELCOME */
	int      welcome_new;     /* a WELCOME was read, not yet acted on */
	uint64_t welcome_ms;      /* when */
	int      back_told;       /* "connected" was logged in this outage */
	uint64_t welcome_by_ms;   /* lost if no WELCOME by then */
	uint64_t backoff_ms;
	uint64_t next_try_ms;     /* next connection attempt */
	int      busy;            /* connect said EAGAIN, and no connect has
				   * worked since (client_connect.c) */
	uint64_t busy_since_ms;   /* the first EAGAIN of them */
	uint32_t client_id;
	int      refusals;         /* GPUs refused on this connection */
	char     refusal[VS_ERRMSG_MAX]; /* the scheduler's refusal of the
				   * connection itself (max_clients,
				   * uid_conns), told when it closes */
	int32_t  refusal_code;    /* its code, VS_E_FULL or VS_E_LIMIT */
	int      full;            /* refused for a full table (VS_E_FULL)
				   * since the last WELCOME: GPU work
				   * waits, said once */
	struct vs_lock_page *lock; /* the connection's state page (read
				   * only), or NULL (client_lock.c) */
	struct vs_lock_words *lock_words; /* its words, set before lock */
	int      lock_bound;       /* atomic: the gate's priority reads them */
	uint64_t lock_token;      /* what this client writes into a word */
	uint64_t unshared_ms;     /* running unshared since then (0: not),
				   * told at the next WELCOME (client_use.c) */
	uint32_t unshared_why;    /* VS_UNSHARED_* */
	size_t   rlen;
	unsigned char rbuf[CLIENT_RBUF];
};

extern struct client_conn client_c;

/* Settings read from the environment once, at client_init. */
struct client_conf {
	char     socket_path[108];
	char     label[VS_LABEL_MAX + 1];
	uint64_t idle_ms;
	int      idle_learn;       /* VSHARE_IDLE_LEARN: the gap from the
				    * program's rhythm */
	uint32_t klass;            /* VSHARE_CLASS, VS_CLASS_* */
	int      klass_told;       /* a class refused was said once */
	int      interactive;      /* the class asked for, and the
				    * scheduler's policy gives it */
	int      swap_eager;
	int      require_sched;    /* in force: require_local, or the
				    * scheduler's policy said so */
	int      require_local;    /* the node's client configuration or
				    * VSHARE_REQUIRE_SCHEDULER */
	uint64_t footprint_step;
	int      wait_notice;      /* VSHARE_WAIT_NOTICE: tell long waits */
	uint64_t wait_notice_ms;   /* VSHARE_WAIT_NOTICE_MS: how long is long */
	int      no_lock_page;     /* VSHARE_LOCK_PAGE=0: always REQUEST */
};

/* One wait for a GPU, as the user is told of it (client_wait.c). */
struct client_wait {
	uint64_t since_ms;         /* the REQUEST went out */
	uint64_t since_ns;         /* the same, finer, for the debug log */
	uint64_t waiter_ms;        /* a thread was first seen waiting */
	int      asked;            /* past the threshold: asked (or chose not
				    * to) once in this wait */
	int      told;             /* the "waiting" line was printed */
};

/* What a holder did with a GPU, not yet reported (client_use.c). */
struct client_use {
	uint64_t at_ms;            /* the last look while holding, 0: not
				    * holding */
	uint64_t sent_ms;          /* the last report */
	uint64_t busy_ms, idle_ms; /* held since the last report */
	uint64_t swapout_bytes, swapout_us; /* swap-outs since then */
};

/* What the client knows and owes the scheduler about one GPU. */
struct client_gpu {
	int      known;            /* the gate learned the device (below) */
	uint8_t  uuid[VS_UUID_LEN];
	uint64_t total_mem;
	int      attached;         /* ATTACH sent on this connection */
	int      requested;        /* REQUEST sent, no GRANT yet */
	int      held;             /* granted, RELEASED not yet sent */
	uint32_t drop;             /* pending VS_DROP_* reason, 0 if none */
	uint64_t drop_ns;          /* when that drop came (gate_now_ns) */
	int      want;             /* request even with no waiter (reconnect) */
	int      fp_valid;         /* a footprint was sent on this connection */
	uint64_t fp_managed, fp_pinned;
	struct client_swap swap;   /* the swap-in of the current grant, to be
				    * reported (bytes 0: nothing to report) */
	int      fp_dirty;         /* atomic: footprint changed since sent */
	int      wanted;           /* atomic: a thread waits at the gate
				    * (set by client_wanted, taken by the
				    * client thread) */
	int      refused;          /* the scheduler refused this GPU on this
				    * connection (VS_E_LIMIT, VS_E_FULL): it
				    * runs unshared, or with
				    * VSHARE_REQUIRE_SCHEDULER waits until
				    * retry_ms and asks again */
	uint64_t retry_ms;
	uint64_t retry_step_ms;    /* the next wait after a refusal */
	int      fast;             /* atomic: CLIENT_FAST_* (client_work.c) */
	int      lock_ok;          /* atomic: the scheduler confirmed the
				    * ATTACH (its MODE): the lock page may
				    * be used */
	int      prep_waited;      /* atomic: a context open waited for it */
	int      lock_slot;        /* the page's slot for it, + 1 (0: not
				    * looked up) */
	int      took;             /* taken through the page: TOOK to send */
	uint64_t took_ms;          /* atomic: when a waiting thread took it
				    * (gate_now_ms), for client_use.c */
	int      page_skip;        /* atomic: the scheduler refused a take:
				    * the next acquisition goes through
				    * REQUEST (cleared by the GRANT) */
	int      quiet;            /* the pending drop gives back a take
				    * the scheduler refused: no RELEASED */
	int      resync;           /* CLIENT_RESYNC_*: the scheduler's state
				    * and ours differ (client_msg.c) */
	uint64_t resync_ms;        /* no resynchronisation before then */
	uint64_t attach_ms;        /* when ATTACH went out */
	struct client_wait wait;
	struct client_use use;
};

/* A resynchronisation with the scheduler (client_msg.c, docs/gate.md):
 * ASK, the next REQUEST is one (it waits for resync_ms); RELEASE, a
 * RELEASED goes before it. At most one per GPU in CLIENT_RESYNC_MS, so
 * that a scheduler that answers every frame with an error cannot make
 * the client loop. */
#define CLIENT_RESYNC_ASK     1
#define CLIENT_RESYNC_RELEASE 2
#define CLIENT_RESYNC_MS      100u

/* Who may send this GPU's REQUEST (client_work.c: the fast request). */
enum {
	CLIENT_FAST_OFF,     /* the client thread */
	CLIENT_FAST_READY,   /* a waiting thread may claim it */
	CLIENT_FAST_CLAIMED, /* a waiting thread is sending it */
	CLIENT_FAST_SENT,    /* sent, for the client thread to adopt */
	CLIENT_FAST_FAILED,  /* the send failed: the connection is lost */
	CLIENT_FAST_TOOK,    /* taken through the lock page, the gate open */
};

struct client_global {
	int      stop_asked;       /* atomic: client_stop; the thread ends */
	struct client_conf conf;
	const struct client_callbacks *cb;
	struct client_gpu gpu[GATE_MAX_GPUS];
	int      fast_sent;        /* atomic: REQUESTs that waiting threads
				    * sent (client_work.c), for tests */
	int      fast_took;        /* atomic: GPUs that waiting threads took
				    * through the lock page, for tests */
};

extern struct client_global client_g;

/* client_conf.c */
void client_conf_read(struct client_conf *c);
/* client_settle.c: the first connection attempt's outcome is known (client.h:
 * client_policy_wait); waiting for it at most ms. */
void client_settle_mark(void);
void client_settle_policy(void);   /* mark, a policy heard */
int  client_settled(void);
void client_settle_wait(unsigned ms);
/* The CLOCK_REALTIME time ms from now, for pthread_cond_timedwait. */
struct timespec;
void client_deadline(struct timespec *ts, unsigned ms);
/* A GPU's ATTACH was confirmed: wake client_settle_gpu_wait. */
void client_settle_notify(void);
/* Wait at most ms until dev may be taken through the lock page, or the
 * first connection attempt settled without a page. */
void client_settle_gpu_wait(int dev, unsigned ms);
void client_settle_atfork_child(void);

/* client_lock.c: the lock page. fd: a descriptor that came with a
 * frame; map: the LOCK_PAGE frame; drop: the connection ends (client
 * thread, no waiting thread inside take); take: the thread that may send
 * dev's REQUEST (the client thread, or a waiting thread that claimed it)
 * swaps its word; 1 if it took the GPU, whose gate is then open. */
void client_lock_fd(int fd);
void client_lock_map(const struct vs_lock_info *m);
void client_lock_drop(void);
/* Bind dev's gate to its slot's priority share and word (gate_ctl.h,
 * gate_prio_bind) once the scheduler has read its ATTACH. */
void client_lock_bind(int dev, struct client_gpu *g);
void client_lock_atfork_child(void);
int  client_lock_take(int dev, struct client_gpu *g);
/* The connection has its pages, or they may still come (a scheduler of
 * version 5 sends them before the MODE of any ATTACH). */
int  client_lock_expected(void);
/* Tests only (tests/gate): called by a take between its swap and its
 * second read of the state page, so that a test can close the GPU right
 * there. Weak and hidden: nothing in libvshare.so defines it (it is
 * NULL there), and no program can. */
void client_lock_test_swapped(int dev) __attribute__((weak, visibility("hidden")));

/* client_fd.c: remember fd (-1: none), check that the number still names
 * it, close it only if it does. */
void own_fd_take(struct own_fd *o, int fd);
int  own_fd_valid(const struct own_fd *o);
/* fstat through the system call (glibc's symbol is too new). */
struct stat;
int  client_fstat(int fd, struct stat *st);
void own_fd_close(struct own_fd *o);

/* The protocol version the client speaks now. */
static inline uint16_t client_version(void)
{
	return client_c.version ? client_c.version : VS_PROTO_VERSION;
}

/* The hold of g began at `now` (a GRANT, a take through the lock
 * page): the looks of client_use.c start from then. Inline, so that the message
 * reader marks it without a call into client_use.c, which sends. */
static inline void client_use_start(struct client_gpu *g, uint64_t now)
{
	g->use.at_ms = now ? now : 1;
	if (g->use.sent_ms == 0)
		g->use.sent_ms = now;
}

/* Whether the thread should end (client_stop or gate_shutdown). */
static inline int client_stopping(void)
{
	return __atomic_load_n(&client_g.stop_asked, __ATOMIC_SEQ_CST) ||
	       gate_shutting();
}

/* client.c */
void client_lost(const char *why);

/* client_connect.c: a new connection to the scheduler, or -1 and *err
 * (EAGAIN: its listen queue is full). busy: after an EAGAIN, 1 while the
 * scheduler still counts as busy (the next try is due at once), 0 once
 * it has been busy for CLIENT_BUSY_FOR_MS. */
int  client_connect(int *err);
int  client_connect_busy(void);

/* client_msg.c */
/* Send one frame; -1 if it failed or the connection is gone. Only the
 * client thread sends, and a waiting thread that claimed a fast REQUEST
 * (client_work.c), while the client thread neither sends nor closes. */
int  client_send(uint16_t type, const void *payload, uint32_t len);
/* Replace the socket (fd, or -1 after closing it). */
void client_set_sock(int fd);
int  client_hello(void);
/* client_work.c */
/* Attach, footprints, requests and drops of every GPU; lowers *timeout
 * to the longest time in ms the thread may sleep (-1: until woken).
 * Returns -1 if sending failed (the connection is lost). */
int  client_work(int *timeout);
/* Right behind the HELLO, before its WELCOME: attach every GPU the gate
 * knows, with its footprint, so that registering takes one round trip
 * (the scheduler reads them after the HELLO); -1 if sending failed. */
int  client_register(void);
/* Refresh what the client knows of dev from the gate; 1 if known. */
int  client_learn(int dev);
/* The fast REQUEST (client_work.c): arm lets waiting threads send the
 * REQUEST of each idle GPU themselves (or take it through the lock page)
 * until adopt takes that back; arm returns 1 if a waiting thread may
 * take one through the page; adopt returns -1 if a waiting thread's send
 * failed. */
int  client_fast_arm(void);
int  client_fast_adopt(void);
/* A waiting thread: send dev's REQUEST if armed; 0 if it went out,
 * CLIENT_FAST_RC_TOOK if the GPU was taken through the lock page instead
 * (its gate open), -1 if not armed. */
#define CLIENT_FAST_RC_TOOK 1
int  client_fast_request(int dev);
/* While a GPU may be taken through the lock page, the client thread
 * looks at least this often (ms) for a take to tell the scheduler. */
#define CLIENT_TOOK_TELL_MS 1000
/* How long a waiter's REQUEST waits for the MODE that confirms the
 * ATTACH, on a connection with a lock page: a take then serves it. */
#define CLIENT_MODE_WAIT_MS 50u
/* Tests only (tests/gate): when defined and nonzero, replaces
 * CLIENT_MODE_WAIT_MS, so that a test of the wait does not depend on
 * how fast a loaded machine delivers the MODE. Weak and hidden like
 * client_lock_test_swapped: NULL in libvshare.so. */
unsigned client_mode_wait_test_ms(void) __attribute__((weak, visibility("hidden")));
/* The longest a context open waits for its GPU's registration. */
#define CLIENT_PREPARE_WAIT_MS 20u
/* gate_take, then the released callback if the gate was taken. */
int  client_take(int dev);
/* Read what arrived and handle each frame; -1 if the connection ended. */
int  client_read(void);
/* client_wait.c: the lines that tell a long wait. */
/* A REQUEST for g went out: a wait begins. */
void client_wait_begin(struct client_gpu *g);
/* 1 when a VS_MSG_WAIT_QUERY for dev should go out now (once per wait);
 * else lowers *timeout to when it may. Prints the line itself for a
 * scheduler too old to be asked. */
int  client_wait_due(int dev, struct client_gpu *g, int *timeout);
/* The scheduler's answer: the "waiting" line. */
void client_wait_answer(int dev, const struct vs_waiting *m);
/* dev was granted: the "got the GPU" line if a wait was told; the wait
 * ends. */
void client_wait_granted(int dev);
void client_wait_atfork_child(void);
/* client_use.c: use, not only holding. While a GPU is held the client
 * thread looks at its gate at least every CLIENT_USE_TICK_MS: the time
 * since its last look was busy while calls were in flight or the last
 * submission is less than the idle gap old, idle otherwise, so busy and
 * idle time are good to about a tick. */
#define CLIENT_USE_TICK_MS 100u
/* The pause after which a holder that others wait for counts as idle
 * (client_use.c says how it is learned). */
uint64_t client_idle_gap(int dev);
/* A look at dev's gate while held, and its report to a scheduler of
 * version 9 every VS_USAGE_REPORT_MS, or now with `final` (before the
 * RELEASED, the hold ending); lowers *timeout (NULL: none) to the next
 * look. -1 if sending failed. */
int  client_use_due(int dev, struct client_gpu *g, int final, int *timeout);
/* Lowers *timeout to the next look while g is held: after a pass that
 * began a hold (a take by the client thread itself), too, since nothing
 * wakes the thread while its gate is open. */
void client_use_timeout(const struct client_gpu *g, int *timeout);
/* A swap-out at a release, reported with the next usage report. */
void client_use_swapout(struct client_gpu *g, const struct client_swap *sw);
/* The program began to run unshared (VS_UNSHARED_*): the first reason
 * of an outage is kept. */
void client_unshared_begin(uint32_t why);
/* A WELCOME: how long it ran unshared goes to a scheduler of version 9;
 * the outage is over. -1 if sending failed. */
int  client_unshared_tell(void);

/* The first and the longest wait before a refused GPU is asked for again
 * (VSHARE_REQUIRE_SCHEDULER): limits free up as other programs end. */
#define CLIENT_REFUSED_RETRY_MIN_MS 1000u
#define CLIENT_REFUSED_RETRY_MAX_MS 30000u

#endif
