// moe-workbench: the GUI's composition root. Installs the log sinks (stderr + a rotating file in
// the data dir) and forwards Qt's messages into them, reads the command line, injects the targets
// (remote::makeTarget: "local" = moe-train beside this executable; ssh:HOST from hosts.json beside
// the store) into the main window, and optionally screenshots it or one of its dialogs.
// GUI thread only.
#include "core/log.h"
#include "core/paths.h"
#include "core/run_store.h"
#include "remote/ssh_hosts.h"
#include "remote/target_factory.h"
#include "ui/compare_view.h"
#include "ui/host_key_dialog.h"
#include "ui/hosts_dialog.h"
#include "ui/import_run_dialog.h"
#include "ui/launch_dialog.h"
#include "ui/main_window.h"
#include "ui/planning_view.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QLibraryInfo>
#include <QLocale>
#include <QTimer>
#include <QTranslator>

#include <spdlog/sinks/rotating_file_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <string_view>
#include <vector>

namespace {

constexpr size_t kLogFileBytes = 5 * 1024 * 1024;
constexpr size_t kLogFiles = 3;

void installLogSinks(const QString& logDir)
{
    std::vector<spdlog::sink_ptr> sinks;
    sinks.push_back(std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    if (QDir().mkpath(logDir)) {
        try {
            sinks.push_back(std::make_shared<spdlog::sinks::rotating_file_sink_mt>(
                QDir(logDir).filePath(QStringLiteral("moe-workbench.log")).toStdString(), kLogFileBytes,
                kLogFiles));
        } catch (const spdlog::spdlog_ex&) {
            // An unwritable log file must not stop the GUI; stderr still gets everything.
        }
    }
    auto logger = std::make_shared<spdlog::logger>("moe-workbench", sinks.begin(), sinks.end());
    logger->set_level(spdlog::level::info);
    logger->flush_on(spdlog::level::warn);
    spdlog::set_default_logger(logger);
}

void forwardQtMessage(QtMsgType type, const QMessageLogContext& context, const QString& message)
{
    static const auto logger = wb::log::get("qt");
    const std::string text = message.toStdString();
    const char* category = context.category ? context.category : "default";
    switch (type) {
    case QtDebugMsg: logger->debug("[{}] {}", category, text); break;
    case QtInfoMsg: logger->info("[{}] {}", category, text); break;
    case QtWarningMsg: logger->warn("[{}] {}", category, text); break;
    case QtCriticalMsg: logger->error("[{}] {}", category, text); break;
    case QtFatalMsg: logger->critical("[{}] {}", category, text); logger->flush(); std::abort();
    }
}

// Loads moe_workbench_<lang>.qm (and Qt's own qtbase_<lang>.qm) when the language is not English:
// from --lang, else the system locale. Looks beside the executable (the build), then in the
// install's share/moe-workbench/translations.
void installTranslations(QCoreApplication& app, const QString& lang)
{
    const QLocale locale = lang.isEmpty() ? QLocale::system() : QLocale(lang);
    if (locale.language() == QLocale::English || locale.language() == QLocale::C)
        return;
    const QDir exeDir(QCoreApplication::applicationDirPath());
    auto* ours = new QTranslator(&app);
    bool loaded = false;
    for (const QString& dir : {exeDir.filePath(QStringLiteral("translations")),
                               exeDir.filePath(QStringLiteral("../share/moe-workbench/translations"))})
        if ((loaded = ours->load(locale, QStringLiteral("moe_workbench"), QStringLiteral("_"), dir)))
            break;
    if (!loaded) {
        spdlog::warn("no moe-workbench translation for {}", locale.name().toStdString());
        return;
    }
    QLocale::setDefault(locale);
    QCoreApplication::installTranslator(ours);
    auto* qt = new QTranslator(&app);
    if (qt->load(locale, QStringLiteral("qtbase"), QStringLiteral("_"), QLibraryInfo::path(QLibraryInfo::TranslationsPath)))
        QCoreApplication::installTranslator(qt);
}

// --help, --help-all and --version print and exit: they must work without a display (issue 18
// item 12: under no DISPLAY, QApplication aborted with exit 134 before the parser ran).
bool onlyPrints(int argc, char* argv[])
{
    for (int i = 1; i < argc; ++i) {
        const std::string_view a(argv[i]);
        if (a == "--")
            break;
        if (a == "--help" || a == "-h" || a == "-?" || a == "--help-all" || a == "--version" || a == "-v")
            return true;
    }
    return false;
}

}  // namespace

int main(int argc, char* argv[])
{
    // Only the parser runs for --help/--version: a core application, no window system.
    std::unique_ptr<QCoreApplication> application = onlyPrints(argc, argv)
                                                        ? std::make_unique<QCoreApplication>(argc, argv)
                                                        : std::make_unique<QApplication>(argc, argv);
    QCoreApplication& app = *application;
    QApplication::setApplicationName(QStringLiteral("moe-workbench"));
    // --lang is needed before anything is shown (--help included), so it is read ahead of the parser.
    QString lang;
    const QStringList arguments = QCoreApplication::arguments();
    for (qsizetype i = 1; i < arguments.size(); ++i) {
        if (arguments[i] == QStringLiteral("--lang") && i + 1 < arguments.size())
            lang = arguments[i + 1];
        else if (arguments[i].startsWith(QStringLiteral("--lang=")))
            lang = arguments[i].mid(7);
    }
    installTranslations(app, lang);
    QApplication::setApplicationDisplayName(QCoreApplication::translate("main", "MoE-VLM Workbench"));
    QApplication::setApplicationVersion(QStringLiteral(WB_VERSION));

    const QString storeDefault = QString::fromStdString(wb::core::defaultStorePath());
    installLogSinks(QFileInfo(storeDefault).absolutePath() + QStringLiteral("/logs"));
    qInstallMessageHandler(forwardQtMessage);

    QCommandLineParser parser;
    parser.setApplicationDescription(
        QCoreApplication::translate("main", "Plan, launch, watch and compare MoE vision-language training runs."));
    parser.addHelpOption();
    parser.addVersionOption();
    const QCommandLineOption dbOption(QStringLiteral("db"), QCoreApplication::translate("main", "Run store (SQLite file)."),
                                      QStringLiteral("PATH"), storeDefault);
    const QCommandLineOption runsRootOption(
        QStringLiteral("runs-root"), QCoreApplication::translate("main", "Folder for local run directories."), QStringLiteral("DIR"),
        QString::fromStdString(wb::core::defaultRunsRoot()));
    const QCommandLineOption startSampleOption(
        QStringLiteral("start-sample"), QCoreApplication::translate("main", "Start the bundled sample run right away and watch it."));
    const QCommandLineOption sampleStepsOption(
        QStringLiteral("sample-steps"), QCoreApplication::translate("main", "Steps for the sample run (default: the config's)."),
        QStringLiteral("N"));
    const QCommandLineOption sampleConfigOption(
        QStringLiteral("sample-config"),
        QCoreApplication::translate("main", "Config for \"Start sample run\" instead of the embedded sample-tiny.json."),
        QStringLiteral("FILE"));
    const QCommandLineOption screenshotOption(
        QStringLiteral("screenshot"), QCoreApplication::translate("main", "Save a PNG of the main window (for docs)."),
        QStringLiteral("FILE"));
    const QCommandLineOption screenshotAfterOption(
        QStringLiteral("screenshot-after-ms"), QCoreApplication::translate("main", "Delay before the screenshot (default 5000)."),
        QStringLiteral("N"), QStringLiteral("5000"));
    const QCommandLineOption quitAfterScreenshotOption(
        QStringLiteral("quit-after-screenshot"), QCoreApplication::translate("main", "Exit once the screenshot is saved."));
    const QCommandLineOption planOption(QStringLiteral("plan"),
                                        QCoreApplication::translate("main", "Open the planning view at start (the screenshot shows it)."));
    const QCommandLineOption langOption(QStringLiteral("lang"),
                                        QCoreApplication::translate("main", "UI language, e.g. zh_CN (default: the system locale)."),
                                        QStringLiteral("LANG"));
    const QCommandLineOption showOption(
        QStringLiteral("show"),
        QCoreApplication::translate("main", "Open a dialog at start: hosts, launch, import or compare (the screenshot shows it)."), QStringLiteral("DIALOG"));
    const QCommandLineOption launchConfigOption(
        QStringLiteral("launch-config"),
        QCoreApplication::translate(
            "main",
            "Config file (or Megatron-Bridge job folder) to fill in with --show launch (the log with --show import)."),
        QStringLiteral("FILE"));
    const QCommandLineOption launchNowOption(
        QStringLiteral("launch-now"), QCoreApplication::translate("main", "With --show launch: press Launch right away."));
    parser.addOptions({launchNowOption, dbOption, runsRootOption, startSampleOption, sampleStepsOption, sampleConfigOption,
                       screenshotOption,
                       screenshotAfterOption, quitAfterScreenshotOption, planOption, langOption, showOption,
                       launchConfigOption});
    parser.process(app);

    const std::string moeTrain = QDir(QCoreApplication::applicationDirPath())
                                     .filePath(QStringLiteral("moe-train"))
                                     .toStdString();
    const std::string runsRoot = parser.value(runsRootOption).toStdString();
    spdlog::info("moe-workbench {}: store {}, runs root {}, moe-train {}", WB_VERSION,
                 parser.value(dbOption).toStdString(), runsRoot, moeTrain);

    wb::ui::MainWindowOptions options;
    options.storePath = parser.value(dbOption);
    const std::string hostsPath = wb::remote::defaultHostsPath(options.storePath.toStdString());
    options.hostsPath = QString::fromStdString(hostsPath);
    // Passwords and keyboard-interactive answers for every SSH session of a target (ssh:, ssh:A,B,
    // slurm:) are asked in a dialog; never stored.
    const wb::ui::GuiTargetPaths paths{moeTrain, runsRoot, hostsPath, wb::ui::makeGuiSecretPromptOverActiveWindow()};
    options.targetFactory = [paths]() -> std::unique_ptr<wb::core::RunTarget> {
        auto local = wb::remote::makeTarget("local", {paths.moeTrainPath, paths.runsRoot, paths.hostsPath});
        if (!local) {
            spdlog::error("cannot make the local target: {}", local.error().toString());
            return nullptr;
        }
        return std::move(local).value();
    };
    options.targetResolver = [paths](const std::string& spec, wb::ui::ReconnectFn onReconnecting) {
        return wb::ui::makeGuiTarget(spec, paths, onReconnecting);
    };
    if (parser.isSet(sampleConfigOption))
        options.sampleRun.configResource = parser.value(sampleConfigOption);
    if (parser.isSet(sampleStepsOption)) {
        bool ok = false;
        const qlonglong steps = parser.value(sampleStepsOption).toLongLong(&ok);
        if (!ok || steps <= 0) {
            spdlog::error("--sample-steps wants a positive number, got '{}'",
                          parser.value(sampleStepsOption).toStdString());
            return 2;
        }
        options.sampleRun.trainIters = steps;
    }

    options.catalogDir = QString::fromStdString(wb::core::builtinCatalogDir(WB_BUILTIN_CATALOG_DIR));
    options.userCatalogDir = QString::fromStdString(wb::core::defaultUserCatalogDir());

    wb::ui::MainWindow window(std::move(options));
    window.show();
    QWidget* shot = &window;
    if (parser.isSet(planOption)) {
        auto* planning = window.openPlanningView();
        planning->plan();
        shot = planning;
    }

    if (parser.isSet(showOption)) {
        const QString which = parser.value(showOption);
        if (which == QStringLiteral("hosts")) {
            shot = window.openHostsDialog();
        } else if (which == QStringLiteral("launch")) {
            auto* launch = window.openLaunchDialog();
            if (parser.isSet(launchConfigOption)) {
                const QString path = parser.value(launchConfigOption);
                if (QFileInfo(path).isDir())
                    launch->loadBridgeFolder(path);  // a Megatron-Bridge job folder
                else
                    launch->loadConfigFile(path);
            }
            if (parser.isSet(launchNowOption))
                QTimer::singleShot(0, launch, &wb::ui::LaunchDialog::launch);
            shot = launch;
        } else if (which == QStringLiteral("import")) {
            auto* import = window.openImportDialog();
            if (parser.isSet(launchConfigOption))
                import->setFiles(parser.value(launchConfigOption), QString());
            shot = import;
        } else if (which == QStringLiteral("compare")) {
            // Every run of the store checked and compared (the screenshot waits for the result).
            auto* view = window.openCompareView();
            view->setSelectedRuns(view->listedRuns());
            view->compare();
            shot = view;
        } else {
            spdlog::error("--show wants hosts, launch, import or compare, got '{}'", which.toStdString());
            return 2;
        }
    }

    if (parser.isSet(startSampleOption))
        QTimer::singleShot(0, &window, &wb::ui::MainWindow::startSampleRun);

    if (parser.isSet(screenshotOption)) {
        const QString file = parser.value(screenshotOption);
        const bool quit = parser.isSet(quitAfterScreenshotOption);
        QTimer::singleShot(parser.value(screenshotAfterOption).toInt(), shot, [shot, file, quit] {
            if (shot->grab().save(file))
                spdlog::info("screenshot saved to {}", file.toStdString());
            else
                spdlog::error("cannot save the screenshot to {}", file.toStdString());
            if (quit)
                QCoreApplication::quit();
        });
    }
    return QApplication::exec();
}
