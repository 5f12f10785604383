// A node: another machine whose devices a runtime uses. It runs ag-node (docs/NODES.md), which
// starts the children of its devices on a controller's request; its devices are named
// "NAME/cuda:N" and "NAME/sim:N".
#pragma once

#include <string>
#include <vector>

namespace ag {

struct node {
  // How devices on it are named: "n1" in "n1/cuda:0". 1 to 15 letters, digits, '-' or '_',
  // the first a letter.
  std::string name;
  // Where its ag-node listens: "tcp://HOST:PORT" (HOST a name or an IPv4 address).
  std::string endpoint;
  // Its identity's public half, as ag-keygen wrote it ("keys/n1.public"): the controller
  // talks to nothing that cannot prove it holds the secret half.
  std::string public_key_file;
};

// Parses "NAME=tcp://HOST:PORT=PUBLIC_FILE", comma-separated (a command line's --nodes): empty text
// is no node. Throws ag::error naming an entry that is not of that shape.
std::vector<node> parse_nodes(const std::string& text);

} // namespace ag
