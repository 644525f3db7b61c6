/*
 * Claims on this node. Preparing a claim reads it from the API server
 * (the kubelet sends only its namespace, name and UID), takes the
 * results of its allocation that are this driver's, and writes one CDI
 * spec for the claim alone: kind DRIVER/claim, one device named by the
 * claim's UID whose environment is the claim's policy (VSHARE_MEM_LIMIT,
 * the memory the scheduler took from the GPU's capacity for it;
 * VSHARE_CLASS from the claim's opaque configuration; VSHARE_LABEL). The
 * runtime then gets two CDI devices per GPU: the GPU itself from
 * vsharectl cdi generate's spec (device nodes, the shim, the socket) and
 * the claim's.
 *
 * What is prepared is kept in a checkpoint file, written whole (temporary
 * file, rename) before the kubelet hears of it, so that a driver that
 * restarts answers the same for a claim it prepared before, and
 * unprepares it later.
 */
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include <cjson/cJSON.h>

#include "dra.h"

namespace {

std::mutex mu;
std::map<std::string, dra_prepared> claims;    /* by UID */

struct json {
	cJSON *p;
	explicit json(cJSON *x) : p(x) {}
	~json() { cJSON_Delete(p); }
};

const cJSON *at(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

std::string str(const cJSON *o, const char *key)
{
	const cJSON *v = at(o, key);
	return cJSON_IsString(v) ? v->valuestring : "";
}

/* Write path whole: a temporary file beside it, then a rename. */
std::string write_file(const std::string &path, const std::string &text)
{
	std::string tmp = path + ".tmp";
	int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	bool ok;

	if (fd < 0)
		return tmp + ": " + strerror(errno);
	ok = write(fd, text.data(), text.size()) == (ssize_t)text.size();
	ok = fsync(fd) == 0 && ok;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp.c_str(), path.c_str()) != 0) {
		std::string why = path + ": " + strerror(errno);
		unlink(tmp.c_str());
		return why;
	}
	return "";
}

std::string print(cJSON *j)
{
	char *t = cJSON_Print(j);
	std::string s = t;
	cJSON_free(t);
	return s + "\n";
}

std::string spec_path(const dra_conf &c, const std::string &uid)
{
	return c.cdi_dir + "/" + c.driver + "-claim_" + uid + ".json";
}

std::string claim_kind(const dra_conf &c)
{
	return c.driver + "/claim";
}

std::string write_spec(const dra_conf &c, const std::string &uid,
		       const dra_prepared &p)
{
	json s(cJSON_CreateObject());
	cJSON *devs, *d, *ed, *env;

	cJSON_AddStringToObject(s.p, "cdiVersion", "0.5.0");
	cJSON_AddStringToObject(s.p, "kind", claim_kind(c).c_str());
	devs = cJSON_AddArrayToObject(s.p, "devices");
	d = cJSON_CreateObject();
	cJSON_AddItemToArray(devs, d);
	cJSON_AddStringToObject(d, "name", uid.c_str());
	ed = cJSON_AddObjectToObject(d, "containerEdits");
	env = cJSON_AddArrayToObject(ed, "env");
	for (auto &e : p.env)
		cJSON_AddItemToArray(env, cJSON_CreateString(
			(e.first + "=" + e.second).c_str()));
	return write_file(spec_path(c, uid), print(s.p));
}

cJSON *strings(const std::vector<std::string> &v)
{
	cJSON *a = cJSON_CreateArray();
	for (auto &x : v)
		cJSON_AddItemToArray(a, cJSON_CreateString(x.c_str()));
	return a;
}

std::vector<std::string> strings(const cJSON *a)
{
	std::vector<std::string> v;
	const cJSON *x;

	cJSON_ArrayForEach(x, a)
		if (cJSON_IsString(x))
			v.push_back(x->valuestring);
	return v;
}

std::string save(const dra_conf &c)
{
	json j(cJSON_CreateObject());
	cJSON *all;

	cJSON_AddNumberToObject(j.p, "version", 1);
	all = cJSON_AddObjectToObject(j.p, "claims");
	for (auto &kv : claims) {
		cJSON *o = cJSON_AddObjectToObject(all, kv.first.c_str()), *env, *ds;
		cJSON_AddStringToObject(o, "namespace", kv.second.ns.c_str());
		cJSON_AddStringToObject(o, "name", kv.second.name.c_str());
		env = cJSON_AddObjectToObject(o, "env");
		for (auto &e : kv.second.env)
			cJSON_AddStringToObject(env, e.first.c_str(), e.second.c_str());
		ds = cJSON_AddArrayToObject(o, "devices");
		for (auto &d : kv.second.devices) {
			cJSON *x = cJSON_CreateObject();
			cJSON_AddItemToObject(x, "requests", strings(d.requests));
			cJSON_AddStringToObject(x, "pool", d.pool.c_str());
			cJSON_AddStringToObject(x, "device", d.device.c_str());
			cJSON_AddStringToObject(x, "shareID", d.share_id.c_str());
			cJSON_AddItemToObject(x, "cdi", strings(d.cdi_ids));
			cJSON_AddItemToArray(ds, x);
		}
	}
	return write_file(c.checkpoint, print(j.p));
}

