#include "actors/tls_error_queue.hpp"

#include <cstdio>
#include <cstdlib>

#include <dlfcn.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

namespace {

// libssl's definition of `name`: the next one after this library's in the lookup order.
template <class Fn>
Fn libssl(const char* name) {
  void* found = ::dlsym(RTLD_NEXT, name);
  if (found == nullptr) { // only CAF's TLS transport calls these, and it loaded libssl
    std::fprintf(stderr, "actorgraph: %s is not in libssl (%s)\n", name, ::dlerror());
    std::abort();
  }
  return reinterpret_cast<Fn>(found);
}

} // namespace

extern "C" {

int SSL_read(SSL* ssl, void* buf, int num) {
  static const auto real = libssl<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_write(SSL* ssl, const void* buf, int num) {
  static const auto real = libssl<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return real(ssl, buf, num);
}

int SSL_connect(SSL* ssl) {
  static const auto real = libssl<int (*)(SSL*)>("SSL_connect");
  ERR_clear_error();
  return real(ssl);
}

int SSL_accept(SSL* ssl) {
  static const auto real = libssl<int (*)(SSL*)>("SSL_accept");
  ERR_clear_error();
  return real(ssl);
}

} // extern "C"

namespace ag {

bool tls_error_queue_guarded() {
  return ::dlsym(RTLD_DEFAULT, "SSL_read") == reinterpret_cast<void*>(&SSL_read);
}

} // namespace ag
