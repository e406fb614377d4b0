#include "ui/run_session.h"

#include <utility>

namespace wb::ui {

RunSession::RunSession(QString storePath, RunFollowWorker::TargetFactory targetFactory, TargetResolver resolver,
                       QObject* parent)
    : QObject(parent), m_storePath(std::move(storePath)), m_resolver(std::move(resolver))
{
    registerMetaTypes();
    m_thread.setObjectName(QStringLiteral("run-session"));
    const auto role = m_resolver ? RunFollowWorker::Role::Main : RunFollowWorker::Role::Standalone;
    m_worker = new RunFollowWorker(m_storePath, std::move(targetFactory), {}, role);
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);

    // Worker -> GUI: signal-to-signal; the worker lives on another thread, so these are queued.
    connect(m_worker, &RunFollowWorker::ready, this, &RunSession::ready);
    connect(m_worker, &RunFollowWorker::runsListed, this, &RunSession::runsListed);
    connect(m_worker, &RunFollowWorker::runStarted, this, &RunSession::runStarted);
    connect(m_worker, &RunFollowWorker::launchFailed, this, &RunSession::launchFailed);
    connect(m_worker, &RunFollowWorker::stepsArrived, this, &RunSession::stepsArrived);
    connect(m_worker, &RunFollowWorker::historyLoaded, this, &RunSession::historyLoaded);
    connect(m_worker, &RunFollowWorker::gpuSamplesArrived, this, &RunSession::gpuSamplesArrived);
    connect(m_worker, &RunFollowWorker::runStatusChanged, this, &RunSession::runStatusChanged);
    connect(m_worker, &RunFollowWorker::runEnded, this, &RunSession::runEnded);
    connect(m_worker, &RunFollowWorker::eventLogged, this, &RunSession::eventLogged);
    connect(m_worker, &RunFollowWorker::errorOccurred, this, &RunSession::errorOccurred);
    connect(m_worker, &RunFollowWorker::runImported, this, &RunSession::runImported);
    connect(m_worker, &RunFollowWorker::importFailed, this, &RunSession::importFailed);
    connect(m_worker, &RunFollowWorker::runManaged, this, &RunSession::runManaged);
    connect(m_worker, &RunFollowWorker::targetReconnecting, this, &RunSession::targetReconnecting);
    connect(m_worker, &RunFollowWorker::followElsewhere, this, [this](const QString& runId, const QString& target) {
        if (RunFollowWorker* worker = remoteWorker(target))
            QMetaObject::invokeMethod(worker, [worker, runId] { worker->followRun(runId); }, Qt::QueuedConnection);
    });
    connect(m_worker, &RunFollowWorker::cancelElsewhere, this, [this](const QString& runId, const QString& target) {
        if (RunFollowWorker* worker = remoteWorker(target))
            QMetaObject::invokeMethod(worker, [worker, runId] { worker->cancelRun(runId); }, Qt::QueuedConnection);
    });
}

RunFollowWorker* RunSession::remoteWorker(const QString& target)
{
    if (auto it = m_remote.find(target); it != m_remote.end())
        return it->second.worker;
    if (!m_resolver)
        return nullptr;
    RemoteWorker remote;
    remote.thread = new QThread;  // no parent: it may outlive this session (see the destructor)
    remote.thread->setObjectName(QStringLiteral("run-session:") + target);
    remote.worker = new RunFollowWorker(m_storePath, {}, m_resolver, RunFollowWorker::Role::Remote);
    remote.worker->moveToThread(remote.thread);
    connect(remote.thread, &QThread::finished, remote.worker, &QObject::deleteLater);
    RunFollowWorker* worker = remote.worker;
    connect(worker, &RunFollowWorker::stepsArrived, this, &RunSession::stepsArrived);
    connect(worker, &RunFollowWorker::gpuSamplesArrived, this, &RunSession::gpuSamplesArrived);
    connect(worker, &RunFollowWorker::runStatusChanged, this, &RunSession::runStatusChanged);
    connect(worker, &RunFollowWorker::runEnded, this, &RunSession::runEnded);
    connect(worker, &RunFollowWorker::eventLogged, this, &RunSession::eventLogged);
    connect(worker, &RunFollowWorker::errorOccurred, this, &RunSession::errorOccurred);
    connect(worker, &RunFollowWorker::targetReconnecting, this, &RunSession::targetReconnecting);
    connect(worker, &RunFollowWorker::listingWanted, this, &RunSession::refreshRuns);
    remote.thread->start();
    QMetaObject::invokeMethod(worker, &RunFollowWorker::initialize, Qt::QueuedConnection);
    m_remote.emplace(target, remote);
    return worker;
}

RunSession::~RunSession()
{
    for (auto& [target, remote] : m_remote) {
        QMetaObject::invokeMethod(remote.worker, &RunFollowWorker::shutdown, Qt::QueuedConnection);
        remote.thread->quit();
        if (remote.thread->wait(2000))
            delete remote.thread;
        // else: still inside a network call; it ends with the process (deleting a running QThread
        // would abort). Its signals to this session are disconnected when this object goes.
    }
    if (m_thread.isRunning()) {
        // Close the store and target on the thread that owns them, then end the thread. Runs keep
        // going (they are detached); the next session follows them again from the stored offset.
        QMetaObject::invokeMethod(m_worker, &RunFollowWorker::shutdown, Qt::BlockingQueuedConnection);
        m_thread.quit();
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

void RunSession::refreshRuns()
{
    QMetaObject::invokeMethod(m_worker, &RunFollowWorker::refreshRuns, Qt::QueuedConnection);
}

void RunSession::startRun(const QString& name, const QString& configJson)
{
    QMetaObject::invokeMethod(
        m_worker, [worker = m_worker, name, configJson] { worker->startRun(name, configJson); },
        Qt::QueuedConnection);
}

void RunSession::loadHistory(const QString& runId)
{
    QMetaObject::invokeMethod(
        m_worker, [worker = m_worker, runId] { worker->loadHistory(runId); }, Qt::QueuedConnection);
}

void RunSession::cancelRun(const QString& runId)
{
    QMetaObject::invokeMethod(
        m_worker, [worker = m_worker, runId] { worker->cancelRun(runId); }, Qt::QueuedConnection);
}

}  // namespace wb::ui

namespace wb::ui {

void RunSession::importBridgeRun(const BridgeImportArgs& args)
{
    QMetaObject::invokeMethod(
        m_worker, [worker = m_worker, args] { worker->importBridgeRun(args); }, Qt::QueuedConnection);
}

void RunSession::followRun(const QString& runId)
{
    QMetaObject::invokeMethod(
        m_worker, [worker = m_worker, runId] { worker->followRun(runId); }, Qt::QueuedConnection);
}

}  // namespace wb::ui

namespace wb::ui {

void RunSession::renameRun(const QString& runId, const QString& name)
{
    QMetaObject::invokeMethod(
        m_worker, [worker = m_worker, runId, name] { worker->renameRun(runId, name); }, Qt::QueuedConnection);
}

void RunSession::deleteRun(const QString& runId, bool withFiles)
{
    QMetaObject::invokeMethod(
        m_worker, [worker = m_worker, runId, withFiles] { worker->deleteRun(runId, withFiles); }, Qt::QueuedConnection);
}

void RunSession::exportRunCsv(const QString& runId, const QString& path)
{
    QMetaObject::invokeMethod(
        m_worker, [worker = m_worker, runId, path] { worker->exportRunCsv(runId, path); }, Qt::QueuedConnection);
}

}  // namespace wb::ui
