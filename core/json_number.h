// Whole numbers out of JSON that users' files and other programs wrote. nlohmann's get<int>() on a
// float converts with a plain cast: a float beyond the integer's range (1e40 where a count
// belongs) is undefined behaviour, in practice INT64_MIN or garbage (found by tests/fuzz on a
// metrics line). Every integer read from a file goes through jsonWholeNumber: an integer, or a
// float without a fraction (some writers print 8.0), inside the range the field allows; anything
// else is "not a whole number", which the caller reports or treats as absent. Header-only: the
// runtime compiles the metrics schema on its own.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

namespace wb::core {

/// The whole number `v` holds when it is one in [lo, hi], else nullopt. Works for nlohmann::json
/// and nlohmann::ordered_json.
template <class J>
std::optional<int64_t> jsonWholeNumber(const J& v, int64_t lo = std::numeric_limits<int64_t>::min(),
                                       int64_t hi = std::numeric_limits<int64_t>::max())
{
    int64_t n = 0;
    if (v.is_number_unsigned()) {
        const uint64_t u = v.template get<uint64_t>();
        if (u > uint64_t(std::numeric_limits<int64_t>::max()))
            return std::nullopt;
        n = int64_t(u);
    } else if (v.is_number_integer()) {
        n = v.template get<int64_t>();
    } else if (v.is_number_float()) {
        const double d = v.template get<double>();
        // 2^63 is exactly representable; every double below it (and at or above -2^63) fits.
        if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != std::floor(d))
            return std::nullopt;
        n = static_cast<int64_t>(d);
    } else {
        return std::nullopt;
    }
    if (n < lo || n > hi)
        return std::nullopt;
    return n;
}

/// `v` as an int when it is a whole number in [lo, hi]; throws std::runtime_error naming what it
/// got otherwise (for parsers that report the field in their catch).
template <class J>
int jsonInt(const J& v, int lo = std::numeric_limits<int>::min(), int hi = std::numeric_limits<int>::max())
{
    if (auto n = jsonWholeNumber(v, lo, hi))
        return static_cast<int>(*n);
    throw std::runtime_error("expected a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                             "], got " + v.dump());
}

/// The int at `obj[key]` when it is a whole number in int's range, else `fallback` (absent, null,
/// another type, a fraction, out of range).
template <class J>
int jsonIntOr(const J& obj, const char* key, int fallback)
{
    if (!obj.is_object())
        return fallback;
    auto it = obj.find(key);
    if (it == obj.end())
        return fallback;
    return static_cast<int>(
        jsonWholeNumber(*it, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()).value_or(fallback));
}

}  // namespace wb::core
