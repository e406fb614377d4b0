// moe-workbench-cli: the workbench's jobs without the GUI (launch, watch, runs, show, cancel).
// main() only installs the log sink; the commands live in app/cli/*_command.cpp.
#include "app/cli/cli.h"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

int main(int argc, char** argv)
{
    // Diagnostics go to stderr; results go to stdout, so `id=$(moe-workbench-cli launch ...)` works.
    auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
    auto logger = std::make_shared<spdlog::logger>("cli", sink);
    logger->set_pattern("[%n] %l: %v");
    logger->set_level(spdlog::level::warn);
    spdlog::set_default_logger(logger);
    return wb::app::runCli(argc, argv);
}
