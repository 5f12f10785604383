#include "ipc/identity.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <zmq.h>

#include "actorgraph/error.hpp"

namespace ag {

namespace {

constexpr std::size_t z85_key_chars = 40;

template <class T, void (*Free)(T*)>
struct freer {
  void operator()(T* p) const noexcept { Free(p); }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, freer<EVP_PKEY, EVP_PKEY_free>>;
using x509_ptr = std::unique_ptr<X509, freer<X509, X509_free>>;
using bio_ptr = std::unique_ptr<BIO, freer<BIO, BIO_free_all>>;

std::string file_name_of(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string pem_of(BIO* bio) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(n));
}

void ssl_check(bool ok, const std::string& what) {
  if (!ok)
    throw error("identity: " + what + " failed (OpenSSL)");
}

// A P-256 key and a self-signed certificate for it, named `name`, valid for 20 years.
std::pair<std::string, std::string> tls_key_and_certificate(const std::string& name) {
  pkey_ptr key{EVP_EC_gen("P-256")};
  ssl_check(key != nullptr, "making an EC key");
  x509_ptr cert{X509_new()};
  ssl_check(cert != nullptr, "making a certificate");
  ssl_check(X509_set_version(cert.get(), 2) == 1, "setting the certificate's version");
  unsigned char serial[16];
  ssl_check(RAND_bytes(serial, sizeof serial) == 1, "drawing a serial number");
  serial[0] &= 0x7f; // positive
  std::unique_ptr<BIGNUM, freer<BIGNUM, BN_free>> bn{BN_bin2bn(serial, sizeof serial, nullptr)};
  ssl_check(bn && BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert.get())) != nullptr,
            "setting the serial number");
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 20L * 365 * 24 * 3600);
  X509_NAME* subject = X509_get_subject_name(cert.get());
  ssl_check(X509_NAME_add_entry_by_txt(subject, "CN", MBSTRING_UTF8,
                                       reinterpret_cast<const unsigned char*>(name.c_str()), -1,
                                       -1, 0)
              == 1,
            "naming the certificate");
  ssl_check(X509_set_issuer_name(cert.get(), subject) == 1, "setting the issuer");
  ssl_check(X509_set_pubkey(cert.get(), key.get()) == 1, "setting the public key");
  // Its own trust anchor: a peer trusts exactly the certificates it was given.
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair{NID_basic_constraints, "critical,CA:TRUE"},
                            std::pair{NID_key_usage, "critical,digitalSignature,keyCertSign"},
                            std::pair{NID_subject_key_identifier, "hash"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    ssl_check(ext != nullptr && X509_add_ext(cert.get(), ext, -1) == 1, "adding an extension");
    X509_EXTENSION_free(ext);
  }
  ssl_check(X509_sign(cert.get(), key.get(), EVP_sha256()) > 0, "signing the certificate");
  bio_ptr key_pem{BIO_new(BIO_s_mem())};
  bio_ptr cert_pem{BIO_new(BIO_s_mem())};
  ssl_check(key_pem && PEM_write_bio_PrivateKey(key_pem.get(), key.get(), nullptr, nullptr, 0,
                                                nullptr, nullptr)
                         == 1,
            "writing the private key");
  ssl_check(cert_pem && PEM_write_bio_X509(cert_pem.get(), cert.get()) == 1,
            "writing the certificate");
  return {pem_of(key_pem.get()), pem_of(cert_pem.get())};
}

// Creates `path` exclusively with `mode` and writes `text` into it.
void write_new(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0)
    throw error("identity " + path + ": " + std::strerror(errno)
                + (errno == EEXIST ? " (an identity is never overwritten: remove it first)" : ""));
  ::fchmod(fd, mode); // whatever the umask
  std::size_t at = 0;
  while (at < text.size()) {
    const auto n = ::write(fd, text.data() + at, text.size() - at);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(path.c_str());
      throw error("identity " + path + ": " + std::strerror(err));
    }
    at += static_cast<std::size_t>(n);
  }
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(path.c_str());
    throw error("identity " + path + ": " + std::strerror(err));
  }
}

