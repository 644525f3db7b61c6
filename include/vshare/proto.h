/*
 * vshare wire protocol: the one definition, shared by libvshare.so,
 * vshare-scheduler and vsharectl. Nothing else declares these structures.
 *
 * Every frame is a struct vs_hdr followed by `length` payload bytes. All
 * fields are fixed-width and in host byte order (the socket is a local Unix
 * socket). Reserved fields must be zero; a frame that breaks any rule costs
 * the sender its connection.
 *
 * Version history:
 *   1  first version.
 *   2  fair share: VS_MSG_SWAPPED (a holder's swap-in on an oversubscribed
 *      grant), VS_MSG_SET_SLICE, VS_MSG_SET_POLICY, VS_MSG_SET_WEIGHT.
 *      The scheduler still serves peers of version 1.
 *   3  VS_MSG_METRICS (the Prometheus text exposition of the scheduler's
 *      metrics, in a VS_MSG_REPLY); admin policy: VS_MSG_POLICY (the
 *      memory limit, require flag and weight the configuration gives the
 *      peer's user, after WELCOME and at each reload); VS_MSG_WAIT_QUERY
 *      and VS_MSG_WAITING (a client that has waited for a GPU a while
 *      asks who holds it and its place in the queue, to tell its user).
 *      The scheduler serves peers of versions 1 and 2 in their versions;
 *      they hear no policy.
 *   4  the lock page: VS_MSG_LOCK_PAGE (right after WELCOME, with a
 *      descriptor of the scheduler's lock page passed alongside, see
 *      "The lock page" below) and VS_MSG_TOOK (a client took a free GPU
 *      through the page). Peers of versions 1 to 3 get no page and take
 *      every GPU through REQUEST and GRANT, as before.
 *   5  the lock page sealed: a read-only state page and a page of words,
 *      random tokens, TOOK refused unless the take was seen ("The lock
 *      page" below); a VS_E_STATE answer to a request about a GPU names
 *      the GPU first ("GPU-<uuid>: ..."), as refusals by a limit do, so
 *      that the client can resynchronise. Peers of version 4 get no page.
 *   6  latency classes: VS_MSG_HELLO's `klass` (the class the program asks
 *      for, VS_CLASS_*; zero in older versions), and VS_POLICYF_INTERACTIVE
 *      in VS_MSG_POLICY (the configuration lets this peer's user have the
 *      interactive class); peers of version 5 and older are batch.
 *      VS_MSG_SET_NAME (an admin names the clients of a label, for
 *      status and the metrics: the Kubernetes device plugin names its
 *      containers' labels namespace/pod/container).
 *   7  VS_GRANTF_PACE in VS_MSG_GRANT: the holder is batch and shares the
 *      GPU with an interactive program, which preempts it as soon as its
 *      queued work has drained: it keeps that work short. Peers of
 *      version 6 and older never see the flag.
 *   8  priority at kernel granularity, in the lock pages: the state
 *      slot's `prio` (the scheduler: an interactive program in force is
 *      attached to the GPU, and how much of a batch program's time its
 *      gate may hold submissions back for it) and the word's `busy`,
 *      `seq` and `sleepers` (the interactive program: its work in flight,
 *      and the futex that batch gates sleep on until it has finished).
 *      No frame changed: older peers leave those fields alone, and an
 *      older scheduler's slot says 0 (no priority).
 *   9  use, not only holding: VS_MSG_USAGE (a client's busy and idle time
 *      while it held a GPU, and the bytes it moved to the host at its
 *      releases) and VS_MSG_UNSHARED (after its WELCOME, how long the
 *      program ran unshared before this connection, and why). A client
 *      sends neither to a scheduler of an older version.
 *
 * The header layout (magic, then version) is frozen across versions, so a
 * peer of any version can read it and answer a mismatch with VS_MSG_ERROR
 * (code VS_E_VERSION), which old and new clients can both print.
 *
 * Versions side by side: a header's version is the version its sender
 * speaks on that connection, VS_PROTO_VERSION_MIN to VS_PROTO_VERSION,
 * and stays the same for the connection's life. A message type exists from
 * the version in its table row (`since`) on: one newer than its header's
 * version is malformed. The scheduler answers each peer in the peer's
 * version (so a version-1 shim keeps working beside a newer daemon, and
 * hears nothing it does not know), and sends errors of a peer whose
 * version it does not know yet in version-1 headers, which every reader
 * accepts. vsharectl sends each request in the oldest version that has
 * it, so its old commands work with an old daemon and its new ones are
 * refused with VS_E_VERSION. The shim speaks its own version and, refused
 * by an older scheduler, connects again speaking that one.
 */
