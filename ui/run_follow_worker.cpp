#include "ui/run_follow_worker.h"

#include "core/bridge/bridge_follow.h"
#include "core/bridge/bridge_launch.h"
#include "core/bridge/bridge_run_import.h"
#include "core/compare/steps_csv.h"
#include "core/log.h"
#include "core/planner/catalog.h"
#include "core/run_config.h"
#include "core/run_follower.h"
#include "core/run_launch.h"
#include "core/run_management.h"
#include "core/run_prediction.h"

#include <exception>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

namespace wb::ui {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

// Qt slots must not throw; the worker's body can (std::bad_alloc, a bug in a library). Catch,
// log, and surface it as an ordinary error signal instead of taking the process down.
template <typename Fn>
void guarded(RunFollowWorker* worker, const char* what, Fn&& fn)
{
    try {
        fn();
    } catch (const std::exception& e) {
        wb::log::get("ui")->error("{}: unexpected exception: {}", what, e.what());
        emit worker->events().errorOccurred(
            RunFollowWorker::tr("%1 failed unexpectedly: %2").arg(RunFollowWorker::tr(what), qs(e.what())));
    } catch (...) {
        wb::log::get("ui")->error("{}: unknown exception", what);
        emit worker->events().errorOccurred(RunFollowWorker::tr("%1 failed unexpectedly.").arg(RunFollowWorker::tr(what)));
    }
}

// A live run on another target is handed to that target's worker again after this long if it is
// still live in the store (its worker may have failed to reach the host the first time).
constexpr int64_t kRerouteAfterMs = 30'000;

}  // namespace

RunFollowWorker::RunFollowWorker(QString storePath, std::shared_ptr<RunEvents> events, TargetFactory targetFactory,
                                 TargetResolver resolver, Role role, QObject* parent)
    : QObject(parent),
      m_storePath(std::move(storePath)),
      m_events(std::move(events)),
      m_targetFactory(std::move(targetFactory)),
      m_resolver(std::move(resolver)),
      m_role(role)
{
}

bool RunFollowWorker::isElsewhere(const std::string& target) const
{
    return m_role == Role::Main && !(m_target && target == m_target->name());
}

RunFollowWorker::~RunFollowWorker() = default;

void RunFollowWorker::initialize()
{
    guarded(this, QT_TRANSLATE_NOOP("wb::ui::RunFollowWorker", "Opening the run store"), [&] {
        auto store = core::RunStore::open(m_storePath.toStdString());
        if (!store) {
            emit m_events->errorOccurred(tr("Cannot open the run store: %1").arg(qs(store.error().toString())));
            return;
        }
        m_store = std::move(store).value();
        if (m_targetFactory)
            m_target = m_targetFactory();
        if (!m_target && m_role != Role::Remote) {
            emit m_events->errorOccurred(tr("No run target is configured; runs can be viewed but not started."));
        }

        m_pollTimer = new QTimer(this);
        m_pollTimer->setInterval(kPollIntervalMs);
        connect(m_pollTimer, &QTimer::timeout, this, &RunFollowWorker::poll);
        m_pollTimer->start();

        // Runs started earlier (perhaps by a previous session, or the CLI) that never reported an
        // end: follow them again, on their own target; the store's offset makes this lossless.
        // Remote targets connect lazily, on their first poll. (A Remote worker is told what to follow.)
        if (m_role != Role::Remote) {
            if (auto runs = m_store->listRuns())
                followLiveRuns(*runs);
        }
        if (m_role == Role::Remote)
            return;
        emit m_events->ready(m_storePath, m_target ? qs(m_target->name()) : QString());
        refreshRuns();
    });
}

void RunFollowWorker::shutdown()
{
    guarded(this, QT_TRANSLATE_NOOP("wb::ui::RunFollowWorker", "Closing the run store"), [&] {
        if (m_pollTimer)
            m_pollTimer->stop();
        m_followed.clear();  // followers hold references to the store and target: drop them first
        m_otherTargets.clear();
        m_target.reset();
        m_store.reset();
    });
}