/* The claim's class, from its opaque configuration for this driver that
 * applies to `request` (a configuration naming no request applies to
 * all): "" and cls set (or left empty), or why not. */
std::string config_class(const dra_conf &c, const cJSON *configs,
			 const std::string &request, std::string &cls)
{
	const cJSON *cf;

	cJSON_ArrayForEach(cf, configs) {
		const cJSON *op = at(cf, "opaque"), *params = at(op, "parameters"), *kv;
		std::vector<std::string> reqs = strings(at(cf, "requests"));

		if (str(op, "driver") != c.driver)
			continue;
		if (!reqs.empty() && std::find(reqs.begin(), reqs.end(),
					       request) == reqs.end())
			continue;
		if (!cJSON_IsObject(params))
			return "its configuration for " + c.driver +
			       " has no parameters object";
		cJSON_ArrayForEach(kv, params) {
			std::string k = kv->string;
			if (k == "apiVersion" || k == "kind")
				continue;
			if (k != "class" || !cJSON_IsString(kv))
				return "its configuration for " + c.driver +
				       " has " + k + ": only class (a string) is known";
			std::string v = kv->valuestring;
			bool word = !v.empty() && v.size() <= 31;
			for (char ch : v)
				word = word && (isalnum((unsigned char)ch) ||
						ch == '-' || ch == '_' || ch == '.');
			if (!word)
				return "class " + v + " is not a word of letters, "
				       "digits, '-', '_' and '.' (31 at most)";
			if (!cls.empty() && cls != v)
				return "it asks for two classes, " + cls + " and " + v;
			cls = v;
		}
	}
	return "";
}

/* The claim's devices of this driver on this node, and its policy. */
std::string from_claim(const dra_conf &c, const cJSON *claim,
		       const std::string &uid, dra_prepared &p)
{
	const cJSON *alloc = at(at(claim, "status"), "allocation");
	const cJSON *devs = at(alloc, "devices"), *r;
	uint64_t mem = 0;
	bool limited = true;
	std::string cls;

	if (str(at(claim, "metadata"), "uid") != uid)
		return "the API server has another claim of that name (UID " +
		       str(at(claim, "metadata"), "uid") + ")";
	if (!cJSON_IsObject(alloc))
		return "it is not allocated";
	cJSON_ArrayForEach(r, at(devs, "results")) {
		dra_device d;
		const cJSON *cap = at(at(r, "consumedCapacity"), "memory");
		unsigned gpu;
		char tail;

		if (str(r, "driver") != c.driver)
			continue;
		d.pool = str(r, "pool");
		d.device = str(r, "device");
		d.share_id = str(r, "shareID");
		d.requests.push_back(str(r, "request"));
		if (d.pool != c.node)
			return "device " + d.device + " is of pool " + d.pool +
			       ", not of this node's";
		if (sscanf(d.device.c_str(), "gpu-%u%c", &gpu, &tail) != 1)
			return "device " + d.device + " is not one of ours";
		/* Without consumable capacity (the feature gate off) the
		 * claim has the whole GPU and consumed nothing: no limit. */
		uint64_t m = 0;
		if (!cJSON_IsString(cap))
			limited = false;
		else if (!dra_quantity(cap->valuestring, m))
			return "device " + d.device + ": consumed memory " +
			       cap->valuestring + " is not a quantity";
		mem += m;
		std::string why = config_class(c, at(devs, "config"),
					       d.requests[0], cls);
		if (!why.empty())
			return why;
		d.cdi_ids = { c.gpu_kind + "=" + std::to_string(gpu),
			      claim_kind(c) + "=" + uid };
		p.devices.push_back(d);
	}
	if (p.devices.empty())
		return "it has no device of " + c.driver;
	if (limited)
		p.env["VSHARE_MEM_LIMIT"] = std::to_string(mem);
	if (!cls.empty())
		p.env["VSHARE_CLASS"] = cls;
	p.env["VSHARE_LABEL"] = "dra:" + p.ns + "/" + p.name;
	return "";
}

} // namespace

