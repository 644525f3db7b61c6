/*
 * The DevicePlugin service on our socket in the kubelet's directory, and
 * the registration that tells the kubelet about it. gRPC's synchronous
 * server runs each call on its own thread; the only state the calls share
 * with the main loop is the GPUs' health, under one mutex, with a
 * condition variable that wakes the ListAndWatch streams when it changes.
 */
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <mutex>

#include <grpcpp/grpcpp.h>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "kp.h"

/* The device plugin socket's mode: only the kubelet (root, as the plugin
 * runs) talks to it. */
#define KP_SOCKET_MODE 0600u

namespace dp = v1beta1;
using grpc::ServerContext;
using grpc::Status;

namespace {

struct shared_state {
	std::mutex mu;
	std::condition_variable cv;
	std::vector<kp_gpu> gpus;
	uint64_t gen = 0;           /* bumped on each change of gpus */
	bool stopping = false;
};

shared_state st;

class plugin final : public dp::DevicePlugin::Service {
public:
	explicit plugin(const kp_conf &c) : conf(c) {}

	Status GetDevicePluginOptions(ServerContext *, const dp::Empty *,
				      dp::DevicePluginOptions *out) override
	{
		out->set_pre_start_required(false);
		out->set_get_preferred_allocation_available(true);
		return Status::OK;
	}

	Status ListAndWatch(ServerContext *ctx, const dp::Empty *,
			    grpc::ServerWriter<dp::ListAndWatchResponse> *w) override;
	Status GetPreferredAllocation(ServerContext *,
				      const dp::PreferredAllocationRequest *req,
				      dp::PreferredAllocationResponse *out) override;
	Status Allocate(ServerContext *, const dp::AllocateRequest *req,
			dp::AllocateResponse *out) override;

	Status PreStartContainer(ServerContext *,
				 const dp::PreStartContainerRequest *,
				 dp::PreStartContainerResponse *) override
	{
		return Status::OK;
	}

private:
	const kp_conf &conf;
	dp::ListAndWatchResponse list(const std::vector<kp_gpu> &gpus) const;
};

dp::ListAndWatchResponse plugin::list(const std::vector<kp_gpu> &gpus) const
{
	dp::ListAndWatchResponse r;

	for (const kp_gpu &g : gpus)
		for (unsigned s = 0; s < g.shares; s++) {
			dp::Device *d = r.add_devices();
			d->set_id(kp_share_id(g.index, s));
			d->set_health(g.healthy ? "Healthy" : "Unhealthy");
			/* The Topology Manager aligns the container's CPUs
			 * with this node; none said, it places freely. */
			if (g.numa >= 0)
				d->mutable_topology()->add_nodes()->set_id(g.numa);
		}
	return r;
}

/* The list now, then again at each change, until the kubelet hangs up
 * or the server stops. The wait is bounded so that a cancelled call
 * (which signals no condition variable) ends within a second. */
Status plugin::ListAndWatch(ServerContext *ctx, const dp::Empty *,
			    grpc::ServerWriter<dp::ListAndWatchResponse> *w)
{
	std::unique_lock<std::mutex> lk(st.mu);
	uint64_t sent = st.gen;
	dp::ListAndWatchResponse r = list(st.gpus);

	for (;;) {
		lk.unlock();
		if (!w->Write(r))
			return Status::OK;
		lk.lock();
		while (st.gen == sent && !st.stopping && !ctx->IsCancelled())
			st.cv.wait_for(lk, std::chrono::seconds(1));
		if (st.stopping || ctx->IsCancelled())
			return Status::OK;
		sent = st.gen;
		r = list(st.gpus);
	}
}

Status plugin::GetPreferredAllocation(ServerContext *,
				      const dp::PreferredAllocationRequest *req,
				      dp::PreferredAllocationResponse *out)
{
	for (const auto &cr : req->container_requests()) {
		std::vector<std::string> avail(cr.available_deviceids().begin(),
					       cr.available_deviceids().end());
		std::vector<std::string> must(cr.must_include_deviceids().begin(),
					      cr.must_include_deviceids().end());
		size_t n = cr.allocation_size() > 0 ? (size_t)cr.allocation_size() : 0;
		auto *o = out->add_container_responses();

		for (const std::string &id : kp_prefer(avail, must, n))
			o->add_deviceids(id);
	}
	return Status::OK;
}

Status plugin::Allocate(ServerContext *, const dp::AllocateRequest *req,
			dp::AllocateResponse *out)
{
	std::vector<kp_gpu> gpus;

	{
		std::lock_guard<std::mutex> lk(st.mu);
		gpus = st.gpus;
	}
	for (const auto &cr : req->container_requests()) {
		std::vector<std::string> ids(cr.devices_ids().begin(),
					     cr.devices_ids().end());
		kp_grant g;
		std::string why = kp_allocate(conf, gpus, ids, g);

		if (!why.empty()) {
			log_warn("Allocate refused: %s", why.c_str());
			return Status(grpc::StatusCode::INVALID_ARGUMENT, why);
		}
		auto *o = out->add_container_responses();
		for (auto &e : g.envs)
			(*o->mutable_envs())[e.first] = e.second;
		for (auto &m : g.mounts) {
			auto *x = o->add_mounts();
			x->set_host_path(m.host);
			x->set_container_path(m.ctr);
			x->set_read_only(m.ro);
		}
		for (auto &d : g.devices) {
			auto *x = o->add_devices();
			x->set_host_path(d.host);
			x->set_container_path(d.ctr);
			x->set_permissions(d.perms);
		}
		for (auto &name : g.cdi_devices)
			o->add_cdi_devices()->set_name(name);
		log_info("allocated %zu share(s) as %s", ids.size(),
			 g.envs["VSHARE_LABEL"].c_str());
	}
	return Status::OK;
}

std::unique_ptr<plugin> service;
std::unique_ptr<grpc::Server> server;

std::string endpoint_path(const kp_conf &c)
{
	return c.plugin_dir + "/" + c.endpoint;
}

/* The socket just bound is ours, a socket, and of KP_SOCKET_MODE: 0, or
 * -1 (logged). Read without following a link. */
int check_socket(const std::string &path)
{
	struct stat sb;

	if (lstat(path.c_str(), &sb) != 0) {
		log_error("%s: %s", path.c_str(), strerror(errno));
		return -1;
	}
	if (!S_ISSOCK(sb.st_mode) || sb.st_uid != geteuid() ||
	    (sb.st_mode & 07777) != KP_SOCKET_MODE) {
		log_error("%s is not the socket just bound with mode %04o "
			  "(a %s of uid %u, mode %04o): not serving on it",
			  path.c_str(), (unsigned)KP_SOCKET_MODE,
			  S_ISSOCK(sb.st_mode) ? "socket" : "file",
			  (unsigned)sb.st_uid, (unsigned)(sb.st_mode & 07777));
		return -1;
	}
	return 0;
}

} // namespace