#ifndef VSHARE_PROTO_H
#define VSHARE_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define VS_PROTO_MAGIC   0x52485356u /* "VSHR" read as little-endian bytes */
#define VS_PROTO_VERSION 9u
/* The oldest version a peer may speak to this code. */
#define VS_PROTO_VERSION_MIN 1u

/* The largest payload any frame may carry: a status reply with its JSON
 * document. Requests are far smaller; their exact sizes are in the table. */
#define VS_MAX_PAYLOAD   (1u << 20)

#define VS_LABEL_MAX     64  /* bytes, NUL-padded; not necessarily NUL-terminated */
#define VS_UUID_LEN      16
#define VS_ERRMSG_MAX    128

#define VS_DEFAULT_SOCKET "/run/vshare/scheduler.sock"

/* The time quantum, in seconds, that VS_MSG_SET_TQ and the configuration
 * accept: vshare-scheduler and vsharectl both check against these. */
#define VS_TQ_MIN_S      1u
#define VS_TQ_MAX_S      86400u

/* The minimum slice, in ms, of VS_MSG_SET_SLICE (and the configuration's
 * min_slice_ms): the time a holder keeps before a fair preemption. */
#define VS_SLICE_MIN_MS  10u
#define VS_SLICE_MAX_MS  3600000u

/* A user's weight in the fair share (VS_MSG_SET_WEIGHT). */
#define VS_WEIGHT_MIN    1u
#define VS_WEIGHT_MAX    1000u

/* The longest swap-in a VS_MSG_SWAPPED may report: an hour. */
#define VS_SWAPPED_US_MAX 3600000000ull

struct vs_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t flags;   /* no flags are defined yet: must be zero */
	uint32_t length;  /* payload bytes after this header */
};

/* Message types. Each one belongs to exactly one direction and role. */
/* client -> scheduler */
#define VS_MSG_HELLO       0x0001
#define VS_MSG_ATTACH      0x0002
#define VS_MSG_FOOTPRINT   0x0003
#define VS_MSG_REQUEST     0x0004
#define VS_MSG_RELEASED    0x0005
#define VS_MSG_SWAPPED     0x0006   /* since version 2 */
#define VS_MSG_WAIT_QUERY  0x0008   /* since version 3 */
#define VS_MSG_TOOK        0x0009   /* since version 4 */
#define VS_MSG_USAGE       0x000a   /* since version 9 */
#define VS_MSG_UNSHARED    0x000b   /* since version 9 */
/* scheduler -> client */
#define VS_MSG_WELCOME     0x0101
#define VS_MSG_GRANT       0x0102
#define VS_MSG_DROP        0x0103
#define VS_MSG_MODE        0x0104
#define VS_MSG_ERROR       0x0105
#define VS_MSG_WAITING     0x0106   /* since version 3 */
#define VS_MSG_POLICY      0x0107   /* since version 3 */
#define VS_MSG_LOCK_PAGE   0x0108   /* since version 4 */
/* admin -> scheduler */
#define VS_MSG_STATUS      0x0201
#define VS_MSG_SET_TQ      0x0202
#define VS_MSG_SET_MODE    0x0203
#define VS_MSG_SET_SLICE   0x0204   /* since version 2 */
#define VS_MSG_SET_POLICY  0x0205   /* since version 2 */
#define VS_MSG_SET_WEIGHT  0x0206   /* since version 2 */
#define VS_MSG_METRICS     0x0207   /* since version 3 */
#define VS_MSG_SET_NAME    0x0208   /* since version 6 */
/* scheduler -> admin */
#define VS_MSG_REPLY       0x0301

/* Roles: who may send a type. The scheduler rejects a type sent by the
 * wrong role (an admin type from a non-admin peer gets VS_E_PERM). */
#define VS_ROLE_CLIENT     1u
#define VS_ROLE_SCHEDULER  2u
#define VS_ROLE_ADMIN      3u

/* Error / status codes carried in VS_MSG_ERROR and VS_MSG_REPLY. Negative
 * errno-style values, so they line up with the daemon's internal codes. */
