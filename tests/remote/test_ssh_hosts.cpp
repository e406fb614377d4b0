// SshHostRegistry (hosts.json): round trip, replace by name, remove, a corrupt or newer file is
// reported (not overwritten), host names that could smuggle user/port/list syntax are refused,
// and an entry becomes the SshHostSpec / SshTargetOptions the target uses.
#include "remote/slurm_target.h"
#include "remote/ssh_hosts.h"

#include <QTemporaryDir>
#include <QtTest>

#include <fstream>
#include <sstream>

using namespace wb;

namespace {

std::string readAll(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

}  // namespace

class TestSshHosts : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::string path(const char* name) const { return m_dir.filePath(QString::fromLatin1(name)).toStdString(); }

private slots:
    // slurm.json beside hosts.json (`hosts slurm`): written entries read back, defaults left out,
    // other entries kept, a bad value refused with the file untouched, removal.
    void slurmSettingsRoundTrip()
    {
        const std::string file = path("slurm/slurm.json");
        remote::SlurmSettings a;
        a.partition = "gpu";
        a.nodes = 4;
        a.gpusPerNode = 8;
        a.timeLimit = "04:00:00";
        QVERIFY(remote::saveSlurmSettings(file, "login-a", a));
        remote::SlurmSettings b;
        b.cpuRanksPerNode = 2;
        b.slurmConf = "/etc/slurm/other cluster.conf";
        QVERIFY(remote::saveSlurmSettings(file, "login-b", b));
        auto readA = remote::loadSlurmSettings(file, "login-a");
        QVERIFY(readA);
        QCOMPARE(readA->partition, std::string("gpu"));
        QCOMPARE(readA->nodes, 4);
        QCOMPARE(readA->gpusPerNode, 8);
        QCOMPARE(readA->timeLimit, std::string("04:00:00"));
        QCOMPARE(readA->masterPort, 29500);
        auto readB = remote::loadSlurmSettings(file, "login-b");
        QVERIFY(readB);
        QCOMPARE(readB->cpuRanksPerNode, 2);
        QCOMPARE(readB->slurmConf, b.slurmConf);
        const std::string text = readAll(file);
        QVERIFY2(text.find("master_port") == std::string::npos, text.c_str());  // defaults left out
        auto hosts = remote::slurmSettingsHosts(file);
        QVERIFY(hosts);
        QCOMPARE(*hosts, (std::vector<std::string>{"login-a", "login-b"}));

        remote::SlurmSettings bad = a;
        bad.account = "proj; rm -rf ~";
        auto refused = remote::saveSlurmSettings(file, "login-a", bad);
        QVERIFY(!refused);
        QCOMPARE(refused.error().code, core::ErrorCode::InvalidArgument);
        QVERIFY2(refused.error().toString().find("\"account\"") != std::string::npos, refused.error().toString().c_str());
        QCOMPARE(readAll(file), text);  // untouched

        QVERIFY(remote::removeSlurmSettings(file, "login-a"));
        QCOMPARE(remote::removeSlurmSettings(file, "login-a").error().code, core::ErrorCode::NotFound);
        QCOMPARE(*remote::slurmSettingsHosts(file), std::vector<std::string>{"login-b"});
    }

