/*
 * Client labels, one rule for every program. A label is UTF-8 text with
 * no control characters: it goes into logs, the status document (JSON,
 * which must be UTF-8) and terminals. vs_label_clean makes any text follow
 * the rule: each byte that does not begin a valid UTF-8 sequence (overlong
 * forms, surrogates and code points past U+10FFFF included), and each
 * control character (below 0x20, and DEL), becomes '?'; so does each byte
 * of a character a terminal would act on (C1 controls U+0080..U+009F,
 * U+2028, U+2029, the bidirectional controls U+202A..U+202E and
 * U+2066..U+2069). The shim cleans
 * its label before HELLO, and the scheduler again at HELLO, since the peer
 * may be another program.
 *
 * For a table, vs_label_fit cuts a clean label to a display width,
 * counting one column per character, and cuts between characters, never
 * inside a UTF-8 sequence; a label that was cut ends with '~'. (Wide and
 * combining characters are counted as one column too: vsharectl runs in
 * any locale and does not look them up.)
 */
#ifndef VSHARE_LABEL_H
#define VSHARE_LABEL_H

#include <stddef.h>

/* Clean a NUL-terminated label in place; its length does not change. */
void vs_label_clean(char *label);

/* Copy src into out (n bytes, n > 0), cut to at most n - 1 bytes between
 * characters: where the cut would split a UTF-8 sequence it comes before
 * the sequence instead. The shim and vsharectl label cut a label to what
 * HELLO carries with it. Returns the bytes copied. */
size_t vs_label_cut(char *out, size_t n, const char *src);

/* Characters (columns) of a clean label. */
size_t vs_label_cols(const char *label);

/* Copy label into out (n bytes) cut to at most cols columns; "-" for an
 * empty label. Returns the columns of what was written. */
size_t vs_label_fit(const char *label, size_t cols, char *out, size_t n);

/*
 * A label as a log line shows it, between double quotes: '"' and '\'
 * get a backslash, a byte that does not begin valid UTF-8 and a C0
 * control become \xNN, and the characters that act on a terminal or
 * show as nothing become \uXXXX (\UXXXXXXXX past U+FFFF): C1 controls,
 * U+2028, U+2029, and every format character (Unicode category Cf:
 * zero-width spaces and joiners U+200B..U+200F, bidirectional controls
 * U+202A..U+202E and U+2066..U+206F, U+2060..U+2064, U+FEFF, tags...).
 * Another label can then never be read into it. Cut between escapes and
 * characters to fit n bytes; VS_LABEL_ESC_SIZE(len) bytes always fit.
 */
#define VS_LABEL_ESC_SIZE(len) ((len) * 4 + 1)
void vs_label_escape(const char *label, char *out, size_t n);

#endif
