/*
 * A growing array: room for one more element, doubling from `first`.
 */
#ifndef VSHARE_GROW_H
#define VSHARE_GROW_H

#include <stdlib.h>

/*
 * VS_GROW(arr, n, cap, first): make arr (a pointer to elements, cap of
 * them allocated, n in use) hold at least n + 1. 0, or -1 with arr and
 * cap unchanged when memory is short. A macro so that arr keeps its type.
 */
#define VS_GROW(arr, n, cap, first) __extension__ ({                      \
	int rc_ = 0;                                                      \
	if ((n) >= (cap)) {                                               \
		size_t c_ = (cap) ? (cap) * 2 : (first);                  \
		__typeof__(arr) p_ = realloc((arr), c_ * sizeof(*(arr))); \
		if (p_ == NULL) {                                         \
			rc_ = -1;                                         \
		} else {                                                  \
			(arr) = p_;                                       \
			(cap) = c_;                                       \
		}                                                         \
	}                                                                 \
	rc_;                                                              \
})

#endif
