// ag-keygen: makes one machine's identity (ipc/identity.hpp), which serves both network planes of
// a runtime with nodes (docs/NODES.md):
//
//   ag-keygen keys/n1      writes keys/n1.secret (mode 0600) and keys/n1.public
//
// The name after the last '/' names the identity (its certificate's common name). An identity is
// never overwritten. Exit codes (README.md): 0 written, 2 bad command line, 3 cannot write.
#include <cstdio>
#include <string>

#include "apps/app_config.hpp"
#include "ipc/identity.hpp"

namespace {

int start(int argc, char** argv) {
  ag::app::config cfg{"ag-keygen", false};
  if (auto code = cfg.read(argc, argv))
    return *code;
  if (cfg.remainder.size() != 1)
    return cfg.usage("expected one argument, the identity's path without suffix "
                     "(ag-keygen keys/n1 writes keys/n1.secret and keys/n1.public)");
  const std::string base = cfg.remainder.front();
  try {
    ag::write_identity(base);
    const auto id = ag::load_identity(base + ".secret");
    std::printf("%s.secret (0600, keep it on this machine)\n%s.public (give it to the peers)\n"
                "curve-public %s\n",
                base.c_str(), base.c_str(), id.pub.curve_public.c_str());
  } catch (const std::exception& e) {
    return cfg.fail(ag::app::exit_cannot_run, e.what());
  }
  return ag::app::exit_ok;
}

} // namespace

int main(int argc, char** argv) {
  return ag::app::guarded_main("ag-keygen", start, argc, argv, ag::app::exit_cannot_run);
}