int kp_server_start(const kp_conf &c)
{
	grpc::ServerBuilder b;
	std::string path = endpoint_path(c);

	kp_server_stop();
	{
		std::lock_guard<std::mutex> lk(st.mu);
		st.stopping = false;
	}
	unlink(path.c_str());       /* ours from an earlier run */
	service = std::make_unique<plugin>(c);
	b.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
	b.RegisterService(service.get());
	/* gRPC binds the socket itself, with the process's umask: the mode
	 * is set through the umask around its bind (the plugin creates no
	 * other file, and its other threads create none), and checked on
	 * the socket afterwards, so that it is never open to others
	 * whatever umask the plugin was started with. */
	mode_t old = umask(0777 & ~KP_SOCKET_MODE);
	server = b.BuildAndStart();
	umask(old);
	if (server == nullptr) {
		log_error("cannot serve on %s", path.c_str());
		service.reset();
		return -1;
	}
	if (check_socket(path) != 0) {
		kp_server_stop();
		return -1;
	}
	log_info("serving the device plugin API on %s (mode %04o)", path.c_str(),
		 (unsigned)KP_SOCKET_MODE);
	return 0;
}

void kp_server_stop()
{
	if (server == nullptr)
		return;
	{
		std::lock_guard<std::mutex> lk(st.mu);
		st.stopping = true;
	}
	st.cv.notify_all();
	server->Shutdown(std::chrono::system_clock::now() +
			 std::chrono::seconds(2));
	server->Wait();
	server.reset();
	service.reset();
}

void kp_server_update(const std::vector<kp_gpu> &gpus)
{
	{
		std::lock_guard<std::mutex> lk(st.mu);
		st.gpus = gpus;
		st.gen++;
	}
	st.cv.notify_all();
}

int kp_register(const kp_conf &c)
{
	std::string kubelet = "unix:" + c.plugin_dir + "/" + c.kubelet_sock;
	grpc::ChannelArguments args;
	dp::RegisterRequest req;
	dp::Empty out;

	/* A kubelet creates its socket a moment before it listens: the
	 * call waits for it (wait_for_ready), with gRPC's reconnection
	 * brought down from its default of a second and more to 100 ms, so
	 * that a refused first connection costs a tenth of a second, not
	 * a retry of ours. */
	args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
	args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
	args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
	auto ch = grpc::CreateCustomChannel(kubelet,
					    grpc::InsecureChannelCredentials(), args);
	auto stub = dp::Registration::NewStub(ch);
	grpc::ClientContext ctx;

	ctx.set_wait_for_ready(true);
	ctx.set_deadline(std::chrono::system_clock::now() +
			 std::chrono::seconds(5));
	req.set_version("v1beta1");
	req.set_endpoint(c.endpoint);
	req.set_resource_name(c.resource);
	req.mutable_options()->set_get_preferred_allocation_available(true);
	Status s = stub->Register(&ctx, req, &out);
	if (s.error_code() == grpc::StatusCode::UNAVAILABLE ||
	    s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
		log_warn("the kubelet (%s) did not answer the registration: %s",
			 kubelet.c_str(), s.error_message().c_str());
		return -1;
	}
	/* Any other answer came from the kubelet itself: a version it does
	 * not speak, a resource name it refuses or another plugin holds.
	 * The API says the plugin ends then; trying again would only be
	 * refused again. */
	if (!s.ok()) {
		log_error("the kubelet refused to register %s: %s",
			  c.resource.c_str(), s.error_message().c_str());
		return -2;
	}
	log_info("registered %s with the kubelet", c.resource.c_str());
	return 0;
}