    void roundTripReplaceRemove()
    {
        remote::SshHostRegistry registry(path("data/hosts.json"));
        auto empty = registry.load();
        QVERIFY(empty && empty->empty());

        remote::SshHostEntry gpu;
        gpu.name = "gpu1";
        gpu.user = "alice";
        gpu.port = 2222;
        gpu.identityFile = "~/.ssh/id_ed25519";
        gpu.moeTrain = "/opt/mw/bin/moe-train";
        QVERIFY(registry.put(gpu));
        remote::SshHostEntry other;
        other.name = "b200.cluster";
        other.host = "login.example.org";
        other.cacheDir = "/scratch/mw build";
        other.address = "10.0.0.7";
        other.masterPort = 29611;
        QVERIFY(registry.put(other));

        gpu.port = 22022;
        QVERIFY(registry.put(gpu));  // same name: replaced, not duplicated
        auto loaded = registry.load();
        QVERIFY(loaded);
        QCOMPARE(loaded->size(), size_t(2));
        auto found = registry.find("gpu1");
        QVERIFY(found);
        QCOMPARE(found->port, 22022);
        QCOMPARE(found->user, std::string("alice"));
        QCOMPARE(found->moeTrain, std::string("/opt/mw/bin/moe-train"));
        // The default is provisioning: the workbench builds moe-train on the host.
        const auto b200 = registry.find("b200.cluster");
        QCOMPARE(b200->moeTrain, std::string("auto"));
        QCOMPARE(b200->cacheDir, std::string("/scratch/mw build"));
        QCOMPARE(b200->address, std::string("10.0.0.7"));
        QCOMPARE(b200->masterPort, 29611);
        QVERIFY(b200->targetOptions().provision);
        QCOMPARE(b200->targetOptions().provisioning.cacheDir, std::string("/scratch/mw build"));

        const auto spec = registry.find("b200.cluster")->spec();
        QCOMPARE(spec.host, std::string("login.example.org"));
        QVERIFY(!spec.acceptNewHostKey);  // never stored: accepting is an explicit act each time
        const auto options = found->targetOptions();
        QCOMPARE(options.host.host, std::string("gpu1"));
        QCOMPARE(options.host.port, 22022);
        QCOMPARE(options.moeTrainPath, std::string("/opt/mw/bin/moe-train"));
        QVERIFY(!options.provision);  // an explicit path is used as it is
        // The store records the entry's name, even when the entry names another host.
        auto viaAlias = b200->targetOptions();
        QCOMPARE(viaAlias.host.host, std::string("login.example.org"));
        QCOMPARE(remote::SshTarget(viaAlias).name(), std::string("ssh:b200.cluster"));

        QVERIFY(registry.remove("gpu1"));
        QCOMPARE(registry.remove("gpu1").error().code, core::ErrorCode::NotFound);
        QCOMPARE(registry.find("gpu1").error().code, core::ErrorCode::NotFound);
        QVERIFY(registry.find("gpu1").error().message.find("hosts add") != std::string::npos);
    }

    void refusesBadNames_data()
    {
        QTest::addColumn<QString>("name");
        QTest::newRow("empty") << QString();
        QTest::newRow("user@") << QStringLiteral("root@gpu");
        QTest::newRow("port") << QStringLiteral("gpu:22");
        QTest::newRow("list") << QStringLiteral("a,b");
        QTest::newRow("option") << QStringLiteral("-oProxyCommand=x");
        QTest::newRow("space") << QStringLiteral("gpu 1");
        QTest::newRow("quote") << QStringLiteral("gpu'1");
        QTest::newRow("slash") << QStringLiteral("../x");
    }

    void refusesBadNames()
    {
        QFETCH(QString, name);
        remote::SshHostRegistry registry(path("names.json"));
        remote::SshHostEntry entry;
        entry.name = name.toStdString();
        auto put = registry.put(entry);
        QVERIFY(!put);
        QCOMPARE(put.error().code, core::ErrorCode::InvalidArgument);
    }

    void corruptOrNewerFileIsReportedAndKept()
    {
        const std::string corrupt = path("corrupt.json");
        std::ofstream(corrupt) << "{ not json";
        remote::SshHostRegistry registry(corrupt);
        QCOMPARE(registry.load().error().code, core::ErrorCode::Corrupt);
        remote::SshHostEntry entry;
        entry.name = std::string("spare-host");
        QVERIFY(!registry.put(entry));
        QCOMPARE(readAll(corrupt), std::string("{ not json"));

        const std::string newer = path("newer.json");
        std::ofstream(newer) << R"({"version": 99, "hosts": []})";
        QCOMPARE(remote::SshHostRegistry(newer).load().error().code, core::ErrorCode::Incompatible);
    }

    void defaultPathIsBesideTheStore()
    {
        QCOMPARE(remote::defaultHostsPath("/home/u/.local/share/moe-workbench/runs.sqlite"),
                 std::string("/home/u/.local/share/moe-workbench/hosts.json"));
    }
};

QTEST_GUILESS_MAIN(TestSshHosts)
#include "test_ssh_hosts.moc"
