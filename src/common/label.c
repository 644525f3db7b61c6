/*
 * Client labels: cleaning (UTF-8 and no control characters) and cutting
 * to a display width. The rule is written in label.h.
 */
#include <stdio.h>
#include <string.h>

#include "label.h"

/* Length of the valid UTF-8 sequence at p (at most n bytes), 0 if none. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	size_t len = p[0] < 0x80 ? 1 : p[0] < 0xc2 ? 0 : p[0] < 0xe0 ? 2 :
		     p[0] < 0xf0 ? 3 : p[0] < 0xf5 ? 4 : 0;

	if (len == 0 || len > n)
		return 0;
	for (size_t i = 1; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	/* Overlong forms, UTF-16 surrogates, past U+10FFFF. */
	if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] >= 0xa0) ||
	    (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] >= 0x90))
		return 0;
	return len;
}

/* Characters a terminal acts on rather than shows: C1 controls
 * (U+0080..U+009F, U+009B is an escape sequence's CSI), the line and
 * paragraph separators (U+2028, U+2029) and the bidirectional embeddings,
 * overrides and isolates (U+202A..U+202E, U+2066..U+2069), which can make
 * a label show as something else. */
static int is_control_seq(const unsigned char *p, size_t k)
{
	if (k == 2)
		return p[0] == 0xc2 && p[1] < 0xa0;
	if (k == 3 && p[0] == 0xe2 && p[1] == 0x80)
		return p[2] >= 0xa8 && p[2] <= 0xae;
	if (k == 3 && p[0] == 0xe2 && p[1] == 0x81)
		return p[2] >= 0xa6 && p[2] <= 0xa9;
	return 0;
}

void vs_label_clean(char *label)
{
	unsigned char *p = (unsigned char *)label;
	size_t n = strlen(label);

	while (n > 0) {
		size_t k = utf8_seq(p, n);

		if (k == 0 || p[0] < 0x20 || p[0] == 0x7f) {
			*p = '?';
			k = 1;
		} else if (is_control_seq(p, k)) {
			memset(p, '?', k); /* the length stays */
		}
		p += k;
		n -= k;
	}
}

/* A UTF-8 continuation byte: not the start of a character. */
static int cont(char c)
{
	return ((unsigned char)c & 0xc0) == 0x80;
}

size_t vs_label_cut(char *out, size_t n, const char *src)
{
	size_t k = strlen(src);

	if (k >= n) {
		/* Back to the start of the character at the cut: at most 3
		 * continuation bytes; more are not UTF-8, and clean shows
		 * them as '?' wherever the cut falls. */
		k = n - 1;
		for (int i = 0; i < 3 && k > 0 && cont(src[k]); i++)
			k--;
		if (cont(src[k]))
			k = n - 1;
	}
	memcpy(out, src, k);
	out[k] = '\0';
	return k;
}

size_t vs_label_cols(const char *label)
{
	size_t cols = 0;

	for (; *label; label++)
		cols += !cont(*label);
	return cols;
}

size_t vs_label_fit(const char *label, size_t cols, char *out, size_t n)
{
	size_t have = vs_label_cols(label), k = 0, c = 0;

	if (label[0] == '\0' || cols == 0) {
		snprintf(out, n, "%s", cols ? "-" : "");
		return cols ? 1 : 0;
	}
	if (have <= cols && strlen(label) < n) {
		snprintf(out, n, "%s", label);
		return have;
	}
	/* Keep cols - 1 characters that fit in out with "~" and the NUL. */
	while (label[k] && c < cols - 1) {
		size_t e = k + 1;

		while (cont(label[e]))
			e++;
		if (e + 2 > n)
			break;
		k = e;
		c++;
	}
	snprintf(out, n, "%.*s~", (int)k, label);
	return c + 1;
}

/* Characters a log line must not carry as they are: the C1 controls,
 * the line and paragraph separators, and every format character
 * (Unicode category Cf): zero-width spaces and joiners, bidirectional
 * marks, embeddings, overrides and isolates, invisible operators, the
 * byte order mark, tags. Each makes a label read as another one, or
 * hides part of the line. Sorted; ranges inclusive. */
static const struct {
	unsigned lo, hi;
} hidden[] = {
	{ 0x80, 0x9f }, { 0xad, 0xad }, { 0x600, 0x605 }, { 0x61c, 0x61c },
	{ 0x6dd, 0x6dd }, { 0x70f, 0x70f }, { 0x890, 0x891 },
	{ 0x8e2, 0x8e2 }, { 0x180e, 0x180e }, { 0x200b, 0x200f },
	{ 0x2028, 0x202e }, { 0x2060, 0x2064 }, { 0x2066, 0x206f },
	{ 0xfeff, 0xfeff }, { 0xfff9, 0xfffb }, { 0x110bd, 0x110bd },
	{ 0x110cd, 0x110cd }, { 0x13430, 0x1343f }, { 0x1bca0, 0x1bca3 },
	{ 0x1d173, 0x1d17a }, { 0xe0001, 0xe0001 }, { 0xe0020, 0xe007f },
};

static int is_hidden(unsigned cp)
{
	for (size_t i = 0; i < sizeof(hidden) / sizeof(hidden[0]); i++)
		if (cp >= hidden[i].lo && cp <= hidden[i].hi)
			return 1;
	return 0;
}

/* The code point of a valid sequence of k bytes. */
static unsigned code_point(const unsigned char *p, size_t k)
{
	unsigned cp = k == 1 ? p[0] : p[0] & (0x7f >> k);

	for (size_t i = 1; i < k; i++)
		cp = cp << 6 | (p[i] & 0x3f);
	return cp;
}

/* The escape of the character (or stray byte) of k bytes at p into esc,
 * or 0 when it stays as it is. */
static int escape_one(const unsigned char *p, size_t k, char *esc, size_t n)
{
	unsigned cp;

	if (k == 0 || p[0] < 0x20 || p[0] == 0x7f)
		return snprintf(esc, n, "\\x%02x", p[0]);
	if (p[0] == '"' || p[0] == '\\')
		return snprintf(esc, n, "\\%c", p[0]);
	cp = code_point(p, k);
	if (!is_hidden(cp))
		return 0;
	return snprintf(esc, n, cp > 0xffff ? "\\U%08x" : "\\u%04x", cp);
}

void vs_label_escape(const char *label, char *out, size_t n)
{
	const unsigned char *p = (const unsigned char *)label;
	size_t left = strlen(label), o = 0;

	if (n == 0)
		return;
	while (left > 0) {
		size_t k = utf8_seq(p, left);
		char esc[12];
		int e = escape_one(p, k, esc, sizeof(esc));
		const char *src = e > 0 ? esc : (const char *)p;
		size_t len = e > 0 ? (size_t)e : k;

		/* Whole escapes and whole characters, or nothing more. */
		if (o + len >= n)
			break;
		memcpy(out + o, src, len);
		o += len;
		k = k == 0 ? 1 : k;
		p += k;
		left -= k;
	}
	out[o] = '\0';
}
