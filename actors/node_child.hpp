// node_child: what a child on a node has that a local child has not: the CURVE keys with which it
// reaches its controller over TCP, and its store (its node's own), of which it takes the bytes its
// batches read (Data-in) and sends back the bytes they wrote (Data-out), over several
// connections each way when the controller has data and return streams.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace ag {

struct node_child {
  std::string server_key; // the controller's public key (Z85)
  std::string public_key; // the node's
  std::string secret_key;
  std::vector<std::string> data_endpoints;   // its data streams (empty: none)
  std::vector<std::string> return_endpoints; // its return streams (empty: none)
  std::byte* store_base = nullptr;
  std::size_t store_size = 0;
};

} // namespace ag
