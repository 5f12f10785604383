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

namespace {

void this_library() {} // internal: its address is in this library, whatever comes first

} // namespace

bool tls_error_queue_guarded() {
  // `&SSL_read` here would go through the lookup order too: ask which library the process's
  // SSL_read lives in instead.
  void* const found = ::dlsym(RTLD_DEFAULT, "SSL_read");
  Dl_info theirs{}, ours{};
  return found != nullptr && ::dladdr(found, &theirs) != 0
         && ::dladdr(reinterpret_cast<void*>(&this_library), &ours) != 0
         && theirs.dli_fbase == ours.dli_fbase;
}

} // namespace ag
