#include "core/log.h"

#include <mutex>

#include <spdlog/spdlog.h>

namespace wb::log {

std::shared_ptr<spdlog::logger> get(const std::string& name)
{
    // spdlog's registry is thread-safe, but get-then-register is not atomic: guard the pair.
    static std::mutex mutex;
    std::lock_guard lock(mutex);
    if (auto existing = spdlog::get(name))
        return existing;
    auto fallback = spdlog::default_logger();
    auto logger = std::make_shared<spdlog::logger>(name, fallback->sinks().begin(),
                                                   fallback->sinks().end());
    logger->set_level(fallback->level());
    spdlog::register_logger(logger);
    return logger;
}

}  // namespace wb::log
