// Tests of ipc/identity.cpp: the identities ag-keygen writes, and what loading one refuses.
#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include <sys/stat.h>

#include "actorgraph/error.hpp"
#include "ipc/identity.hpp"
#include "tests/temp_files.hpp"

using Catch::Matchers::Contains;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in{path};
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  return st.st_mode & 07777;
}

} // namespace

TEST_CASE("an identity is written as a 0600 secret and a public half that load again", "[ipc]") {
  ag::test::temp_dir dir{"identity"};
  const auto base = dir.file("n1");
  ag::write_identity(base);
  CHECK(mode_of(base + ".secret") == 0600);
  CHECK(mode_of(base + ".public") == 0644);
  const auto id = ag::load_identity(base + ".secret");
  CHECK(id.pub.name == "n1");
  CHECK(id.pub.curve_public.size() == 40);
  CHECK(id.curve_secret.size() == 40);
  CHECK(id.pub.path == base + ".public");
  CHECK(id.secret_path == base + ".secret");
  const auto pub = ag::load_public(base + ".public");
  CHECK(pub.curve_public == id.pub.curve_public);
  CHECK(pub.name == "n1");
  // The public half holds no secret; the secret half holds the private key.
  CHECK(slurp(base + ".public").find(id.curve_secret) == std::string::npos);
  CHECK(slurp(base + ".public").find("PRIVATE KEY") == std::string::npos);
  CHECK(slurp(base + ".secret").find("-----BEGIN PRIVATE KEY-----") != std::string::npos);
  CHECK(slurp(base + ".public").find("-----BEGIN CERTIFICATE-----") != std::string::npos);
}

TEST_CASE("two identities have different keys, and none is ever overwritten", "[ipc]") {
  ag::test::temp_dir dir{"identity"};
  ag::write_identity(dir.file("a"));
  ag::write_identity(dir.file("b"));
  CHECK(ag::load_public(dir.file("a.public")).curve_public
        != ag::load_public(dir.file("b.public")).curve_public);
  const auto before = slurp(dir.file("a.secret"));
  CHECK_THROWS_WITH(ag::write_identity(dir.file("a")), Contains("never overwritten"));
  CHECK(slurp(dir.file("a.secret")) == before);
}

TEST_CASE("a secret anyone but its owner may read, or a public half others may write, is refused",
          "[ipc]") {
  ag::test::temp_dir dir{"identity"};
  const auto base = dir.file("n1");
  ag::write_identity(base);
  SECTION("a secret of mode 0640") {
    REQUIRE(::chmod((base + ".secret").c_str(), 0640) == 0);
    CHECK_THROWS_WITH(ag::load_identity(base + ".secret"),
                      Contains(base + ".secret") && Contains("mode 0640")
                        && Contains("chmod 600"));
  }
  SECTION("a secret of mode 0604") {
    REQUIRE(::chmod((base + ".secret").c_str(), 0604) == 0);
    CHECK_THROWS_WITH(ag::load_identity(base + ".secret"), Contains("mode 0604"));
  }
  SECTION("a public half of mode 0666") {
    REQUIRE(::chmod((base + ".public").c_str(), 0666) == 0);
    CHECK_THROWS_WITH(ag::load_public(base + ".public"),
                      Contains(base + ".public") && Contains("mode 0666"));
    CHECK_THROWS_WITH(ag::load_identity(base + ".secret"), Contains("mode 0666"));
  }
  SECTION("a missing file") {
    CHECK_THROWS_WITH(ag::load_identity(dir.file("none.secret")),
                      Contains("none.secret") && Contains("No such file"));
  }
}

TEST_CASE("halves of two identities, or a file ag-keygen did not write, are refused", "[ipc]") {
  ag::test::temp_dir dir{"identity"};
  ag::write_identity(dir.file("a"));
  ag::write_identity(dir.file("b"));
  SECTION("a's secret beside b's public half") {
    REQUIRE(::rename(dir.file("b.public").c_str(), dir.file("a.public").c_str()) == 0);
    CHECK_THROWS_WITH(ag::load_identity(dir.file("a.secret")), Contains("different identities"));
  }
  SECTION("a file with no keys") {
    { std::ofstream{dir.file("c.public")} << "hello\n"; }
    ::chmod(dir.file("c.public").c_str(), 0644);
    CHECK_THROWS_WITH(ag::load_public(dir.file("c.public")), Contains("no curve-public line"));
  }
  SECTION("a key that is not Z85") {
    { std::ofstream{dir.file("c.public")} << "curve-public abc\n"; }
    ::chmod(dir.file("c.public").c_str(), 0644);
    CHECK_THROWS_WITH(ag::load_public(dir.file("c.public")), Contains("40-character Z85"));
  }
  SECTION("a public key with no certificate") {
    const auto key = ag::load_public(dir.file("a.public")).curve_public;
    { std::ofstream{dir.file("c.public")} << "curve-public " << key << "\n"; }
    ::chmod(dir.file("c.public").c_str(), 0644);
    CHECK_THROWS_WITH(ag::load_public(dir.file("c.public")), Contains("no PEM certificate"));
  }
}

TEST_CASE("a node's proof holds against its own public half only, for its name and nonce only",
          "[ipc]") {
  ag::test::temp_dir dir{"identity"};
  ag::write_identity(dir.file("n1"));
  ag::write_identity(dir.file("n2"));
  const auto n1 = ag::load_identity(dir.file("n1.secret"));
  const auto n2 = ag::load_identity(dir.file("n2.secret"));
  const std::string nonce(64, 'a');
  const auto text = ag::proof_text("n1", nonce);
  const auto sig = ag::sign_proof(n1, text);
  CHECK(ag::proof_holds(n1.pub, text, sig));
  // Another node signing as n1 (its own key) is not n1.
  CHECK_FALSE(ag::proof_holds(n1.pub, text, ag::sign_proof(n2, text)));
  CHECK_FALSE(ag::proof_holds(n2.pub, text, sig));
  // Another name, another nonce, or a changed signature: no proof.
  CHECK_FALSE(ag::proof_holds(n1.pub, ag::proof_text("n2", nonce), sig));
  CHECK_FALSE(ag::proof_holds(n1.pub, ag::proof_text("n1", std::string(64, 'b')), sig));
  auto bent = sig;
  bent[bent.size() / 2] ^= 1;
  CHECK_FALSE(ag::proof_holds(n1.pub, text, bent));
  CHECK_FALSE(ag::proof_holds(n1.pub, text, ""));
  // A public half that is not there proves nothing.
  auto gone = n1.pub;
  gone.path = dir.file("missing.public");
  CHECK_FALSE(ag::proof_holds(gone, text, sig));
}
