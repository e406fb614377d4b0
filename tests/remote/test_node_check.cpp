// parseNodeCheck: what the node-check script's key=value lines mean for a user (no network).
// The script itself runs against a real sshd in test_ssh_provision; h200_node_check.out is its
// output on a real H200 node.
#include "remote/provision.h"

#include <QtTest>

#include <fstream>

using namespace wb;

namespace {

// A complete CPU node as the script prints it (Debian with libtorch-dev).
const std::string kGoodNode = "cache_dir=/home/u/.cache/moe-workbench/build\n"
                              "cpus=16\n"
                              "sys_torch=1.13.0 /usr/lib/x86_64-linux-gnu/cmake/Torch\n"
                              "cmake=cmake version 3.25.1\n"
                              "cxx=c++ (Debian 12.2.0-14) 12.2.0\n"
                              "cxx20=yes\n"
                              "generator=ninja\n"
                              "generator=make\n"
                              "nlohmann=/usr/include\n"
                              "stb=/usr/include\n"
                              "disk_kib=104857600\n";

bool mentions(const remote::NodeReport& r, const std::string& needle)
{
    return r.describe().find(needle) != std::string::npos;
}

std::string without(std::string text, const std::string& line)
{
    text.erase(text.find(line), line.size());
    return text;
}

}  // namespace

class TestNodeCheck : public QObject {
    Q_OBJECT

private slots:
    void completeCpuNode()
    {
        const auto r = remote::parseNodeCheck(kGoodNode);
        QVERIFY2(r.ok(), r.describe().c_str());
        QVERIFY(r.gpus.empty());
        QCOMPARE(r.ranksPerNode(), 1);
        QCOMPARE(r.cpus, 16);
        QCOMPARE(r.torchVersion, std::string("1.13.0"));
        QVERIFY(r.torchPrefix.empty());  // cmake finds a system LibTorch alone
        QCOMPARE(r.cmakeVersion, std::string("3.25.1"));
        QCOMPARE(r.freeDiskMiB, int64_t(102400));
        QVERIFY(mentions(r, "CPU-only node"));
    }

    void gpuNodeWithPythonTorch()
    {
        const std::string out = kGoodNode +
                                "gpu=NVIDIA H200, 143771 MiB\ngpu=NVIDIA H200, 143771 MiB\n"
                                "py_torch=/opt/my env/lib/python3.12/site-packages/torch/share/cmake 2.11.0+cu130 13.0\n"
                                "nccl_dir=/opt/my env/lib/python3.12/site-packages/nvidia/nccl\n";
        const auto r = remote::parseNodeCheck(out);
        QVERIFY2(r.ok(), r.describe().c_str());
        QCOMPARE(r.ranksPerNode(), 2);
        QCOMPARE(r.gpus.front().name, std::string("NVIDIA H200"));
        QCOMPARE(r.gpus.front().memoryMiB, int64_t(143771));
        // python3's torch wins over the system one, and a prefix with a space survives.
        QCOMPARE(r.torchPrefix, std::string("/opt/my env/lib/python3.12/site-packages/torch/share/cmake"));
        QCOMPARE(r.torchVersion, std::string("2.11.0+cu130"));
        QCOMPARE(r.torchCuda, std::string("13.0"));
        QCOMPARE(r.ncclDir, std::string("/opt/my env/lib/python3.12/site-packages/nvidia/nccl"));
        QVERIFY(!mentions(r, "CPU-only"));
    }

    void gpusWithCpuTorchIsANote()
    {
        const auto r = remote::parseNodeCheck(kGoodNode + "gpu=NVIDIA B200, 183359 MiB\n"
                                                          "py_torch=/x/torch/share/cmake 2.5.0 None\n");
        QVERIFY(r.ok());
        QVERIFY(r.torchCuda.empty());
        QVERIFY2(mentions(r, "is CPU-only: moe-train will train on the CPU"), r.describe().c_str());
    }

