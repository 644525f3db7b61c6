/* The rules of a take through the lock pages (protocol version 5,
 * client_lock.c), against the fake scheduler's pages: a GPU is open only
 * where the state page says so, whatever the words hold; a take that the
 * scheduler's close meets is undone, or kept when the scheduler adopted
 * it; a version-4 page is never used; the state page is read-only here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client_int.h"
#include "helpers.h"

#define OTHER_TOKEN (VS_LOCK_TOKEN_BIT | 0x0dd5u)

/* What the scheduler does while a take is between its swap and its
 * second read of the state (client_lock_test_swapped). */
enum { UNDER_NOTHING, UNDER_CLOSE, UNDER_CLOSE_ADOPT };
static int under_swap;          /* atomic: the next take meets this */
static uint64_t under_word;     /* atomic: what the close's exchange got */

void client_lock_test_swapped(int dev)
{
	switch (__atomic_exchange_n(&under_swap, UNDER_NOTHING, __ATOMIC_SEQ_CST)) {
	case UNDER_CLOSE:
		/* The state closes; the scheduler has not looked at the word
		 * yet. */
		__atomic_store_n(fs_lock_state(dev), 0, __ATOMIC_SEQ_CST);
		break;
	case UNDER_CLOSE_ADOPT:
		/* The whole close: the exchange finds the token. */
		__atomic_store_n(&under_word, fs_lock_close(dev), __ATOMIC_SEQ_CST);
		break;
	}
}

/* A waiter that must ask: its REQUEST goes out, and it passes once
 * granted, with no TOOK. The REQUEST's protocol version. */
static int waiter_asks(void)
{
	struct entrant e;
	struct fs_msg m;
	int took = fs_count(VS_MSG_TOOK);

	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(fs_wait(VS_MSG_REQUEST, &m, 3000), 0);
	sleep_ms(50);
	assert_int_equal(LD(&e.done), 0);
	fs_grant(0, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	assert_int_equal(fs_count(VS_MSG_TOOK), took);
	return m.version;
}

static void finish(void)
{
	assert_int_equal(LD(&fk.bad_order), 0);
	assert_int_equal(LD(&fk.violations), 0);
	fake_shutdown();
	fs_stop();
}

/* The state page says open with n and the word holds n: the waiter
 * swaps in its token and runs, with no REQUEST; the state is the
 * scheduler's and stays n; TOOK names the GPU. */
void lock_take_open(void **state)
{
	struct entrant e;
	struct fs_msg m;
	uint8_t u[VS_UUID_LEN];
	uint64_t n = next_opening();
	int req, took0;

	(void)state;
	page_start();
	req = fs_count(VS_MSG_REQUEST);
	took0 = LD(&client_g.fast_took);
	fs_lock_open(0, n);
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	assert_true(LD(fs_lock_word(0)) == fs_mark(0));
	assert_true(LD(fs_lock_state(0)) == n);
	assert_int_equal(fs_wait(VS_MSG_TOOK, &m, 2000), 0);
	fake_uuid(0, u);
	assert_memory_equal(m.u.ref.uuid, u, VS_UUID_LEN);
	assert_int_equal(LD(&client_g.fast_took) - took0, 1);
	assert_int_equal(fs_count(VS_MSG_REQUEST), req);
	finish();
}

/* Another client writes an opening's number into the word (the "free"
 * that took a held GPU in version 4): while the state says closed, or
 * open with another number, nothing is taken and the word is left as
 * it is. */
void lock_forged_number(void **state)
{
	uint64_t n = next_opening(), old = next_opening();

	(void)state;
	page_start();
	__atomic_store_n(fs_lock_word(0), n, __ATOMIC_SEQ_CST);
	waiter_asks();
	assert_true(LD(fs_lock_word(0)) == n);
	assert_true(LD(fs_lock_state(0)) == 0);
	released_armed(0);
	/* Open with n, the word holding an older number. */
	__atomic_store_n(fs_lock_state(0), n, __ATOMIC_SEQ_CST);
	__atomic_store_n(fs_lock_word(0), old, __ATOMIC_SEQ_CST);
	waiter_asks();
	assert_true(LD(fs_lock_word(0)) == old);
	assert_int_equal(LD(&client_g.fast_took), 0);
	finish();
}

/* The scheduler closes the state between the waiter's swap and its
 * second look, and has not exchanged the word yet: the waiter swaps its
 * token back out (the word is closed), takes nothing, and asks. */
void lock_take_undone(void **state)
{
	(void)state;
	page_start();
	fs_lock_open(0, next_opening());
	__atomic_store_n(&under_swap, UNDER_CLOSE, __ATOMIC_SEQ_CST);
	waiter_asks();
	assert_int_equal(LD(&under_swap), UNDER_NOTHING);
	assert_true(LD(fs_lock_word(0)) == VS_LOCK_CLOSED);
	assert_int_equal(LD(&client_g.fast_took), 0);
	finish();
}

/* The scheduler closes the GPU and exchanges the word, our token in it,
 * between the waiter's swap and its second look: it adopted the take,
 * so the GPU is the waiter's, with no REQUEST. */
void lock_take_adopted(void **state)
{
	struct entrant e;
	int req;

	(void)state;
	page_start();
	req = fs_count(VS_MSG_REQUEST);
	fs_lock_open(0, next_opening());
	__atomic_store_n(&under_swap, UNDER_CLOSE_ADOPT, __ATOMIC_SEQ_CST);
	entrant_start(&e, 0, NULL, 0);
	assert_int_equal(entrant_wait(&e, 2000), 0);
	entrant_join(&e);
	assert_true(LD(&under_word) == fs_mark(0));
	assert_true(LD(fs_lock_word(0)) == VS_LOCK_CLOSED);
	assert_int_equal(fs_wait(VS_MSG_TOOK, NULL, 2000), 0);
	assert_int_equal(fs_count(VS_MSG_REQUEST), req);
	assert_int_equal(LD(&client_g.fast_took), 1);
	finish();
}

/* Descriptors of this process that name a lock page: the fake's own
 * three (its version-5 pages and a version-4 page), if the client kept
 * none. */
static int page_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	char path[300], link[256];
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		ssize_t r;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		r = readlink(path, link, sizeof(link) - 1);
		if (r <= 0)
			continue;
		link[r] = '\0';
		n += strstr(link, "memfd:vshare-lock-") != NULL;
	}
	closedir(d);
	return n;
}