#define VS_OK              0
#define VS_E_PROTO       (-71)  /* EPROTO: malformed frame */
#define VS_E_VERSION     (-95)  /* EOPNOTSUPP: protocol version mismatch */
#define VS_E_PERM         (-1)  /* EPERM: admin request from a non-admin */
#define VS_E_NOGPU        (-2)  /* ENOENT: no such GPU */
#define VS_E_INVAL       (-22)  /* EINVAL: value out of range */
#define VS_E_STATE       (-16)  /* EBUSY: message not valid in this state */
/* Refusals of a well-formed request by a limit (docs/scheduler.md lists
 * them). `detail` carries the limit's value. When the refused frame names
 * a GPU (ATTACH, REQUEST), `msg` starts with that GPU's UUID as
 * vs_uuid_format writes it, then ": ". A client that hears either one for
 * a GPU runs that GPU unshared (or, when it must have the scheduler,
 * waits and says why); a connection refused with one is closed after it. */
#define VS_E_LIMIT      (-122)  /* EDQUOT: a per-user or per-client limit */
#define VS_E_FULL        (-28)  /* ENOSPC: a node-wide table or cap is full */

/* GPU modes. */
#define VS_MODE_AUTO       0u   /* serialize only what does not fit together */
#define VS_MODE_ON         1u   /* one holder at a time */
#define VS_MODE_OFF        2u   /* never serialize */

/* Queue orders (VS_MSG_SET_POLICY). */
#define VS_POLICY_FAIR     0u   /* by recent GPU time of the user, weighted */
#define VS_POLICY_FCFS     1u   /* by arrival */

/* Grant kinds. */
#define VS_GRANT_SHARED    0u   /* co-runners whose footprints fit together */
#define VS_GRANT_EXCLUSIVE 1u   /* the only holder */

/* Grant flags. */
#define VS_GRANTF_OVERSUB  0x1u /* the GPU is oversubscribed: prefetch on grant */
#define VS_GRANTF_PACE     0x2u /* since version 7: an interactive program
				 * shares the GPU; keep queued work short */

/* Drop reasons. */
#define VS_DROP_QUANTUM    1u   /* quantum over and someone waits: release now */
#define VS_DROP_IDLE       2u   /* someone waits: release as soon as idle */
#define VS_DROP_MODE       3u   /* mode changed */
#define VS_DROP_CAPACITY   4u   /* the co-running group no longer fits */

/* Policy flags (VS_MSG_POLICY). */
#define VS_POLICYF_REQUIRE 0x1u /* wait for the scheduler, never run unshared */
#define VS_POLICYF_INTERACTIVE 0x2u /* since version 6: the user may have
				     * the interactive class */

/* Latency classes (VS_MSG_HELLO, since version 6). An interactive program
 * is granted before batch ones and preempts a batch holder at once, within
 * the budget the configuration gives its user (docs/scheduler.md). */
#define VS_CLASS_BATCH       0u
#define VS_CLASS_INTERACTIVE 1u
#define VS_CLASS_MAX         VS_CLASS_INTERACTIVE

/* Admin target flags. */
#define VS_TARGET_ALL      0x1u /* every GPU; uuid and index ignored */
#define VS_TARGET_INDEX    0x2u /* by index (order of first attach) */
#define VS_TARGET_UID      0x4u /* VS_MSG_SET_WEIGHT only, and always:
				 * `index` is a uid, uuid all zero */

/* --- client payloads --- */
struct vs_hello {
	uint32_t proto_version;  /* VS_PROTO_VERSION of the client */
	uint32_t klass;          /* VS_CLASS_*, version 6 on; else zero */
	char     label[VS_LABEL_MAX];
};

struct vs_attach {
	uint8_t  uuid[VS_UUID_LEN];
	uint64_t total_mem;      /* bytes, as the driver reports */
};

struct vs_footprint {
	uint8_t  uuid[VS_UUID_LEN];
	uint64_t managed;        /* bytes of managed memory on this GPU */
	uint64_t pinned;         /* bytes that cannot be paged (VMM, IPC...) */
};

struct vs_gpu_ref {  /* VS_MSG_REQUEST, VS_MSG_RELEASED, VS_MSG_TOOK */
	uint8_t  uuid[VS_UUID_LEN];
};

/* VS_MSG_SWAPPED: after an oversubscribed grant, the swap-in it cost (the
 * bulk prefetch of the holder's managed memory to the GPU). Sent by a
 * holder, once per grant, and only when it moved memory (bytes > 0). */
