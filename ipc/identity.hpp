// identity: a machine's key pair, made by ag-keygen, that serves both network planes: a CURVE key
// pair for ZMQ (the broadcast and the acknowledgements) and an EC key with a self-signed X.509
// certificate for TLS (CAF's middleman, the control plane). Two files (docs/NODES.md):
//
//   NAME.secret  mode 0600: the CURVE keys and the PEM private key
//   NAME.public  the CURVE public key and the PEM certificate
//
// Each holds "curve-public Z85" (and "curve-secret Z85") lines before its PEM block; OpenSSL reads
// the files as they are, skipping those lines.
#pragma once

#include <string>
#include <vector>

namespace ag {

// What a peer is known by: its public half.
struct public_identity {
  std::string name;         // the certificate's common name (ag-keygen's file name)
  std::string curve_public; // 40 characters of Z85
  std::string path;         // the .public file: its certificate, for TLS
};

// What this machine proves itself with: both halves.
struct identity {
  public_identity pub;
  std::string curve_secret; // 40 characters of Z85
  std::string secret_path;  // the .secret file: its private key, for TLS
};

// Writes BASE.secret (0600) and BASE.public, named after BASE's file name. Refuses (ag::error)
// when either exists or cannot be written; what it wrote is removed again.
void write_identity(const std::string& base);

// Reads a .secret file and the .public beside it. Throws ag::error naming the file and what is
// wrong: missing, readable or writable by anyone but its owner (a secret must be 0600), owned by
// someone else, malformed, or halves that do not match.
identity load_identity(const std::string& secret_file);

// Reads a .public file. Throws ag::error naming the file: missing, writable by anyone but its
// owner (whoever can change it can stand in for the peer), malformed.
public_identity load_public(const std::string& public_file);

// BASE.public for BASE.secret (and for anything else, FILE.public).
std::string public_path_of(const std::string& secret_file);

// What a node signs to prove, over a connection, that it holds the key of the name it is known by
// (the control plane's TLS trusts every listed node's certificate on every connection, so it does
// not tell one node from another): the node's name and the controller's fresh nonce.
std::string proof_text(const std::string& name, const std::string& nonce);
// `text` signed with this identity's TLS private key (ECDSA, SHA-256). Throws ag::error naming
// the file when it holds no key.
std::string sign_proof(const identity& self, const std::string& text);
// True when `signature` is `text` signed by the key of the certificate in peer's .public.
bool proof_holds(const public_identity& peer, const std::string& text,
                 const std::string& signature) noexcept;

} // namespace ag
