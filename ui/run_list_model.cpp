#include "ui/run_list_model.h"

#include "ui/run_status_style.h"

#include <QFont>
#include <QLocale>

namespace wb::ui {
namespace {

QString stepsText(const RunRow& row)
{
    if (row.trainIters > 0)
        return QStringLiteral("%1 / %2").arg(row.summary.steps).arg(row.trainIters);
    return QString::number(row.summary.steps);
}

}  // namespace

int RunListModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : static_cast<int>(m_runs.size());
}

int RunListModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunListModel::data(const QModelIndex& index, int role) const
{
    const RunRow* row = runAt(index.row());
    if (!row)
        return {};
    const auto& s = row->summary;
    switch (role) {
    case Qt::DisplayRole:
        switch (index.column()) {
        case Id: return QString::fromStdString(s.id);
        case Name: return QString::fromStdString(s.name);
        case Target:
            // An imported run says whose it is: "imported · megatron-bridge".
            if (s.kind != core::kRunKindMoeTrain)
                return QString::fromStdString(s.target + " · " + s.kind);
            return QString::fromStdString(s.target);
        case Status:
            if (const int attempt = reconnectAttempt(*row))
                return tr("reconnecting (attempt %1)").arg(attempt);
            if (s.exitCode > 0 && s.status != core::RunState::Running)
                return tr("%1 (exit %2)").arg(statusLabel(s.status)).arg(s.exitCode);
            return statusLabel(s.status);
        case Steps: return stepsText(*row);
        case LastLoss: return s.lastLoss ? QLocale().toString(*s.lastLoss, 'f', 4) : QStringLiteral("—");
        }
        break;
    case Qt::ForegroundRole:
        if (index.column() == Status)
            return statusColor(reconnectAttempt(*row) ? QStringLiteral("reconnecting") : stateWord(s.status));
        break;
    case Qt::FontRole:
        if (index.column() == Status && reconnectAttempt(*row)) {
            QFont font;
            font.setItalic(true);
            return font;
        }
        break;
    case Qt::ToolTipRole: {
        QString tip = tr("Run %1 on %2\nRun directory: %3")
                          .arg(QString::fromStdString(s.id), QString::fromStdString(s.target),
                               QString::fromStdString(s.runDir));
        if (!row->message.isEmpty())
            tip += tr("\nStatus: %1").arg(row->message);
        if (reconnectAttempt(*row))
            tip += tr("\nConnection lost (%1); reconnecting. The run keeps going on the host; "
                      "no metrics are lost.")
                       .arg(m_reconnecting.value(QString::fromStdString(s.target)).reason);
        if (!s.dataSource.empty())
            tip += tr("\nData: %1").arg(QString::fromStdString(s.dataSource));
        if (s.malformedLines > 0)
            tip += tr("\nMalformed metric lines skipped: %1").arg(s.malformedLines);
        return tip;
    }
    case Qt::TextAlignmentRole:
        if (index.column() == Steps || index.column() == LastLoss)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        break;
    case kRunIdRole:
        return QString::fromStdString(s.id);
    default:
        break;
    }
    return {};
}

QVariant RunListModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Id: return tr("Run ID");
    case Name: return tr("Name");
    case Target: return tr("Target");
    case Status: return tr("Status");
    case Steps: return tr("Steps");
    case LastLoss: return tr("Last loss");
    }
    return {};
}

void RunListModel::setRuns(const RunRowList& runs)
{
    bool sameIds = runs.size() == m_runs.size();
    for (qsizetype i = 0; sameIds && i < runs.size(); ++i)
        sameIds = runs[i].summary.id == m_runs[i].summary.id;
    if (sameIds) {
        m_runs = runs;
        if (!m_runs.isEmpty())
            emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
        return;
    }
    beginResetModel();
    m_runs = runs;
    endResetModel();
}

void RunListModel::setTargetReconnecting(const QString& target, int attempt, const QString& reason)
{
    if (attempt > 0)
        m_reconnecting.insert(target, {attempt, reason});
    else if (!m_reconnecting.remove(target))
        return;
    if (!m_runs.isEmpty())
        emit dataChanged(index(0, Status), index(rowCount() - 1, Status));
}

QString RunListModel::reconnectReason(const RunRow& row) const
{
    return reconnectAttempt(row) ? m_reconnecting.value(QString::fromStdString(row.summary.target)).reason : QString();
}

int RunListModel::reconnectAttempt(const RunRow& row) const
{
    if (!core::isLive(row.summary.status))
        return 0;
    return m_reconnecting.value(QString::fromStdString(row.summary.target)).attempt;
}

const RunRow* RunListModel::runAt(int row) const
{
    return row >= 0 && row < m_runs.size() ? &m_runs[row] : nullptr;
}

const RunRow* RunListModel::runById(const QString& runId) const
{
    return runAt(rowOf(runId));
}

int RunListModel::rowOf(const QString& runId) const
{
    const std::string id = runId.toStdString();
    for (qsizetype i = 0; i < m_runs.size(); ++i) {
        if (m_runs[i].summary.id == id)
            return static_cast<int>(i);
    }
    return -1;
}

}  // namespace wb::ui
