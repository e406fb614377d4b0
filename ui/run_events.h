// RunEvents: the one object the run workers report to. Every RunFollowWorker (RunSession's Main
// worker and one per remote target) emits these signals from its own thread; the GUI connects to
// this object once (RunSession::events()) and receives them queued onto the GUI thread, where this
// object lives. The signals are declared here only: no worker-to-session relay re-declares them.
// LaunchRequest is what a launch asks a worker for (the launch dialog's input, the sample run).
// Threading: created on the GUI thread; its signals are emitted from the worker threads (Qt's
// signal emission is thread-safe; the receivers on the GUI thread get queued calls). It is shared
// (std::shared_ptr) with the workers, so a Remote worker still inside a network call when the
// session ends keeps emitting into a live object (see RunSession's destructor).
#pragma once

#include "core/run_state.h"
#include "ui/meta_types.h"

#include <QObject>
#include <QString>

#include <memory>

namespace wb::ui {

class RunEvents : public QObject {
    Q_OBJECT

public:
    using QObject::QObject;

    /// A RunEvents for a session: deleted on its own thread (the GUI's) whoever drops it last.
    static std::shared_ptr<RunEvents> create();

signals:
    /// The Main worker opened the store and its default target (empty name: none).
    void ready(const QString& storePath, const QString& targetName);
    void runsListed(const wb::ui::RunRowList& runs);
    /// A phase of launch request `requestId` (LaunchRequest::id) on its target: check, upload, build,
    /// start; `fraction` < 0 = indeterminate; `node` "" = this machine.
    void launchProgress(quint64 requestId, const QString& phase, const QString& node, double fraction,
                        const QString& detail);
    /// The launch ended: `runId` (the run exists and its process started; its worker follows it
    /// on the same target) or `error` (in full, for the user).
    void launchFinished(quint64 requestId, const QString& runId, const QString& error);
    void stepsArrived(const QString& runId, const wb::ui::StepList& steps);
    void historyLoaded(const QString& runId, const wb::ui::StepList& steps);
    /// GPU system samples ("gpu" records): new ones as they are stored, or all of a run with its
    /// history (`history` true).
    void gpuSamplesArrived(const QString& runId, const wb::ui::GpuList& samples, bool history);
    void runStatusChanged(const QString& runId, wb::core::RunState state, const QString& message);
    void runEnded(const QString& runId, wb::core::RunState state, int exitCode);
    void eventLogged(const QString& runId, const QString& level, const QString& message);
    void errorOccurred(const QString& message);
    void runImported(const QString& runId, const QString& report);
    void importFailed(const QString& message);
    /// A run was renamed, deleted or exported: `message` says what was done (for the status bar).
    void runManaged(const QString& runId, const QString& message);
    /// `target` (as recorded in the store, "ssh:HOST") lost its connection and is on reconnect
    /// attempt `attempt` (≥ 1); attempt 0 = connected again. Emitted from inside a blocking call.
    void targetReconnecting(const QString& target, int attempt, const QString& reason);
};

}  // namespace wb::ui
