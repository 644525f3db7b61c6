/* Gate tests of the lines that tell a long wait (client_wait.c): against
 * the fake scheduler, one WAIT_QUERY per wait after VSHARE_WAIT_NOTICE_MS,
 * its answer printed, the time waited at the grant, the rate limit, a
 * scheduler too old to be asked, and the variable that silences it all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "client_int.h"
#include "gate_int.h"
#include "gate_ctl.h"
#include "helpers.h"

/* stderr goes to a temporary file while a test runs. */
struct cap {
	char path[32];
	int saved;
};

static void cap_start(struct cap *c)
{
	int fd;

	strcpy(c->path, "/tmp/vsgate-wait.XXXXXX");
	fd = mkstemp(c->path);
	assert_true(fd >= 0);
	c->saved = dup(2);
	dup2(fd, 2);
	close(fd);
}

/* Ends the capture; the file's text in buf. */
static void cap_end(struct cap *c, char *buf, size_t n)
{
	FILE *f;
	size_t got;

	dup2(c->saved, 2);
	close(c->saved);
	f = fopen(c->path, "r");
	assert_non_null(f);
	got = fread(buf, 1, n - 1, f);
	buf[got] = '\0';
	fclose(f);
	unlink(c->path);
}

static int count(const char *text, const char *needle)
{
	int k = 0;

	for (const char *p = text; (p = strstr(p, needle)) != NULL; p++)
		k++;
	return k;
}

static void send_waiting(const uint8_t uuid[VS_UUID_LEN])
{
	struct vs_waiting w;
	struct vs_hdr h;

	memset(&w, 0, sizeof(w));
	memcpy(w.uuid, uuid, VS_UUID_LEN);
	w.position = 2;
	w.n_waiting = 2;
	w.n_holders = 1;
	w.holder_uid = 0;
	w.held_ms = 5000;
	w.waited_ms = 300;
	w.eta_ms = UINT64_MAX;
	strcpy(w.holder_label, "trainer");
	vs_hdr_init(&h, VS_MSG_WAITING, sizeof(w));
	fs_send_raw(&h, &w);
}

/* One wait past the threshold: one query, the answer as one line, the
 * time waited at the grant. A second wait soon after says nothing. */
void wait_notice_once(void **state)
{
	struct entrant e;
	struct fs_msg m;
	struct cap c;
	char text[4096];
	uint64_t t0;

	(void)state;
	setenv("VSHARE_WAIT_NOTICE_MS", "300", 1);
	cap_start(&c);
	fs_start();
	env_init();
	t0 = now_ms();
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 3000), 0);
	assert_int_equal(fs_wait(VS_MSG_WAIT_QUERY, &m, 3000), 0);
	/* Counted on the coarse clock: up to a step early on this one. */
	assert_true(now_ms() - t0 + gate_clock_step_ms() >= 300);
	assert_int_equal(m.version, VS_PROTO_VERSION);
	assert_int_equal(m.len, sizeof(struct vs_wait_query));
	send_waiting(m.u.ref.uuid);
	sleep_ms(600);
	/* Once per wait, however long it lasts. */
	assert_int_equal(fs_count(VS_MSG_WAIT_QUERY), 1);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	/* Taken back, then a second wait past the threshold: within 30 s of
	 * the last line, no query and no line. */
	fs_drop(0, VS_DROP_QUANTUM);
	assert_int_equal(fs_wait(VS_MSG_RELEASED, NULL, 2000), 0);
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 3000), 0);
	sleep_ms(700);
	assert_int_equal(fs_count(VS_MSG_WAIT_QUERY), 1);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	fake_shutdown();
	fs_stop();
	cap_end(&c, text, sizeof(text));
	unsetenv("VSHARE_WAIT_NOTICE_MS");
	assert_int_equal(count(text, "vshare["), 2);
	assert_int_equal(count(text, ") is busy, held by \"trainer\" (user root) "
			       "for 5.0 s: GPU work waits ("), 1);
	assert_int_equal(count(text, "place 2 of 2 in the queue\n"), 1);
	assert_int_equal(count(text, "its turn"), 0); /* no bound known */
	assert_int_equal(count(text, "): got the GPU after "), 1);
	assert_int_equal(count(text, "]: GPU 0 (GPU-"), 2);
}

/* One thread waits wait_ms at a fresh fake scheduler's closed gate and
 * is granted; what the shim wrote to stderr meanwhile goes to text. */
static void one_wait(int wait_ms, char *text, size_t n)
{
	struct entrant e;
	struct cap c;

	cap_start(&c);
	fs_start();
	env_init();
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, NULL, 3000), 0);
	sleep_ms(wait_ms);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	fake_shutdown();
	fs_stop();
	cap_end(&c, text, n);
}

/* A scheduler of version 2 cannot be asked: the line says the GPU is busy
 * and no more, and no WAIT_QUERY reaches it (it would be malformed). */
void wait_notice_old_scheduler(void **state)
{
	char text[4096];

	(void)state;
	setenv("VSHARE_WAIT_NOTICE_MS", "200", 1);
	fs_speak(2);
	one_wait(600, text, sizeof(text));
	unsetenv("VSHARE_WAIT_NOTICE_MS");
	assert_int_equal(fs_count(VS_MSG_WAIT_QUERY), 0);
	assert_int_equal(count(text, "is busy: GPU work waits for it ("), 1);
	assert_int_equal(count(text, "this scheduler does not say who holds"), 1);
	assert_int_equal(count(text, "got the GPU after"), 1);
}

/* VSHARE_WAIT_NOTICE=0: no query, no line. */
void wait_notice_off(void **state)
{
	char text[4096];

	(void)state;
	setenv("VSHARE_WAIT_NOTICE", "0", 1);
	setenv("VSHARE_WAIT_NOTICE_MS", "100", 1);
	one_wait(500, text, sizeof(text));
	unsetenv("VSHARE_WAIT_NOTICE");
	unsetenv("VSHARE_WAIT_NOTICE_MS");
	assert_int_equal(fs_count(VS_MSG_WAIT_QUERY), 0);
	assert_int_equal(count(text, "busy"), 0);
	assert_int_equal(count(text, "got the GPU"), 0);
}
