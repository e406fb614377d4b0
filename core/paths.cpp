// Default locations of the store, the local runs root, the sample data and the planner catalogs,
// following the XDG base
// directory spec (XDG_DATA_HOME, XDG_CACHE_HOME, falling back to $HOME, then the passwd entry).
// Any thread (reads the environment only).
#include "core/paths.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace wb::core {

namespace {

std::string homeDir()
{
    if (const char* home = std::getenv("HOME"); home && *home)
        return home;
    // No HOME (a service, `env -i`): ask the passwd database rather than write into the cwd.
    std::vector<char> buffer(16384);
    passwd entry{};
    passwd* found = nullptr;
    if (getpwuid_r(getuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found &&
        found->pw_dir)
        return found->pw_dir;
    return ".";
}

// XDG says a relative value is invalid and must be ignored.
std::string xdgDir(const char* variable, const char* fallbackUnderHome)
{
    if (const char* value = std::getenv(variable); value && value[0] == '/')
        return value;
    return homeDir() + "/" + fallbackUnderHome;
}

}  // namespace

std::string defaultStorePath()
{
    return xdgDir("XDG_DATA_HOME", ".local/share") + "/moe-workbench/runs.sqlite";
}

std::string defaultRunsRoot()
{
    return xdgDir("XDG_CACHE_HOME", ".cache") + "/moe-workbench/runs";
}

std::string defaultSamplesDir()
{
    return xdgDir("XDG_DATA_HOME", ".local/share") + "/moe-workbench/samples";
}

std::string defaultUserCatalogDir()
{
    return xdgDir("XDG_DATA_HOME", ".local/share") + "/moe-workbench/catalog";
}

std::string builtinCatalogDir(const std::string& fallback)
{
    if (const char* env = std::getenv("MOE_WORKBENCH_CATALOG"); env && *env)
        return env;
    // An installed workbench: <prefix>/bin/<exe> beside <prefix>/share/moe-workbench/catalog.
    std::error_code ec;
    const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        const auto installed = self.parent_path().parent_path() / "share" / "moe-workbench" / "catalog";
        if (std::filesystem::exists(installed / "models.json", ec))
            return installed.string();
    }
    return fallback;
}

}  // namespace wb::core