struct vs_swapped {
	uint8_t  uuid[VS_UUID_LEN];
	uint64_t us;             /* microseconds, at most VS_SWAPPED_US_MAX */
	uint64_t bytes;          /* bytes prefetched, > 0 */
};

/* VS_MSG_USAGE: what a holder did with a GPU since its last report,
 * sent at each release (before RELEASED), every VS_USAGE_REPORT_MS
 * while it holds the GPU and at its exit (before its connection's end
 * releases the GPU), only when something is to be told. busy_ms:
 * held with work submitted and not finished, or submitting, as the shim
 * sees it: calls in flight, a thread waiting in a synchronize, or less
 * than the program's idle gap since its last submission or since a
 * wait or query found its work unfinished; idle_ms: held and none of
 * that. The meaning is the client's alone: a frame of the same layout
 * from an older client counted only submissions. swapout_*: the
 * prefetch of its managed memory to the host at its releases
 * (VSHARE_SWAP_OUT=eager). The scheduler clamps busy_ms + idle_ms to
 * the time it saw the client hold the GPU. */
#define VS_USAGE_REPORT_MS 5000u
struct vs_usage {
	uint8_t  uuid[VS_UUID_LEN];
	uint64_t busy_ms;
	uint64_t idle_ms;
	uint64_t swapout_bytes;
	uint64_t swapout_us;     /* at most VS_SWAPPED_US_MAX */
	uint32_t flags;          /* none defined: must be zero */
	uint32_t reserved;
};

/* VS_MSG_UNSHARED: sent once right after a WELCOME when the program ran
 * unshared (its GPU work not gated: no scheduler) before this
 * connection; ms is how long, from the moment it began to run unshared
 * to this connection's WELCOME. */
#define VS_UNSHARED_ABSENT 1u    /* no scheduler could be reached */
#define VS_UNSHARED_LOST   2u    /* the connection to the scheduler ended */
#define VS_UNSHARED_MAX    VS_UNSHARED_LOST
struct vs_unshared {
	uint64_t ms;
	uint32_t reason;         /* VS_UNSHARED_* */
	uint32_t flags;          /* none defined: must be zero */
};

/* VS_MSG_WAIT_QUERY: who holds this GPU, and where am I in its queue?
 * The scheduler answers with VS_MSG_WAITING, at most
 * VS_WAIT_QUERIES_PER_S a second per connection (more are not answered). */
struct vs_wait_query {
	uint8_t  uuid[VS_UUID_LEN];
	uint32_t flags;          /* none defined: must be zero */
	uint32_t reserved;
};

#define VS_WAIT_QUERIES_PER_S 4u
#define VS_WAIT_HIDDEN        UINT32_MAX

/* --- scheduler payloads --- */
struct vs_welcome {
	uint32_t proto_version;  /* the version spoken on this connection */
	uint32_t client_id;      /* from 1 on; never one a live client holds */
};

struct vs_grant {
	uint8_t  uuid[VS_UUID_LEN];
	uint32_t kind;           /* VS_GRANT_* */
	uint32_t flags;          /* VS_GRANTF_* */
	uint32_t tq_ms;          /* quantum of this grant */
	uint32_t reserved;
};

struct vs_drop {
	uint8_t  uuid[VS_UUID_LEN];
	uint32_t reason;         /* VS_DROP_* */
	uint32_t reserved;
};

struct vs_mode {
	uint8_t  uuid[VS_UUID_LEN];
	uint32_t mode;           /* VS_MODE_* */
	uint32_t reserved;
};

struct vs_error {
	int32_t  code;           /* VS_E_* */
	uint32_t detail;         /* for VS_E_VERSION: the scheduler's version */
	char     msg[VS_ERRMSG_MAX]; /* NUL-terminated text for humans */
};

/* VS_MSG_POLICY: what the scheduler's configuration gives this peer's
 * user (policy_users, else its groups': docs/operations.md). Sent right
 * after WELCOME and again after each reload. The client applies the
 * lowest of this limit, its own environment's and the node's client
 * configuration's; a lowered limit refuses new allocations and leaves
 * existing memory alone. */
struct vs_policy {
	uint64_t mem_limit;      /* bytes per GPU, 0: no limit */
	uint32_t flags;          /* VS_POLICYF_* */
	uint32_t weight;         /* the user's weight, VS_WEIGHT_MIN..MAX */
	uint64_t reserved;
};