void RunFollowWorker::refreshRuns()
{
    guarded(this, QT_TRANSLATE_NOOP("wb::ui::RunFollowWorker", "Listing runs"), [&] {
        if (!m_store)
            return;
        if (m_role == Role::Remote) {
            emit listingWanted();
            return;
        }
        m_pollsSinceList = 0;
        auto runs = m_store->listRuns();
        if (!runs) {
            reportError(tr("Cannot list runs: %1").arg(qs(runs.error().toString())));
            return;
        }
        // Every live run the list shows is followed (issue 18 item 1): one the CLI launched after
        // this window opened would otherwise stay "running 0/60" here forever.
        followLiveRuns(*runs);
        RunRowList rows;
        rows.reserve(static_cast<qsizetype>(runs->size()));
        for (auto& summary : runs.value()) {
            RunRow row;
            row.trainIters = trainItersOf(summary.id);
            if (auto it = m_messages.find(summary.id); it != m_messages.end())
                row.message = it->second;
            row.followed = m_followed.count(summary.id) > 0;
            row.summary = std::move(summary);
            rows.append(std::move(row));
        }
        emit m_events->runsListed(rows);
    });
}

void RunFollowWorker::launch(const LaunchRequest& request)
{
    guarded(this, QT_TRANSLATE_NOOP("wb::ui::RunFollowWorker", "Starting the run"), [&] {
        const std::string spec = request.target.trimmed().toStdString();
        if (!spec.empty() && isElsewhere(spec)) {
            emit launchElsewhere(request);
            return;
        }
        const auto fail = [&](const QString& error) { emit m_events->launchFinished(request.id, {}, error); };
        if (!m_store)
            return fail(tr("Cannot start a run: the run store is not open."));
        if (!request.bridgeDir.isEmpty()) {
            if (spec.rfind("slurm:", 0) != 0)
                return fail(
                    tr("A Megatron-Bridge job is submitted with sbatch: choose a slurm:HOST target (a host "
                       "registered under Remote → SSH hosts, with its Slurm settings)."));
            core::RunTarget* target = targetFor(spec);
            if (!target)
                return fail(tr("Cannot use target %1: %2").arg(qs(spec), m_targetErrors[spec]));
            return launchBridge(request, *target);
        }
        auto parsed = core::parseRunConfig(request.configJson.toStdString());
        if (!parsed.ok())
            return fail(tr("The run configuration is invalid:\n%1").arg(qs(core::formatProblems(parsed.problems))));
        std::optional<core::RunPrediction> prediction;
        if (!request.predictionJson.isEmpty()) {
            // The launch dialog already said an unusable prediction will not be stored.
            if (auto p = core::parsePrediction(request.predictionJson.toStdString()))
                prediction = std::move(p).value();
            else
                wb::log::get("ui")->warn("launch without the plan's prediction: {}", p.error().toString());
        }
        core::RunTarget* target = spec.empty() ? m_target.get() : targetFor(spec);
        if (!target)
            return fail(spec.empty() ? tr("Cannot start a run: no run target is configured.")
                                     : tr("Cannot use target %1: %2").arg(qs(spec), m_targetErrors[spec]));
        target->setProgressCallback([this, id = request.id](const core::LaunchProgress& p) {
            emit m_events->launchProgress(id, qs(p.phase), qs(p.node), p.fraction, qs(p.detail));
        });
        const std::string name = request.name.trimmed().isEmpty() ? parsed.config.name : request.name.trimmed().toStdString();
        auto started = core::startRun(*m_store, *target, parsed.config, name, prediction ? &*prediction : nullptr);
        target->setProgressCallback({});
        if (!started) {
            fail(tr("Cannot start the run on %1:\n%2").arg(qs(target->name()), qs(started.error().toString())));
            refreshRuns();  // a launch that failed after the run was recorded shows as failed
            return;
        }
        const std::string& id = started->id;
        m_trainIters[id] = parsed.config.train.trainIters;
        follow(id);  // on `target`: the store records target->name(), which targetFor maps back to it
        emit m_events->launchFinished(request.id, qs(id), {});
        refreshRuns();
    });
}

