// collectRuntimeBundle (no network): the real sources of this tree, stable and complete, with
// the header-only libraries the runtime includes copied from this machine into deps/include;
// the hash follows every byte of those headers; a machine without them is told what to install.
#include "remote/runtime_bundle.h"

#include <QTemporaryDir>
#include <QtTest>

#include <filesystem>
#include <fstream>

using namespace wb;
namespace fs = std::filesystem;

namespace {

bool has(const remote::RuntimeBundle& bundle, const std::string& path)
{
    return std::any_of(bundle.files.begin(), bundle.files.end(), [&](const auto& f) { return f.path == path; });
}

const remote::RuntimeBundle::File* find(const remote::RuntimeBundle& bundle, const std::string& path)
{
    for (const auto& f : bundle.files)
        if (f.path == path)
            return &f;
    return nullptr;
}

void append(const fs::path& file, const std::string& text)
{
    std::ofstream out(file, std::ios::app | std::ios::binary);
    out << text;
}

}  // namespace

class TestRuntimeBundle : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_scratch;
    std::string scratch(const char* name) const { return m_scratch.filePath(QString::fromUtf8(name)).toStdString(); }

    // A private include root with copies of the headers the real bundle took from this machine.
    std::string copyOfThisMachinesHeaders(const char* name, bool flatStb)
    {
        auto bundle = remote::collectRuntimeBundle(WB_SOURCE_DIR);
        if (!bundle)
            qFatal("%s", bundle.error().toString().c_str());
        const fs::path root = scratch(name);
        for (const auto& dep : bundle->dependencies) {
            const fs::path to = dep.name == "stb" ? (flatStb ? root : root / "stb") : root / "nlohmann";
            fs::create_directories(to);
            if (dep.name == "stb") {
                for (const auto& f : bundle->files)
                    if (f.path.rfind("deps/include/stb/", 0) == 0)
                        fs::copy_file(fs::path(dep.from) / fs::path(f.path).filename(), to / fs::path(f.path).filename());
            } else {
                fs::copy(dep.from, to, fs::copy_options::recursive);
            }
        }
        return root.string();
    }

