#include "actors/process_env.hpp"

#include <cstdio>
#include <cstdlib>

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <zmq.hpp>

#include "actorgraph/error.hpp"
#include "ipc/cleanup_registry.hpp"
#include "ipc/descriptors.hpp"
#include "ipc/leftovers.hpp"
#include "ipc/shm_channel.hpp"
#include "ipc/sub_process_sync.hpp"
#include "ipc/zap_handler.hpp"
#include "ipc/zmq_sockets.hpp"

namespace ag {

namespace {

bool executable(const std::string& path) {
  struct stat st {};
  return !path.empty() && ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)
         && ::access(path.c_str(), X_OK) == 0;
}

std::string directory_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

// Everything a runtime puts in /dev/shm, checked together against its free space before any of it
// is made: each part alone may fit where all of them do not, and a write into a page tmpfs cannot
// give ends the program with SIGBUS.
void check_shm_room(std::size_t store_bytes, std::size_t channel_bytes, std::size_t segments) {
  struct statvfs vfs {};
  if (::statvfs("/dev/shm", &vfs) != 0 || vfs.f_blocks == 0) // no size limit, or none known
    return;
  const uint64_t free_bytes = uint64_t{vfs.f_bavail} * uint64_t{vfs.f_frsize};
  const uint64_t page = 4096;
  const uint64_t segment = (sub_process_sync::segment_bytes() + page - 1) / page * page;
  const uint64_t need = uint64_t{store_bytes} + channel_bytes + segments * segment;
  if (need <= free_bytes)
    return;
  throw error("/dev/shm has " + std::to_string(free_bytes) + " bytes free, and this runtime needs "
              + std::to_string(need) + ": the store's " + std::to_string(store_bytes)
              + " (graph_option::store_bytes)"
              + (channel_bytes > 0 ? ", the channel's " + std::to_string(channel_bytes)
                                       + " (graph_option::ring_bytes and the completion board)"
                                   : std::string{})
              + " and " + std::to_string(segments) + " start-up segment" + (segments == 1 ? "" : "s")
              + " of " + std::to_string(segment) + "; set store_bytes"
              + (channel_bytes > 0 ? " or ring_bytes" : "")
              + " lower or enlarge /dev/shm (docker: --shm-size)");
}

// The name of the SubProcessSync segment of the child of `lane` (a file in /dev/shm).
std::string sync_segment(const std::string& prefix, uint32_t lane) {
  return prefix + "-sync-" + std::to_string(lane);
}

} // namespace

// ag-runner: graph_option::runner_path, else $AG_RUNNER, else beside this library's installed
// programs (<prefix>/lib/libactorgraph.so -> <prefix>/bin/ag-runner), else beside the running
// program, else where this build put it.
std::string find_runner(const std::string& configured, const std::string& option) {
  std::vector<std::string> tried;
  auto consider = [&](const std::string& p) {
    tried.push_back(p);
    return executable(p);
  };
  if (!configured.empty()) {
    if (consider(configured))
      return configured;
    throw error(option + " " + configured + " is not an executable file");
  }
  if (const char* env = std::getenv("AG_RUNNER"); env && *env) {
    if (consider(env))
      return env;
    throw error("AG_RUNNER=" + std::string{env} + " is not an executable file");
  }
  Dl_info info{};
  if (::dladdr(reinterpret_cast<void*>(&directory_of), &info) && info.dli_fname) {
    const std::string lib_dir = directory_of(info.dli_fname);
    if (auto p = lib_dir + "/" AG_LIB_TO_BIN "/ag-runner"; consider(p))
      return p;
  }
  char exe[4096];
  const auto n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    if (auto p = directory_of(exe) + "/ag-runner"; consider(p))
      return p;
  }
#ifdef AG_BUILD_RUNNER
  if (consider(AG_BUILD_RUNNER))
    return AG_BUILD_RUNNER;
#endif
  std::string list;
  for (auto& t : tried)
    list += (list.empty() ? "" : ", ") + t;
  throw error("ag-runner not found (looked at " + list
              + "); set " + option + " or AG_RUNNER");
}

cleanup_slots::~cleanup_slots() {
  for (int s : slots_)
    cleanup::forget_path(s);
}

void cleanup_slots::add(const std::string& path, bool is_dir) {
  slots_.push_back(cleanup::remember_path(path, is_dir));
}