void RunFollowWorker::launchBridge(const LaunchRequest& request, core::RunTarget& target)
{
    const auto fail = [&](const QString& error) { emit m_events->launchFinished(request.id, {}, error); };
    // The folder first: a wrong folder never reaches the cluster or the store.
    auto folder = core::bridge::readBridgeLaunchFolder(request.bridgeDir.toStdString());
    if (!folder)
        return fail(qs(folder.error().toString()));
    auto catalog = core::planner::loadCatalog(request.catalogDir.toStdString(), request.userCatalogDir.toStdString());
    if (!catalog)
        return fail(qs(catalog.error().toString()));
    target.setProgressCallback([this, id = request.id](const core::LaunchProgress& p) {
        emit m_events->launchProgress(id, qs(p.phase), qs(p.node), p.fraction, qs(p.detail));
    });
    std::vector<std::string> notes;
    auto started = core::bridge::startBridgeLaunch(*m_store, *catalog, target, *folder,
                                                   request.name.trimmed().toStdString(), &notes);
    target.setProgressCallback({});
    if (!started) {
        fail(tr("Cannot submit the Megatron-Bridge job on %1:\n%2")
                 .arg(qs(target.name()), qs(started.error().toString())));
        refreshRuns();  // a submission that failed after the run was recorded shows as failed
        return;
    }
    const QString id = qs(started->id);
    follow(started->id);  // on `target`: Bridge's log, read by the Bridge follower
    for (const std::string& note : notes)
        emit m_events->eventLogged(id, QStringLiteral("info"), qs(note));
    emit m_events->launchFinished(request.id, id, {});
    refreshRuns();
}

void RunFollowWorker::loadHistory(const QString& runId)
{
    guarded(this, QT_TRANSLATE_NOOP("wb::ui::RunFollowWorker", "Loading the run's steps"), [&] {
        if (!m_store)
            return;
        auto steps = m_store->steps(runId.toStdString());
        if (!steps) {
            reportError(tr("Cannot read the steps of run %1: %2").arg(runId, qs(steps.error().toString())));
            emit m_events->historyLoaded(runId, {});
            return;
        }
        emit m_events->historyLoaded(runId, StepList(steps->begin(), steps->end()));
        if (auto gpu = m_store->gpuRecords(runId.toStdString()))
            emit m_events->gpuSamplesArrived(runId, GpuList(gpu->begin(), gpu->end()), true);
    });
}

void RunFollowWorker::cancelRun(const QString& runId)
{
    guarded(this, QT_TRANSLATE_NOOP("wb::ui::RunFollowWorker", "Cancelling the run"), [&] {
        if (!m_store)
            return;
        auto run = m_store->run(runId.toStdString());
        if (!run) {
            reportError(tr("Cannot cancel run %1: %2").arg(runId, qs(run.error().toString())));
            return;
        }
        // A Bridge run is ours to stop only when the workbench submitted its job (launch --bridge).
        auto ours = core::bridge::launchedByWorkbench(*m_store, *run);
        if (run->kind != core::kRunKindMoeTrain && !(ours && *ours)) {
            reportError(tr("Run %1 is a %2 job read from its log; the workbench did not start it. Stop it where "
                           "it runs (scancel JOBID on its cluster).")
                            .arg(runId, qs(run->kind)));
            return;
        }
        if (isElsewhere(run->target)) {
            emit cancelElsewhere(runId, qs(run->target));
            return;
        }
        core::RunTarget* target = targetFor(run->target);
        if (!target || run->runDir.empty()) {
            reportError(tr("Run %1 cannot be cancelled from here (target %2): %3")
                            .arg(runId, qs(run->target),
                                 run->runDir.empty() ? tr("it has no run directory")
                                                     : m_targetErrors[run->target]));
            return;
        }
        auto cancelled = target->cancel(run->runDir, std::chrono::seconds(5));
        if (!cancelled) {
            reportError(tr("Cannot cancel run %1: %2").arg(runId, qs(cancelled.error().toString())));
            return;
        }
        // The follower sees the process gone on its next poll, ingests the tail and records the end.
        poll();
    });
}

