// A program that loads libssl before libactorgraph (it links OpenSSL's libssl first and calls it),
// so CAF's TLS calls reach libssl's own SSL_read and the others, not actors/tls_error_queue.cpp's.
// A runtime with devices on a node must be refused there, saying why:
//
//   ag-test-ssl-first CONTROLLER.secret NODE.public
//
// prints the runtime's error and exits 0 when it names the order, 1 otherwise.
#include <cstdio>
#include <string>

#include <openssl/ssl.h>

#include <actorgraph/actorgraph.hpp>

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: ag-test-ssl-first CONTROLLER.secret NODE.public\n");
    return 2;
  }
  OPENSSL_init_ssl(0, nullptr); // libssl stays a dependency of this program, ahead of actorgraph
  ag::graph_option opt;
  opt.per_device_per_process = true;
  opt.key_file = argv[1];
  opt.devices = ag::parse_devices("n1/sim:0");
  opt.nodes = {{"n1", "tcp://127.0.0.1:1", argv[2]}};
  opt.start_timeout = std::chrono::milliseconds{2000};
  try {
    ag::runtime rt{opt};
  } catch (const ag::error& e) {
    std::printf("%s\n", e.what());
    return std::string{e.what()}.find("loads libssl before libactorgraph") != std::string::npos
             ? 0
             : 1;
  }
  std::printf("the runtime started\n");
  return 1;
}