    void missingPiecesNameTheFix_data()
    {
        QTest::addColumn<QString>("removed");
        QTest::addColumn<QString>("added");
        QTest::addColumn<QString>("expected");
        QTest::newRow("no cmake") << "cmake=cmake version 3.25.1\n" << "" << "cmake is not on PATH: install CMake 3.25";
        QTest::newRow("old cmake") << "cmake=cmake version 3.25.1\n" << "cmake=cmake version 3.18.4\n"
                                   << "cmake 3.18.4 is too old";
        QTest::newRow("no compiler") << "cxx=c++ (Debian 12.2.0-14) 12.2.0\n" << "" << "no C++ compiler";
        QTest::newRow("no C++20") << "cxx20=yes\n" << "" << "does not compile C++20";
        QTest::newRow("no LibTorch") << "sys_torch=1.13.0 /usr/lib/x86_64-linux-gnu/cmake/Torch\n" << ""
                                     << "no LibTorch: install PyTorch for python3";
        QTest::newRow("no make") << "generator=ninja\ngenerator=make\n" << "" << "neither make nor ninja";
        QTest::newRow("full disk") << "disk_kib=104857600\n" << "disk_kib=512000\n" << "only 500 MiB free under";
    }

    void missingPiecesNameTheFix()
    {
        QFETCH(QString, removed);
        QFETCH(QString, added);
        QFETCH(QString, expected);
        const auto r = remote::parseNodeCheck(without(kGoodNode, removed.toStdString()) + added.toStdString());
        QVERIFY(!r.ok());
        QCOMPARE(r.problems.size(), size_t(1));  // just that one, named
        QVERIFY2(mentions(r, "missing: " ) && mentions(r, expected.toStdString()), r.describe().c_str());
    }

    // The header-only libraries come with the bundle: a node without them is ready; where it has
    // them is only said.
    void headersAreNotANodeProblem()
    {
        const auto bare = remote::parseNodeCheck(without(without(kGoodNode, "nlohmann=/usr/include\n"), "stb=/usr/include\n"));
        QVERIFY2(bare.ok(), bare.describe().c_str());
        QVERIFY(bare.nodeJsonDir.empty() && bare.nodeStbDir.empty());
        QVERIFY2(mentions(bare, "headers: nlohmann/json and stb come with the bundle (on the node: nlohmann/json none, "
                                "stb none; not used)"),
                 bare.describe().c_str());
        const auto full = remote::parseNodeCheck(kGoodNode);
        QCOMPARE(full.nodeJsonDir, std::string("/usr/include"));
        QVERIFY2(mentions(full, "on the node: nlohmann/json in /usr/include, stb in /usr/include"), full.describe().c_str());
    }