/*
 * The lock page (version 5). The scheduler shares two pages of memory with
 * every client of version 5, both sealed memfds passed with SCM_RIGHTS
 * alongside VS_MSG_LOCK_PAGE, the state page first, then the words:
 *
 *   the state page (struct vs_lock_page) is sealed against writing
 *     (F_SEAL_FUTURE_WRITE): clients map it read-only, and nobody but the
 *     scheduler can change it. Slot i names the GPU of index i (its UUID)
 *     and says whether it is open: `open` is 0 (take the GPU through
 *     REQUEST and GRANT) or the number of the current opening, a value
 *     with VS_LOCK_OPEN_BIT set that is never used twice;
 *   the words page (struct vs_lock_words) is writable by every client:
 *     word i is where the clients of GPU i race for an opening.
 *
 * The scheduler opens GPU i when nobody holds it, nobody waits and
 * everyone's memory fits: it stores the opening's number n into word i,
 * then into the slot's `open`. A client takes it by reading n from the
 * state page, swapping word i from n to its mark for n (vs_lock_mark:
 * a keyed hash of n under the client's token), and reading `open` again:
 * still n, the GPU is the client's as if the scheduler had granted it
 * (exclusive in mode on, shared in mode auto, never oversubscribed), and
 * it says so with VS_MSG_TOOK without waiting for an answer. The
 * scheduler closes the GPU before any decision about it: `open` to 0,
 * then one exchange of the word to VS_LOCK_CLOSED, which returns the
 * mark of the client that took the opening, if one did; it adopts that
 * client as the holder. If `open` changed under the swap, the client
 * swaps its mark back to closed: if that works the scheduler never saw
 * the take (it asks through REQUEST); if not, the scheduler took the
 * word with the mark in it, and the client holds the GPU.
 *
 * The words are untrusted: a client may write anything there. Writing a
 * number into a closed word takes nothing, since `open` says closed. A
 * token is 63 random bits sent to its own connection only, and never
 * appears in a word: a mark seen there is worth nothing for any other
 * opening, so nobody can write a mark of another client that the
 * scheduler would take for a take. Only a client with no REQUEST out is
 * adopted (the shim takes only then). VS_MSG_TOOK from a client the
 * scheduler did not adopt from its mark is refused (VS_E_STATE, naming
 * the GPU). What remains: while a GPU is open, a client can write the
 * opening's number back over another's mark, so that a second client
 * takes the same opening, or junk over it; the scheduler adopts the last
 * mark it finds, refuses the others' TOOK, and those give the GPU back
 * (docs/gate.md).
 *
 * Peers of version 4 get no page (their page's free word could be
 * written over a held one): they take every GPU through REQUEST.
 *
 * Priority (version 8). The scheduler sets slot i's `prio` while a
 * program whose class in force is interactive is attached to GPU i
 * (mode auto or on), to the share of time a batch program may be held
 * back for it (its user's interactive budget), and to 0 otherwise. The
 * interactive program stores into word i's `busy`, before each of its
 * submissions, a deadline a few milliseconds ahead, renews it while its
 * work runs, and clears it (then bumps `seq` and wakes the sleepers)
 * once the GPU has passed its work. A batch program's gate, before each
 * submission to GPU i, reads `prio` and, when it is set, `busy`: while
 * that says interactive work is in flight, it holds the submission
 * back (sleeping on `seq`), and its work already queued drains. The
 * words are untrusted: a deadline in the past or further ahead than the
 * renewal allows counts as none, and a batch gate holds back at most
 * `prio` percent of its time (the share of what a hostile writer can
 * take from it), whatever `busy` says. *
 * An interactive program whose requests come in a rhythm (the starts of
 * its bursts of submissions, a few ms of quiet apart, at steady
 * intervals) also stores into `next` when it expects the next one, at
 * the earliest; 0 when they come at random. Far from that time (and
 * with no interactive work seen for a few ms) a batch gate keeps its
 * queue to the longer bound of pacing, and to the short one again in
 * time for its queue to drain before the request. `next` only loosens
 * a batch program's queue bound: a writer of junk there can delay the
 * interactive programs' work, never hold a batch program back. The word
 * holds one program's prediction, the last writer's: while the slot's
 * `prio_n` says more than one interactive program is attached, a batch
 * gate keeps the short bound, since another's request may come at any
 * time.
 */
#define VS_LOCK_PAGE_MAGIC 0x4b4c5356u /* "VSLK" */
#define VS_LOCK_SLOTS      255u
#define VS_LOCK_CLOSED     0ull
#define VS_LOCK_OPEN_BIT   (1ull << 62) /* every opening's number has it */
#define VS_LOCK_TOKEN_BIT  (1ull << 63) /* every token has it */

