/*
 * vshare-dra-driver's start and loop: the GPUs (NVML, as the device
 * plugin finds them), the prepared claims from the checkpoint, the
 * kubelet's services, then the ResourceSlice, published again after a
 * failure (an API server that is not reachable yet) at growing
 * intervals. Signals arrive through a signalfd, so gRPC's threads never
 * see them.
 */
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "dra.h"
#include "k8s_cli.h"

namespace {

std::string fetch_claim(const dra_conf &c, const std::string &ns,
			const std::string &name, std::string &json)
{
	dra_http r = dra_api_call(c, "GET", "/apis/resource.k8s.io/v1/namespaces/" +
				  ns + "/resourceclaims/" + name, "");

	if (r.status == 200) {
		json = r.body;
		return "";
	}
	if (r.status == 0)
		return "the API server: " + r.error;
	return "the API server answered HTTP " + std::to_string(r.status) +
	       " for resourceclaim " + ns + "/" + name;
}

/* Wait for a signal, publishing the slice until it is published. */
int run(const dra_conf &c, int sfd, const std::vector<kp_gpu> &gpus)
{
	std::string drv = kp_gpus_driver();
	bool published = false;
	int wait = 1000;
	struct pollfd pfd = { sfd, POLLIN, 0 };

	for (;;) {
		if (!published) {
			std::string why = dra_slice_publish(c, gpus, drv);
			published = why.empty();
			if (!published) {
				log_warn("%s (again in %d s)", why.c_str(), wait / 1000);
			}
		}
		if (poll(&pfd, 1, published ? -1 : wait) < 0 && errno != EINTR) {
			log_error("poll: %s", strerror(errno));
			return 1;
		}
		if (pfd.revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				log_info("signal %u: stopping", si.ssi_signo);
			return 0;
		}
		wait = std::min(wait * 2, 30000);
	}
}

} // namespace

int main(int argc, char **argv)
{
	dra_conf c;
	kp_conf kc;
	std::vector<kp_gpu> gpus;
	int rc, sfd;

	log_init("vshare-dra-driver", LOG_LVL_INFO);
	if ((rc = dra_conf_parse(argc, argv, c)) != 0)
		return rc == 1 ? 0 : rc;
	if ((sfd = k8s_stop_signals()) < 0) {
		log_error("signalfd: %s", strerror(errno));
		return 1;
	}
	kc.gpus = c.gpus;
	kc.host_root = c.host_root;
	kc.cdi_spec = c.cdi_spec;
	if (kp_gpus_open(kc, gpus) != 0)
		return 1;
	if (std::none_of(gpus.begin(), gpus.end(),
			 [](const kp_gpu &g) { return g.memory != 0; }))
		log_warn("no GPU's memory is known (no NVML): the ResourceSlice "
			 "lists no device");
	std::string why = dra_api_init(c);
	if (!why.empty()) {
		log_error("%s", why.c_str());
		return 1;
	}
	dra_claims_open(c);
	dra_fetch_fn fetch = [&c](const std::string &ns, const std::string &name,
				  std::string &json) {
		return fetch_claim(c, ns, name, json);
	};
	if (dra_server_start(c, fetch) != 0)
		return 1;
	rc = run(c, sfd, gpus);
	dra_server_stop(c);
	dra_api_close();
	kp_gpus_close();
	close(sfd);
	return rc;
}
