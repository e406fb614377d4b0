// The UI in Simplified Chinese, offscreen: the build's moe_workbench_zh_CN.qm (lrelease of
// resources/translations) installed as the app does, then the main window, the hosts panel, the
// launch dialog and the host-key warning are built and read back.
#include "ui/host_key_dialog.h"
#include "ui/hosts_dialog.h"
#include "ui/launch_dialog.h"
#include "ui/main_window.h"
#include "ui/run_list_model.h"
#include "ui/run_list_panel.h"
#include "ui/run_status_style.h"
#include "ui_test_main.h"

#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QPushButton>
#include <QTemporaryDir>
#include <QTest>
#include <QTranslator>

using namespace wb::ui;

class TestZhCnUi : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY2(m_translator.load(QLocale(QLocale::Chinese, QLocale::China), QStringLiteral("moe_workbench"),
                                   QStringLiteral("_"), QStringLiteral(WB_TEST_TRANSLATIONS_DIR)),
                 "moe_workbench_zh_CN.qm was not built (lrelease from qt6-l10n-tools)");
        QVERIFY(QCoreApplication::installTranslator(&m_translator));
    }

    void mainWindowIsChinese()
    {
        QTemporaryDir dir;
        MainWindowOptions options;
        options.storePath = dir.filePath(QStringLiteral("runs.sqlite"));
        options.hostsPath = dir.filePath(QStringLiteral("hosts.json"));
        MainWindow window(std::move(options));
        QCOMPARE(window.windowTitle(), QStringLiteral("MoE-VLM 工作台"));
        QStringList menus;
        for (QAction* action : window.menuBar()->actions())
            menus << action->text();
        QVERIFY2(menus.contains(QStringLiteral("运行(&R)")) && menus.contains(QStringLiteral("远程(&M)")),
                 qPrintable(menus.join(u'|')));
        QCOMPARE(window.startSampleRunAction()->text(), QStringLiteral("启动示例运行(&S)"));
        const auto* model = window.runListPanel()->model();
        QCOMPARE(model->headerData(RunListModel::Status, Qt::Horizontal, Qt::DisplayRole).toString(),
                 QStringLiteral("状态"));
        QCOMPARE(statusLabel(QStringLiteral("finished")), QStringLiteral("已完成"));
        QCOMPARE(statusLabel(QStringLiteral("something-new")), QStringLiteral("something-new"));
    }

    void hostsPanelIsChineseIncludingItsErrors()
    {
        QTemporaryDir dir;
        HostsDialog dialog(dir.filePath(QStringLiteral("hosts.json")));
        QCOMPARE(dialog.windowTitle(), QStringLiteral("SSH 主机"));
        QCOMPARE(dialog.testButton()->text(), QStringLiteral("测试连接(&T)"));
        dialog.field(QStringLiteral("name"))->setText(QStringLiteral("gpu1"));
        dialog.field(QStringLiteral("port"))->setText(QStringLiteral("70000"));
        dialog.field(QStringLiteral("moeTrain"))->setText(QStringLiteral("~/bin/moe-train"));
        QVERIFY(!dialog.saveHost());
        QCOMPARE(dialog.fieldError(QStringLiteral("port")),
                 QStringLiteral("端口必须是 1 到 65535 之间的整数（留空则使用 ssh 配置中的端口）。"));
    }

    void launchAndHostKeyDialogsAreChinese()
    {
        QTemporaryDir dir;
        LaunchDialog launch({dir.filePath(QStringLiteral("hosts.json")), nullptr});
        QCOMPARE(launch.windowTitle(), QStringLiteral("启动运行"));
        QCOMPARE(launch.launchButton()->text(), QStringLiteral("启动(&L)"));
        QStringList labels;
        for (auto* label : launch.findChildren<QLabel*>())
            labels << label->text();
        QVERIFY2(labels.contains(QStringLiteral("检查节点")) && labels.contains(QStringLiteral("构建 moe-train")),
                 qPrintable(labels.join(u'|')));

        HostKeyFacts facts;
        facts.host = QStringLiteral("gpu1");
        facts.keyType = QStringLiteral("ssh-ed25519");
        facts.fingerprint = QStringLiteral("SHA256:abc");
        facts.knownHostsPath = QStringLiteral("~/.ssh/known_hosts");
        facts.knownHostsLines = {7};
        HostKeyDialog changed(HostKeyDialog::Kind::Changed, facts);
        QCOMPARE(changed.windowTitle(), QStringLiteral("警告：主机密钥已改变"));
        QVERIFY2(changed.text().contains(QStringLiteral("连接已被拒绝")), qPrintable(changed.text()));
        QVERIFY2(changed.text().contains(QStringLiteral("的第 7 行")), qPrintable(changed.text()));
        QVERIFY(!changed.acceptButton());
    }

private:
    QTranslator m_translator;
};

WB_UI_TEST_MAIN(TestZhCnUi)
#include "test_zh_cn_ui.moc"
