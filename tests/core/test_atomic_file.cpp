// core/atomic_file.h: the one temp-and-rename writer (configs, pid files, scripts, reports).
#include "core/atomic_file.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QtTest>

#include <unistd.h>

using namespace wb::core;

class TestAtomicFile : public QObject {
    Q_OBJECT

private slots:
    void writesReplacesAndSetsTheMode()
    {
        QTemporaryDir dir;
        const std::string path = dir.filePath(QStringLiteral("run.json")).toStdString();
        QVERIFY(writeFileAtomically(path, "first"));
        QVERIFY(writeFileAtomically(path, std::string("second\0bytes", 12)));
        QFile file(QString::fromStdString(path));
        QVERIFY(file.open(QIODevice::ReadOnly));
        QCOMPARE(file.readAll(), QByteArray("second\0bytes", 12));
        QVERIFY(!(QFileInfo(file).permissions() & QFile::ExeOwner));
        const std::string script = dir.filePath(QStringLiteral("launch.sh")).toStdString();
        QVERIFY(writeFileAtomically(script, "#!/bin/sh\n", FileMode::Executable));
        QVERIFY(QFileInfo(QString::fromStdString(script)).permissions() & QFile::ExeOwner);
        // Nothing else is left in the folder: no temporary file.
        QCOMPARE(QDir(dir.path()).entryList(QDir::Files).size(), 2);
    }

    void failureNamesThePathAndKeepsTheOldFile()
    {
        QTemporaryDir dir;
        auto missing = writeFileAtomically(dir.filePath(QStringLiteral("no/such/folder/x")).toStdString(), "x");
        QVERIFY(!missing);
        QCOMPARE(missing.error().code, ErrorCode::IoError);
        QVERIFY2(missing.error().context.find("no/such/folder/x") != std::string::npos, missing.error().toString().c_str());
        QVERIFY2(missing.error().message.find("folder exists") != std::string::npos, missing.error().message.c_str());
        if (::geteuid() == 0)
            QSKIP("root writes into a read-only folder: the rest needs an ordinary user");
        const std::string path = dir.filePath(QStringLiteral("kept")).toStdString();
        QVERIFY(writeFileAtomically(path, "old"));
        QFile::setPermissions(dir.path(), QFile::ReadOwner | QFile::ExeOwner);
        QVERIFY(!writeFileAtomically(path, "new"));
        QFile::setPermissions(dir.path(), QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
        QFile file(QString::fromStdString(path));
        QVERIFY(file.open(QIODevice::ReadOnly));
        QCOMPARE(file.readAll(), QByteArray("old"));
    }
};

QTEST_GUILESS_MAIN(TestAtomicFile)
#include "test_atomic_file.moc"
