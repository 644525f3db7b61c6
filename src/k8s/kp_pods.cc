/*
 * Which pod holds which shares, from the kubelet's PodResources API, and
 * the names the scheduler shows for their clients. Allocate put
 * VSHARE_LABEL=k8s:<lowest share> in each container; here each such
 * label gets its "namespace/pod/container", handed to the scheduler with
 * `vsharectl name`, which replaces every name under the prefix "k8s:" at
 * once, so a pod that is gone loses its name too. vsharectl (rather than
 * a second implementation of the protocol here) keeps the one admin
 * client of the scheduler in C.
 */
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <grpcpp/grpcpp.h>

#include "kp.h"
#include "podresources/v1/api.grpc.pb.h"

extern char **environ;

namespace {

typedef std::map<std::string, std::string> names_t;

/* Published names are sent again every this many polls even when they did
 * not change: a scheduler that restarted has forgotten them. */
const unsigned republish = 6;

names_t last;
bool last_ok;
unsigned polls;
bool said_down;
bool said_failed;

/* label -> "ns/pod/container" for every container with our shares; false
 * when the kubelet did not answer. */
bool list(const kp_conf &c, names_t &out)
{
	auto ch = grpc::CreateChannel("unix:" + c.pod_resources,
				      grpc::InsecureChannelCredentials());
	auto stub = v1::PodResourcesLister::NewStub(ch);
	grpc::ClientContext ctx;
	v1::ListPodResourcesRequest req;
	v1::ListPodResourcesResponse resp;

	ctx.set_deadline(std::chrono::system_clock::now() +
			 std::chrono::seconds(5));
	grpc::Status s = stub->List(&ctx, req, &resp);
	if (!s.ok()) {
		if (!said_down)
			log_warn("PodResources (%s) did not answer: %s",
				 c.pod_resources.c_str(),
				 s.error_message().c_str());
		said_down = true;
		return false;
	}
	said_down = false;
	for (const auto &pod : resp.pod_resources())
		for (const auto &ctr : pod.containers()) {
			std::vector<std::string> ids;
			for (const auto &d : ctr.devices())
				if (d.resource_name() == c.resource)
					ids.insert(ids.end(), d.device_ids().begin(),
						   d.device_ids().end());
			std::string label = kp_token_label(ids);
			if (!label.empty())
				out[label] = pod.namespace_() + "/" + pod.name() +
					     "/" + ctr.name();
		}
	return true;
}

/* vsharectl --socket S name --prefix k8s: LABEL=NAME...; true when it
 * exited 0. */
bool publish(const kp_conf &c, const names_t &names)
{
	std::vector<std::string> args = { c.vsharectl, "--socket",
					  c.sched_socket, "name", "--prefix",
					  "k8s:" };
	std::vector<char *> argv;
	pid_t pid;
	int status = 0, rc;

	for (const auto &n : names)
		args.push_back(n.first + "=" + n.second);
	for (std::string &a : args)
		argv.push_back(&a[0]);
	argv.push_back(nullptr);
	rc = posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ);
	if (rc == 0)
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
	if (rc == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		said_failed = false;
		return true;
	}
	/* Said once until it works again: a scheduler that is down is
	 * retried at every poll. */
	if (!said_failed)
		log_warn("%s name failed (%s): the scheduler shows labels "
			 "instead of pod names until it works", argv[0],
			 rc != 0 ? strerror(rc) : "see its message above");
	said_failed = true;
	return false;
}

} // namespace

void kp_pods_poll(const kp_conf &c)
{
	names_t now;

	if (!c.names || !list(c, now))
		return;
	polls++;
	if (last_ok && now == last && polls % republish != 0)
		return;
	if (now != last)
		for (const auto &n : now)
			if (!last.count(n.first) || last[n.first] != n.second)
				log_info("%s is %s", n.first.c_str(),
					 n.second.c_str());
	last_ok = publish(c, now);
	last = now;
}
