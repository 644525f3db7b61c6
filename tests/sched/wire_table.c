/*
 * The message table of src/common/proto.c as text, one line per type:
 * "type name role size variable since". check_vsproto.py compares it with
 * the Python codec of the tests (vsproto.py), so that the codec follows
 * every change of the table.
 */
#include <stdio.h>

#include "vshare/proto.h"

int main(void)
{
	for (unsigned t = 0; t <= 0xffff; t++) {
		const struct vs_msg_info *m = vs_msg_lookup((uint16_t)t);

		if (m)
			printf("%#x %s %u %u %u %u\n", t, m->name, m->role,
			       m->size, m->variable, m->since);
	}
	return 0;
}
