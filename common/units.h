// Parsing quantities written for people: "16MiB", "4 KiB", "25GB/s",
// "200Gbps", "50us". Decimal prefixes are powers of 1000, binary ones
// (KiB, MiB, GiB) powers of 1024; bits ("b", "bps") are an eighth of a byte.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace gradex {

// Throws ConfigError naming `field` when the text is not a size.
std::size_t parse_bytes(std::string_view text, const std::string& field);
// Bytes per second from "25GB/s", "450 GB/s", "1Gbps", "100MiB/s".
double parse_rate(std::string_view text, const std::string& field);
// Seconds from "50us", "1.5ms", "2s", "0".
double parse_duration(std::string_view text, const std::string& field);

// "16 MiB", "4 KiB", "1000 B": for tables and file names.
std::string format_bytes(double bytes);
// "25 GB/s", "125 MB/s".
std::string format_rate(double bytes_per_second);

}  // namespace gradex
