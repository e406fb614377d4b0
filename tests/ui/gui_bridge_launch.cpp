// The GUI's Megatron-Bridge launch end to end, run by tests/remote/test_slurm.sh against its private
// Slurm and sshd (not a ctest of its own: it needs that cluster). The main window, offscreen, with the
// store and hosts.json the CLI steps of that script registered: the launch dialog takes the Bridge
// folder, submits it on slurm:wbtest, and the main window follows the job (through the worker that
// submitted it) until the run list says finished. Prints "run ID" on success (log lines may
// precede it on stdout).
// usage: gui_bridge_launch STORE HOSTS_JSON FOLDER CATALOG_DIR MOE_TRAIN RUNS_ROOT
// Exit 0 finished; 1 with the reason on stderr.
#include "ui/launch_dialog.h"
#include "ui/launch_targets.h"
#include "ui/main_window.h"
#include "ui/run_list_model.h"
#include "ui/run_list_panel.h"

#include <QApplication>
#include <QComboBox>
#include <QTest>

#include <cstdio>

namespace {

int fail(const QString& why)
{
    std::fprintf(stderr, "gui_bridge_launch: %s\n", qPrintable(why));
    return 1;
}

QString cell(const wb::ui::MainWindow& window, int row, int column)
{
    const auto* model = window.runListPanel()->model();
    return model->data(model->index(row, column), Qt::DisplayRole).toString();
}

}  // namespace

int main(int argc, char** argv)
{
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    const QStringList args = app.arguments();
    if (args.size() != 7)
        return fail(QStringLiteral("usage: gui_bridge_launch STORE HOSTS_JSON FOLDER CATALOG_DIR MOE_TRAIN RUNS_ROOT"));
    const wb::ui::GuiTargetPaths paths{args[5].toStdString(), args[6].toStdString(), args[2].toStdString()};
    wb::ui::MainWindowOptions options;
    options.storePath = args[1];
    options.hostsPath = args[2];
    options.catalogDir = args[4];
    options.targetFactory = [paths] { return std::move(wb::ui::makeGuiTarget("local", paths, {})).value(); };
    options.targetResolver = [paths](const std::string& spec, wb::ui::ReconnectFn onReconnecting) {
        return wb::ui::makeGuiTarget(spec, paths, onReconnecting);
    };
    wb::ui::MainWindow window(std::move(options));
    window.show();

    wb::ui::LaunchDialog* dialog = window.openLaunchDialog();
    if (!dialog->loadBridgeFolder(args[3]))
        return fail(QStringLiteral("the folder was refused: ") + dialog->errorText());
    if (dialog->targetBox()->currentText() != u"slurm:wbtest")  // preselected: the one Slurm host
        return fail(QStringLiteral("slurm:wbtest not preselected: ") + dialog->targetBox()->currentText());
    dialog->setRunName(QStringLiteral("bridge-gui"));
    if (!dialog->launch())
        return fail(QStringLiteral("launch refused: ") + dialog->errorText());
    if (!QTest::qWaitFor([&] { return !dialog->isLaunching(); }, 120000))
        return fail(QStringLiteral("the submission did not end within 120 s"));
    if (!dialog->errorText().isEmpty())
        return fail(QStringLiteral("the submission failed: ") + dialog->errorText());

    int row = -1;
    const auto finished = [&] {
        const int rows = window.runListPanel()->model()->rowCount();
        for (row = 0; row < rows; ++row)
            if (cell(window, row, wb::ui::RunListModel::Name) == u"bridge-gui")
                return cell(window, row, wb::ui::RunListModel::Status) == u"finished";
        row = -1;
        return false;
    };
    if (!QTest::qWaitFor(finished, 180000))
        return fail(QStringLiteral("the run did not finish in the run list within 180 s (status: %1)")
                        .arg(row < 0 ? QStringLiteral("not listed") : cell(window, row, wb::ui::RunListModel::Status)));
    std::printf("run %s\n", qPrintable(cell(window, row, wb::ui::RunListModel::Id)));
    std::fflush(stdout);
    return 0;
}
