#include "actors/node_probe.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>

#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "actorgraph/error.hpp"
#include "ipc/identity.hpp"

namespace ag {

namespace {

using clock = std::chrono::steady_clock;

// The ciphers CAF's middleman offers (libcaf_openssl's session): the same handshake as its own.
constexpr const char* cipher_list = "HIGH:!aNULL:!MD5";

// An owned socket, closed when it goes.
class socket_fd {
public:
  socket_fd() noexcept = default;
  explicit socket_fd(int fd) noexcept : fd_(fd) {}
  socket_fd(socket_fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  socket_fd& operator=(socket_fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  ~socket_fd() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int get() const noexcept { return fd_; }

private:
  int fd_ = -1;
};

static_assert(std::is_nothrow_move_constructible_v<socket_fd>);

// Keeps SIGPIPE from this thread while it lives: OpenSSL writes with a plain send(), and a write
// to a connection the peer has reset must fail with EPIPE, not end the program. A SIGPIPE raised
// meanwhile is taken back before the thread's mask is restored.
class sigpipe_held {
public:
  sigpipe_held() noexcept {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe_, &saved_);
    sigset_t pending;
    sigemptyset(&pending);
    pending_before_ = ::sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
  }
  sigpipe_held(const sigpipe_held&) = delete;
  sigpipe_held& operator=(const sigpipe_held&) = delete;
  ~sigpipe_held() {
    const timespec now{0, 0};
    if (!pending_before_)
      while (::sigtimedwait(&pipe_, nullptr, &now) == SIGPIPE) {
      }
    ::pthread_sigmask(SIG_SETMASK, &saved_, nullptr);
  }

private:
  sigset_t pipe_;
  sigset_t saved_;
  bool pending_before_ = false;
};

struct ctx_free {
  void operator()(SSL_CTX* c) const noexcept { SSL_CTX_free(c); }
};
struct ssl_free {
  void operator()(SSL* s) const noexcept { SSL_free(s); }
};
struct addrinfo_free {
  void operator()(addrinfo* a) const noexcept { ::freeaddrinfo(a); }
};

// The oldest error in this thread's OpenSSL queue; the queue is emptied (a later call must not
// take it for its own).
std::string tls_reason() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0)
    return "no reason given";
  char text[256];
  ERR_error_string_n(code, text, sizeof text);
  return text;
}

// Waits until `fd` is ready for `events`, at most until `deadline`: false once it has passed.
// Waits in slices of at most a second, so that a deadline far away (or none) fits poll's.
bool wait_for(int fd, short events, clock::time_point deadline) {
  for (;;) {
    const auto now = clock::now();
    if (now >= deadline)
      return false;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now);
    pollfd p{fd, events, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 1000)));
    if (n > 0 || (n < 0 && errno != EINTR))
      return true; // ready, or failed: the next call on it says which
  }
}

// A TCP connection to the first of `found`'s addresses that takes one, by `deadline`.
socket_fd connect_tcp(const probe_target& t, const addrinfo* found, clock::time_point deadline,
                      const std::string& deadline_text) {
  std::string why = "no address";
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    socket_fd fd{::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                          a->ai_protocol)};
    if (fd.get() < 0)
      throw error(t.who + ": cannot make a socket: " + std::strerror(errno));
    int err = 0;
    if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        if (!wait_for(fd.get(), POLLOUT, deadline))
          throw error(t.who + ": no TCP connection within " + deadline_text
                      + "; is the host up, and the port reachable from here?");
        socklen_t len = sizeof err;
        if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0)
          err = errno;
      }
    }
    if (err == 0)
      return fd;
    why = std::strerror(err);
  }
  throw error(t.who + ": cannot connect: " + why + " (is its ag-node running?)");
}