struct vs_lock_slot {
	uint8_t  uuid[VS_UUID_LEN];
	uint64_t open;           /* 0, or the current opening's number */
	uint32_t prio;           /* since version 8: 0, or an interactive
				  * program in force is attached: the share
				  * (1..100 percent) of a batch program's
				  * time that its gate may hold submissions
				  * back while `busy` says interactive work
				  * is in flight ("Priority" below) */
	uint32_t prio_n;         /* 0 (a scheduler before it), or while prio
				  * is set, how many interactive programs in
				  * force are attached: where more than one,
				  * batch gates do not follow `next` */
	uint8_t  pad[32];        /* one cache line per slot */
};

struct vs_lock_page {
	uint32_t magic;          /* VS_LOCK_PAGE_MAGIC */
	uint32_t n_slots;        /* VS_LOCK_SLOTS */
	uint8_t  pad[56];
	struct vs_lock_slot slot[VS_LOCK_SLOTS];
};

struct vs_lock_word {
	uint64_t word;           /* VS_LOCK_CLOSED, an opening, a mark; atomic */
	/* Since version 8, written by interactive programs, read by batch
	 * gates, all untrusted ("Priority" below); atomics. */
	uint64_t busy;           /* 0, or interactive work is in flight
				  * until this CLOCK_MONOTONIC time, ns */
	uint32_t seq;            /* a futex: bumped when busy clears */
	uint32_t sleepers;       /* batch threads asleep on seq */
	uint64_t next;           /* 0, or the earliest time the interactive
				  * program expects its next request
				  * (CLOCK_MONOTONIC ns), where its requests
				  * come in a rhythm: until shortly before,
				  * batch gates may queue more */
	uint8_t  pad[32];        /* one cache line per word */
};

struct vs_lock_words {
	struct vs_lock_word w[VS_LOCK_SLOTS];
	uint8_t  pad[64];
};

/* VS_MSG_LOCK_PAGE: this client's token and the pages' sizes; their
 * descriptors travel with the frame's first byte. A version-4 frame (an
 * older scheduler's: one page whose words are in its slots) has words 0;
 * this code does not use that page. */
struct vs_lock_info {
	uint64_t token;          /* VS_LOCK_TOKEN_BIT set */
	uint32_t size;           /* sizeof(struct vs_lock_page) */
	uint32_t words;          /* sizeof(struct vs_lock_words); 0 in version 4 */
};

/* VS_MSG_WAITING: the answer to a VS_MSG_WAIT_QUERY, as the scheduler
 * sees the GPU when it answers. position 0: the asker does not wait for
 * that GPU (granted meanwhile, or never asked); the rest is then zero. */
struct vs_waiting {
	uint8_t  uuid[VS_UUID_LEN];
	uint32_t position;       /* place in the queue, 1 first; 0 not waiting */
	uint32_t n_waiting;      /* waiters of this GPU, the asker included */
	uint32_t gpu_index;      /* the scheduler's index (vsharectl status) */
	uint32_t n_holders;      /* holders now, 0 if none */
	uint32_t holder_uid;     /* of the first holder (grant order);
				  * VS_WAIT_HIDDEN, label empty: the
				  * status is for admins only */
	uint32_t reserved;
	uint64_t held_ms;        /* how long the first holder has held it */
	uint64_t waited_ms;      /* how long the asker has waited */
	uint64_t eta_ms;         /* rough bound on the wait left; UINT64_MAX:
				  * nothing bounds it */
	char     holder_label[VS_LABEL_MAX]; /* NUL-padded, clean text */
};

/* --- admin payloads --- */
/* VS_MSG_STATUS and VS_MSG_METRICS: no options yet. */
struct vs_status_req {
	uint32_t flags;          /* must be zero */
	uint32_t reserved;
};

/* VS_MSG_SET_TQ, _SET_MODE, _SET_SLICE (a GPU by uuid, VS_TARGET_INDEX,
 * or VS_TARGET_ALL); VS_MSG_SET_POLICY (target VS_TARGET_ALL, uuid and
 * index zero: the policy is the node's); VS_MSG_SET_WEIGHT (target
 * VS_TARGET_UID, the uid in `index`, uuid zero). */
