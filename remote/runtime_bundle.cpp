// The runtime source bundle (see runtime_bundle.h). Any thread.
//
// Why these choices:
// - The bundle is hashed over paths, modes and contents in sorted order: the same sources give the
//   same cache directory on every node and every workbench, whatever order the filesystem lists.
// - The header-only libraries travel with the sources instead of being asked of the node: GPU
//   nodes (NGC containers, minimal Ubuntu images, clusters without root) often lack Debian's -dev
//   packages, and installing them there needs root. They are taken from this machine at bundle
//   time (never copied into the repository) and always used on the node, even where it has its
//   own: one version per bundle hash, the one this workbench builds against, so a node's older
//   json.hpp can never make a build differ from the same hash elsewhere. They are part of the
//   hash, so upgrading them here gives a new build there.
// - What to bring is read from the sources' own #include lines, so a new stb header used by the
//   runtime is bundled without anyone editing a list (and a tree that includes none brings none).
#include "remote/runtime_bundle.h"

#include <openssl/evp.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace wb::remote {

using core::ErrorCode;
using core::makeError;
using core::Result;

namespace fs = std::filesystem;

namespace {

constexpr const char* kDepsPrefix = "deps/include/";

std::string readFile(const fs::path& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

std::string sha256Hex(const std::vector<RuntimeBundle::File>& files)
{
    EVP_MD_CTX* ctx = EVP_MD_CTX_new();
    EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr);
    for (const auto& f : files) {
        // Length-prefixed fields: no two different file lists hash the same stream.
        const std::string head = f.path + '\0' + std::to_string(f.mode) + '\0' + std::to_string(f.content.size()) + '\0';
        EVP_DigestUpdate(ctx, head.data(), head.size());
        EVP_DigestUpdate(ctx, f.content.data(), f.content.size());
    }
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    EVP_DigestFinal_ex(ctx, digest, &length);
    EVP_MD_CTX_free(ctx);
    std::string hex;
    char byte[3];
    for (unsigned int i = 0; i < length; ++i) {
        std::snprintf(byte, sizeof byte, "%02x", digest[i]);
        hex += byte;
    }
    return hex;
}

std::string mib(int64_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return text;
}

// The header-only libraries the bundle's sources include.
struct WantedDependencies {
    bool json = false;
    std::set<std::string> stb;  ///< "stb_image.h", ...
    bool empty() const { return !json && stb.empty(); }
};

WantedDependencies wantedDependencies(const std::set<std::string>& paths, const fs::path& root)
{
    static const std::regex include(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
    static const std::regex stbHeader(R"(stb[A-Za-z0-9_]*\.h)");
    static const std::set<std::string> sourceExtensions = {".h", ".hpp", ".cpp", ".cu", ".cuh"};
    WantedDependencies wanted;
    for (const auto& path : paths) {
        if ((path.rfind("runtime/", 0) != 0 && path.rfind("core/", 0) != 0) ||
            sourceExtensions.count(fs::path(path).extension().string()) == 0)
            continue;
        std::ifstream in(root / path);
        for (std::string line; std::getline(in, line);) {
            std::smatch m;
            if (line.find("include") == std::string::npos || !std::regex_search(line, m, include))
                continue;
            const std::string name = m.str(1);
            if (name.rfind("nlohmann/", 0) == 0)
                wanted.json = true;
            else if (std::regex_match(name, stbHeader))
                wanted.stb.insert(name);
        }
    }
    return wanted;
}

RuntimeBundle::File headerFile(const std::string& bundlePath, const fs::path& from, RuntimeBundle::Dependency& dep)
{
    RuntimeBundle::File file;
    file.path = bundlePath;
    file.content = readFile(from);
    dep.files += 1;
    dep.bytes += static_cast<int64_t>(file.content.size());
    return file;
}

// Adds the wanted libraries from the first include root that has each; returns what is missing.
std::vector<std::string> addDependencies(const WantedDependencies& wanted, const std::vector<std::string>& dirs,
                                         RuntimeBundle& bundle)
{
    std::error_code ec;
    std::vector<std::string> missing;
    if (wanted.json) {
        auto found = std::find_if(dirs.begin(), dirs.end(), [&](const std::string& d) {
            return fs::is_regular_file(fs::path(d) / "nlohmann" / "json.hpp", ec);
        });
        if (found == dirs.end()) {
            missing.push_back("nlohmann/json.hpp");
        } else {
            // The whole folder: Debian's json.hpp is the multi-header form that includes detail/**.
            const fs::path from = fs::path(*found) / "nlohmann";
            RuntimeBundle::Dependency dep{"nlohmann/json", from.string()};
            std::set<fs::path> headers;  // sorted, so the listing order never matters
            for (auto it = fs::recursive_directory_iterator(from, ec); !ec && it != fs::recursive_directory_iterator();
                 it.increment(ec))
                if (it->is_regular_file(ec))
                    headers.insert(it->path());
            for (const auto& header : headers)
                bundle.files.push_back(headerFile(
                    std::string(kDepsPrefix) + "nlohmann/" + fs::relative(header, from, ec).generic_string(), header, dep));
            bundle.dependencies.push_back(dep);
        }
    }
    if (!wanted.stb.empty()) {
        // All stb headers from one folder (Debian's /usr/include/stb, or a root holding them flat).
        std::string from;
        for (const auto& dir : dirs) {
            for (const fs::path& candidate : {fs::path(dir) / "stb", fs::path(dir)}) {
                const bool complete = std::all_of(wanted.stb.begin(), wanted.stb.end(), [&](const std::string& name) {
                    return fs::is_regular_file(candidate / name, ec);
                });
                if (complete) {
                    from = candidate.string();
                    break;
                }
            }
            if (!from.empty())
                break;
        }
        if (from.empty()) {
            std::string names;
            for (const auto& name : wanted.stb)
                names += (names.empty() ? "" : ", ") + name;
            missing.push_back(names);
        } else {
            RuntimeBundle::Dependency dep{"stb", from};
            for (const auto& name : wanted.stb)
                bundle.files.push_back(headerFile(std::string(kDepsPrefix) + "stb/" + name, fs::path(from) / name, dep));
            bundle.dependencies.push_back(dep);
        }
    }
    return missing;
}

}  // namespace

std::string RuntimeBundle::describeDependencies() const
{
    std::string out;
    for (const auto& dep : dependencies)
        out += (out.empty() ? "" : ", ") + dep.name + " from " + dep.from + " (" + std::to_string(dep.files) +
               (dep.files == 1 ? " file, " : " files, ") + mib(dep.bytes) + " MiB)";
    return out.empty() ? "none" : out;
}

std::vector<std::string> defaultDepsIncludeDirs()
{
    std::vector<std::string> dirs;
    auto add = [&](const std::string& dir) {
        if (!dir.empty() && std::find(dirs.begin(), dirs.end(), dir) == dirs.end())
            dirs.push_back(dir);
    };
    if (const char* env = std::getenv("MOE_WORKBENCH_DEPS_INCLUDE")) {
        std::istringstream list(env);
        for (std::string dir; std::getline(list, dir, ':');)
            add(dir);
    }
#ifdef WB_BUILT_JSON_INCLUDE_DIR
    add(WB_BUILT_JSON_INCLUDE_DIR);
#endif
#ifdef WB_BUILT_STB_INCLUDE_DIR
    add(WB_BUILT_STB_INCLUDE_DIR);
#endif
    add("/usr/include");
    add("/usr/local/include");
    if (const char* home = std::getenv("HOME"); home && *home)
        add(std::string(home) + "/.local/include");
    add("/opt/homebrew/include");
    return dirs;
}

Result<RuntimeBundle> collectRuntimeBundle(const std::string& root)
{
    return collectRuntimeBundle(root, defaultDepsIncludeDirs());
}

Result<RuntimeBundle> collectRuntimeBundle(const std::string& rootText, const std::vector<std::string>& depsIncludeDirs)
{
    const fs::path root(rootText);
    const fs::path runtimeCmake = root / "runtime" / "CMakeLists.txt";
    std::error_code ec;
    if (rootText.empty() || !fs::is_regular_file(runtimeCmake, ec))
        return makeError(ErrorCode::NotFound,
                         "the runtime sources are not there (no runtime/CMakeLists.txt); reinstall the workbench "
                         "(it installs them to share/moe-workbench/runtime-src) or set moe_train to a path "
                         "with `hosts add NAME --remote-moe-train PATH`",
                         rootText.empty() ? std::string("(no source directory)") : rootText);

    std::set<std::string> paths;
    auto addTree = [&](const fs::path& dir, auto&& keep) {
        for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
             it.increment(ec)) {
            const std::string name = it->path().filename().string();
            if (!name.empty() && name.front() == '.') {  // .gpu-deps, editor files, build dirs of tools
                if (it->is_directory(ec))
                    it.disable_recursion_pending();
                continue;
            }
            if (it->is_regular_file(ec) && keep(it->path()))
                paths.insert(fs::relative(it->path(), root, ec).generic_string());
        }
    };
    addTree(root / "runtime", [](const fs::path&) { return true; });
    addTree(root / "cmake", [](const fs::path& p) { return p.extension() == ".cmake"; });
    for (const auto& entry : fs::directory_iterator(root / "core", ec))
        if (entry.is_regular_file(ec) && entry.path().extension() == ".h")
            paths.insert("core/" + entry.path().filename().string());
    // The core sources the runtime compiles itself: the core/ lines of cmake/WbCoreSchema.cmake,
    // the one list runtime/CMakeLists.txt builds them from (a tree without it compiles none).
    const fs::path schemaList = root / "cmake" / "WbCoreSchema.cmake";
    const std::string listText = fs::is_regular_file(schemaList, ec) ? readFile(schemaList) : std::string();
    static const std::regex coreSource(R"((?:^|\s)(core/[A-Za-z0-9_/]+\.(cpp|h))(?=\s|\)|$))");
    for (auto it = std::sregex_iterator(listText.begin(), listText.end(), coreSource); it != std::sregex_iterator(); ++it)
        paths.insert(it->str(1));