private slots:
    void bundleIsStableAndComplete()
    {
        auto a = remote::collectRuntimeBundle(WB_SOURCE_DIR);
        QVERIFY2(a, a ? "" : a.error().toString().c_str());
        auto b = remote::collectRuntimeBundle(WB_SOURCE_DIR);
        QVERIFY(b);
        QCOMPARE(a->hash, b->hash);
        QCOMPARE(a->hash.size(), size_t(64));
        QVERIFY(has(*a, "runtime/CMakeLists.txt"));
        QVERIFY(has(*a, "runtime/main.cpp"));
        QVERIFY(has(*a, "core/run_config.cpp"));  // named by cmake/WbCoreSchema.cmake
        QVERIFY(has(*a, "cmake/WbCoreSchema.cmake"));  // which runtime/CMakeLists.txt includes
        QVERIFY(has(*a, "core/result.h"));
        QVERIFY(has(*a, "cmake/WbCompileOptions.cmake"));
        QVERIFY(!has(*a, "core/run_store.cpp"));  // the runtime never compiles the store
        QVERIFY(std::is_sorted(a->files.begin(), a->files.end(),
                               [](const auto& x, const auto& y) { return x.path < y.path; }));
        int64_t total = 0;
        for (const auto& f : a->files)
            total += static_cast<int64_t>(f.content.size());
        QCOMPARE(a->totalBytes, total);
        QCOMPARE(remote::collectRuntimeBundle(scratch("nowhere")).error().code, core::ErrorCode::NotFound);
    }

    // The headers runtime/ includes travel with it, and only those.
    void bundleCarriesTheHeaderOnlyLibraries()
    {
        auto bundle = remote::collectRuntimeBundle(WB_SOURCE_DIR);
        QVERIFY2(bundle, bundle ? "" : bundle.error().toString().c_str());
        QVERIFY(has(*bundle, "deps/include/nlohmann/json.hpp"));
        QVERIFY(has(*bundle, "deps/include/stb/stb_image.h"));        // runtime/data/image_io.cpp
        QVERIFY(has(*bundle, "deps/include/stb/stb_image_write.h"));
        QVERIFY(!has(*bundle, "deps/include/stb/stb_truetype.h"));    // installed here, never included
        QCOMPARE(bundle->dependencies.size(), size_t(2));
        QCOMPARE(bundle->dependencies[0].name, std::string("nlohmann/json"));
        QCOMPARE(bundle->dependencies[1].name, std::string("stb"));
        QCOMPARE(bundle->dependencies[1].files, 2);
        // Debian's json.hpp is the multi-header form: what it includes comes along.
        const auto* json = find(*bundle, "deps/include/nlohmann/json.hpp");
        QVERIFY(json);
        if (json->content.find("#include <nlohmann/detail/") != std::string::npos)
            QVERIFY(std::any_of(bundle->files.begin(), bundle->files.end(), [](const auto& f) {
                return f.path.rfind("deps/include/nlohmann/detail/", 0) == 0;
            }));
        // Byte for byte what this machine has.
        const auto& stb = bundle->dependencies[1];
        std::ifstream in(fs::path(stb.from) / "stb_image.h", std::ios::binary);
        const std::string onDisk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        QCOMPARE(find(*bundle, "deps/include/stb/stb_image.h")->content, onDisk);
        QVERIFY2(bundle->describeDependencies().find("nlohmann/json from ") == 0, bundle->describeDependencies().c_str());
    }

    // Where the headers come from does not matter, their bytes do: a change of either library
    // changes the hash (so the node builds again).
    void hashFollowsTheHeaders()
    {
        const auto real = remote::collectRuntimeBundle(WB_SOURCE_DIR);
        QVERIFY(real);
        const std::string copy = copyOfThisMachinesHeaders("include-copy", /*flatStb=*/false);
        auto same = remote::collectRuntimeBundle(WB_SOURCE_DIR, {copy});
        QVERIFY2(same, same ? "" : same.error().toString().c_str());
        QCOMPARE(same->dependencies[0].from, (fs::path(copy) / "nlohmann").string());
        QCOMPARE(same->hash, real->hash);

        append(fs::path(copy) / "nlohmann" / "json.hpp", "\n// a newer json.hpp\n");
        auto newerJson = remote::collectRuntimeBundle(WB_SOURCE_DIR, {copy});
        QVERIFY(newerJson);
        QVERIFY(newerJson->hash != real->hash);
        QVERIFY(find(*newerJson, "deps/include/nlohmann/json.hpp")->content.find("a newer json.hpp") != std::string::npos);

        append(fs::path(copy) / "stb" / "stb_image_write.h", "\n// a newer stb\n");
        auto newerStb = remote::collectRuntimeBundle(WB_SOURCE_DIR, {copy});
        QVERIFY(newerStb);
        QVERIFY(newerStb->hash != newerJson->hash && newerStb->hash != real->hash);
    }

    // stb headers straight in an include root (no stb/ folder) are found too; the first root that
    // has a library wins.
    void flatStbAndSearchOrder()
    {
        const std::string flat = copyOfThisMachinesHeaders("include-flat", /*flatStb=*/true);
        auto bundle = remote::collectRuntimeBundle(WB_SOURCE_DIR, {scratch("empty-root"), flat, "/usr/include"});
        QVERIFY2(bundle, bundle ? "" : bundle.error().toString().c_str());
        QVERIFY(has(*bundle, "deps/include/stb/stb_image.h"));
        QCOMPARE(bundle->dependencies[0].from, (fs::path(flat) / "nlohmann").string());
        QCOMPARE(bundle->dependencies[1].from, flat);
    }

    // This machine lacks them: refused at bundle time, naming what and the packages to install.
    void missingHeadersNameTheFix()
    {
        fs::create_directories(scratch("no-headers"));
        auto bundle = remote::collectRuntimeBundle(WB_SOURCE_DIR, {scratch("no-headers")});
        QVERIFY(!bundle);
        QCOMPARE(bundle.error().code, core::ErrorCode::NotFound);
        const std::string& message = bundle.error().message;
        for (const char* part : {"nlohmann/json.hpp", "stb_image.h, stb_image_write.h", "THIS machine",
                                 "apt-get install nlohmann-json3-dev libstb-dev", "MOE_WORKBENCH_DEPS_INCLUDE"})
            QVERIFY2(message.find(part) != std::string::npos, (std::string(part) + " in: " + message).c_str());
        QVERIFY2(bundle.error().context.find(scratch("no-headers")) != std::string::npos, bundle.error().context.c_str());
    }

    // A tree whose sources include neither library brings neither (and needs none here).
    void treeWithoutIncludesBringsNone()
    {
        const std::string tree = scratch("plain-tree");
        fs::create_directories(tree + "/runtime");
        std::ofstream(tree + "/runtime/CMakeLists.txt") << "project(plain CXX)\nadd_executable(moe-train main.cpp)\n";
        std::ofstream(tree + "/runtime/main.cpp") << "#include <vector>\n// not an #include <nlohmann/json.hpp>\nint main() {}\n";
        auto bundle = remote::collectRuntimeBundle(tree, {});
        QVERIFY2(bundle, bundle ? "" : bundle.error().toString().c_str());
        QCOMPARE(bundle->files.size(), size_t(2));
        QVERIFY(bundle->dependencies.empty());
        QCOMPARE(bundle->describeDependencies(), std::string("none"));
    }

    void environmentFolderComesFirst()
    {
        qputenv("MOE_WORKBENCH_DEPS_INCLUDE", "/opt/first:/opt/second");
        const auto dirs = remote::defaultDepsIncludeDirs();
        qunsetenv("MOE_WORKBENCH_DEPS_INCLUDE");
        QVERIFY(dirs.size() >= 3);
        QCOMPARE(dirs[0], std::string("/opt/first"));
        QCOMPARE(dirs[1], std::string("/opt/second"));
        QVERIFY(std::find(dirs.begin(), dirs.end(), "/usr/include") != dirs.end());
    }
};

QTEST_GUILESS_MAIN(TestRuntimeBundle)
#include "test_runtime_bundle.moc"
