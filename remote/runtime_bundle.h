// The runtime source bundle: everything `cmake -S runtime` needs on a node, read from a
// workbench source tree or install, plus the header-only libraries the runtime includes
// (nlohmann/json, the stb headers), taken from this machine's copies so a node needs no header
// packages of its own. Hashed over paths, modes and contents: the hash names the node's build
// cache directory, so any change of a source or of a bundled header gives a new build.
//
//   runtime/**, cmake/*.cmake, core/*.h, core/<the .cpp runtime/CMakeLists.txt names>
//   deps/include/nlohmann/**          when runtime/ or core/ includes <nlohmann/...>
//   deps/include/stb/<stb*.h>         each stb header runtime/ or core/ includes
//
// Pure functions over the local filesystem; any thread.
#pragma once

#include "core/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace wb::remote {

struct RuntimeBundle {
    struct File {
        std::string path;     ///< relative, '/'-separated: "runtime/main.cpp"
        std::string content;
        int mode = 0644;
    };
    /// A header-only library the bundle carries, and where on this machine it came from.
    struct Dependency {
        std::string name;     ///< "nlohmann/json", "stb"
        std::string from;     ///< the folder it was copied from ("/usr/include/nlohmann")
        int files = 0;
        int64_t bytes = 0;
    };
    std::vector<File> files;  ///< sorted by path
    std::vector<Dependency> dependencies;
    std::string hash;         ///< SHA-256 (hex) over every path, mode and content
    int64_t totalBytes = 0;

    std::string shortHash() const { return hash.substr(0, 12); }
    /// "nlohmann/json from /usr/include/nlohmann (44 files, 1.0 MiB), stb from ..." or "none".
    std::string describeDependencies() const;
};

/// Where the bundle's header-only libraries are looked for on this machine, in order: the folders
/// in MOE_WORKBENCH_DEPS_INCLUDE (':'-separated), the ones this workbench was built against,
/// /usr/include, /usr/local/include, ~/.local/include, /opt/homebrew/include. Each is an include
/// root: it holds nlohmann/json.hpp and stb/stb_image.h (or stb_image.h directly).
std::vector<std::string> defaultDepsIncludeDirs();

/// Collects the bundle from a workbench source tree or its install
/// (share/moe-workbench/runtime-src), with the header-only libraries from the first of
/// `depsIncludeDirs` that has each one. NotFound when `root` has no runtime/CMakeLists.txt, or
/// when a library the runtime includes is in none of `depsIncludeDirs` (the message names the
/// packages to install on this machine).
core::Result<RuntimeBundle> collectRuntimeBundle(const std::string& root,
                                                 const std::vector<std::string>& depsIncludeDirs);
/// The same with defaultDepsIncludeDirs().
core::Result<RuntimeBundle> collectRuntimeBundle(const std::string& root);

/// Where the workbench keeps the bundle next to an installed binary directory:
/// <bindir>/../share/moe-workbench/runtime-src.
std::string installedRuntimeSourceDir(const std::string& binDir);

}  // namespace wb::remote
