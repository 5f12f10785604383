// ag-train: trains an MLP classifier (64 -> hidden -> 10, ReLU, softmax cross-entropy) on the
// handwritten digits of python3-sklearn, data-parallel over --devices: every device takes a shard
// of every batch, runs forward and backward with actorgraph's operators, the gradients are summed
// with ag::all_reduce, and every device applies the same update (SGD with momentum), so every
// device keeps the same parameters bit for bit. Prints the loss per epoch and the test accuracy.
//
//   ag-train [--devices=sim:0,sim:1] [--mode=thread|process] [--epochs=N] [--batch=N]
//            [--hidden=N] [--lr=X] [--momentum=X] [--seed=N] [--dtype=float32|bfloat16]
//            [--data=digits.csv.gz] [--nodes=... --key=...] [--record-trace=FILE]
//            [--graphs=auto|off]
//
// Each step of the loop is marked (runtime::mark_step): with --graphs=auto (the default) a
// device replays the step as a CUDA graph once it ran it twice; --graphs=off runs it operator by
// operator. The losses are the same, bit for bit.
// With --dtype=bfloat16 the forward and backward passes run in bfloat16; the parameters, their
// gradients' sums and the update stay float32 (mixed precision). Exit codes (README.md): 0 trained
// (and with --min-accuracy, reached it), 1 failed or fell short, 2 a bad command line, 3 the
// runtime or the data could not be had.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/config_option_adder.hpp>

#include <actorgraph/actorgraph.hpp>

#include "apps/ag-train/digits.hpp"
#include "apps/ag-train/mlp.hpp"
#include "apps/app_config.hpp"

namespace {

class train_config : public ag::app::config {
public:
  std::string devices = "sim:0,sim:1";
  std::string mode = "thread";
  int64_t epochs = 20;
  int64_t batch = 128;
  int64_t hidden = 256;
  double lr = 0.1;
  double momentum = 0.9;
  int64_t seed = 1;
  std::string dtype = "float32";
  std::string data;
  std::string key;
  std::string nodes;
  std::string record_trace;
  std::string graphs = "auto";
  double min_accuracy = 0.0;

