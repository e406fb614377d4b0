#include "ui/run_status_style.h"

#include <QCoreApplication>

namespace wb::ui {

QColor statusColor(const QString& status)
{
    if (status == u"running")
        return QColor(0x1f, 0x77, 0xb4);
    if (status == u"finished")
        return QColor(0x2c, 0xa0, 0x2c);
    if (status == u"reconnecting")
        return QColor(0xe6, 0x8a, 0x00);  // amber: interrupted view, not a failed run
    if (status == u"pending")
        return QColor(0x8c, 0x6d, 0x31);
    if (status == u"cancelled" || status == u"stopped" || status.isEmpty())
        return QColor(0x7f, 0x7f, 0x7f);
    return QColor(0xd6, 0x27, 0x28);  // failed, oom, comm_error, bad_config, unknown
}

}  // namespace wb::ui

namespace wb::ui {

QString statusLabel(const QString& status)
{
    // The store's words (core::runStateName and status.json's), marked for lupdate.
    static const char* const kWords[] = {
        QT_TRANSLATE_NOOP("wb::ui::RunStatus", "pending"),    QT_TRANSLATE_NOOP("wb::ui::RunStatus", "running"),
        QT_TRANSLATE_NOOP("wb::ui::RunStatus", "finished"),   QT_TRANSLATE_NOOP("wb::ui::RunStatus", "failed"),
        QT_TRANSLATE_NOOP("wb::ui::RunStatus", "cancelled"),  QT_TRANSLATE_NOOP("wb::ui::RunStatus", "stopped"),
        QT_TRANSLATE_NOOP("wb::ui::RunStatus", "unknown"),    QT_TRANSLATE_NOOP("wb::ui::RunStatus", "oom"),
        QT_TRANSLATE_NOOP("wb::ui::RunStatus", "comm_error"), QT_TRANSLATE_NOOP("wb::ui::RunStatus", "bad_config"),
    };
    const QByteArray word = status.toUtf8();
    for (const char* known : kWords)
        if (word == known)
            return QCoreApplication::translate("wb::ui::RunStatus", known);
    return status;
}

QString statusDetail(const QString& status, const QString& message)
{
    const QString trimmed = message.trimmed();
    if (status.isEmpty() || !trimmed.startsWith(status, Qt::CaseInsensitive))
        return trimmed;
    const QString rest = trimmed.mid(status.size()).trimmed();
    return trimmed.size() == status.size() || trimmed.at(status.size()).isSpace() ? rest : trimmed;
}

QString stateWord(core::RunState state)
{
    return QString::fromLatin1(core::runStateName(state));
}

QColor statusColor(core::RunState state)
{
    return statusColor(stateWord(state));
}

QString statusLabel(core::RunState state)
{
    return statusLabel(stateWord(state));
}

QString statusDetail(core::RunState state, const QString& message)
{
    return statusDetail(stateWord(state), message);
}

}  // namespace wb::ui
