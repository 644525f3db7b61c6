/*
 * vshare-device-plugin's main loop. The kubelet, when it starts, removes
 * every socket in its device plugin directory (ours too) and creates its
 * own again; a plugin must then serve again and register again. inotify
 * on the directory tells us both: kubelet.sock created, or our socket
 * removed. Between events the loop reads the GPUs' health and the
 * kubelet's PodResources at their intervals. Signals arrive through a
 * signalfd, so gRPC's threads never see them.
 */
#include <poll.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <chrono>
#include <cstring>

#include "k8s_cli.h"
#include "kp.h"

namespace {

typedef std::chrono::steady_clock clk;

struct loop_state {
	const kp_conf *c;
	std::vector<kp_gpu> gpus;
	bool serving = false;      /* registered and serving */
	bool refused = false;      /* the kubelet refused us: the end */
	int backoff_ms = 100;      /* before the next try, after a failed one */
	struct stat kubelet = {};  /* the kubelet socket we registered with */
	clk::time_point next_health, next_pods, next_retry;
};

bool exists(const std::string &path)
{
	struct stat sb;

	return stat(path.c_str(), &sb) == 0;
}

/* Whether the kubelet's socket is another than the one we registered
 * with: a kubelet that started again since. */
bool new_kubelet(const loop_state &ls)
{
	struct stat sb;

	if (stat((ls.c->plugin_dir + "/" + ls.c->kubelet_sock).c_str(), &sb) != 0)
		return false;
	return sb.st_ino != ls.kubelet.st_ino ||
	       sb.st_ctim.tv_sec != ls.kubelet.st_ctim.tv_sec ||
	       sb.st_ctim.tv_nsec != ls.kubelet.st_ctim.tv_nsec;
}

/* Serve (again) and register. The registration itself waits a few
 * seconds for a kubelet that is starting; when even that was not
 * enough, the loop tries again soon, a little later each time (100 ms
 * doubling to 5 s), and at once when the kubelet's socket is created
 * anew. A kubelet that refuses the registration ends the plugin. */
void serve(loop_state &ls)
{
	const kp_conf &c = *ls.c;
	int rc;

	ls.serving = false;
	if (stat((c.plugin_dir + "/" + c.kubelet_sock).c_str(), &ls.kubelet) != 0) {
		ls.next_retry = clk::now() + std::chrono::seconds(5);
		return;
	}
	if (kp_server_start(c) == 0 && (rc = kp_register(c)) != -1) {
		ls.serving = rc == 0;
		ls.refused = rc == -2;
		ls.backoff_ms = 100;
		return;
	}
	ls.next_retry = clk::now() + std::chrono::milliseconds(ls.backoff_ms);
	ls.backoff_ms = std::min(ls.backoff_ms * 2, 5000);
}

/* The directory's events: true when we must serve and register again.
 * A kubelet's restart removes both sockets and creates its own, and the
 * events may come in more than one read: what decides is the state they
 * leave (a kubelet socket we have not registered with, or our socket
 * gone), so that one restart is one registration. */
bool dir_events(int ifd, const loop_state &ls)
{
	alignas(struct inotify_event) char buf[4096];
	const kp_conf &c = *ls.c;
	bool again = false;
	ssize_t n = read(ifd, buf, sizeof(buf));

	for (char *p = buf; n > 0 && p < buf + n;) {
		auto *e = reinterpret_cast<struct inotify_event *>(p);
		std::string name = e->len > 0 ? e->name : "";

		if ((e->mask & (IN_CREATE | IN_MOVED_TO)) &&
		    name == c.kubelet_sock && new_kubelet(ls)) {
			log_info("the kubelet's socket was created: registering again");
			again = true;
		}
		/* Our own restart removes and creates the socket too:
		 * only a socket that stays gone counts. */
		if ((e->mask & (IN_DELETE | IN_MOVED_FROM)) && name == c.endpoint &&
		    !exists(c.plugin_dir + "/" + c.endpoint)) {
			log_info("our socket was removed: serving again");
			again = true;
		}
		p += sizeof(*e) + e->len;
	}
	return again;
}

void ticks(loop_state &ls)
{
	const kp_conf &c = *ls.c;
	clk::time_point now = clk::now();

	if (now >= ls.next_health) {
		if (kp_gpus_refresh(ls.gpus))
			kp_server_update(ls.gpus);
		ls.next_health = now + std::chrono::milliseconds(c.health_ms);
	}
	if (now >= ls.next_pods) {
		if (ls.serving)
			kp_pods_poll(c);
		ls.next_pods = now + std::chrono::milliseconds(c.pods_ms);
	}
	if (!ls.serving && now >= ls.next_retry)
		serve(ls);
}

int wait_ms(const loop_state &ls)
{
	clk::time_point next = std::min(ls.next_health, ls.next_pods);

	if (!ls.serving)
		next = std::min(next, ls.next_retry);
	auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
		next - clk::now()).count();
	return ms < 0 ? 0 : ms > 60000 ? 60000 : (int)ms + 1;
}

int run(const kp_conf &c, int sfd, int ifd)
{
	loop_state ls;
	struct pollfd pfd[2] = { { sfd, POLLIN, 0 }, { ifd, POLLIN, 0 } };

	ls.c = &c;
	if (kp_gpus_open(c, ls.gpus) != 0)
		return 1;
	for (const kp_gpu &g : ls.gpus)
		if (g.shard_mem != 0)
			log_info("GPU %u: %u shares of %" PRIu64 " MiB", g.index,
				 g.shares, g.shard_mem >> 20);
		else
			log_info("GPU %u: %u shares, no memory limit", g.index,
				 g.shares);
	kp_server_update(ls.gpus);
	if (!c.feature_file.empty())
		kp_features_write(c, ls.gpus);
	ls.next_health = ls.next_pods = ls.next_retry = clk::now();
	serve(ls);
	if (!ls.serving && !ls.refused)
		log_info("waiting for the kubelet (%s/%s)", c.plugin_dir.c_str(),
			 c.kubelet_sock.c_str());
	for (;;) {
		if (ls.refused)
			return 1;
		if (poll(pfd, 2, wait_ms(ls)) < 0 && errno != EINTR) {
			log_error("poll: %s", strerror(errno));
			return 1;
		}
		if (pfd[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				log_info("signal %u: stopping", si.ssi_signo);
			return 0;
		}
		if ((pfd[1].revents & POLLIN) && dir_events(ifd, ls))
			serve(ls);
		ticks(ls);
	}
}

} // namespace

int main(int argc, char **argv)
{
	kp_conf c;
	int rc, sfd, ifd;

	log_init("vshare-device-plugin", LOG_LVL_INFO);
	if ((rc = kp_conf_parse(argc, argv, c)) != 0)
		return rc == 1 ? 0 : rc;
	sfd = k8s_stop_signals();
	ifd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
	if (sfd < 0 || ifd < 0) {
		log_error("signalfd/inotify: %s", strerror(errno));
		return 1;
	}
	if (inotify_add_watch(ifd, c.plugin_dir.c_str(), IN_CREATE | IN_DELETE |
			      IN_MOVED_TO | IN_MOVED_FROM) < 0) {
		log_error("cannot watch %s: %s (is this a kubelet's device "
			  "plugin directory?)", c.plugin_dir.c_str(),
			  strerror(errno));
		return 1;
	}
	rc = run(c, sfd, ifd);
	kp_server_stop();
	unlink((c.plugin_dir + "/" + c.endpoint).c_str());
	kp_gpus_close();
	close(ifd);
	close(sfd);
	return rc;
}
