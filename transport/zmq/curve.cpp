#include "transport/zmq/curve.h"

#include <zmq.h>

#include <array>
#include <cstdint>

#include "common/errors.h"
#include "transport/wire/auth.h"

namespace gradex::zmq_security {

namespace {

// Z85 text of a 32-byte key: 40 characters and a terminator.
using Z85Key = std::array<char, 41>;

void set_key(void* socket, int option, const Z85Key& key) {
  GRADEX_ENFORCE(zmq_setsockopt(socket, option, key.data(), 40) == 0, "setting a CURVE key: ",
                 zmq_strerror(zmq_errno()));
}

// The server's key pair: its secret is HMAC-SHA256 of the token under a
// label of its own, so it is unrelated to the admission proofs.
void server_keys(const std::string& token, Z85Key& public_key, Z85Key& secret_key) {
  const auto secret = wire::derive_key(token, "gradex v2 zmq curve server key");
  GRADEX_ENFORCE(zmq_z85_encode(secret_key.data(), reinterpret_cast<const std::uint8_t*>(secret.data()),
                                secret.size()) != nullptr,
                 "encoding a CURVE key");
  GRADEX_ENFORCE(zmq_curve_public(public_key.data(), secret_key.data()) == 0,
                 "deriving a CURVE public key: ", zmq_strerror(zmq_errno()));
}

}  // namespace

void require_curve() {
  if (zmq_has("curve") == 0) {
    throw Error("this libzmq has no CURVE security (built without libsodium): the zmq transport "
                "needs it to keep strangers out");
  }
}

void make_server(void* router, const std::string& token) {
  Z85Key public_key{}, secret_key{};
  server_keys(token, public_key, secret_key);
  const int on = 1;
  GRADEX_ENFORCE(zmq_setsockopt(router, ZMQ_CURVE_SERVER, &on, sizeof on) == 0,
                 "enabling CURVE: ", zmq_strerror(zmq_errno()));
  set_key(router, ZMQ_CURVE_SECRETKEY, secret_key);
}

void make_client(void* dealer, const std::string& token) {
  Z85Key server_public{}, server_secret{};
  server_keys(token, server_public, server_secret);
  Z85Key mine_public{}, mine_secret{};
  GRADEX_ENFORCE(zmq_curve_keypair(mine_public.data(), mine_secret.data()) == 0,
                 "making a CURVE key pair: ", zmq_strerror(zmq_errno()));
  set_key(dealer, ZMQ_CURVE_SERVERKEY, server_public);
  set_key(dealer, ZMQ_CURVE_PUBLICKEY, mine_public);
  set_key(dealer, ZMQ_CURVE_SECRETKEY, mine_secret);
}

}  // namespace gradex::zmq_security
