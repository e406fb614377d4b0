// RunSession: the GUI's handle on the worker threads. Owns a QThread running the Main
// RunFollowWorker (the default target; lists the store) and, given a resolver, one more thread and
// Remote worker per other target a run lives on (ssh:HOST, ...), created when the Main worker
// routes a run there — one worker per remote session, so a host that is reconnecting holds up
// nobody else. Forwards requests as queued calls and re-emits the workers' signals (already queued
// onto the GUI thread). The GUI never touches the store's writes or a target itself.
// Threading: GUI thread only. The destructor shuts the Main worker down and joins its thread; a
// Remote worker gets 2 s to finish (it may be inside a network call) and is otherwise left to end
// with the process, so closing the window never waits on the network.
#pragma once

#include "ui/meta_types.h"
#include "ui/run_follow_worker.h"

#include <QObject>
#include <QString>
#include <QThread>

#include <map>

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
    /// Imports a finished Megatron-Bridge run on the worker (file reads, SQLite): runImported / importFailed.
    void importBridgeRun(const wb::ui::BridgeImportArgs& args);
    /// Run management on the Main worker (store writes, files): runManaged / errorOccurred.
    void renameRun(const QString& runId, const QString& name);
    void deleteRun(const QString& runId, bool withFiles);
    void exportRunCsv(const QString& runId, const QString& path);

signals:
    void ready(const QString& storePath, const QString& targetName);
    void runsListed(const wb::ui::RunRowList& runs);
    void runStarted(const QString& runId);
    void launchFailed(const QString& message);
    void stepsArrived(const QString& runId, const wb::ui::StepList& steps);
    void historyLoaded(const QString& runId, const wb::ui::StepList& steps);
    void gpuSamplesArrived(const QString& runId, const wb::ui::GpuList& samples, bool history);
    void runStatusChanged(const QString& runId, wb::core::RunState state, const QString& message);
    void runEnded(const QString& runId, wb::core::RunState state, int exitCode);
    void eventLogged(const QString& runId, const QString& level, const QString& message);
    void errorOccurred(const QString& message);
    void runImported(const QString& runId, const QString& report);
    void importFailed(const QString& message);
    void runManaged(const QString& runId, const QString& message);
    void targetReconnecting(const QString& target, int attempt, const QString& reason);

private:
    struct RemoteWorker {
        QThread* thread = nullptr;
        RunFollowWorker* worker = nullptr;  // lives on thread
    };
    /// The Remote worker for `target`, started on first use.
    RunFollowWorker* remoteWorker(const QString& target);

    QString m_storePath;
    TargetResolver m_resolver;
    QThread m_thread;
    RunFollowWorker* m_worker = nullptr;  // lives on m_thread; deleted there when it finishes
    std::map<QString, RemoteWorker> m_remote;  // by target name
};

}  // namespace wb::ui
