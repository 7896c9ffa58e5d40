// The hello a connecting peer sends first (common/tcp/frame.h): the bytes
// a hostile or confused client controls before it is admitted. A hello
// that decodes must survive re-encoding with the same rank, size and token,
// and the token must fit the fixed field it came in.
#include <algorithm>
#include <cstring>

#include "common/tcp/frame.h"
#include "fuzz/targets.h"

namespace gradex::fuzz {

void hello_input(Input bytes) {
  using tcp::Hello;
  Hello::Bytes record{};  // short inputs are zero-padded, as on the wire
  std::memcpy(record.data(), bytes.data(), std::min(bytes.size(), record.size()));
  Hello hello;
  if (Hello::decode(record, hello)) return;
  if (hello.token.size() > tcp::kMaxTokenBytes) throw Finding("a hello token overran its field");
  Hello again;
  if (Hello::decode(hello.encode(), again) || again.rank != hello.rank ||
      again.size != hello.size || again.token != hello.token) {
    throw Finding("a decoded hello does not survive re-encoding");
  }
}

}  // namespace gradex::fuzz
