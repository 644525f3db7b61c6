/*
 * Fakes for the gate's tests and benchmarks: CUDA operations and client
 * callbacks that record what the gate and the client ask of them, wired
 * the way the shim's top wires the real ones (fake_ops.c, a library of its
 * own), and a scheduler on a temporary Unix socket that the test drives
 * frame by frame (fake_sched.c, test_gate only).
 */
#ifndef VSHARE_TEST_GATE_FAKE_H
#define VSHARE_TEST_GATE_FAKE_H

#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "gate.h"
#include "vshare/proto.h"

#define FAKE_GPUS 2
/* Streams with fake work (fake_work): FAKE_STREAM(0) .. (FAKE_STREAMS-1). */
#define FAKE_STREAMS 8
#define FAKE_STREAM(i) ((void *)(uintptr_t)(0x5700 + (i)))
/* The swap-in time the fake's granted callback reports, in us. */
#define FAKE_SWAP_US 4321u
/* The stream the fake reports as being captured. */
#define FAKE_CAPTURE_STREAM ((void *)0x5ca9)

struct fake_state {
	/* Per GPU, atomics. */
	int syncs[FAKE_GPUS];
	int prefetch_in[FAKE_GPUS];       /* to the GPU */
	int prefetch_out[FAKE_GPUS];      /* to the host */
	int in_bracket[FAKE_GPUS];        /* test threads inside enter/exit */
	int released[FAKE_GPUS];          /* fake scheduler saw RELEASED, no grant since */
	int violations;                   /* calls inside a closed gate */
	int sync_before_prefetch_out;     /* eager: order check */
	int entered_before_prefetch_in;   /* oversub: order check */
	int entries_done;                 /* set by tests: entrants through */
	int current_device_calls;
	int current_context_calls;
	int device_count;                 /* set by tests: 0 = op says -1 */
	int block_sync[FAKE_GPUS];        /* set by tests: sync_device waits */
	int sync_entered[FAKE_GPUS];
	int bad_order;                    /* fake scheduler: REQUEST while
					   * held or requested, or before
					   * ATTACH and FOOTPRINT */
	uint64_t managed[FAKE_GPUS], pinned[FAKE_GPUS];
	int grants[FAKE_GPUS];            /* granted callbacks */
	int policies;                     /* policy callbacks */
	uint64_t policy_limit;            /* the last one's limit */
	int wanted_calls;                 /* gate_events.wanted, in ... */
	int wanted_returns;               /* ... and out again */
	int wanted_probe;                 /* set by tests: the callback takes
					   * the gate's mutex (gate_waiting),
					   * which would hang were it held */

	/* Set before fake_init, where programs differ: the first byte of
	 * the UUIDs (GPU dev's UUID is uuid_seed + dev + i, byte i) and the
	 * memory of each GPU (0: dev + 1 GiB). */
	uint8_t  uuid_seed;
	uint64_t total_mem;

	/* Pacing's marks on a fake GPU, on a fake clock (fake_pace_on):
	 * each stream runs the work submitted to it (fake_work) in order. */
	uint64_t pace_now;                /* the fake clock, ns */
	uint64_t stream_end[FAKE_STREAMS];/* when each stream's work ends */
	int mark_asks, marks_made, marks_placed, marks_freed, mark_looks;
	int pauses;
	long pause_syncs;       /* the most waits for work seen in a pause */
	int marks_fail;                   /* set by tests: mark_new fails */
	int marks_stuck;                  /* set by tests: never passed */
};

extern struct fake_state fk;
extern const struct gate_cuda_ops fake_ops;
extern const struct client_callbacks fake_cbs;
extern __thread int fake_dev;     /* the calling thread's current device */

void fake_uuid(int dev, uint8_t uuid[VS_UUID_LEN]);

/* Pacing on the fake clock: the gate's clock and pauses become fk's
 * (a pause moves the clock on). fake_work: `ns` of GPU work submitted
 * to FAKE_STREAM(i) now; fake_queued: the work still queued there. */
void fake_pace_on(void);
void fake_work(int i, uint64_t ns);
/* The threads of GPU 0 counted as waiting for their work now
 * (gate_use_activity), kept in *most where more. */