  train_config() : ag::app::config("ag-train", true) {
    opt_group{custom_options_, "global"}
      .add(devices, "devices,d", "devices to train on, one shard of every batch each (cpu, sim:N, cuda:N, NODE/...)")
      .add(mode, "mode,m", "thread (a stream actor per device) or process (a child per device)")
      .add(graphs, "graphs", "steps as CUDA graphs (auto, the default) or operator by operator (off)")
      .add(epochs, "epochs", "passes over the training set")
      .add(batch, "batch", "images per step, over all devices (a multiple of their number)")
      .add(hidden, "hidden", "units of the hidden layer")
      .add(lr, "lr", "learning rate")
      .add(momentum, "momentum", "SGD momentum (0: plain SGD)")
      .add(seed, "seed", "seed of the split, the shuffles and the initial weights")
      .add(dtype, "dtype", "float32 or bfloat16 (the forward and backward passes)")
      .add(data, "data", "digits.csv.gz (default: python3-sklearn's)")
      .add(min_accuracy, "min-accuracy", "exit 1 when the test accuracy is below this fraction")
      .add(record_trace, "record-trace", "record every message to the runners into FILE")
      .add(key, "key", "with --nodes: this controller's identity (ag-keygen's NAME.secret)")
      .add(nodes, "nodes", "machines running ag-node, NAME=tcp://HOST:PORT=NAME.public, comma-separated");
  }
};

using clock_type = std::chrono::steady_clock;
using ag::tensor;

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

struct run_result {
  std::vector<float> losses; // per epoch
  double accuracy = 0;
  double seconds = 0;
};

run_result train(caf::actor_system& sys, const train_config& cfg,
                 const std::vector<ag::device>& devices, const ag::train::dataset& train_set,
                 const ag::train::dataset& test_set, ag::dtype dt) {
  ag::graph_option opt;
  opt.devices = devices;
  opt.per_device_per_process = cfg.mode == "process";
  opt.cuda_graphs = cfg.graphs == "off" ? ag::cuda_graphs::off : ag::cuda_graphs::automatic;
  opt.trace_path = cfg.record_trace;
  opt.nodes = ag::parse_nodes(cfg.nodes);
  opt.key_file = cfg.key;
  std::optional<ag::runtime> started;
  if (opt.nodes.empty())
    started.emplace(sys, opt);
  else
    started.emplace(opt);
  ag::runtime& rt = *started;
  std::vector<ag::device> places = rt.devices();
  if (places.empty())
    places.push_back(ag::device::cpu());
  const int64_t H = cfg.hidden, D = static_cast<int64_t>(places.size());
  const int64_t shard = cfg.batch / D;
  const auto seed = static_cast<uint64_t>(cfg.seed);
  // Every replica draws the same initial weights (Philox: the same bits on every device).
  std::vector<ag::train::replica> reps;
  for (const auto& d : places)
    reps.push_back(ag::train::make_replica(rt, d, H, seed));
  run_result out;
  const auto t0 = clock_type::now();
  const std::size_t n = train_set.size();
  const std::size_t steps = n / static_cast<std::size_t>(cfg.batch);
  for (int64_t epoch = 0; epoch < cfg.epochs; ++epoch) {
    // This epoch's order of the training images.
    ag::train::dataset shuffled, unused;
    ag::train::split(train_set, seed * 1000003 + static_cast<uint64_t>(epoch), 0, shuffled, unused);
    std::vector<tensor> loss_sum(places.size());
    for (std::size_t step = 0; step < steps; ++step) {
      std::vector<ag::train::shard_grads> grads;
      for (std::size_t d = 0; d < places.size(); ++d) {
        const std::size_t first = step * static_cast<std::size_t>(cfg.batch)
                                  + d * static_cast<std::size_t>(shard);
        const auto rows = static_cast<std::size_t>(shard);
        std::vector<float> xv(shuffled.pixels.begin() + static_cast<std::ptrdiff_t>(first * 64),
                              shuffled.pixels.begin()
                                + static_cast<std::ptrdiff_t>((first + rows) * 64));
        std::vector<int32_t> yv(shuffled.labels.begin() + static_cast<std::ptrdiff_t>(first),
                                shuffled.labels.begin() + static_cast<std::ptrdiff_t>(first + rows));
        std::vector<float> hot(rows * 10, 0.0f);
        for (std::size_t i = 0; i < rows; ++i)
          hot[i * 10 + static_cast<std::size_t>(yv[i])] = 1.0f;
        const auto& where = places[d];
        const auto x = rt.from_vector({shard, 64}, xv, where).astype(dt);
        const auto y = rt.from_vector({shard}, yv, where);
        const auto onehot = rt.from_vector({shard, 10}, hot, where).astype(dt);
        grads.push_back(
          ag::train::forward_backward(reps[d], x, y, onehot, dt, double(cfg.batch)));
        loss_sum[d] = loss_sum[d].defined() ? loss_sum[d] + grads.back().loss : grads.back().loss;
      }
      // Sum each gradient over the devices; every device then takes the same step.
      auto summed = [&](tensor ag::train::shard_grads::*field) {
        std::vector<tensor> parts;
        for (auto& g : grads)
          parts.push_back(g.*field);
        return places.size() == 1 ? parts : ag::all_reduce(parts);
      };
      using G = ag::train::shard_grads;
      const auto gw1 = summed(&G::w1), gb1 = summed(&G::b1);
      const auto gw2 = summed(&G::w2), gb2 = summed(&G::b2);
      for (std::size_t d = 0; d < places.size(); ++d)
        ag::train::update(reps[d], gw1[d], gb1[d], gw2[d], gb2[d], cfg.lr, cfg.momentum);
      rt.mark_step();
    }
    // The epoch's loss: the mean over steps of the mean over the devices' shards.
    double total = 0;
    for (auto& l : loss_sum)
      total += l.to_vector().at(0);
    out.losses.push_back(static_cast<float>(total / double(steps) / double(places.size())));
    std::printf("epoch %3lld  loss %.9g\n", static_cast<long long>(epoch + 1),
                static_cast<double>(out.losses.back()));
    std::fflush(stdout);
  }
  out.seconds = seconds_since(t0);
  // Test accuracy on the first device.
  const auto& r = reps.front();
  const auto tn = static_cast<int64_t>(test_set.size());
  const auto x = rt.from_vector({tn, 64}, test_set.pixels, r.where).astype(dt);
  std::vector<int64_t> labels(test_set.labels.begin(), test_set.labels.end());
  const auto y = rt.from_vector({tn}, labels, r.where);
  const auto logits = ag::train::logits(r, x, dt);
  const auto right = ag::eq(logits.argmax(1), y).astype(ag::dtype::float32).sum();
  out.accuracy = right.to_vector().at(0) / double(tn);
  return out;
}

int start(int argc, char** argv) {
  train_config cfg;
  if (auto code = cfg.read(argc, argv))
    return *code;
  if (!cfg.remainder.empty())
    return cfg.usage("unexpected argument \"" + cfg.remainder.front() + "\"");
  if (cfg.mode != "thread" && cfg.mode != "process")
    return cfg.usage("--mode=" + cfg.mode + ": expected thread or process");
  if (cfg.graphs != "auto" && cfg.graphs != "off")
    return cfg.usage("--graphs=" + cfg.graphs + ": expected auto or off");
  if (cfg.dtype != "float32" && cfg.dtype != "bfloat16")
    return cfg.usage("--dtype=" + cfg.dtype + ": expected float32 or bfloat16");
  if (cfg.epochs < 1 || cfg.hidden < 1 || cfg.hidden > 65536)
    return cfg.usage("--epochs and --hidden: at least 1 (hidden at most 65536)");
  if (!(cfg.lr > 0) || !(cfg.momentum >= 0 && cfg.momentum < 1))
    return cfg.usage("--lr above 0 and --momentum in [0, 1)");
  std::vector<ag::device> devices;
  try {
    devices = ag::parse_devices(cfg.devices);
  } catch (const std::exception& e) {
    return cfg.usage("--devices=" + cfg.devices + ": " + e.what());
  }
  std::vector<ag::device> runtime_devices;
  for (const auto& d : devices)
    if (!d.is_cpu())
      runtime_devices.push_back(d);
  const auto shards = static_cast<int64_t>(std::max<std::size_t>(1, runtime_devices.size()));
  if (cfg.batch < shards || cfg.batch % shards != 0)
    return cfg.usage("--batch=" + std::to_string(cfg.batch) + ": a multiple of the "
                     + std::to_string(shards) + " devices");
  ag::train::dataset all, train_set, test_set;
  try {
    std::string path = cfg.data;
    if (path.empty())
      for (const auto& p : ag::train::default_digits_paths())
        if (FILE* f = std::fopen(p.c_str(), "rb")) {
          std::fclose(f);
          path = p;
          break;
        }
    if (path.empty())
      return cfg.fail(ag::app::exit_cannot_run,
                      "the digits (python3-sklearn's digits.csv.gz) are not installed; --data=FILE");
    all = ag::train::read_digits(path);
  } catch (const std::exception& e) {
    return cfg.fail(ag::app::exit_cannot_run, e.what());
  }
  ag::train::split(all, static_cast<uint64_t>(cfg.seed), all.size() / 5, train_set, test_set);
  if (train_set.size() < static_cast<std::size_t>(cfg.batch))
    return cfg.usage("--batch=" + std::to_string(cfg.batch) + ": more than the "
                     + std::to_string(train_set.size()) + " training images");
  std::printf("digits: %zu training, %zu test images; %s on %s, %s mode, batch %lld, hidden %lld\n",
              train_set.size(), test_set.size(), cfg.dtype.c_str(), cfg.devices.c_str(),
              cfg.mode.c_str(), static_cast<long long>(cfg.batch),
              static_cast<long long>(cfg.hidden));
  ag::install_stop_signals();
  try {
    caf::actor_system sys{cfg};
    const auto r = train(sys, cfg, runtime_devices, train_set, test_set,
                         cfg.dtype == "bfloat16" ? ag::dtype::bfloat16 : ag::dtype::float32);
    std::printf("test accuracy %.4f (%zu images); %.2f s of training, %.2f ms a step\n",
                r.accuracy, test_set.size(), r.seconds,
                r.seconds * 1e3 / double(cfg.epochs)
                  / double(train_set.size() / static_cast<std::size_t>(cfg.batch)));
    return r.accuracy >= cfg.min_accuracy ? ag::app::exit_ok : ag::app::exit_failed;
  } catch (const std::exception& e) {
    return cfg.fail(ag::app::exit_failed, e.what());
  }
}

} // namespace

int main(int argc, char** argv) {
  return ag::app::guarded_main("ag-train", start, argc, argv, ag::app::exit_failed);
}
