/*
 * Client labels, one rule for every program. A label is UTF-8 text with
 * no control characters: it goes into logs, the status document (JSON,
 * which must be UTF-8) and terminals. vs_label_clean makes any text follow
 * the rule: each byte that does not begin a valid UTF-8 sequence (overlong
 * forms, surrogates and code points past U+10FFFF included), and each
 * control character (below 0x20, and DEL), becomes '?'. The shim cleans
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

/* Characters (columns) of a clean label. */
size_t vs_label_cols(const char *label);

/* Copy label into out (n bytes) cut to at most cols columns; "-" for an
 * empty label. Returns the columns of what was written. */
size_t vs_label_fit(const char *label, size_t cols, char *out, size_t n);

#endif
