// libFuzzer target: a child's start-up arguments as ag-runner reads them from its start-up segment
// (ipc/sub_process_sync.cpp, apps/ag-runner/main.cpp): the whole input is one startup_args.
#include <cstddef>
#include <cstdint>

#include "actorgraph/error.hpp"
#include "ipc/wire.hpp"
#include "tests/fuzz/fuzz_checks.hpp"

namespace wire = ag::wire;
namespace fuzz = ag::fuzz;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    wire::startup_args args;
    wire::decode(data, size, args);
    // What wire::decode(startup_args) promises.
    fuzz::require(args.version == wire::version, "startup_args: other version accepted");
    fuzz::require(fuzz::valid(args.where), "startup_args: bad device accepted");
    fuzz::require(args.pub_endpoint.size() + args.pull_endpoint.size() + args.store_name.size()
                    <= size,
                  "startup_args: strings longer than the input");
    fuzz::sink = fuzz::sink + args.lane + args.store_bytes + static_cast<uint32_t>(args.parent_pid);
    fuzz::check_round_trip(args, size, "startup_args");
  } catch (const ag::error&) {
    // Malformed input, refused as the decoder promises. Anything else escapes and crashes.
  }
  return 0;
}
