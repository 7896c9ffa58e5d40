// The fixed records that lead every frame and the accepting side's answer
// to a hello (transport/wire/frame.h). A record that decodes must describe
// itself exactly: re-encoding gives the same bytes (FrameHeader) or decodes
// to the same value (Ack, whose reserved bytes are not kept).
#include <algorithm>
#include <cstring>

#include "transport/wire/frame.h"
#include "fuzz/targets.h"

namespace gradex::fuzz {

namespace {

// Short inputs are zero-padded: every record has a fixed size on the wire.
template <typename Bytes>
Bytes fixed_record(Input bytes) {
  Bytes out{};
  std::memcpy(out.data(), bytes.data(), std::min(bytes.size(), out.size()));
  return out;
}

}  // namespace

void frame_header_input(Input bytes) {
  using wire::FrameHeader;
  const auto record = fixed_record<FrameHeader::Bytes>(bytes);
  // The receiver's limit on a data payload comes from its configuration;
  // let the input pick it so that both sides of the check are explored.
  std::uint64_t max_length = std::uint64_t{1} << 30;
  if (bytes.size() >= FrameHeader::kBytes + 8) {
    std::memcpy(&max_length, bytes.data() + FrameHeader::kBytes, 8);
  }
  FrameHeader header;
  if (FrameHeader::decode(record, max_length, header)) return;
  const std::uint64_t limit = header.kind == wire::FrameKind::data    ? max_length
                              : header.kind == wire::FrameKind::abort ? wire::kMaxReasonBytes
                                                                     : 0;
  if (header.length > limit) throw Finding("a frame longer than its limit was accepted");
  if (header.encode() != record) throw Finding("a decoded frame header re-encodes differently");
}

void ack_input(Input bytes) {
  using wire::Ack;
  Ack ack;
  if (Ack::decode(fixed_record<Ack::Bytes>(bytes), ack)) return;
  Ack again;
  if (Ack::decode(ack.encode(), again) || again.status != ack.status) {
    throw Finding("a decoded ack does not survive re-encoding");
  }
  if (wire::describe(ack.status) == "unknown") throw Finding("an accepted ack has no meaning");
}

}  // namespace gradex::fuzz
