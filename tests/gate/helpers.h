/* Helpers shared by the gate's test files. */
#ifndef VSHARE_TEST_GATE_HELPERS_H
#define VSHARE_TEST_GATE_HELPERS_H

#include <pthread.h>

#include "fake.h"

#define LD(p)  __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define INC(p) __atomic_add_fetch((p), 1, __ATOMIC_SEQ_CST)
#define DEC(p) __atomic_sub_fetch((p), 1, __ATOMIC_SEQ_CST)

/* A thread that passes the gate once, stays inside for hold_ms. */
struct entrant {
	pthread_t thr;
	int dev;
	void *stream;
	int hold_ms;
	int tok;
	int done;      /* atomic: through the gate */
	int left;      /* atomic: out again */
};

/* The tests, declared from their list. */
#define GATE_TEST(name) void name(void **state);
#include "gate_tests.def"
#undef GATE_TEST

void env_init(void);                 /* socket path, label, fake_init */
int  bracket_enter(int dev, void *stream);
void bracket_exit(int dev, int tok);
void entrant_start(struct entrant *e, int dev, void *stream, int hold_ms);
int  entrant_wait(struct entrant *e, int timeout_ms);  /* 0 once done */
void entrant_join(struct entrant *e);
/* A process holding GPU dev: scheduler up, first entry granted. */
void granted_start(int dev);
/* The scheduler asks for dev back at once; the client releases it, and
 * the client thread has armed it (a waiter may request or take it). */
void released_armed(int dev);
/* Poll an int until it reaches at least `want`; 0 if it did. */
int  wait_at_least(int *p, int want, int timeout_ms);
/* test_gate_lock.c: the fake scheduler shares its lock pages, and the
 * process held GPU 0 through a grant and gave it back (the client may
 * take it through the pages now); a fresh opening number. */
void page_start(void);
uint64_t next_opening(void);

#endif
