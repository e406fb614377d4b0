// RunSession: the GUI's handle on the worker threads. Owns a QThread running the Main
// RunFollowWorker (the default target; lists the store) and, given a resolver, one more thread and
// Remote worker per other target a run is launched on or lives on (ssh:HOST, slurm:HOST, ...),
// created on first use — one worker per target, so a host that is reconnecting holds up nobody
// else, and the worker that launches a run is the one that follows it (one connection).
// Requests go to the workers as queued calls; what they report arrives on events() — RunSession
// re-declares none of it. The GUI never touches the store's writes or a target itself.
// Threading: GUI thread only. The destructor has the Main worker close its store and target on its
// own thread and joins it; a Remote worker gets 2 s to finish (it may be inside a network call) and
// is otherwise left to end with the process, so closing the window never waits on the network.
#pragma once

#include "ui/meta_types.h"
#include "ui/run_events.h"
#include "ui/run_follow_worker.h"

#include <QObject>
#include <QString>
#include <QThread>

#include <map>
#include <memory>

namespace wb::ui {

class RunSession : public QObject {
    Q_OBJECT

public:
    RunSession(QString storePath, RunFollowWorker::TargetFactory targetFactory, TargetResolver resolver = {},
               QObject* parent = nullptr);
    ~RunSession() override;

    /// Starts the worker thread and opens the store there. Idempotent.
    void start();
    const QString& storePath() const { return m_storePath; }
    /// Everything the workers report (queued onto the GUI thread).
    RunEvents* events() const { return m_events.get(); }

    /// Hands `request` to the worker of its target (the Main one for an empty target or the
    /// default one) and returns the id its launchProgress / launchFinished carry. The worker
    /// validates, records, launches and then follows the run on the same target.
    quint64 launch(LaunchRequest request);

public slots:
    void refreshRuns();
    void loadHistory(const QString& runId);
    void cancelRun(const QString& runId);
    /// Imports a finished Megatron-Bridge run on the worker (file reads, SQLite): runImported / importFailed.
    void importBridgeRun(const wb::ui::BridgeImportArgs& args);
    /// Run management on the Main worker (store writes, files): runManaged / errorOccurred.
    void renameRun(const QString& runId, const QString& name);
    void deleteRun(const QString& runId, bool withFiles);
    void exportRunCsv(const QString& runId, const QString& path);

private:
    struct RemoteWorker {
        QThread* thread = nullptr;
        RunFollowWorker* worker = nullptr;  // lives on thread
    };
    /// The Remote worker for `target` (a spec or a recorded name), started on first use.
    RunFollowWorker* remoteWorker(const QString& target);
    /// Queues `call(worker)` on the worker's thread.
    template <typename Call>
    void post(RunFollowWorker* worker, Call call);

    QString m_storePath;
    TargetResolver m_resolver;
    std::shared_ptr<RunEvents> m_events;
    QThread m_thread;
    RunFollowWorker* m_worker = nullptr;       // lives on m_thread; deleted there when it finishes
    std::map<QString, RemoteWorker> m_remote;  // by the target spec it was made for
    std::map<QString, QString> m_remoteNames;  // a recorded target name -> the spec of its worker
    quint64 m_nextLaunch = 1;
};

}  // namespace wb::ui
