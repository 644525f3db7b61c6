/*
 * The listen address of metrics_listen: numbers only, parsed once at
 * load (to refuse a bad value with its key) and again at start, where
 * the HTTP server binds it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "conf.h"

#define ERR(...) do { snprintf(err, errlen, __VA_ARGS__); return -1; } while (0)

int conf_listen_parse(const char *s, struct sockaddr_storage *ss,
		      unsigned *len, char *err, size_t errlen)
{
	char host[CONF_ADDR_MAX], *end;
	const char *colon = strrchr(s, ':');
	unsigned long port;
	struct sockaddr_in *v4 = (struct sockaddr_in *)(void *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)(void *)ss;
	size_t hl;

	memset(ss, 0, sizeof(*ss));
	if (colon == NULL || colon == s || (hl = (size_t)(colon - s)) >=
	    sizeof(host))
		ERR("\"%s\" is not ADDRESS:PORT (like \"127.0.0.1:9464\" or "
		    "\"[::1]:9464\")", s);
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (colon[1] < '0' || colon[1] > '9' || *end || errno || port < 1 ||
	    port > 65535)
		ERR("\"%s\": the port must be 1 to 65535", s);
	memcpy(host, s, hl);
	host[hl] = '\0';
	if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
		host[hl - 1] = '\0';
		if (inet_pton(AF_INET6, host + 1, &v6->sin6_addr) != 1)
			ERR("\"%s\": \"%s\" is not an IPv6 address", s, host + 1);
		v6->sin6_family = AF_INET6;
		v6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*v6);
		return 0;
	}
	if (inet_pton(AF_INET, host, &v4->sin_addr) != 1)
		ERR("\"%s\": \"%s\" is not a numeric IPv4 address (IPv6 goes "
		    "in brackets; no host names)", s, host);
	v4->sin_family = AF_INET;
	v4->sin_port = htons((uint16_t)port);
	*len = sizeof(*v4);
	return 0;
}
