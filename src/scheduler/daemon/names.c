/*
 * The names of labels (names.h): a sorted array of (label, name), made
 * anew at each change and shared by reference count.
 */
#include <stdlib.h>
#include <string.h>

#include "label.h"
#include "names.h"

struct entry {
	char label[VS_NAME_LABEL_MAX];
	char name[VS_NAME_MAX];
};

struct names {
	unsigned refs;               /* atomic: the renderer drops its own */
	size_t n;
	struct entry e[];
};

struct names *names_ref(struct names *t)
{
	if (t != NULL)
		__atomic_add_fetch(&t->refs, 1, __ATOMIC_RELAXED);
	return t;
}

void names_unref(struct names *t)
{
	if (t != NULL && __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(t);
}

static int cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->label,
		      ((const struct entry *)b)->label);
}

const char *names_find(const struct names *t, const char *label)
{
	struct entry key;
	const struct entry *e;

	if (t == NULL || t->n == 0 || strlen(label) >= sizeof(key.label))
		return NULL;
	strcpy(key.label, label);
	e = bsearch(&key, t->e, t->n, sizeof(t->e[0]), cmp);
	return e ? e->name : NULL;
}

static struct names *make(size_t cap)
{
	struct names *t = malloc(sizeof(*t) + (cap ? cap : 1) * sizeof(t->e[0]));

	if (t != NULL) {
		t->refs = 1;
		t->n = 0;
	}
	return t;
}

int names_apply(struct names **t, const struct vs_set_name *m,
		size_t *changed)
{
	const struct names *old = *t;
	size_t n = old ? old->n : 0, plen = strlen(m->label);
	int clear = (m->flags & VS_NAME_CLEAR) != 0, found = 0;
	struct names *nt = make(n + 1);

	if (nt == NULL)
		return VS_E_INVAL;
	*changed = 0;
	/* Every entry but the ones this request replaces or clears. */
	for (size_t i = 0; i < n; i++) {
		const struct entry *e = &old->e[i];
		int hit = clear ? strncmp(e->label, m->label, plen) == 0 :
				  strcmp(e->label, m->label) == 0;

		if (hit) {
			found = 1;
			if (clear || m->name[0] == '\0' ||
			    strcmp(e->name, m->name) != 0)
				(*changed)++;
			continue;
		}
		nt->e[nt->n++] = *e;
	}
	if (!clear && m->name[0] != '\0') {
		struct entry *e = &nt->e[nt->n];

		if (nt->n >= NAMES_MAX) {
			free(nt);
			return VS_E_LIMIT;
		}
		memcpy(e->label, m->label, sizeof(e->label));
		memcpy(e->name, m->name, sizeof(e->name));
		/* Shown in status and the metrics, and matched against the
		 * clients' labels, which are clean: the one label rule. */
		vs_label_clean(e->label);
		vs_label_clean(e->name);
		nt->n++;
		if (!found)
			(*changed)++;
		qsort(nt->e, nt->n, sizeof(nt->e[0]), cmp);
	}
	names_unref(*t);
	*t = nt;
	return VS_OK;
}
