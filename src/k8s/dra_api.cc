/*
 * The API server, reached as a pod reaches it: the in-cluster address
 * from the environment Kubernetes gives every pod, the service account's
 * token as a bearer token, its CA to check the server. libcurl does the
 * HTTPS (Debian's libcurl4-openssl-dev): a well-kept client that checks
 * certificates and host names by default, where a generated Kubernetes
 * client for C++ does not exist in Debian and would bring its own HTTP
 * stack. The driver makes few calls (a slice at start, a claim per
 * prepare), one at a time, so each is a plain blocking request.
 */
#include <curl/curl.h>

#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "dra.h"

namespace {

std::string base;          /* https://HOST:PORT, no slash at the end */
std::mutex mu;             /* one call at a time: gRPC's threads share it */

size_t collect(char *p, size_t size, size_t n, void *arg)
{
	static_cast<std::string *>(arg)->append(p, size * n);
	return size * n;
}

std::string slurp(const std::string &path)
{
	std::ifstream f(path);
	std::stringstream ss;

	if (!f)
		return "";
	ss << f.rdbuf();
	std::string s = ss.str();
	while (!s.empty() && (s.back() == '\n' || s.back() == '\r' ||
			      s.back() == ' '))
		s.pop_back();
	return s;
}

} // namespace

std::string dra_api_init(const dra_conf &c)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		return "libcurl cannot start";
	if (!c.api_server.empty()) {
		base = c.api_server;
	} else {
		const char *host = getenv("KUBERNETES_SERVICE_HOST");
		const char *port = getenv("KUBERNETES_SERVICE_PORT");

		if (host == nullptr || port == nullptr)
			return "not in a pod (no KUBERNETES_SERVICE_HOST and "
			       "KUBERNETES_SERVICE_PORT): give --api-server";
		std::string h = host;
		/* An IPv6 address goes in brackets in a URL. */
		if (h.find(':') != std::string::npos)
			h = "[" + h + "]";
		base = "https://" + h + ":" + port;
	}
	while (!base.empty() && base.back() == '/')
		base.pop_back();
	log_info("API server %s", base.c_str());
	return "";
}

dra_http dra_api_call(const dra_conf &c, const char *method,
		      const std::string &path, const std::string &body)
{
	std::lock_guard<std::mutex> lk(mu);
	dra_http r;
	CURL *h = curl_easy_init();
	struct curl_slist *hdr = nullptr;
	std::string token = slurp(c.token_file);
	char err[CURL_ERROR_SIZE] = "";

	if (h == nullptr) {
		r.error = "libcurl: no handle";
		return r;
	}
	hdr = curl_slist_append(hdr, "Accept: application/json");
	if (!body.empty())
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
	if (!token.empty())
		hdr = curl_slist_append(hdr, ("Authorization: Bearer " + token).c_str());
	curl_easy_setopt(h, CURLOPT_URL, (base + path).c_str());
	curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &r.body);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
	curl_easy_setopt(h, CURLOPT_TIMEOUT, 20L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, 5L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (base.compare(0, 8, "https://") == 0)
		curl_easy_setopt(h, CURLOPT_CAINFO, c.ca_file.c_str());
	if (!body.empty()) {
		curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
		curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)body.size());
	}
	CURLcode rc = curl_easy_perform(h);
	if (rc == CURLE_OK)
		curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
	else
		r.error = err[0] ? err : curl_easy_strerror(rc);
	curl_slist_free_all(hdr);
	curl_easy_cleanup(h);
	log_debug("%s %s: %ld %s", method, path.c_str(), r.status,
		  r.error.c_str());
	return r;
}

void dra_api_close()
{
	curl_global_cleanup();
}
