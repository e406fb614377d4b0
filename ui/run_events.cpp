#include "ui/run_events.h"

#include <QThread>

namespace wb::ui {

std::shared_ptr<RunEvents> RunEvents::create()
{
    return std::shared_ptr<RunEvents>(new RunEvents, [](RunEvents* events) {
        if (events->thread() == QThread::currentThread())
            delete events;
        else
            events->deleteLater();  // the last owner was a worker that outlived its session
    });
}

}  // namespace wb::ui