void fake_note_syncs(long *most);
uint64_t fake_queued(int i);

/* The gate and the client wired as the shim's top does (gate_init,
 * client_init), their exit (gate_shutdown, client_stop) and their fork
 * child handlers. */
void fake_init(void);
void fake_shutdown(void);
void fake_atfork_child(void);

/* The fake scheduler. */
struct fs_msg {
	uint16_t type;
	uint16_t version;             /* of its header */
	uint32_t len;
	uint64_t at_ms;               /* when the fake read its header */
	union {
		unsigned char raw[256];
		struct vs_hello hello;
		struct vs_attach attach;
		struct vs_footprint fp;
		struct vs_gpu_ref ref;
		struct vs_swapped swapped;
		struct vs_usage usage;
		struct vs_unshared unshared;
	} u;
};

/* Socket path in a fresh temporary directory; also set as VSHARE_SOCKET. */
const char *fs_path(void);
void fs_start(void);
void fs_stop(void);           /* close everything, remove the socket */
void fs_kick(void);           /* close the client's connection only */
/* Wait up to timeout_ms for the next frame of `type`, skipping others.
 * 0 if found (copied to *out when given), -1 on timeout. */
int  fs_wait(uint16_t type, struct fs_msg *out, int timeout_ms);
/* Frames of a type received since the start (skipped ones included). */
int  fs_count(uint16_t type);
int  fs_connections(void);
void fs_send_raw(const struct vs_hdr *h, const void *payload);
void fs_grant(int dev, uint32_t flags);
void fs_drop(int dev, uint32_t reason);
/* Do not answer hello with welcome (a scheduler of another version). */
void fs_no_welcome(int on);
/* Speak protocol version v (0: ours), as an older scheduler does: a HELLO
 * in a newer version is refused with VS_E_VERSION and the connection
 * closed; every frame sent is in version v. */
void fs_speak(uint16_t v);
/* Automatic mode for the stress test: grant every request at once. */
void fs_auto_grant(int on);
/* A scheduler that accepts nothing (before fs_start): its listen queue
 * (backlog 0) is filled by fs_start, so that the client's connect gets
 * EAGAIN. fs_accept_again: it accepts again, the fillers first. */
void fs_queue_full(void);
void fs_accept_again(void);
/* Answer a frame about dev with VS_E_STATE, naming the GPU and the
 * message ("took", "request", ...) as the scheduler does. */
void fs_refuse(int dev, const char *what);
/* Answer the next n REQUESTs so (a scheduler whose state does not agree
 * with the client's). */
void fs_refuse_requests(int n);
/* Share the lock pages with clients of version 4 and later (before
 * fs_start): passed after WELCOME (a version-4 frame says words 0 and
 * passes a version-4 page, which the client must not use). Each ATTACH
 * of such a client is confirmed with a MODE, page or not, as the real
 * scheduler does.
 * fs_lock_word: GPU dev's word; fs_lock_state: its slot's `open` in the
 * state page (writable here); fs_lock_open: open dev with the number n
 * (the word, then the state); fs_lock_close: close it (the state, then
 * one exchange of the word), returning what the word held. */
#define FS_TOKEN (VS_LOCK_TOKEN_BIT | 0x5eed1e55u)
void fs_lock_page(void);
/* The same with the state page sealed by `seal` alone against writing
 * (0: not sealed, which the client must refuse). */
void fs_lock_page_sealed(int seal);
uint64_t *fs_lock_word(int dev);
uint64_t *fs_lock_state(int dev);
void fs_lock_open(int dev, uint64_t n);
uint64_t fs_lock_close(int dev);
/* What the client writes to take dev's last opening: its mark for it. */
uint64_t fs_mark(int dev);
/* The descriptors to pass to a client of `version` (fds may be NULL):
 * 2 (state, words) for version 5, 1 (the version-4 page) for version 4,
 * 0 if there are no pages or none for that version. */
size_t fs_lock_fds(uint16_t version, int fds[2]);

/* Time helpers. */
uint64_t now_ms(void);
void     sleep_ms(int ms);

#endif
