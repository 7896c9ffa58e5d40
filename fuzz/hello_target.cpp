// The admission records (transport/wire/frame.h): the hello a connecting peer
// sends first, the accepting side's challenge and the client's proof, the
// bytes a hostile or confused peer controls before it is admitted. The
// input is read as each of the three (zero-padded, as on the wire); a
// record that decodes must survive re-encoding unchanged.
#include <algorithm>
#include <cstring>

#include "transport/wire/frame.h"
#include "fuzz/targets.h"

namespace gradex::fuzz {

namespace {

template <typename Record, typename Same>
void round_trip(Input bytes, const char* what, Same same) {
  typename Record::Bytes wire{};
  std::memcpy(wire.data(), bytes.data(), std::min(bytes.size(), wire.size()));
  Record record;
  if (Record::decode(wire, record)) return;  // refused: fine
  Record again;
  if (Record::decode(record.encode(), again) || !same(record, again)) {
    throw Finding(std::string("a decoded ") + what + " does not survive re-encoding");
  }
}

}  // namespace

void hello_input(Input bytes) {
  using namespace wire;
  round_trip<Hello>(bytes, "hello", [](const Hello& a, const Hello& b) {
    return a.rank == b.rank && a.size == b.size && a.nonce == b.nonce;
  });
  round_trip<Challenge>(bytes, "challenge", [](const Challenge& a, const Challenge& b) {
    return a.status == b.status && a.nonce == b.nonce && a.proof == b.proof;
  });
  round_trip<ClientProof>(bytes, "client proof", [](const ClientProof& a, const ClientProof& b) {
    return a.proof == b.proof;
  });
}

}  // namespace gradex::fuzz