void RunFollowWorker::followRun(const QString& runId)
{
    guarded(this, QT_TRANSLATE_NOOP("wb::ui::RunFollowWorker", "Following the run"), [&] {
        follow(runId.toStdString());
        refreshRuns();
    });
}

void RunFollowWorker::importBridgeRun(const BridgeImportArgs& args)
{
    guarded(this, QT_TRANSLATE_NOOP("wb::ui::RunFollowWorker", "Importing the Megatron-Bridge run"), [&] {
        if (!m_store) {
            emit m_events->importFailed(tr("The run store is not open."));
            return;
        }
        auto catalog = core::planner::loadCatalog(args.catalogDir.toStdString(), args.userCatalogDir.toStdString());
        if (!catalog) {
            emit m_events->importFailed(qs(catalog.error().toString()));
            return;
        }
        core::bridge::BridgeImportRequest request;
        request.logPath = args.logPath.toStdString();
        if (!args.configPath.isEmpty())
            request.configPath = args.configPath.toStdString();
        if (!args.tensorboardDir.isEmpty())
            request.tensorboardDir = args.tensorboardDir.toStdString();
        request.name = args.name.toStdString();
        if (!args.model.isEmpty())
            request.model = args.model.toStdString();
        if (!args.hardware.isEmpty())
            request.hardware = args.hardware.toStdString();
        if (args.gpus > 0)
            request.gpus = args.gpus;
        auto imported = core::bridge::importBridgeRun(*m_store, *catalog, request);
        if (!imported) {
            emit m_events->importFailed(qs(imported.error().toString()));
            return;
        }
        emit m_events->runImported(qs(imported->runId), qs(core::bridge::describeImport(*imported)));
        refreshRuns();
    });
}

void RunFollowWorker::renameRun(const QString& runId, const QString& name)
{
    guarded(this, QT_TRANSLATE_NOOP("wb::ui::RunFollowWorker", "Renaming the run"), [&] {
        if (!m_store)
            return;
        if (auto r = m_store->renameRun(runId.toStdString(), name.toStdString()); !r) {
            reportError(tr("Cannot rename run %1: %2").arg(runId, qs(r.error().toString())));
            return;
        }
        emit m_events->runManaged(runId, tr("Renamed run %1 to \u201c%2\u201d.").arg(runId, name));
        refreshRuns();
    });
}

void RunFollowWorker::deleteRun(const QString& runId, bool withFiles)
{
    guarded(this, QT_TRANSLATE_NOOP("wb::ui::RunFollowWorker", "Deleting the run"), [&] {
        if (!m_store)
            return;
        core::DeleteRunRequest request;
        request.runId = runId.toStdString();
        request.files = withFiles;
        auto deleted = core::deleteRun(*m_store, request);
        if (!deleted) {
            reportError(tr("Cannot delete run %1: %2").arg(runId, qs(deleted.error().toString())));
            refreshRuns();  // a half-done delete (store row gone, files not) shows as it is
            return;
        }
        m_trainIters.erase(request.runId);
        m_messages.erase(request.runId);
        emit m_events->runManaged(runId, deleted->filesRemoved
                                   ? tr("Deleted run %1 and its run directory %2.").arg(runId, qs(deleted->runDir))
                               : deleted->runDir.empty()
                                   ? tr("Deleted run %1.").arg(runId)
                                   : tr("Deleted run %1 from the store; its run directory stays at %2.")
                                         .arg(runId, qs(deleted->runDir)));
        refreshRuns();
    });
}

