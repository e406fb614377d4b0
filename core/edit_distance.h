// Edit distance for "did you mean" on unknown keys (run configs, Bridge overrides). Bounded: only
// near misses are ever suggested, so the distance is computed only up to `limit` — a key far
// longer or shorter than a candidate costs nothing (an unbounded distance made a file of long
// unknown keys quadratic per key; found by tests/fuzz). Header-only: the runtime compiles
// run_config.cpp on its own.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string_view>
#include <vector>

namespace wb::core {

/// Levenshtein distance of `a` and `b` when it is below `limit`, else `limit`.
inline size_t boundedEditDistance(std::string_view a, std::string_view b, size_t limit)
{
    const size_t lengthGap = a.size() > b.size() ? a.size() - b.size() : b.size() - a.size();
    if (lengthGap >= limit)
        return limit;  // the distance is at least the difference in length
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        size_t diag = row[0];
        row[0] = i;
        size_t rowMin = row[0];
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t up = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diag = up;
            rowMin = std::min(rowMin, row[j]);
        }
        if (rowMin >= limit)
            return limit;  // every later row is at least this row's minimum
    }
    return std::min(row[b.size()], limit);
}

}  // namespace wb::core