    RuntimeBundle bundle;
    for (const auto& path : paths) {
        const fs::path full = root / path;
        if (!fs::is_regular_file(full, ec))
            return makeError(ErrorCode::NotFound, "the runtime sources name a file that is not there (cmake/WbCoreSchema.cmake)",
                             full.string());
        RuntimeBundle::File file;
        file.path = path;
        file.content = readFile(full);
        const auto perms = fs::status(full, ec).permissions();
        file.mode = (perms & fs::perms::owner_exec) != fs::perms::none ? 0755 : 0644;
        bundle.files.push_back(std::move(file));
    }

    const auto missing = addDependencies(wantedDependencies(paths, root), depsIncludeDirs, bundle);
    if (!missing.empty()) {
        std::string what, looked;
        for (const auto& m : missing)
            what += (what.empty() ? "" : " and ") + m;
        for (const auto& dir : depsIncludeDirs)
            looked += (looked.empty() ? "" : ", ") + dir;
        return makeError(ErrorCode::NotFound,
                         "moe-train includes " + what + ", which the workbench brings to the node in the runtime "
                         "bundle from THIS machine, but it is not installed here: install it here (apt-get install "
                         "nlohmann-json3-dev libstb-dev), or set MOE_WORKBENCH_DEPS_INCLUDE to a folder holding "
                         "nlohmann/json.hpp and stb/stb_image.h",
                         "looked in: " + (looked.empty() ? std::string("(no folders)") : looked));
    }
    std::sort(bundle.files.begin(), bundle.files.end(),
              [](const RuntimeBundle::File& a, const RuntimeBundle::File& b) { return a.path < b.path; });
    for (const auto& file : bundle.files)
        bundle.totalBytes += static_cast<int64_t>(file.content.size());
    bundle.hash = sha256Hex(bundle.files);
    return bundle;
}

std::string installedRuntimeSourceDir(const std::string& binDir)
{
    return (fs::path(binDir).parent_path() / "share" / "moe-workbench" / "runtime-src").string();
}

}  // namespace wb::remote
