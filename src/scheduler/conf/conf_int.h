/*
 * The configuration layer's own view of its key table (conf.c), for the
 * parser (conf_parse.c): not for the daemon, which uses conf.h.
 */
#ifndef VSHARE_CONF_INT_H
#define VSHARE_CONF_INT_H

#include "conf.h"

/* 2^53: the largest byte count that a JSON number holds exactly. */
#define JSON_INT_MAX 9007199254740992ull

/* The row of the key named name, NULL if there is none. */
const struct conf_key *conf_key_find(const char *name);
/* Store v in a number-like field (every type but the strings) at f, by
 * its type's width. */
void conf_num_set(int type, void *f, uint64_t v);
/* Is the type one of the strings (path, group, address)? */
int conf_is_text(int type);

#endif
