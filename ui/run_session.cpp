#include "ui/run_session.h"

#include <utility>

namespace wb::ui {

RunSession::RunSession(QString storePath, RunFollowWorker::TargetFactory targetFactory, TargetResolver resolver,
                       QObject* parent)
    : QObject(parent), m_storePath(std::move(storePath))
{
    registerMetaTypes();
    m_thread.setObjectName(QStringLiteral("run-session"));
    m_worker = new RunFollowWorker(m_storePath, std::move(targetFactory), std::move(resolver));
    m_worker->moveToThread(&m_thread);
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);

    // Worker -> GUI: signal-to-signal; the worker lives on another thread, so these are queued.
    connect(m_worker, &RunFollowWorker::ready, this, &RunSession::ready);
    connect(m_worker, &RunFollowWorker::runsListed, this, &RunSession::runsListed);
    connect(m_worker, &RunFollowWorker::runStarted, this, &RunSession::runStarted);
    connect(m_worker, &RunFollowWorker::launchFailed, this, &RunSession::launchFailed);
    connect(m_worker, &RunFollowWorker::stepsArrived, this, &RunSession::stepsArrived);
    connect(m_worker, &RunFollowWorker::historyLoaded, this, &RunSession::historyLoaded);
    connect(m_worker, &RunFollowWorker::runStatusChanged, this, &RunSession::runStatusChanged);
    connect(m_worker, &RunFollowWorker::runEnded, this, &RunSession::runEnded);
    connect(m_worker, &RunFollowWorker::eventLogged, this, &RunSession::eventLogged);
    connect(m_worker, &RunFollowWorker::errorOccurred, this, &RunSession::errorOccurred);
    connect(m_worker, &RunFollowWorker::targetReconnecting, this, &RunSession::targetReconnecting);
}

RunSession::~RunSession()
{
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

void RunSession::followRun(const QString& runId)
{
    QMetaObject::invokeMethod(
        m_worker, [worker = m_worker, runId] { worker->followRun(runId); }, Qt::QueuedConnection);
}

}  // namespace wb::ui
