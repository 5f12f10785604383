// tls_error_queue: keeps one TLS connection's failure from closing the others.
//
// OpenSSL keeps one error queue per thread, and SSL_get_error() takes anything left in it for the
// outcome of the call it is asked about; so every caller must empty it before a TLS call.
// CAF 0.17.6's transport (libcaf_openssl) never does: it reads the queue only inside log
// statements, which Debian's build compiles out. All of a middleman's connections share one
// thread, so one connection that ends badly (a peer killed or gone without a TLS close, a
// handshake refused for a key not allowed) leaves an error behind, and the next call on another,
// healthy connection that would block reports it and closes that connection: a node drops its
// controller when a stranger knocks or a refused controller goes, and a controller drops every
// other node when one dies.
//
// tls_error_queue.cpp defines the four calls CAF makes (SSL_read, SSL_write, SSL_connect,
// SSL_accept): each empties the calling thread's queue, then calls libssl's. libactorgraph comes
// before libssl in a program's lookup order (libssl arrives with libcaf_openssl, after it), so
// CAF's calls reach these.
#pragma once

namespace ag {

// True when CAF's TLS calls reach the definitions above, false when the program loads libssl
// before libactorgraph (it links libssl itself, ahead of libactorgraph): nodes are then refused.
bool tls_error_queue_guarded();

} // namespace ag