// The file's text, after checking who may touch it: a secret only its owner may read or write;
// a public half only its owner may write. Either must belong to this user (or root).
std::string read_checked(const std::string& path, bool secret) {
  const std::string public_suffix = ".public";
  if (secret && path.size() >= public_suffix.size()
      && path.compare(path.size() - public_suffix.size(), public_suffix.size(), public_suffix) == 0)
    throw error("identity " + path + ": this is the public half of an identity; a secret is asked "
                "for here: name its .secret file (" + path.substr(0, path.size() - public_suffix.size())
                + ".secret)");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    throw error("identity " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw error("identity " + path + ": not a regular file");
  }
  auto refuse = [&](const std::string& why) {
    ::close(fd);
    throw error("identity " + path + ": " + why);
  };
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
  if (st.st_uid != ::geteuid() && st.st_uid != 0)
    refuse("owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid "
           + std::to_string(::geteuid()) + ")");
  if (secret && (st.st_mode & 077) != 0)
    refuse(std::string{"mode "} + mode + ": a secret must be readable by its owner alone (chmod 600 "
           + path + ")");
  if (!secret && (st.st_mode & 022) != 0)
    refuse(std::string{"mode "} + mode + ": whoever may write a public identity can stand in for "
           "its peer (chmod 644 " + path + ")");
  std::string text;
  char buf[4096];
  for (;;) {
    const auto n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      refuse(std::strerror(errno));
    if (n == 0)
      break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > (std::size_t{1} << 16))
      refuse("larger than 64 KiB: not an identity");
  }
  ::close(fd);
  return text;
}

// The Z85 key on the line "<field> KEY".
std::string key_line(const std::string& text, const std::string& field, const std::string& path) {
  std::istringstream in{text};
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, field.size() + 1, field + " ") != 0)
      continue;
    std::string key = line.substr(field.size() + 1);
    uint8_t raw[32];
    if (key.size() != z85_key_chars || zmq_z85_decode(raw, key.c_str()) == nullptr)
      throw error("identity " + path + ": " + field + " is not a 40-character Z85 key");
    return key;
  }
  throw error("identity " + path + ": no " + field + " line (not a file ag-keygen wrote)");
}

// The common name of the certificate in `text`.
std::string certificate_name(const std::string& text, const std::string& path) {
  bio_ptr bio{BIO_new_mem_buf(text.data(), static_cast<int>(text.size()))};
  x509_ptr cert{bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr};
  if (!cert)
    throw error("identity " + path + ": no PEM certificate (not a file ag-keygen wrote)");
  char cn[256] = {0};
  if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert.get()), NID_commonName, cn,
                                sizeof cn)
      <= 0)
    throw error("identity " + path + ": its certificate has no common name");
  return cn;
}

} // namespace

std::string public_path_of(const std::string& secret_file) {
  const std::string suffix = ".secret";
  if (secret_file.size() > suffix.size()
      && secret_file.compare(secret_file.size() - suffix.size(), suffix.size(), suffix) == 0)
    return secret_file.substr(0, secret_file.size() - suffix.size()) + ".public";
  return secret_file + ".public";
}

void write_identity(const std::string& base) {
  const std::string name = file_name_of(base);
  if (name.empty())
    throw error("identity \"" + base + "\" names a directory, not an identity");
  char pub[z85_key_chars + 1];
  char sec[z85_key_chars + 1];
  if (zmq_curve_keypair(pub, sec) != 0)
    throw error("identity: this libzmq cannot make CURVE keys: " + std::string{zmq_strerror(errno)});
  const auto [key_pem, cert_pem] = tls_key_and_certificate(name);
  const std::string secret_file = base + ".secret";
  const std::string public_file = base + ".public";
  write_new(secret_file,
            "# actorgraph identity \"" + name + "\", the secret half: mode 0600, never shared.\n"
              + "curve-public " + pub + "\ncurve-secret " + sec + "\n" + key_pem,
            0600);
  try {
    write_new(public_file,
              "# actorgraph identity \"" + name + "\", the public half: for the peers that talk "
                + "to it.\ncurve-public " + pub + "\n" + cert_pem,
              0644);
  } catch (...) {
    ::unlink(secret_file.c_str());
    throw;
  }
}

