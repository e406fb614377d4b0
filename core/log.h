// Named loggers for the libraries. Libraries never create sinks: wb::log::get() returns a logger
// that writes to whatever sinks the executable's main() installed on the default logger (none
// installed = spdlog's default stderr sink). Any thread.
#pragma once

#include <memory>
#include <string>

#include <spdlog/logger.h>

namespace wb::log {

/// The logger called `name` ("core", "remote", "ui", ...), created on first use with the default
/// logger's sinks and level.
std::shared_ptr<spdlog::logger> get(const std::string& name);

}  // namespace wb::log
