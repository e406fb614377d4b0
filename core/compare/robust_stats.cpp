#include "core/compare/robust_stats.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace wb::core {

double percentileSorted(const std::vector<double>& sorted, double q)
{
    assert(!sorted.empty());
    const double rank = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
    const auto lo = static_cast<size_t>(std::floor(rank));
    const size_t hi = std::min(lo + 1, sorted.size() - 1);
    const double frac = rank - static_cast<double>(lo);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

RobustStats robustStats(std::vector<double> values)
{
    values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return !std::isfinite(v); }),
                 values.end());
    RobustStats s;
    s.count = values.size();
    if (values.empty())
        return s;
    // Selection, not a sort: O(n) where sorting 100k-step series of 20 runs for a dozen figures
    // took most of a second. The median partitions the values, so p10 is selected in the lower
    // part only and p90 in the upper part. Same result as percentileSorted.
    const auto first = values.begin();
    auto percentile = [&values, first](double q, size_t from, size_t to) {  // rank's part [from, to)
        const double rank = q * static_cast<double>(values.size() - 1);
        const auto lo = static_cast<size_t>(std::floor(rank));
        const auto nth = first + static_cast<std::ptrdiff_t>(lo);
        std::nth_element(first + static_cast<std::ptrdiff_t>(from), nth, first + static_cast<std::ptrdiff_t>(to));
        const double low = *nth;
        if (lo + 1 >= values.size())
            return low;
        // The next rank up: in this part, or (when lo ends the part) the least of everything above.
        const auto end = lo + 1 < to ? first + static_cast<std::ptrdiff_t>(to) : values.end();
        const double high = *std::min_element(nth + 1, end);
        return low + (high - low) * (rank - static_cast<double>(lo));
    };
    const size_t n = values.size();
    const auto [minIt, maxIt] = std::minmax_element(values.begin(), values.end());
    s.min = *minIt;
    s.max = *maxIt;
    s.median = percentile(0.5, 0, n);
    const auto mid = static_cast<size_t>(std::floor(0.5 * static_cast<double>(n - 1)));
    s.p10 = percentile(0.1, 0, mid + 1);
    s.p90 = percentile(0.9, mid, n);
    s.spread = s.median != 0.0 ? (s.p90 - s.p10) / std::abs(s.median) : 0.0;
    return s;
}

}  // namespace wb::core
