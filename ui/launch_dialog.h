// LaunchDialog: collects what a launch needs and shows how it goes. The user picks the target
// ("local", a registered "ssh:HOST", "slurm:HOST" for a registered host with settings in
// slurm.json, or types another form makeTarget knows: "ssh:A,B"), a config (a file, or the JSON
// handed over by the planning view with its prediction) and a name; Launch hands a LaunchRequest to
// the session (RunSession::launch), whose worker for that target validates, records and starts the
// run and then follows it on the same connection, while four rows show the phases the target
// reports (check, upload, build, start; indeterminate while a phase has no fraction; "—" for
// phases the target does not have). Errors appear in the dialog in full. Closing never waits: a
// launch under way finishes on its worker and the run still appears in the list.
// Threading: GUI thread only; it does no blocking work itself.
#pragma once

#include "ui/launch_targets.h"

#include <QDialog>
#include <QString>

QT_BEGIN_NAMESPACE
class QComboBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
QT_END_NAMESPACE

namespace wb::ui {

class RunSession;

struct LaunchDialogOptions {
    QString hostsPath;              ///< hosts.json, for the target list
    RunSession* session = nullptr;  ///< launches (its workers); null = the dialog cannot launch
    QString catalogDir, userCatalogDir;  ///< the planner's catalogs, for a Megatron-Bridge run's model
};

class LaunchDialog : public QDialog {
    Q_OBJECT

public:
    static constexpr int kPhaseCount = 4;  ///< check, upload, build, start
    static const char* phaseName(int phase);

    explicit LaunchDialog(LaunchDialogOptions options, QWidget* parent = nullptr);

    /// Fills the config (and the prediction shown and stored with the run) from the planning view.
    void setConfigJson(const QString& configJson, const QString& predictionJson = {});
    /// Loads a config file into the editor; false (with the reason shown) when unreadable.
    bool loadConfigFile(const QString& path);
    /// Takes a Megatron-Bridge job folder (`generate --format megatron-bridge`): its overrides are
    /// shown read-only, its prediction beside them, and Launch submits it on a slurm:HOST target.
    /// False (with the reason and the fix shown) for a folder that is not one.
    bool loadBridgeFolder(const QString& dir);
    /// The Bridge folder Launch will submit; empty when launching a moe-train config.
    const QString& bridgeFolder() const { return m_bridgeDir; }
    void setTarget(const QString& target);
    void setRunName(const QString& name);

    QComboBox* targetBox() const { return m_target; }
    QPushButton* launchButton() const { return m_launch; }
    QProgressBar* phaseBar(int phase) const { return m_bars[phase]; }
    /// A phase row's text: "—" until the target reports it, then its detail; "done" when complete.
    QString phaseText(int phase) const;
    QString errorText() const;
    bool isLaunching() const { return m_launching; }
    /// The warning shown when the plan's GPUs do not fit the chosen target (hidden otherwise).
    QLabel* fitWarning() const { return m_fitWarning; }

public slots:
    /// Re-reads the registered hosts into the target list (keeps what is typed).
    void reloadTargets();
    /// Validates the form and starts the launch. Returns false when the form is not ready.
    bool launch();

private:
    /// The prediction line under the config (hidden for an empty `predictionJson`).
    void showPrediction(const QString& predictionJson);
    /// Shows m_fitWarning when the plan's prediction is for more GPUs than "local" has.
    void updateFitWarning();
    void resetPhases();
    void onProgress(quint64 requestId, const QString& phase, const QString& node, double fraction,
                    const QString& detail);
    void onFinished(quint64 requestId, const QString& runId, const QString& error);
    void showError(const QString& message);

    LaunchDialogOptions m_options;
    QComboBox* m_target = nullptr;
    QLineEdit* m_configPath = nullptr;
    QLabel* m_configLabel = nullptr;  // "Config:", or "Bridge job:" for a Megatron-Bridge folder
    QPlainTextEdit* m_config = nullptr;
    QLabel* m_prediction = nullptr;
    QLabel* m_fitWarning = nullptr;  // the plan is for more GPUs than the chosen target has
    QLineEdit* m_name = nullptr;
    QProgressBar* m_bars[kPhaseCount] = {};
    QLabel* m_phaseLabels[kPhaseCount] = {};
    QPlainTextEdit* m_error = nullptr;
    QPushButton* m_launch = nullptr;
    QString m_predictionJson;
    QString m_bridgeDir;  // a Megatron-Bridge job folder to submit instead of the config
    int m_lastPhase = -1;
    bool m_launching = false;
    quint64 m_request = 0;  // the launch under way (RunSession::launch's id); 0 = none yet
};

}  // namespace wb::ui