void RunFollowWorker::exportRunCsv(const QString& runId, const QString& path)
{
    guarded(this, QT_TRANSLATE_NOOP("wb::ui::RunFollowWorker", "Exporting the run's steps"), [&] {
        if (!m_store)
            return;
        auto steps = m_store->steps(runId.toStdString());
        if (!steps) {
            reportError(tr("Cannot read the steps of run %1: %2").arg(runId, qs(steps.error().toString())));
            return;
        }
        if (auto written = core::writeStepsCsv(path.toStdString(), *steps); !written) {
            reportError(tr("Cannot export run %1: %2").arg(runId, qs(written.error().toString())));
            return;
        }
        emit m_events->runManaged(runId, tr("Exported %n step(s) of run %1 to %2.", nullptr, static_cast<int>(steps->size()))
                                   .arg(runId, path));
    });
}

void RunFollowWorker::followLiveRuns(const std::vector<core::RunSummary>& runs)
{
    for (const auto& run : runs) {
        const bool ours = m_target && run.target == m_target->name();
        if (core::isFollowable(run) && (ours || m_resolver || isElsewhere(run.target)))
            follow(run, /*automatic=*/true);  // the listing's summary: no store query per poll
    }
}

void RunFollowWorker::follow(const std::string& runId)
{
    if (m_followed.count(runId) || !m_store)
        return;
    auto run = m_store->run(runId);
    if (!run) {
        reportError(tr("Cannot follow run %1: %2").arg(qs(runId), qs(run.error().toString())));
        return;
    }
    follow(*run, /*automatic=*/false);
}

void RunFollowWorker::follow(const core::RunSummary& summary, bool automatic)
{
    const std::string& runId = summary.id;
    if (m_followed.count(runId) || !m_store)
        return;
    const core::RunSummary* run = &summary;
    if (isElsewhere(run->target)) {
        // Handed over once (and again now and then while it stays live): the other worker keeps it.
        if (auto it = m_routedElsewhere.find(runId);
            automatic && it != m_routedElsewhere.end() && it->second.elapsed() < kRerouteAfterMs)
            return;
        m_routedElsewhere[runId].start();
        emit followElsewhere(qs(runId), qs(run->target));
        return;
    }
    core::RunTarget* target = targetFor(run->target);
    if (!target)
        return;  // targetFor reported why
    Followed followed;
    followed.targetName = run->target;
    followed.follower = std::make_unique<core::RunFollower>(*m_store, *target, runId);
    m_followed.emplace(runId, std::move(followed));
}

core::RunTarget* RunFollowWorker::targetFor(const std::string& asked)
{
    const auto named = m_targetNames.find(asked);
    const std::string& name = named != m_targetNames.end() ? named->second : asked;
    if (m_target && name == m_target->name())
        return m_target.get();
    if (auto it = m_otherTargets.find(name); it != m_otherTargets.end())
        return it->second.get();
    if (!m_resolver) {
        m_targetErrors[name] = tr("this session only reaches %1").arg(m_target ? qs(m_target->name()) : tr("no target"));
        return nullptr;
    }
    // Called from inside the target's blocking calls, on this thread; the signal is queued to the
    // GUI, which shows it at once although this thread is still busy reconnecting. It names the
    // target as its runs are recorded (known once the target is made).
    auto recordedName = std::make_shared<std::string>(name);
    auto onReconnecting = [this, recordedName](int attempt, const std::string& reason) {
        m_reconnecting[*recordedName] = attempt + 1;
        emit m_events->targetReconnecting(qs(*recordedName), attempt + 1, qs(reason));
    };
    auto made = m_resolver(name, onReconnecting);
    if (!made) {
        const QString why = qs(made.error().toString());
        if (m_targetErrors[name] != why)
            reportError(tr("Cannot reach target %1: %2").arg(qs(name), why));
        m_targetErrors[name] = why;
        return nullptr;
    }
    std::unique_ptr<core::RunTarget> target = std::move(made).value();
    const std::string recorded = target->name();
    *recordedName = recorded;
    if (recorded != name) {
        // Runs launched through `name` are recorded as `recorded`: one target object (and one
        // connection) serves both, here and in the session's routing.
        m_targetNames[name] = recorded;
        emit targetNamed(qs(name), qs(recorded));
        if (auto it = m_otherTargets.find(recorded); it != m_otherTargets.end())
            return it->second.get();
    }
    return m_otherTargets.emplace(recorded, std::move(target)).first->second.get();
}

