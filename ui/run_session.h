// RunSession: the GUI's handle on the worker thread. Owns a QThread running one RunFollowWorker,
// forwards requests to it as queued calls and re-emits its signals (already queued onto the GUI
// thread). The GUI never touches the store's writes or the target itself.
// Threading: GUI thread only. The destructor shuts the worker down and joins the thread.
#pragma once

#include "ui/meta_types.h"
#include "ui/run_follow_worker.h"

#include <QObject>
#include <QString>
#include <QThread>

namespace wb::ui {

class RunSession : public QObject {
    Q_OBJECT

public:
    RunSession(QString storePath, RunFollowWorker::TargetFactory targetFactory,
               TargetResolver resolver = {}, QObject* parent = nullptr);
    ~RunSession() override;

    /// Starts the worker thread and opens the store there. Idempotent.
    void start();
    const QString& storePath() const { return m_storePath; }

public slots:
    void refreshRuns();
    void startRun(const QString& name, const QString& configJson);
    void loadHistory(const QString& runId);
    void cancelRun(const QString& runId);
    /// Follows a run started elsewhere in this GUI (the launch dialog) on its recorded target.
    void followRun(const QString& runId);

signals:
    void ready(const QString& storePath, const QString& targetName);
    void runsListed(const wb::ui::RunRowList& runs);
    void runStarted(const QString& runId);
    void launchFailed(const QString& message);
    void stepsArrived(const QString& runId, const wb::ui::StepList& steps);
    void historyLoaded(const QString& runId, const wb::ui::StepList& steps);
    void runStatusChanged(const QString& runId, const QString& state, const QString& message);
    void runEnded(const QString& runId, const QString& state, int exitCode);
    void eventLogged(const QString& runId, const QString& level, const QString& message);
    void errorOccurred(const QString& message);
    void targetReconnecting(const QString& target, int attempt, const QString& reason);

private:
    QString m_storePath;
    QThread m_thread;
    RunFollowWorker* m_worker = nullptr;  // lives on m_thread; deleted there when it finishes
};

}  // namespace wb::ui
