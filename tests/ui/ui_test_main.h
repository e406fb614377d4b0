// The UI tests' main(): isolates the test from the user's machine before QApplication exists —
// HOME, XDG_DATA_HOME, XDG_CACHE_HOME, XDG_CONFIG_HOME and XDG_RUNTIME_DIR all point into one
// temporary folder (so defaultStorePath() & co. never touch real data) — and defaults to the
// offscreen platform. GUI thread only.
#pragma once

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QLocale>
#include <QTemporaryDir>
#include <QTest>

namespace wb::test {

inline QTemporaryDir& isolatedHome()
{
    static QTemporaryDir dir;
    return dir;
}

inline void isolateEnvironment()
{
    const QString root = isolatedHome().path();
    const auto setDir = [&root](const char* var, const QString& sub) {
        const QString path = root + QLatin1Char('/') + sub;
        QDir().mkpath(path);
        qputenv(var, QFile::encodeName(path));
        return path;
    };
    setDir("HOME", QStringLiteral("home"));
    setDir("XDG_DATA_HOME", QStringLiteral("home/.local/share"));
    setDir("XDG_CACHE_HOME", QStringLiteral("home/.cache"));
    setDir("XDG_CONFIG_HOME", QStringLiteral("home/.config"));
    const QString runtime = setDir("XDG_RUNTIME_DIR", QStringLiteral("runtime"));
    QFile::setPermissions(runtime, QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
}

}  // namespace wb::test

#define WB_UI_TEST_MAIN(TestClass)                   \
    int main(int argc, char* argv[])                 \
    {                                                \
        wb::test::isolateEnvironment();              \
        QApplication app(argc, argv);                \
        app.setAttribute(Qt::AA_Use96Dpi, true);     \
        QLocale::setDefault(QLocale::c());           \
        TestClass test;                              \
        return QTest::qExec(&test, argc, argv);      \
    }
