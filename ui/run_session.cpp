#include "ui/run_session.h"

#include <utility>

namespace wb::ui {

template <typename Call>
void RunSession::post(RunFollowWorker* worker, Call call)
{
    QMetaObject::invokeMethod(
        worker, [worker, call = std::move(call)] { call(worker); }, Qt::QueuedConnection);
}

RunSession::RunSession(QString storePath, RunFollowWorker::TargetFactory targetFactory, TargetResolver resolver,
                       QObject* parent)
    : QObject(parent), m_storePath(std::move(storePath)), m_resolver(std::move(resolver)), m_events(RunEvents::create())
{
    registerMetaTypes();
    m_thread.setObjectName(QStringLiteral("run-session"));
    const auto role = m_resolver ? RunFollowWorker::Role::Main : RunFollowWorker::Role::Standalone;
    m_worker = new RunFollowWorker(m_storePath, m_events, std::move(targetFactory), {}, role);
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);

    // Routing between workers (queued: the Main worker lives on another thread).
    connect(m_worker, &RunFollowWorker::followElsewhere, this, [this](const QString& runId, const QString& target) {
        if (RunFollowWorker* worker = remoteWorker(target))
            post(worker, [runId](RunFollowWorker* w) { w->followRun(runId); });
    });
    connect(m_worker, &RunFollowWorker::cancelElsewhere, this, [this](const QString& runId, const QString& target) {
        if (RunFollowWorker* worker = remoteWorker(target))
            post(worker, [runId](RunFollowWorker* w) { w->cancelRun(runId); });
    });
    connect(m_worker, &RunFollowWorker::launchElsewhere, this, [this](const LaunchRequest& request) {
        if (RunFollowWorker* worker = remoteWorker(request.target.trimmed()))
            post(worker, [request](RunFollowWorker* w) { w->launch(request); });
    });
}

RunFollowWorker* RunSession::remoteWorker(const QString& target)
{
    const auto named = m_remoteNames.find(target);
    const QString& spec = named != m_remoteNames.end() ? named->second : target;
    if (auto it = m_remote.find(spec); it != m_remote.end())
        return it->second.worker;
    if (!m_resolver)
        return nullptr;
    RemoteWorker remote;
    remote.thread = new QThread;  // no parent: it may outlive this session (see the destructor)
    remote.thread->setObjectName(QStringLiteral("run-session:") + spec);
    remote.worker = new RunFollowWorker(m_storePath, m_events, {}, m_resolver, RunFollowWorker::Role::Remote);
    remote.worker->moveToThread(remote.thread);
    connect(remote.thread, &QThread::finished, remote.worker, &QObject::deleteLater);
    connect(remote.worker, &RunFollowWorker::listingWanted, this, &RunSession::refreshRuns);
    connect(remote.worker, &RunFollowWorker::targetNamed, this, [this](const QString& asked, const QString& recorded) {
        const auto owner = m_remoteNames.find(asked);
        m_remoteNames.emplace(recorded, owner != m_remoteNames.end() ? owner->second : asked);
    });
    remote.thread->start();
    QMetaObject::invokeMethod(remote.worker, &RunFollowWorker::initialize, Qt::QueuedConnection);
    return m_remote.emplace(spec, remote).first->second.worker;
}

RunSession::~RunSession()
{
    // Each worker closes its store and target on its own thread, then ends that thread; queued
    // after whatever it was asked before, so nothing it holds is used after it is closed.
    const auto shutDown = [](RunFollowWorker* worker) {
        QMetaObject::invokeMethod(
            worker,
            [worker] {
                worker->shutdown();
                QThread::currentThread()->quit();
            },
            Qt::QueuedConnection);
    };
    for (auto& [spec, remote] : m_remote) {
        shutDown(remote.worker);
        if (remote.thread->wait(2000))
            delete remote.thread;
        // else: still inside a network call; it ends with the process (deleting a running QThread
        // would abort). It keeps the shared RunEvents alive and emits into it meanwhile.
    }
    if (m_thread.isRunning()) {
        // Runs keep going (they are detached); the next session follows them again from the stored offset.
        shutDown(m_worker);
        m_thread.wait();
    } else {
        delete m_worker;
    }
}

void RunSession::start()
{
    if (m_thread.isRunning())
        return;
    m_thread.start();
    QMetaObject::invokeMethod(m_worker, &RunFollowWorker::initialize, Qt::QueuedConnection);
}

quint64 RunSession::launch(LaunchRequest request)
{
    request.id = m_nextLaunch++;
    const quint64 id = request.id;
    post(m_worker, [request = std::move(request)](RunFollowWorker* w) { w->launch(request); });
    return id;
}

void RunSession::refreshRuns()
{
    QMetaObject::invokeMethod(m_worker, &RunFollowWorker::refreshRuns, Qt::QueuedConnection);
}

void RunSession::loadHistory(const QString& runId)
{
    post(m_worker, [runId](RunFollowWorker* w) { w->loadHistory(runId); });
}

void RunSession::cancelRun(const QString& runId)
{
    post(m_worker, [runId](RunFollowWorker* w) { w->cancelRun(runId); });
}

void RunSession::importBridgeRun(const BridgeImportArgs& args)
{
    post(m_worker, [args](RunFollowWorker* w) { w->importBridgeRun(args); });
}

void RunSession::renameRun(const QString& runId, const QString& name)
{
    post(m_worker, [runId, name](RunFollowWorker* w) { w->renameRun(runId, name); });
}

void RunSession::deleteRun(const QString& runId, bool withFiles)
{
    post(m_worker, [runId, withFiles](RunFollowWorker* w) { w->deleteRun(runId, withFiles); });
}

void RunSession::exportRunCsv(const QString& runId, const QString& path)
{
    post(m_worker, [runId, path](RunFollowWorker* w) { w->exportRunCsv(runId, path); });
}

}  // namespace wb::ui
