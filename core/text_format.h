// Two small helpers the planner's explanations and the config checks share: a number with fixed
// decimals for the texts that say why a prediction is what it is, and a membership test on the
// string lists configs carry (recompute modules, CUDA-graph scopes). Header-only: moe-train's
// config checks compile it too (cmake/WbCoreSchema.cmake). Any thread.
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace wb::core {

/// `v` with `digits` decimals ("%.*f").
inline std::string fmt(double v, int digits = 2)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

inline bool contains(const std::vector<std::string>& list, std::string_view item)
{
    return std::find(list.begin(), list.end(), item) != list.end();
}

}  // namespace wb::core
