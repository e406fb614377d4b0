// RunFollowWorker: everything that blocks for a run target, off the GUI thread. Lives on one of
// RunSession's QThreads and owns that thread's RunStore connection and RunTargets; launches runs
// (LaunchRequest) and then follows them on the same target object, so a run is launched and
// followed over one connection; polls every followed run with core::RunFollower on a timer, and
// reports into the session's RunEvents (queued to the GUI).
// Roles: RunSession runs one Main worker (the default target, "local"; lists the store) and one
// Remote worker per other target it meets (ssh:HOST, ...), each on its own thread, so a remote
// session blocked on the network (a reconnect may take up to its budget) never holds up the local
// runs or the other hosts. A Remote worker's target reports `targetReconnecting` while it retries.
// Standalone: one worker that launches on and follows every target itself (no session routes).
// Nothing here is ever called directly from another thread: RunSession invokes the slots queued.
// Every slot catches everything: an exception must not leave a Qt slot.
// Threading: the worker thread only (after moveToThread); construct on any thread.
#pragma once

#include "core/run_follower.h"
#include "core/run_store.h"
#include "core/run_target.h"
#include "ui/launch_targets.h"
#include "ui/meta_types.h"
#include "ui/run_events.h"

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTimer>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

namespace wb::ui {

/// What the GUI's "Import Megatron-Bridge run…" asks for (empty = not given; gpus 0 = from the log).
struct BridgeImportArgs {
    QString logPath, configPath, tensorboardDir, name, model, hardware;
    int gpus = 0;
    QString catalogDir, userCatalogDir;
};

class RunFollowWorker : public QObject {
    Q_OBJECT

public:
    /// Creates the target on the worker thread (a target may hold thread-bound handles).
    using TargetFactory = std::function<std::unique_ptr<core::RunTarget>()>;

    enum class Role {
        Standalone,  ///< follows runs of every target itself (through the resolver, if any)
        Main,        ///< the default target; runs elsewhere go out through followElsewhere / cancelElsewhere
        Remote,      ///< one other target, made by the resolver; does not list the store
    };

    static constexpr int kPollIntervalMs = 300;
    static constexpr int kListEveryPolls = 7;  ///< also re-list the store every ~2 s (CLI-made runs)

    /// `events`: where it reports (shared with the session and its other workers). `resolver`
    /// makes targets for runs recorded on other targets than the default one; may be empty (then
    /// only the default target's runs are followed).
    RunFollowWorker(QString storePath, std::shared_ptr<RunEvents> events, TargetFactory targetFactory,
                    TargetResolver resolver = {}, Role role = Role::Standalone, QObject* parent = nullptr);
    ~RunFollowWorker() override;