int dra_claims_open(const dra_conf &c)
{
	std::lock_guard<std::mutex> lk(mu);
	std::ifstream f(c.checkpoint);
	std::stringstream ss;
	const cJSON *o;

	claims.clear();
	if (!f) {
		log_info("no checkpoint %s: no claim prepared yet", c.checkpoint.c_str());
		return 0;
	}
	ss << f.rdbuf();
	json j(cJSON_Parse(ss.str().c_str()));
	if (!cJSON_IsObject(at(j.p, "claims"))) {
		std::string aside = c.checkpoint + ".bad";
		rename(c.checkpoint.c_str(), aside.c_str());
		log_error("the checkpoint %s is not one of ours: kept as %s; "
			  "claims prepared before are not known", c.checkpoint.c_str(),
			  aside.c_str());
		return -1;
	}
	cJSON_ArrayForEach(o, at(j.p, "claims")) {
		dra_prepared p;
		const cJSON *x;

		p.ns = str(o, "namespace");
		p.name = str(o, "name");
		cJSON_ArrayForEach(x, at(o, "env"))
			if (cJSON_IsString(x))
				p.env[x->string] = x->valuestring;
		cJSON_ArrayForEach(x, at(o, "devices")) {
			dra_device d;
			d.requests = strings(at(x, "requests"));
			d.pool = str(x, "pool");
			d.device = str(x, "device");
			d.share_id = str(x, "shareID");
			d.cdi_ids = strings(at(x, "cdi"));
			p.devices.push_back(d);
		}
		/* /var/run is empty after a reboot; the claims' pods then
		 * start again and need their specs. */
		if (access(spec_path(c, o->string).c_str(), F_OK) != 0) {
			std::string why = write_spec(c, o->string, p);
			if (!why.empty())
				log_warn("claim %s/%s: its CDI spec: %s", p.ns.c_str(),
					 p.name.c_str(), why.c_str());
		}
		claims[o->string] = p;
	}
	log_info("%zu prepared claim(s) from %s", claims.size(), c.checkpoint.c_str());
	return 0;
}

std::string dra_prepare(const dra_conf &c, const dra_fetch_fn &fetch,
			const std::string &ns, const std::string &uid,
			const std::string &name, dra_prepared &out)
{
	std::lock_guard<std::mutex> lk(mu);
	std::string text, why;
	dra_prepared p;

	auto it = claims.find(uid);
	if (it != claims.end()) {
		out = it->second;
		return "";
	}
	if (uid.empty() || uid.find('/') != std::string::npos ||
	    uid.find("..") != std::string::npos)
		return "bad claim UID " + uid;
	if (!(why = fetch(ns, name, text)).empty())
		return why;
	json j(cJSON_Parse(text.c_str()));
	p.ns = ns;
	p.name = name;
	if (!cJSON_IsObject(j.p))
		return "the API server's answer is not a claim";
	if (!(why = from_claim(c, j.p, uid, p)).empty())
		return why;
	if (!(why = write_spec(c, uid, p)).empty())
		return "its CDI spec: " + why;
	claims[uid] = p;
	if (!(why = save(c)).empty()) {
		claims.erase(uid);
		unlink(spec_path(c, uid).c_str());
		return "the checkpoint: " + why;
	}
	log_info("prepared claim %s/%s: %zu device(s), %s", ns.c_str(), name.c_str(),
		 p.devices.size(), p.env.count("VSHARE_MEM_LIMIT") ?
		 ("VSHARE_MEM_LIMIT=" + p.env["VSHARE_MEM_LIMIT"]).c_str() :
		 "no memory limit");
	out = p;
	return "";
}

std::string dra_unprepare(const dra_conf &c, const std::string &uid)
{
	std::lock_guard<std::mutex> lk(mu);
	auto it = claims.find(uid);
	std::string why;

	if (it == claims.end())
		return "";
	dra_prepared p = it->second;
	claims.erase(it);
	if (!(why = save(c)).empty()) {
		claims[uid] = p;
		return "the checkpoint: " + why;
	}
	if (unlink(spec_path(c, uid).c_str()) != 0 && errno != ENOENT)
		log_warn("claim %s/%s: removing its CDI spec: %s", p.ns.c_str(),
			 p.name.c_str(), strerror(errno));
	log_info("unprepared claim %s/%s", p.ns.c_str(), p.name.c_str());
	return "";
}