/* An older scheduler (protocol version 4) shares its one page, every
 * GPU free in it, and says words 0: the client maps nothing, keeps no
 * descriptor, and asks for every grant. */
void lock_v4_page_ignored(void **state)
{
	(void)state;
	fs_lock_page();
	fs_speak(4);
	fs_start();
	env_init();
	assert_int_equal(waiter_asks(), 4);
	assert_null(LD(&client_c.lock));
	assert_int_equal(page_fds(), 3);
	finish();
}

/* The permissions of the mapping that starts at p ("rw-s"...), from
 * /proc/self/maps. */
static void map_perms(const void *p, char out[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	unsigned long lo;
	int found = 0;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f) != NULL)
		found = sscanf(line, "%lx-%*x %4s", &lo, out) == 2 &&
			lo == (unsigned long)p;
	fclose(f);
	if (!found)
		out[0] = '\0';
}

/* The client maps the state page read-only, and cannot make it writable
 * (the page is sealed against writing), so nothing in this process can
 * open a GPU; the words are writable. */
void lock_state_read_only(void **state)
{
	struct vs_lock_page *pg;
	char perms[5];

	(void)state;
	page_start();
	pg = LD(&client_c.lock);
	map_perms(pg, perms);
	assert_string_equal(perms, "r--s");
	map_perms(LD(&client_c.lock_words), perms);
	assert_string_equal(perms, "rw-s");
	errno = 0;
	assert_int_equal(mprotect(pg, sizeof(*pg), PROT_READ | PROT_WRITE), -1);
	assert_int_equal(errno, EACCES);
	finish();
}

/* A state page not sealed against writing (anyone with the descriptor
 * could open a GPU in it) is not used: every grant is asked for. */
void lock_state_unsealed(void **state)
{
	uint64_t n = next_opening();

	(void)state;
	fs_lock_page_sealed(0);
	fs_lock_open(0, n);
	fs_start();
	env_init();
	waiter_asks();
	assert_null(LD(&client_c.lock));
	assert_true(LD(fs_lock_word(0)) == n);
	assert_int_equal(page_fds(), 3);
	finish();
}
