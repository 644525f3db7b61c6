/* Labels (src/common/label.c): one rule for cleaning, at HELLO and in
 * the shim, and one for cutting to a table's width. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "label.h"

static void clean_is(const char *in, const char *want)
{
	char buf[128];

	strcpy(buf, in);
	vs_label_clean(buf);
	assert_string_equal(buf, want);
}

static void test_clean(void **state)
{
	(void)state;
	clean_is("train-7", "train-7");
	clean_is("caf\xc3\xa9", "caf\xc3\xa9");
	clean_is("job-\xff\xfe-x", "job-?" "?-x");
	clean_is("cut-\xe2\x82", "cut-??");         /* a sequence cut short */
	clean_is("sur-\xed\xa0\x80", "sur-???");    /* a UTF-16 surrogate */
	clean_is("long-\xf0\x80\x80\x80", "long-????"); /* overlong */
	clean_is("big-\xf4\x90\x80\x80", "big-????");   /* past U+10FFFF */
	clean_is("tab\there\x1b[31m\x7f", "tab?here?[31m?");
	clean_is("", "");
}

static void fit_is(const char *in, size_t cols, const char *want,
		   size_t want_cols)
{
	char buf[80];

	assert_int_equal(vs_label_fit(in, cols, buf, sizeof(buf)), want_cols);
	assert_string_equal(buf, want);
	assert_int_equal(vs_label_cols(buf), want_cols);
}

static void test_fit(void **state)
{
	char small[6];
	(void)state;
	fit_is("", 16, "-", 1);
	fit_is("short", 16, "short", 5);
	fit_is("exactly-16-chars", 16, "exactly-16-chars", 16);
	fit_is("a-rather-long-label-here", 16, "a-rather-long-l~", 16);
	/* Characters, not bytes: 16 two-byte characters fit. */
	fit_is("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	       "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
	       16, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	       "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	       "\xc3\xa9", 16);
	fit_is("\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac", 2, "\xe2\x82\xac~", 2);
	/* A small buffer cuts between characters too. */
	assert_int_equal(vs_label_fit("\xe2\x82\xac\xe2\x82\xac\xe2\x82\xac",
				      16, small, sizeof(small)), 2);
	assert_string_equal(small, "\xe2\x82\xac~");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_fit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
