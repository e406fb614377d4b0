// core/shell_quote.h against real shells: every hostile word goes through sh (dash on Debian) and
// bash as one argument and comes back byte for byte, for all three forms; a "~/" path expands to
// $HOME there. One quoting rule serves the generated scripts and the remote commands (issue 19).
#include "core/shell_quote.h"

#include <QProcess>
#include <QTemporaryFile>
#include <QtTest>

using namespace wb::core;

namespace {

// What a script `printf %s <quoted>` prints (stdout bytes) when `shell` runs it, with HOME set as
// given. The script is a file of raw bytes: a command line through QString would not keep
// non-UTF-8 bytes.
QByteArray echoThrough(const QString& shell, const std::string& quoted, const QByteArray& home = "/home/wb-test")
{
    QTemporaryFile script;
    if (!script.open())
        return "<no temp file>";
    script.write("printf %s ");
    script.write(quoted.data(), static_cast<qint64>(quoted.size()));
    script.write("\n");
    script.flush();
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("HOME"), QString::fromUtf8(home));
    p.setProcessEnvironment(env);
    p.start(shell, {script.fileName()});
    if (!p.waitForFinished(10000))
        return "<timeout>";
    return p.readAllStandardOutput();
}

}  // namespace

class TestShellQuote : public QObject {
    Q_OBJECT

private slots:
    void wordsSurviveShells_data()
    {
        QTest::addColumn<QByteArray>("word");
        QTest::newRow("plain") << QByteArray("moe-train");
        QTest::newRow("space") << QByteArray("my run");
        QTest::newRow("single quote") << QByteArray("it's");
        QTest::newRow("only quotes") << QByteArray("'''");
        QTest::newRow("double quote") << QByteArray("say \"hi\"");
        QTest::newRow("command substitution") << QByteArray("$(touch /tmp/wb-shell-quote-pwned)");
        QTest::newRow("backticks") << QByteArray("`id`");
        QTest::newRow("variable") << QByteArray("$HOME ${PATH}");
        QTest::newRow("glob and tilde") << QByteArray("~/* ?");
        QTest::newRow("newline and tab") << QByteArray("a\nb\tc");
        QTest::newRow("separators") << QByteArray("a; b && c | d > e");
        QTest::newRow("leading dash") << QByteArray("-n");
        QTest::newRow("backslashes") << QByteArray("a\\b\\\\'c");
        QTest::newRow("non-UTF-8 bytes") << QByteArray("\xff\xfe run \xc3");
        QTest::newRow("UTF-8") << QByteArray("运行 ✓");
        QTest::newRow("empty") << QByteArray();
    }

    void wordsSurviveShells()
    {
        QFETCH(QByteArray, word);
        const std::string w(word.constData(), static_cast<size_t>(word.size()));
        for (const QString& shell : {QStringLiteral("/bin/sh"), QStringLiteral("bash")}) {
            QCOMPARE(echoThrough(shell, shellQuote(w)), word);
            QCOMPARE(echoThrough(shell, shellWord(w)), word);
            if (w.rfind('~', 0) != 0)  // a leading ~ is shellQuotePath's to expand (below)
                QCOMPARE(echoThrough(shell, shellQuotePath(w)), word);
        }
        QVERIFY(!QFileInfo::exists(QStringLiteral("/tmp/wb-shell-quote-pwned")));
    }

    void safeWordsStayBare()
    {
        QCOMPARE(shellWord("moe-train"), std::string("moe-train"));
        QCOMPARE(shellWord("model.expert_model_parallel_size=8"), std::string("model.expert_model_parallel_size=8"));
        QCOMPARE(shellWord("it's"), std::string("'it'\\''s'"));
        QCOMPARE(shellWord(""), std::string("''"));
        QCOMPARE(shellQuote("moe-train"), std::string("'moe-train'"));
    }

    void homePathsExpandOnTheOtherSide()
    {
        QCOMPARE(echoThrough(QStringLiteral("/bin/sh"), shellQuotePath("~/dir with 'q'/x"), "/home/u v"),
                 QByteArray("/home/u v/dir with 'q'/x"));
        QCOMPARE(echoThrough(QStringLiteral("/bin/sh"), shellQuotePath("~"), "/home/me"), QByteArray("/home/me"));
        QCOMPARE(shellQuotePath("/abs/~/p"), std::string("'/abs/~/p'"));  // only a leading ~ is home
        QCOMPARE(echoThrough(QStringLiteral("/bin/sh"), shellQuotePath("~user/x")), QByteArray("~user/x"));
    }
};

QTEST_GUILESS_MAIN(TestShellQuote)
#include "test_shell_quote.moc"