struct vs_admin_set {
	uint8_t  uuid[VS_UUID_LEN]; /* used when no VS_TARGET_* flag is set */
	uint32_t target;         /* VS_TARGET_* */
	uint32_t index;          /* with VS_TARGET_INDEX; the uid for SET_WEIGHT */
	uint32_t value;          /* seconds for SET_TQ, VS_MODE_* for SET_MODE,
				  * ms for SET_SLICE, VS_POLICY_* for
				  * SET_POLICY, the weight for SET_WEIGHT */
	uint32_t reserved;
};

/* VS_MSG_SET_NAME: the name that status and the metrics show for every
 * client whose label is `label` (the Kubernetes device plugin's
 * "k8s:G-S" labels get their pod's "namespace/pod/container"). An empty
 * name removes the label's name. With VS_NAME_CLEAR, every name whose
 * label begins with `label` is removed (name empty): a naming program
 * that sends its whole set clears its prefix first. Both texts are
 * NUL-terminated and NUL-padded, without control characters. */
#define VS_NAME_CLEAR      0x1u
#define VS_NAME_LABEL_MAX  48
#define VS_NAME_MAX        72
struct vs_set_name {
	uint32_t flags;          /* VS_NAME_CLEAR or 0 */
	uint32_t reserved;
	char     label[VS_NAME_LABEL_MAX];
	char     name[VS_NAME_MAX];
};

/* VS_MSG_REPLY: this struct, then `json_len` bytes of text (not
 * NUL-terminated): JSON for a status reply, the Prometheus text
 * exposition format for a metrics reply, or an error message otherwise. */
struct vs_reply {
	int32_t  status;         /* VS_OK or VS_E_* */
	uint32_t json_len;
};

_Static_assert(sizeof(struct vs_hdr) == 16, "vs_hdr size");
_Static_assert(sizeof(struct vs_hello) == 72, "vs_hello size");
_Static_assert(sizeof(struct vs_attach) == 24, "vs_attach size");
_Static_assert(sizeof(struct vs_footprint) == 32, "vs_footprint size");
_Static_assert(sizeof(struct vs_gpu_ref) == 16, "vs_gpu_ref size");
_Static_assert(sizeof(struct vs_swapped) == 32, "vs_swapped size");
_Static_assert(offsetof(struct vs_swapped, us) == 16, "vs_swapped layout");
_Static_assert(sizeof(struct vs_wait_query) == 24, "vs_wait_query size");
_Static_assert(sizeof(struct vs_usage) == 56, "vs_usage size");
_Static_assert(offsetof(struct vs_usage, busy_ms) == 16, "vs_usage layout");
_Static_assert(sizeof(struct vs_unshared) == 16, "vs_unshared size");
_Static_assert(sizeof(struct vs_welcome) == 8, "vs_welcome size");
_Static_assert(sizeof(struct vs_grant) == 32, "vs_grant size");
_Static_assert(sizeof(struct vs_drop) == 24, "vs_drop size");
_Static_assert(sizeof(struct vs_mode) == 24, "vs_mode size");
_Static_assert(sizeof(struct vs_error) == 136, "vs_error size");
_Static_assert(sizeof(struct vs_policy) == 24, "vs_policy size");
_Static_assert(offsetof(struct vs_policy, weight) == 12, "vs_policy layout");
_Static_assert(sizeof(struct vs_waiting) == 128, "vs_waiting size");
_Static_assert(offsetof(struct vs_waiting, held_ms) == 40, "vs_waiting layout");
_Static_assert(sizeof(struct vs_status_req) == 8, "vs_status_req size");
_Static_assert(sizeof(struct vs_admin_set) == 32, "vs_admin_set size");
_Static_assert(sizeof(struct vs_reply) == 8, "vs_reply size");
_Static_assert(sizeof(struct vs_set_name) == 128, "vs_set_name size");
_Static_assert(sizeof(struct vs_lock_slot) == 64, "vs_lock_slot size");
_Static_assert(offsetof(struct vs_lock_page, slot) == 64, "vs_lock_page layout");
_Static_assert(sizeof(struct vs_lock_page) == 16384, "vs_lock_page size");
_Static_assert(sizeof(struct vs_lock_info) == 16, "vs_lock_info size");
_Static_assert(sizeof(struct vs_lock_word) == 64, "vs_lock_word size");
_Static_assert(offsetof(struct vs_lock_slot, prio_n) == 28, "vs_lock_slot layout");
_Static_assert(offsetof(struct vs_lock_slot, prio) == 24, "vs_lock_slot layout");
_Static_assert(offsetof(struct vs_lock_word, busy) == 8, "vs_lock_word layout");
_Static_assert(offsetof(struct vs_lock_word, seq) == 16, "vs_lock_word layout");
_Static_assert(offsetof(struct vs_lock_word, sleepers) == 20, "vs_lock_word layout");
_Static_assert(offsetof(struct vs_lock_word, next) == 24, "vs_lock_word layout");
_Static_assert(sizeof(struct vs_lock_words) == 16384, "vs_lock_words size");

