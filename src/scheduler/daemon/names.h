/*
 * Names for labels (VS_MSG_SET_NAME): what status and the metrics show
 * for the clients of a label, such as the namespace/pod/container that
 * the Kubernetes device plugin gives its "k8s:G-S" labels. A table never
 * changes once made: a change makes a new one, and the status renderer
 * (a worker thread) keeps a reference to the table of its snapshot, so
 * the loop never waits for it.
 */
#ifndef VSHARE_NAMES_H
#define VSHARE_NAMES_H

#include <stddef.h>

#include "vshare/proto.h"

/* Labels with a name, at most: a naming program that sends more is
 * refused (VS_E_LIMIT), and the metrics' series stay bounded. */
#define NAMES_MAX 4096

struct names;

/* Another reference to t (NULL: none), and its release. */
struct names *names_ref(struct names *t);
void names_unref(struct names *t);

/* The name of label, or NULL. t may be NULL (no names). */
const char *names_find(const struct names *t, const char *label);

/* Apply a SET_NAME: *t becomes the new table (the old one released).
 * VS_OK, VS_E_LIMIT (the table is full) or VS_E_INVAL (out of memory);
 * on error *t is unchanged. *changed: how many labels it named, renamed
 * or cleared. */
int names_apply(struct names **t, const struct vs_set_name *m,
		size_t *changed);

#endif
