// runInBackground: the GUI's one way to run a blocking job that is not a run target's (loading and
// charting a comparison from SQLite, an SSH connection test). `work` runs on a QThread of its own
// and touches only what it was given (copies, shared_ptrs, never the widget); `done(result)` runs
// afterwards on the GUI thread, and only if `receiver` still exists then. Nothing waits for the
// thread: the returned pointer (null once the thread is gone) lets an owner whose CPU-only work
// must not outlive it wait in its destructor; work that may block on the network is never waited
// for. Work that belongs to a run target (launch, follow, cancel) goes to that target's
// RunFollowWorker instead (RunSession), so one connection serves a run from launch to end.
// `work` must not throw: an exception that escapes is logged and `done` is not called.
// Threading: call on the GUI thread; `done` runs there.
#pragma once

#include "core/log.h"

#include <QCoreApplication>
#include <QPointer>
#include <QString>
#include <QThread>

#include <exception>
#include <memory>
#include <type_traits>
#include <utility>

namespace wb::ui {

template <typename Work, typename Done>
QPointer<QThread> runInBackground(QObject* receiver, const QString& name, Work work, Done done)
{
    using Result = std::invoke_result_t<Work&>;
    QPointer<QObject> alive(receiver);  // read on the GUI thread only
    QThread* thread = QThread::create([alive, name, work = std::move(work), done = std::move(done)]() mutable {
        std::shared_ptr<Result> result;
        try {
            result = std::make_shared<Result>(work());
        } catch (const std::exception& e) {
            wb::log::get("ui")->error("{}: unexpected exception: {}", name.toStdString(), e.what());
            return;
        }
        QMetaObject::invokeMethod(
            qApp,
            [alive, done = std::move(done), result]() mutable {
                if (alive)
                    done(std::move(*result));
            },
            Qt::QueuedConnection);
    });
    thread->setObjectName(name);
    QObject::connect(thread, &QThread::finished, thread, &QObject::deleteLater);
    thread->start();
    return thread;
}

}  // namespace wb::ui
