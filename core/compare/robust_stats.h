// Robust statistics for run comparison: median and the 10th/90th percentiles of a series, which a
// few warm-up outliers or one checkpoint stall cannot move the way they move a mean.
// Pure functions; any thread.
#pragma once

#include <cstddef>
#include <vector>

namespace wb::core {

struct RobustStats {
    size_t count = 0;     ///< finite values used (NaN/inf are skipped)
    double median = 0.0;
    double p10 = 0.0;
    double p90 = 0.0;
    double min = 0.0;
    double max = 0.0;
    /// (p90 - p10) / |median|: the relative width of the central 80 %; 0 when median is 0.
    double spread = 0.0;
    bool valid() const { return count > 0; }
};

/// Percentile `q` in [0, 1] of sorted finite values, linear interpolation between closest ranks
/// (NumPy's default). `sorted` must be non-empty and ascending.
double percentileSorted(const std::vector<double>& sorted, double q);

/// Stats over the finite values of `values` (taken by value: it is sorted in place).
RobustStats robustStats(std::vector<double> values);

}  // namespace wb::core