void RunFollowWorker::poll()
{
    guarded(this, QT_TRANSLATE_NOOP("wb::ui::RunFollowWorker", "Polling runs"), [&] {
        const bool following = !m_followed.empty();
        for (auto it = m_followed.begin(); it != m_followed.end();) {
            pollOne(it->first, it->second);
            it = it->second.follower ? std::next(it) : m_followed.erase(it);
        }
        // While something streams, the list's step counts and losses move every poll; otherwise
        // re-list now and then so runs made elsewhere (the CLI) show up — the Main worker's job: a
        // Remote worker that follows nothing (say, one made for a mistyped target) asks for none.
        if (following || (m_role != Role::Remote && ++m_pollsSinceList >= kListEveryPolls))
            refreshRuns();
    });
}

void RunFollowWorker::pollOne(const std::string& runId, Followed& followed)
{
    const QString id = qs(runId);
    auto update = followed.follower->poll();
    const auto reconnecting = m_reconnecting.find(followed.targetName);
    if (!update) {
        const QString message = qs(update.error().toString());
        if (message != followed.lastError)
            reportError(tr("Run %1: %2").arg(id, message));
        followed.lastError = message;
        // A network error keeps "reconnecting": the next poll tries again. Anything else (a refused
        // host key or login) will not fix itself, so the list shows the error state instead.
        if (reconnecting != m_reconnecting.end() && update.error().code != core::ErrorCode::IoError) {
            m_reconnecting.erase(reconnecting);
            emit m_events->targetReconnecting(qs(followed.targetName), 0, message);
        }
        return;
    }
    followed.lastError.clear();
    if (reconnecting != m_reconnecting.end()) {
        m_reconnecting.erase(reconnecting);
        emit m_events->targetReconnecting(qs(followed.targetName), 0, QString());
    }
    if (!update->newSteps.empty())
        emit m_events->stepsArrived(id, StepList(update->newSteps.begin(), update->newSteps.end()));
    if (!update->newGpu.empty())
        emit m_events->gpuSamplesArrived(id, GpuList(update->newGpu.begin(), update->newGpu.end()), false);
    for (const auto& event : update->newEvents)
        emit m_events->eventLogged(id, qs(event.level), qs(event.msg));

    const core::RunState state = update->status.state;
    const QString message = qs(update->status.message);
    if (state != followed.lastState || message != followed.lastMessage) {
        followed.lastState = state;
        followed.lastMessage = message;
        m_messages[runId] = message;
        emit m_events->runStatusChanged(id, state, message);
    }
    if (update->finished) {
        emit m_events->runEnded(id, state, update->status.exitCode);
        followed.follower.reset();  // poll() erases the entry
    }
}

int64_t RunFollowWorker::trainItersOf(const std::string& runId)
{
    if (auto it = m_trainIters.find(runId); it != m_trainIters.end())
        return it->second;
    int64_t iters = 0;
    if (auto json = m_store->configJson(runId)) {
        auto parsed = core::parseRunConfig(json.value());
        iters = parsed.config.train.trainIters;  // defaults where the JSON is silent: still a guess
    }
    m_trainIters[runId] = iters;
    return iters;
}

void RunFollowWorker::reportError(const QString& message)
{
    wb::log::get("ui")->warn("{}", message.toStdString());
    emit m_events->errorOccurred(message);
}

}  // namespace wb::ui