    // What the check printed on a real H200 node (Ubuntu 24.04, the PyTorch 2.11+cu130 wheel,
    // cmake 4.4, g++ 13, nlohmann/json but no stb; tests/remote/h200_node_check.out, verbatim):
    // it stopped provisioning before the headers came with the bundle; now it is ready for a
    // CUDA build with the wheel's NCCL and the bundle's headers.
    void realH200NodeIsReady()
    {
        std::ifstream in(WB_SOURCE_DIR "/tests/remote/h200_node_check.out", std::ios::binary);
        QVERIFY(in);
        const std::string output((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const auto r = remote::parseNodeCheck(output);
        QVERIFY2(r.ok(), r.describe().c_str());
        QVERIFY2(!mentions(r, "missing"), r.describe().c_str());
        QCOMPARE(r.ranksPerNode(), 2);
        QCOMPARE(r.gpus.front().name, std::string("NVIDIA H200"));
        QCOMPARE(r.torchVersion, std::string("2.11.0+cu130"));
        QCOMPARE(r.torchCuda, std::string("13.0"));
        QCOMPARE(r.cmakeVersion, std::string("4.4.3"));
        QVERIFY(r.cxx20);
        QCOMPARE(r.cpus, 32);
        QCOMPARE(r.nodeJsonDir, std::string("/usr/include"));
        QVERIFY(r.nodeStbDir.empty());
        const std::string script = remote::buildScript(r, r.cpus);
        for (const char* part : {" -DWB_WITH_CUDA=ON",
                                 " -DCMAKE_PREFIX_PATH='/opt/torch/.venv/lib/python3.12/site-packages/torch/share/cmake'",
                                 " -DNCCL_INCLUDE_DIR='/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/include'",
                                 "\"-DWB_STB_INCLUDE_DIR=$(pwd)/src/deps/include/stb\"", " -j 32 "})
            QVERIFY2(script.find(part) != std::string::npos, (std::string(part) + " in\n" + script).c_str());
    }

    // Which configs take one rank per GPU: runtime.device "cuda" only; anything unreadable is
    // left to moe-train --validate (one rank).
    void cudaConfigsTakeEveryGpu_data()
    {
        QTest::addColumn<QString>("config");
        QTest::addColumn<bool>("cuda");
        QTest::newRow("cuda") << R"({"runtime": {"device": "cuda", "num_threads": 4}})" << true;
        QTest::newRow("cpu") << R"({"runtime": {"device": "cpu"}})" << false;
        QTest::newRow("no runtime (default cpu)") << R"({"name": "x"})" << false;
        QTest::newRow("device not a string") << R"({"runtime": {"device": 1}})" << false;
        QTest::newRow("runtime not an object") << R"({"runtime": "cuda"})" << false;
        QTest::newRow("not JSON") << "{runtime: cuda" << false;
    }
    void cudaConfigsTakeEveryGpu()
    {
        QFETCH(QString, config);
        QFETCH(bool, cuda);
        QCOMPARE(remote::isCudaConfig(config.toStdString()), cuda);
    }

    // The build provisioning starts (and `hosts script build` prints) for what the check found.
    void buildScriptFollowsTheNode()
    {
        const std::string cpu = remote::buildScript(remote::parseNodeCheck(kGoodNode), 16);
        QVERIFY(cpu.find("cmake -S src/runtime -B build -DCMAKE_BUILD_TYPE=Release") != std::string::npos);
        QVERIFY(cpu.find("cmake --build build -j 16 --target moe-train") != std::string::npos);
        QVERIFY2(cpu.find("WB_WITH_CUDA") == std::string::npos && cpu.find("CMAKE_PREFIX_PATH") == std::string::npos,
                 cpu.c_str());  // Debian's LibTorch: cmake finds it alone
        QVERIFY(cpu.find("> build.rc.tmp && mv build.rc.tmp build.rc") != std::string::npos);
        // The bundle's headers, as the cache entries the runtime's find_path() would fill, in "$@"
        // (the hash dir may hold spaces), given only when the bundle has them.
        QVERIFY2(cpu.find("[ -d src/deps/include/nlohmann ] && set -- \"$@\" "
                          "\"-DWB_NLOHMANN_JSON_INCLUDE_DIR=$(pwd)/src/deps/include\"\n") != std::string::npos,
                 cpu.c_str());
        QVERIFY2(cpu.find("[ -d src/deps/include/stb ] && set -- \"$@\" \"-DWB_STB_INCLUDE_DIR=$(pwd)/src/deps/include/stb\"\n") !=
                     std::string::npos,
                 cpu.c_str());
        QVERIFY2(cpu.find(" $G \"$@\" && cmake --build") != std::string::npos, cpu.c_str());

        const std::string gpu = remote::buildScript(
            remote::parseNodeCheck(kGoodNode + "gpu=NVIDIA H200, 143771 MiB\nccache=yes\n"
                                               "py_torch=/opt/my env/torch/share/cmake 2.11.0+cu130 13.0\n"
                                               "nccl_dir=/opt/my env/nvidia/nccl\n"),
            8);
        for (const char* part : {" -DCMAKE_PREFIX_PATH='/opt/my env/torch/share/cmake'", " -DWB_WITH_CUDA=ON",
                                 " -DNCCL_INCLUDE_DIR='/opt/my env/nvidia/nccl/include'",
                                 " -DNCCL_LIBRARY='/opt/my env/nvidia/nccl/lib/libnccl.so.2'",
                                 " -DCMAKE_CXX_COMPILER_LAUNCHER=ccache", " -j 8 "})
            QVERIFY2(gpu.find(part) != std::string::npos, (std::string(part) + " in\n" + gpu).c_str());

        // GPUs but a CPU LibTorch: a CPU build (the report says so in a note).
        const std::string cpuTorch = remote::buildScript(
            remote::parseNodeCheck(kGoodNode + "gpu=NVIDIA B200, 183359 MiB\npy_torch=/x/torch/share/cmake 2.5.0 None\n"), 4);
        QVERIFY2(cpuTorch.find("WB_WITH_CUDA") == std::string::npos, cpuTorch.c_str());
    }

    void scriptQuotesTheCacheDir()
    {
        const std::string script = remote::nodeCheckScript("~/my cache/$(touch x)");
        QVERIFY(script.find("\"$HOME\"/'my cache/$(touch x)'") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestNodeCheck)
#include "test_node_check.moc"
