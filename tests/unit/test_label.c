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
	/* What a terminal acts on: C1 (U+009B is a CSI), U+2028, bidi. */
	clean_is("c1-\xc2\x9b" "31m-\xc2\x80", "c1-??31m-??");
	clean_is("nbsp-\xc2\xa0", "nbsp-\xc2\xa0");
	clean_is("ls-\xe2\x80\xa8-rlo-\xe2\x80\xae-fsi-\xe2\x81\xa8",
		 "ls-???" "-rlo-???" "-fsi-???");
	clean_is("dash-\xe2\x80\x94", "dash-\xe2\x80\x94");
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

static void cut_is(const char *in, size_t n, const char *want)
{
	char buf[80];

	assert_int_equal(vs_label_cut(buf, n, in), strlen(want));
	assert_string_equal(buf, want);
}

/* A label cut to what HELLO carries: whole characters only. */
static void test_cut(void **state)
{
	(void)state;
	cut_is("short", 64, "short");
	cut_is("abcdef", 4, "abc");
	cut_is("", 1, "");
	/* "ab" then a two-byte character: 3 bytes would split it. */
	cut_is("ab\xc3\xa9", 4, "ab");
	cut_is("ab\xc3\xa9", 5, "ab\xc3\xa9");
	/* A four-byte character cut after each of its bytes. */
	cut_is("a\xf0\x9f\x98\x80", 3, "a");
	cut_is("a\xf0\x9f\x98\x80", 5, "a");
	cut_is("a\xf0\x9f\x98\x80", 6, "a\xf0\x9f\x98\x80");
	/* Continuation bytes alone are no character: cut where asked. */
	cut_is("a\x80\x80\x80\x80\x80", 5, "a\x80\x80\x80");
}

static void escape_is(const char *in, const char *want)
{
	char buf[VS_LABEL_ESC_SIZE(64)];

	vs_label_escape(in, buf, sizeof(buf));
	assert_string_equal(buf, want);
}

/* For log lines: quotes and backslashes escaped, whatever hides or moves
 * text shown as an escape, everything else as it is. */
static void test_escape(void **state)
{
	char small[8], worst[VS_LABEL_ESC_SIZE(4)];

	(void)state;
	escape_is("train-7", "train-7");
	escape_is("caf\xc3\xa9 \xe2\x80\x94", "caf\xc3\xa9 \xe2\x80\x94");
	escape_is("x\" uid 0\\", "x\\\" uid 0\\\\");
	escape_is("tab\t\x1b\x7f", "tab\\x09\\x1b\\x7f");
	escape_is("bad-\xff", "bad-\\xff");
	/* Zero-width space, joiner, word joiner, BOM, soft hyphen. */
	escape_is("a\xe2\x80\x8b" "b\xe2\x80\x8d" "c\xe2\x81\xa0" "d\xef\xbb\xbf"
		  "e\xc2\xad",
		  "a\\u200bb\\u200dc\\u2060d\\ufeffe\\u00ad");
	/* Bidi override and isolate, C1 CSI, line separator, a tag. */
	escape_is("\xe2\x80\xae" "\xe2\x81\xa6" "\xc2\x9b" "\xe2\x80\xa8"
		  "\xf3\xa0\x80\x81",
		  "\\u202e\\u2066\\u009b\\u2028\\U000e0001");
	/* The neighbours of those ranges stay. */
	escape_is("\xe2\x80\x8a\xe2\x80\x90\xc2\xa0", "\xe2\x80\x8a\xe2\x80\x90\xc2\xa0");
	/* Cut between escapes, never inside one. */
	vs_label_escape("ab\"cd", small, 4);
	assert_string_equal(small, "ab");
	vs_label_escape("ab\xe2\x80\x8b", small, sizeof(small));
	assert_string_equal(small, "ab");
	/* The largest expansion fits VS_LABEL_ESC_SIZE. */
	vs_label_escape("\x01\x02\x03\x04", worst, sizeof(worst));
	assert_string_equal(worst, "\\x01\\x02\\x03\\x04");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_fit),
		cmocka_unit_test(test_cut),
		cmocka_unit_test(test_escape),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