    /// Where this worker reports (an exception that escapes a slot is reported there too).
    RunEvents& events() const { return *m_events; }

public slots:
    /// Opens the store and the target, resumes following unfinished runs of this target, starts
    /// polling. Emits `ready` or `errorOccurred`.
    void initialize();
    /// Stops polling and closes the target and the store (on the worker thread, before it ends).
    void shutdown();
    void refreshRuns();
    /// Validates the config, creates the run in the store, launches it on the request's target
    /// (reporting each phase as launchProgress) and follows it there; ends with launchFinished.
    /// Main role: a request for another target goes out through launchElsewhere.
    void launch(const wb::ui::LaunchRequest& request);
    /// Emits `historyLoaded` with every stored step of the run.
    void loadHistory(const QString& runId);
    void cancelRun(const QString& runId);
    /// Follows a run someone else started (the launch dialog's worker): on its recorded target.
    void followRun(const QString& runId);
    /// Imports a finished Megatron-Bridge run from its log (and config) into the store, with the
    /// planner's prediction (catalog from `catalogDirs`: built-in, then the user's). Emits
    /// `runImported` with the import's report, or `importFailed` naming the file and the fix.
    void importBridgeRun(const wb::ui::BridgeImportArgs& args);
    /// Run management (the run list's menu; core/run_management.h): each emits `runManaged` with
    /// what was done, or `errorOccurred` naming why not, then re-lists the store.
    void renameRun(const QString& runId, const QString& name);
    /// `withFiles`: also the run directory (this machine's runs only). A live run is refused.
    void deleteRun(const QString& runId, bool withFiles);
    /// Every stored step as CSV (metrics.jsonl key names), written atomically to `path`.
    void exportRunCsv(const QString& runId, const QString& path);

signals:
    // What the GUI sees goes to RunEvents; these route requests between the session's workers.
    /// Main role: this run lives on another target; its Remote worker should follow / cancel it.
    void followElsewhere(const QString& runId, const QString& target);
    void cancelElsewhere(const QString& runId, const QString& target);
    /// Main role: a launch on another target; that target's Remote worker should do it.
    void launchElsewhere(const wb::ui::LaunchRequest& request);
    /// A target made for `spec` records its runs as `name` (e.g. "ssh:A, B" → "ssh:A,B"): requests
    /// for `name` belong to this worker too.
    void targetNamed(const QString& spec, const QString& name);
    /// Remote role: the store changed (steps, status); the Main worker should re-list it.
    void listingWanted();

private:
    struct Followed {
        std::unique_ptr<core::RunFollower> follower;
        std::string targetName;
        std::optional<core::RunState> lastState;  // none before the first poll: that one reports
        QString lastMessage;
        QString lastError;  // so a failing poll reports once, not three times a second
    };

    void poll();
    void pollOne(const std::string& runId, Followed& followed);
    /// Follows the run (asked for: the launch dialog, start-up).
    void follow(const std::string& runId);
    /// `automatic`: found live in a listing, not asked for; a run on another target is then handed
    /// to its worker at most every kRerouteAfterMs.
    void follow(const core::RunSummary& run, bool automatic);
    /// Follows every followable run of `runs` that this worker (or another target's) can reach.
    void followLiveRuns(const std::vector<core::RunSummary>& runs);
    /// The default target when `name` is its name, else one made by the resolver (kept for the
    /// session). Null (reported once) when it cannot be made.
    core::RunTarget* targetFor(const std::string& name);
    /// Main role, for a run recorded on another target than the default one.
    bool isElsewhere(const std::string& target) const;
    /// The Megatron-Bridge part of launch(): the folder, the catalog, then startBridgeLaunch on
    /// `target` (which checks the cluster and submits); the run is followed like any other.
    void launchBridge(const LaunchRequest& request, core::RunTarget& target);
    int64_t trainItersOf(const std::string& runId);
    void reportError(const QString& message);

    QString m_storePath;
    std::shared_ptr<RunEvents> m_events;  // emitted into from this thread; lives on the GUI thread
    TargetFactory m_targetFactory;
    std::unique_ptr<core::RunStore> m_store;    // worker thread only
    TargetResolver m_resolver;
    Role m_role = Role::Standalone;
    std::unique_ptr<core::RunTarget> m_target;  // worker thread only
    std::map<std::string, std::unique_ptr<core::RunTarget>> m_otherTargets;  // by recorded name; worker thread only
    std::map<std::string, std::string> m_targetNames;  // spec as asked for -> the target's recorded name
    std::map<std::string, QString> m_targetErrors;  // why a target could not be made (reported once)
    std::map<std::string, int> m_reconnecting;      // targets inside a reconnect, by name
    std::map<std::string, Followed> m_followed; // worker thread only
    std::map<std::string, int64_t> m_trainIters;
    std::map<std::string, QString> m_messages;
    std::map<std::string, QElapsedTimer> m_routedElsewhere;  // Main role: when each run was handed over
    QTimer* m_pollTimer = nullptr;
    int m_pollsSinceList = 0;
};

}  // namespace wb::ui
