#include "runtime/train/kernel_profile.h"

#include "runtime/model/torch_compat.h"

#include <torch/torch.h>

#if WB_WITH_CUDA && WB_TORCH_AT_LEAST(2, 0)
#define WB_HAVE_KINETO_PROFILE 1
#include <torch/csrc/autograd/profiler_kineto.h>
#else
#define WB_HAVE_KINETO_PROFILE 0
#endif

#include <cstdlib>
#include <stdexcept>

namespace wb::rt {

std::optional<KernelProfile::Window> KernelProfile::windowFromEnvironment()
{
    const char* value = std::getenv("WB_PROFILE_STEPS");
    if (!value || !*value)
        return std::nullopt;
    const std::string text(value);
    const auto colon = text.find(':');
    Window window;
    try {
        size_t used = 0;
        window.first = std::stoll(text.substr(0, colon), &used);
        if (used != (colon == std::string::npos ? text.size() : colon))
            throw std::invalid_argument("trailing characters");
        window.last = window.first;
        if (colon != std::string::npos) {
            window.last = std::stoll(text.substr(colon + 1), &used);
            if (used != text.size() - colon - 1)
                throw std::invalid_argument("trailing characters");
        }
    } catch (const std::exception&) {
        throw std::invalid_argument("WB_PROFILE_STEPS='" + text +
                                    "' is not a step window: use A:B (first and last step, e.g. 5:6) or one step N");
    }
    if (window.first < 1 || window.last < window.first)
        throw std::invalid_argument("WB_PROFILE_STEPS='" + text + "': steps start at 1 and the last is >= the first");
    return window;
}

bool KernelProfile::available()
{
    return WB_HAVE_KINETO_PROFILE != 0;
}

KernelProfile::KernelProfile(Window window, std::string tracePath)
    : m_window(window), m_tracePath(std::move(tracePath))
{
}

KernelProfile::~KernelProfile()
{
#if WB_HAVE_KINETO_PROFILE
    if (m_running)
        torch::autograd::profiler::disableProfiler();
#endif
}

void KernelProfile::beforeStep(int64_t step)
{
    if (step != m_window.first || m_running)
        return;
#if WB_HAVE_KINETO_PROFILE
    namespace prof = torch::profiler::impl;
    const prof::ProfilerConfig config(prof::ProfilerState::KINETO, /*report_input_shapes=*/true,
                                      /*profile_memory=*/false, /*with_stack=*/false);
    const std::set<prof::ActivityType> activities{prof::ActivityType::CPU, prof::ActivityType::CUDA};
    torch::autograd::profiler::prepareProfiler(config, activities);
    torch::autograd::profiler::enableProfiler(config, activities);
    m_running = true;
#endif
}

std::optional<std::string> KernelProfile::afterStep(int64_t step)
{
    if (!m_running || step != m_window.last)
        return std::nullopt;
#if WB_HAVE_KINETO_PROFILE
    m_running = false;
    auto result = torch::autograd::profiler::disableProfiler();
    result->save(m_tracePath);
    return m_tracePath;
#else
    return std::nullopt;
#endif
}

}  // namespace wb::rt