process_env::process_env(std::size_t store_bytes, std::size_t device_lanes,
                         const std::string& runner_path, std::size_t ring_bytes,
                         std::chrono::nanoseconds spin, std::chrono::milliseconds export_wait,
                         bool timeline_parts) {
  // Before anything is made: past the limit libzmq aborts the process rather than fail a call.
  // The controller's ZMQ context and sockets take 9, each child 4 (its two connections, its
  // start-up segment, its pidfd); 3 more for what opens and closes on the way (a trace, /proc).
  check_descriptors(9 + 4 * device_lanes + 3,
                    "process mode with " + std::to_string(device_lanes) + " device"
                      + (device_lanes == 1 ? "" : "s"));
  remove_leftovers(tmp_dir());
  setup_.export_wait = export_wait;
  setup_.runner_path = find_runner(runner_path);
  // Nothing of this runtime has a name in a file system for longer than it takes to open it, so
  // that nothing is left whatever kills it: its shared memory is named only until created (its
  // children inherit descriptors), its endpoints are abstract (no socket file), and a directory
  // is made only for the children's timeline parts. The names are "ag-<pid>-actorgraph-<tag>-...".
  if (timeline_parts) {
    dir_ = runtime_dir::create();
    cleanup_.add(dir_.marker_path(), false);
    cleanup_.add(dir_.path(), true);
    setup_.timeline_part_prefix = dir_.path() + "/timeline-";
  }
  const std::string prefix = timeline_parts ? dir_.name() : runtime_name(); // one name for all
  const auto lanes = static_cast<uint32_t>(device_lanes + 1);
  const std::size_t channel_bytes =
    ring_bytes > 0 ? shm_channel::bytes_for(lanes, static_cast<uint32_t>(device_lanes), ring_bytes)
                   : 0;
  check_shm_room(store_bytes, channel_bytes, device_lanes);
  store_ = tensor_store::create_shared("/" + prefix + "-store", store_bytes);
  store_.unlink(); // its children inherit store_.fd()
  if (ring_bytes > 0) {
    setup_.channel = std::make_shared<shm_channel>(shm_channel::create(
      "/" + prefix + "-channel", lanes, static_cast<uint32_t>(device_lanes), ring_bytes));
    setup_.channel->unlink(); // and its fd()
    setup_.spin = spin;
  }
  setup_.zmq = std::make_shared<zmq::context_t>(1);
  // Abstract endpoints, which only this user's processes may connect to (zmqs: SO_PEERCRED).
  setup_.pub_endpoint = "ipc://@" + prefix + "/pub";
  setup_.pull_endpoint = "ipc://@" + prefix + "/pull";
  setup_.store_name = store_.name();
  setup_.store_fd = store_.fd();
  setup_.segment_prefix = prefix;
}

const std::string& process_env::trust_file() {
  if (!trust_)
    trust_.emplace(memory_file::create("trusted.pem"));
  return trust_->path();
}

void process_env::open_network(const std::string& curve_public, const std::string& curve_secret,
                               const std::map<std::string, std::string>& allowed,
                               std::vector<std::string> lane_node,
                               std::vector<network_setup::node_target> nodes,
                               std::size_t streams) {
  auto net = std::make_shared<network_setup>();
  // CURVE encrypts in the I/O thread of each connection: one thread per data stream (and the
  // return stream beside it), and one more.
  net->ctx = std::make_shared<zmq::context_t>(static_cast<int>(streams + 1));
  auto& ctx = *net->ctx;
  net->zap = std::make_shared<zap_handler>(ctx, allowed, [](const std::string& line) {
    std::fprintf(stderr, "actorgraph: data plane: %s\n", line.c_str());
  });
  const zmqs::curve_keys keys{curve_public, curve_secret, ""};
  try {
    // A node receives only its own lanes' store bytes: subscriptions pass a gate.
    net->pub = std::make_shared<zmq::socket_t>(
      zmqs::gated_publisher(ctx, "tcp://0.0.0.0:0", &keys));
    net->pull = std::make_shared<zmq::socket_t>(zmqs::puller(ctx, "tcp://0.0.0.0:0", &keys));
    net->zap->watch(*net->pub, "broadcast");
    net->zap->watch(*net->pull, "reports");
    net->pub_port = zmqs::bound_port(*net->pub);
    net->pull_port = zmqs::bound_port(*net->pull);
    for (std::size_t i = 0; i < streams; ++i) {
      net->data.push_back(std::make_shared<zmq::socket_t>(zmqs::gated_publisher(
        ctx, "tcp://0.0.0.0:0", &keys, static_cast<int>(i + 1)))); // thread 0: the rest
      net->zap->watch(*net->data.back(), "data stream " + std::to_string(i));
      net->data_ports.push_back(zmqs::bound_port(*net->data.back()));
      net->returns.push_back(std::make_shared<zmq::socket_t>(zmqs::puller(
        ctx, "tcp://0.0.0.0:0", &keys, static_cast<int>(i + 1)))); // beside data stream i
      net->zap->watch(*net->returns.back(), "return stream " + std::to_string(i));
      net->return_ports.push_back(zmqs::bound_port(*net->returns.back()));
    }
  } catch (const zmq::error_t& e) {
    throw error(std::string{"data plane: cannot bind a TCP socket: "} + e.what());
  }
  net->curve_public = curve_public;
  net->lane_node = std::move(lane_node);
  net->nodes = std::move(nodes);
  setup_.network = std::move(net);
}

std::string timeline_part(const process_setup& p, std::size_t lane) {
  return p.timeline_part_prefix.empty() ? std::string{}
                                        : p.timeline_part_prefix + std::to_string(lane);
}

proxy_setup make_proxy_setup(const process_setup& p, uint32_t lane, const device& where,
                             uint64_t store_bytes, std::chrono::milliseconds start_timeout,
                             std::chrono::milliseconds stop_timeout) {
  proxy_setup ps;
  ps.runner_path = p.runner_path;
  ps.segment_name = sync_segment(p.segment_prefix, lane);
  ps.args.pub_endpoint = p.pub_endpoint;
  ps.args.pull_endpoint = p.pull_endpoint;
  ps.args.where = where;
  ps.args.lane = lane;
  ps.args.store_name = p.store_name;
  ps.args.store_fd = p.store_fd;
  ps.args.store_bytes = store_bytes;
  ps.inherit.push_back(p.store_fd);
  ps.args.parent_pid = static_cast<int32_t>(::getpid());
  if (p.channel) {
    ps.inherit.push_back(p.channel->fd());
    ps.extra_args = {"--channel-fd=" + std::to_string(p.channel->fd()),
                     "--channel-bytes=" + std::to_string(p.channel->size()),
                     "--spin-ns=" + std::to_string(p.spin.count())};
  }
  ps.extra_args.push_back("--export-wait-ms=" + std::to_string(p.export_wait.count()));
  ps.start_timeout = start_timeout;
  ps.stop_timeout = stop_timeout;
  return ps;
}

} // namespace ag
