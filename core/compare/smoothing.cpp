#include "core/compare/smoothing.h"

#include <algorithm>
#include <cmath>

namespace wb::core {

std::vector<double> emaDebiased(const std::vector<double>& values, double weight)
{
    const double w = std::clamp(weight, 0.0, 0.999999);
    std::vector<double> out;
    out.reserve(values.size());
    double ema = 0.0;
    double wPowT = 1.0;  // w^t, t = finite values seen
    for (double y : values) {
        if (!std::isfinite(y)) {
            out.push_back(y);
            continue;
        }
        ema = w * ema + (1.0 - w) * y;
        wPowT *= w;
        out.push_back(ema / (1.0 - wPowT));
    }
    return out;
}

}  // namespace wb::core
