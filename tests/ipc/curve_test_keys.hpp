// A fresh CURVE key pair (Z85) for the tests of CURVE sockets. Include after catch2/catch.hpp.
#pragma once

#include <string>

#include <zmq.h>

namespace ag::test {

struct curve_key_pair {
  std::string pub, sec;
  curve_key_pair() {
    char p[41], s[41];
    REQUIRE(zmq_curve_keypair(p, s) == 0);
    pub = p;
    sec = s;
  }
};

} // namespace ag::test