/* One row per message type: who sends it and how long its payload is.
 * A variable-length type (VS_MSG_REPLY) gives its minimum size. */
struct vs_msg_info {
	uint16_t    type;
	uint16_t    role;        /* VS_ROLE_* of the sender */
	uint32_t    size;        /* exact payload size, or minimum if variable */
	uint32_t    variable;    /* 1 if more bytes may follow */
	const char *name;
	uint32_t    since;       /* the protocol version that added it */
};

/* Look up a type; NULL for an unknown one. */
const struct vs_msg_info *vs_msg_lookup(uint16_t type);

/*
 * Check a header as it arrives (before its payload). Returns VS_OK, or
 * VS_E_PROTO (bad magic, nonzero flags, unknown type, a type newer than
 * the header's version, wrong size, too long) or VS_E_VERSION (good
 * magic, a version outside VS_PROTO_VERSION_MIN..VS_PROTO_VERSION). `role` is the role the
 * receiver expects of this peer (client or admin for the scheduler, which
 * passes 0 to accept both; scheduler for the others).
 */
int vs_check_hdr(const struct vs_hdr *h, uint32_t role);
/* The same; on failure *why (if given) names the rule. */
int vs_check_hdr_why(const struct vs_hdr *h, uint32_t role, const char **why);

/*
 * Check a whole payload of a header that passed vs_check_hdr: reserved
 * fields zero, enumerations in range, labels and messages well formed.
 * Returns VS_OK or VS_E_PROTO; on failure *why (if given) names the rule.
 */
int vs_check_payload(const struct vs_hdr *h, const void *payload,
		     const char **why);

/*
 * The lock page: what a client writes into a word to take the opening
 * numbered `opening` (VS_LOCK_OPEN_BIT set), given its token: its mark,
 * SipHash-2-4 of the opening's number (8 bytes, little-endian) keyed with
 * the token and the token xor VS_LOCK_MARK_K1, with VS_LOCK_TOKEN_BIT
 * set. A mark seen in a word is worth nothing for any other opening. The
 * hash itself, for its test: vs_siphash24.
 */
#define VS_LOCK_MARK_K1 0x9e3779b97f4a7c15ull
uint64_t vs_lock_mark(uint64_t token, uint64_t opening);
uint64_t vs_siphash24(uint64_t k0, uint64_t k1, const void *msg, size_t len);

/* Fill a header for a payload of `len` bytes, in VS_PROTO_VERSION. */
void vs_hdr_init(struct vs_hdr *h, uint16_t type, uint32_t len);
/* The same in another version (a peer's, or the oldest that has `type`). */
void vs_hdr_init_v(struct vs_hdr *h, uint16_t version, uint16_t type,
		   uint32_t len);

/* Names for logs and JSON. */
const char *vs_mode_name(uint32_t mode);     /* "auto", "on", "off", "?" */
int         vs_mode_parse(const char *s, uint32_t *mode); /* 0 or -1 */
const char *vs_drop_reason_name(uint32_t reason);
/* "absent", "lost", or "?" (VS_UNSHARED_*). */
const char *vs_unshared_name(uint32_t reason);
/* "batch", "interactive", or "?" for a value that is not a class. */
const char *vs_class_name(uint32_t klass);
const char *vs_policy_name(uint32_t policy); /* "fair", "fcfs", "?" */
int         vs_policy_parse(const char *s, uint32_t *policy); /* 0 or -1 */
const char *vs_err_name(int32_t code);

/* UUIDs as the driver prints them: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx". */
#define VS_UUID_STR_LEN 41  /* with the NUL */
void vs_uuid_format(const uint8_t uuid[VS_UUID_LEN], char out[VS_UUID_STR_LEN]);
int  vs_uuid_parse(const char *s, uint8_t uuid[VS_UUID_LEN]); /* 0 or -1; "GPU-" optional */

#endif /* VSHARE_PROTO_H */
