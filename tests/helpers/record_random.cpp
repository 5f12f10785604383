// Records the message trace of one random program (tests/actors/random_program.hpp), for the
// golden traces in tests/traces. The tensors live at the end are held past the runtime's end, so
// the trace's live record names them and ag-replay digests them.
//
//   ag-record-random TRACE thread|process DEVICES SEED STEPS
#include <cstdio>
#include <cstdlib>
#include <string>

#include <actorgraph/actorgraph.hpp>

#include "tests/actors/process_helpers.hpp"
#include "tests/actors/random_program.hpp"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: ag-record-random TRACE thread|process DEVICES SEED STEPS\n");
    return 2;
  }
  const std::string mode = argv[2];
  if (mode != "thread" && mode != "process") {
    std::fprintf(stderr, "ag-record-random: mode %s: expected thread or process\n", mode.c_str());
    return 2;
  }
  try {
    ag::graph_option opt;
    opt.trace_path = argv[1];
    opt.per_device_per_process = mode == "process";
    opt.devices = ag::parse_devices(argv[3]);
    opt.store_bytes = std::size_t{64} << 20;
    opt.transport = ag::test::transport_under_test();
    std::vector<ag::tensor> kept; // declared first: outlives the runtime
    ag::runtime rt{opt};
    const auto r = ag::test::run_random_program(rt, static_cast<uint32_t>(std::atoi(argv[4])),
                                                std::atoi(argv[5]), &kept);
    for (std::size_t i = 0; i < r.values.size(); ++i)
      if (!ag::test::same_bits(r.values[i], r.reference[i])) {
        std::fprintf(stderr, "ag-record-random: value %zu differs from its reference\n", i);
        return 1;
      }
    std::printf("%s: %zu values live at the end\n", argv[1], kept.size());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ag-record-random: %s\n", e.what());
    return 1;
  }
  return 0;
}
