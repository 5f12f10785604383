#include "actors/protocol.hpp"

#include <caf/error.hpp>
#include <caf/exit_reason.hpp>
#include <caf/message.hpp>
#include <caf/sec.hpp>

namespace ag {

caf::error make_error(errc code, std::string what) {
  return caf::error{static_cast<uint8_t>(code), error_category, caf::make_message(std::move(what))};
}

std::string describe(const caf::error& err, const std::string& what) {
  if (err.category() == error_category) {
    const auto& ctx = err.context();
    if (ctx.match_elements<std::string>())
      return ctx.get_as<std::string>(0);
  }
  if (err.category() == caf::atom("system")) {
    switch (static_cast<caf::sec>(err.code())) {
      case caf::sec::request_timeout: return what + ": no answer before the deadline";
      case caf::sec::request_receiver_down:
        return what + ": the executor is gone (runtime stopped)";
      default: break;
    }
  }
  if (err == caf::exit_reason::remote_link_unreachable)
    return what + ": the link was lost (nothing heard for the node timeout, "
                  "graph_option::node_timeout or ag-node --timeout-ms, or the connection closed); "
                  "raise it if the peer or the network is only slow";
  return what + ": " + caf::to_string(err);
}

} // namespace ag