// This controller's side of the handshake, set up as CAF's middleman sets up its own.
std::unique_ptr<SSL_CTX, ctx_free> client_context(const probe_target& t, const identity& self) {
  std::unique_ptr<SSL_CTX, ctx_free> ctx{SSL_CTX_new(TLS_method())};
  if (!ctx)
    throw error(t.who + ": TLS: " + tls_reason());
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), self.pub.path.c_str()) != 1)
    throw error("identity " + self.pub.path + ": TLS cannot use its certificate: " + tls_reason());
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), self.secret_path.c_str(), SSL_FILETYPE_PEM) != 1)
    throw error("identity " + self.secret_path + ": TLS cannot use its key: " + tls_reason());
  if (SSL_CTX_load_verify_locations(ctx.get(), t.public_file.c_str(), nullptr) != 1)
    throw error(t.who + ": its identity " + t.public_file + ": TLS cannot use its certificate: "
                + tls_reason());
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  if (SSL_CTX_set_cipher_list(ctx.get(), cipher_list) != 1)
    throw error(t.who + ": TLS: " + tls_reason());
  return ctx;
}

// What ended a handshake that failed (SSL_connect's `rc` and SSL_get_error's `code`).
std::string handshake_failure(const probe_target& t, SSL* ssl, int rc, int code) {
  const std::string ask =
    " (is an ag-node listening there, and does it allow this controller's key?)";
  // OpenSSL 3 reports an end of the stream within the handshake as an error of its own.
  const bool eof = code == SSL_ERROR_SSL
                   && ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
  if (eof || code == SSL_ERROR_ZERO_RETURN
      || (code == SSL_ERROR_SYSCALL && ERR_peek_error() == 0)) {
    const int err = errno;
    ERR_clear_error();
    if (eof || rc == 0 || code == SSL_ERROR_ZERO_RETURN || err == 0 || err == ECONNRESET
        || err == EPIPE)
      return t.who + ": closed the connection during the TLS handshake" + ask;
    return t.who + ": TLS handshake: " + std::strerror(err) + ask;
  }
  if (const long v = SSL_get_verify_result(ssl); v != X509_V_OK) {
    ERR_clear_error();
    return t.who + ": its TLS certificate is not the one in " + t.public_file + " ("
           + X509_verify_cert_error_string(v) + "); is that file the node's ag-keygen .public?";
  }
  return t.who + ": TLS handshake refused: " + tls_reason() + ask;
}

} // namespace

void probe_node(const probe_target& t, const identity& self, clock::time_point deadline,
                const std::string& deadline_text) {
  const sigpipe_held no_sigpipe;
  ERR_clear_error();
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(t.host.c_str(), std::to_string(t.port).c_str(), &hints, &found);
      rc != 0)
    throw error(t.who + ": host " + t.host + ": " + ::gai_strerror(rc));
  const std::unique_ptr<addrinfo, addrinfo_free> addresses{found};
  const auto ctx = client_context(t, self);
  const socket_fd fd = connect_tcp(t, addresses.get(), deadline, deadline_text);
  const std::unique_ptr<SSL, ssl_free> ssl{SSL_new(ctx.get())};
  if (!ssl || SSL_set_fd(ssl.get(), fd.get()) != 1)
    throw error(t.who + ": TLS: " + tls_reason());
  for (;;) {
    errno = 0;
    const int rc = SSL_connect(ssl.get());
    if (rc == 1)
      break;
    const int code = SSL_get_error(ssl.get(), rc);
    short events = 0;
    if (code == SSL_ERROR_WANT_READ)
      events = POLLIN;
    else if (code == SSL_ERROR_WANT_WRITE)
      events = POLLOUT;
    else
      throw error(handshake_failure(t, ssl.get(), rc, code));
    if (!wait_for(fd.get(), events, deadline))
      throw error(t.who + ": accepted the connection but completed no TLS handshake within "
                  + deadline_text + "; is an ag-node listening there?");
  }
  // A close_notify, not waited for (the socket is non-blocking): the node's middleman sees the
  // connection end before any of its own messages was read.
  (void)SSL_shutdown(ssl.get());
  ERR_clear_error();
}

} // namespace ag
