// Typed errors with context, and enforce macros for invariants.
//
// Recoverable conditions (a wait that timed out, a peer that is gone, a bad
// configuration) are distinct exception types so callers can react; broken
// invariants throw InvariantError with the file, line and compared values.
// Library code never calls exit() or abort().
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace gradex {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A blocking wait ran past its deadline.
class TimeoutError : public Error {
 public:
  using Error::Error;
};

// A peer failed or left the group: the link is in an unknown state.
class PeerLostError : public Error {
 public:
  PeerLostError(int peer, const std::string& what) : Error(what), peer_(peer) {}
  int peer() const { return peer_; }

 private:
  int peer_;
};

// Bad user input: a scenario field, a flag. `field` is a JSON pointer or a
// flag name, so the message can say exactly what to fix.
class ConfigError : public Error {
 public:
  ConfigError(std::string field, std::string reason)
      : Error(field.empty() ? reason : field + ": " + reason),
        field_(std::move(field)),
        reason_(std::move(reason)) {}
  const std::string& field() const { return field_; }
  const std::string& reason() const { return reason_; }

 private:
  std::string field_;
  std::string reason_;
};

// The run was cancelled by a signal (SIGINT, SIGTERM): it stops and writes
// nothing; the command exits with 128 + signal, as a shell reports it.
class CancelledError : public Error {
 public:
  explicit CancelledError(int signal)
      : Error("cancelled by signal " + std::to_string(signal)), signal_(signal) {}
  int signal() const { return signal_; }

 private:
  int signal_;
};

// A broken invariant inside gradex (a bug, not bad input).
class InvariantError : public Error {
 public:
  using Error::Error;
};

namespace detail {
template <typename... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
[[noreturn]] void throw_invariant(const char* file, int line, const std::string& what);
}  // namespace detail

}  // namespace gradex

#define GRADEX_ENFORCE(cond, ...)                                                   \
  do {                                                                              \
    if (!(cond))                                                                    \
      ::gradex::detail::throw_invariant(                                            \
          __FILE__, __LINE__,                                                       \
          ::gradex::detail::concat("enforce failed: " #cond " ", ##__VA_ARGS__));   \
  } while (0)

#define GRADEX_ENFORCE_OP(a, op, b, ...)                                             \
  do {                                                                               \
    const auto& gradex_a_ = (a);                                                     \
    const auto& gradex_b_ = (b);                                                     \
    if (!(gradex_a_ op gradex_b_))                                                   \
      ::gradex::detail::throw_invariant(                                             \
          __FILE__, __LINE__,                                                        \
          ::gradex::detail::concat("enforce failed: " #a " " #op " " #b " (",        \
                                   gradex_a_, " vs ", gradex_b_, ") ", ##__VA_ARGS__)); \
  } while (0)

#define GRADEX_ENFORCE_EQ(a, b, ...) GRADEX_ENFORCE_OP(a, ==, b, ##__VA_ARGS__)
#define GRADEX_ENFORCE_LE(a, b, ...) GRADEX_ENFORCE_OP(a, <=, b, ##__VA_ARGS__)
#define GRADEX_ENFORCE_LT(a, b, ...) GRADEX_ENFORCE_OP(a, <, b, ##__VA_ARGS__)