public_identity load_public(const std::string& public_file) {
  const std::string text = read_checked(public_file, false);
  public_identity id;
  id.curve_public = key_line(text, "curve-public", public_file);
  id.name = certificate_name(text, public_file);
  id.path = public_file;
  return id;
}

identity load_identity(const std::string& secret_file) {
  const std::string text = read_checked(secret_file, true);
  identity id;
  id.secret_path = secret_file;
  id.curve_secret = key_line(text, "curve-secret", secret_file);
  const std::string curve_public = key_line(text, "curve-public", secret_file);
  {
    bio_ptr bio{BIO_new_mem_buf(text.data(), static_cast<int>(text.size()))};
    pkey_ptr key{bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr};
    if (!key)
      throw error("identity " + secret_file + ": no PEM private key (not a file ag-keygen wrote)");
  }
  char derived[z85_key_chars + 1];
  if (zmq_curve_public(derived, id.curve_secret.c_str()) != 0 || curve_public != derived)
    throw error("identity " + secret_file + ": its curve-public does not belong to its "
                "curve-secret");
  id.pub = load_public(public_path_of(secret_file));
  if (id.pub.curve_public != curve_public)
    throw error("identity " + secret_file + " and " + id.pub.path
                + " are halves of different identities (their CURVE keys differ)");
  return id;
}

std::string proof_text(const std::string& name, const std::string& nonce) {
  return "actorgraph node proof v1\n" + name + "\n" + nonce + "\n";
}

std::string sign_proof(const identity& self, const std::string& text) {
  bio_ptr in{BIO_new_file(self.secret_path.c_str(), "r")};
  pkey_ptr key{in ? PEM_read_bio_PrivateKey(in.get(), nullptr, nullptr, nullptr) : nullptr};
  if (!key)
    throw error("identity " + self.secret_path + ": no private key to sign with");
  using md_ptr = std::unique_ptr<EVP_MD_CTX, freer<EVP_MD_CTX, EVP_MD_CTX_free>>;
  md_ptr ctx{EVP_MD_CTX_new()};
  std::size_t n = 0;
  ssl_check(ctx && EVP_DigestSignInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) == 1
              && EVP_DigestSign(ctx.get(), nullptr, &n,
                                reinterpret_cast<const unsigned char*>(text.data()),
                                text.size()) == 1,
            "signing a proof");
  std::string sig(n, '\0');
  ssl_check(EVP_DigestSign(ctx.get(), reinterpret_cast<unsigned char*>(sig.data()), &n,
                           reinterpret_cast<const unsigned char*>(text.data()), text.size()) == 1,
            "signing a proof");
  sig.resize(n);
  return sig;
}

bool proof_holds(const public_identity& peer, const std::string& text,
                 const std::string& signature) noexcept {
  bio_ptr in{BIO_new_file(peer.path.c_str(), "r")};
  x509_ptr cert{in ? PEM_read_bio_X509(in.get(), nullptr, nullptr, nullptr) : nullptr};
  if (!cert)
    return false;
  pkey_ptr key{X509_get_pubkey(cert.get())};
  using md_ptr = std::unique_ptr<EVP_MD_CTX, freer<EVP_MD_CTX, EVP_MD_CTX_free>>;
  md_ptr ctx{EVP_MD_CTX_new()};
  return key && ctx
         && EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.get()) == 1
         && EVP_DigestVerify(ctx.get(), reinterpret_cast<const unsigned char*>(signature.data()),
                             signature.size(), reinterpret_cast<const unsigned char*>(text.data()),
                             text.size())
              == 1;
}

} // namespace ag
