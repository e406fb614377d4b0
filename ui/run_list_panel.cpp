#include "ui/run_list_panel.h"

#include "ui/run_list_model.h"
#include "ui/run_status_style.h"

#include <QClipboard>
#include <QDateTime>
#include <QDesktopServices>
#include <QFileInfo>
#include <QGuiApplication>
#include <QMenu>
#include <QUrl>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QSignalBlocker>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>

namespace wb::ui {

RunListPanel::RunListPanel(QWidget* parent) : QWidget(parent)
{
    m_model = new RunListModel(this);
    m_view = new QTableView(this);
    m_view->setObjectName(QStringLiteral("runTable"));
    m_view->setModel(m_model);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_view->setAlternatingRowColors(true);
    m_view->setWordWrap(false);
    m_view->verticalHeader()->setVisible(false);
    m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 8);
    auto* header = m_view->horizontalHeader();
    header->setHighlightSections(false);
    header->setSectionResizeMode(QHeaderView::Interactive);
    header->setStretchLastSection(true);
    const int digit = m_view->fontMetrics().horizontalAdvance(QLatin1Char('0'));
    m_view->setColumnWidth(RunListModel::Id, digit * 20);
    m_view->setColumnWidth(RunListModel::Name, digit * 12);
    m_view->setColumnWidth(RunListModel::Target, digit * 7);
    m_view->setColumnWidth(RunListModel::Status, digit * 9);
    m_view->setColumnWidth(RunListModel::Steps, digit * 10);
    connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            &RunListPanel::onCurrentChanged);
    connect(m_model, &QAbstractItemModel::dataChanged, this, &RunListPanel::updateDetails);
    m_view->setContextMenuPolicy(Qt::CustomContextMenu);
    connect(m_view, &QWidget::customContextMenuRequested, this, [this](const QPoint& pos) {
        const RunRow* run = m_model->runAt(m_view->indexAt(pos).row());
        if (!run)
            return;
        QMenu* menu = contextMenuFor(QString::fromStdString(run->summary.id));
        menu->setAttribute(Qt::WA_DeleteOnClose);
        menu->popup(m_view->viewport()->mapToGlobal(pos));
    });

    m_header = new QLabel(tr("<b>Runs</b>"), this);
    m_details = new QLabel(this);
    m_details->setObjectName(QStringLiteral("runDetails"));
    m_details->setWordWrap(true);
    m_details->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_details->setFrameShape(QFrame::StyledPanel);
    m_details->setMargin(6);
    m_details->setMinimumHeight(m_details->fontMetrics().height() * 5);
    m_details->setAlignment(Qt::AlignTop | Qt::AlignLeft);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    layout->addWidget(m_header);
    layout->addWidget(m_view, 1);
    layout->addWidget(m_details);
    updateDetails();
}

QString RunListPanel::selectedRunId() const
{
    return m_selectedId;
}

void RunListPanel::setRuns(const RunRowList& runs)
{
    {
        // A reset drops the selection; put it back without telling anyone it "changed".
        const QSignalBlocker blocker(m_view->selectionModel());
        const int rowsBefore = m_model->rowCount();
        m_model->setRuns(runs);
        if (rowsBefore == 0 && !runs.isEmpty())
            fitColumns();
        const int row = m_model->rowOf(m_selectedId);
        if (row >= 0 && m_view->selectionModel()->currentIndex().row() != row)
            m_view->selectionModel()->setCurrentIndex(
                m_model->index(row, 0), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    }
    m_header->setText(tr("<b>Runs</b> &nbsp;<span style='color:gray'>%n in the store</span>", nullptr,
                         static_cast<int>(runs.size())));
    if (!m_pendingSelection.isEmpty() && m_model->rowOf(m_pendingSelection) >= 0) {
        const QString id = m_pendingSelection;
        m_pendingSelection.clear();
        selectRun(id);
    }
    updateDetails();
}

void RunListPanel::fitColumns()
{
    // Once, when the first rows arrive: fitting on every refresh would cost a pass over all rows
    // three times a second and make columns jitter while the user drags them.
    for (int column = 0; column < RunListModel::LastLoss; ++column)
        m_view->resizeColumnToContents(column);
    // The first rows are usually "running" at step 0; leave room for what they grow into.
    const auto atLeast = [this](int column, const QString& sample) {
        const int width = m_view->fontMetrics().horizontalAdvance(sample) + 16;
        m_view->setColumnWidth(column, std::max(m_view->columnWidth(column), width));
    };
    atLeast(RunListModel::Status, statusLabel(core::RunState::Cancelled));
    // Room for the longest "steps / planned" these runs reach, not a fixed 4-digit guess: at the
    // default window size the last column was cut (issue 18 item 7).
    int64_t planned = 0;
    for (int row = 0; row < m_model->rowCount(); ++row)
        if (const RunRow* run = m_model->runAt(row))
            planned = std::max({planned, run->trainIters, run->summary.steps});
    const QString digits(QString::number(std::max<int64_t>(planned, 99)).size(), QLatin1Char('8'));
    atLeast(RunListModel::Steps, digits + QStringLiteral(" / ") + digits);
}

QMenu* RunListPanel::contextMenuFor(const QString& runId)
{
    const RunRow* run = m_model->runById(runId);
    if (!run)
        return nullptr;
    const auto& s = run->summary;
    const bool live = core::isLive(s.status);
    auto* menu = new QMenu(this);
    menu->setObjectName(QStringLiteral("runContextMenu"));
    const auto add = [menu](const QString& text, const char* name, auto&& slot) {
        QAction* action = menu->addAction(text);
        action->setObjectName(QLatin1String(name));
        QObject::connect(action, &QAction::triggered, menu, slot);
        return action;
    };
    add(tr("&Rename…"), "renameRunAction", [this, runId] { emit renameRequested(runId); });
    QAction* remove = add(live ? tr("&Delete… (cancel the run first)") : tr("&Delete…"), "deleteRunAction",
                          [this, runId] { emit deleteRequested(runId); });
    remove->setEnabled(!live);
    add(tr("&Export steps as CSV…"), "exportRunCsvAction", [this, runId] { emit exportCsvRequested(runId); });
    menu->addSeparator();
    add(tr("&Copy run id"), "copyRunIdAction", [runId] { QGuiApplication::clipboard()->setText(runId); });
    const QString dir = QString::fromStdString(s.runDir);
    QAction* open = add(tr("&Open run directory"), "openRunDirAction",
                        [dir] { QDesktopServices::openUrl(QUrl::fromLocalFile(dir)); });
    // Only this machine's folders open here; a remote run's directory is on its host.
    open->setEnabled(s.target == "local" && !dir.isEmpty() && QFileInfo(dir).isDir());
    if (s.target != "local")
        open->setToolTip(tr("The run directory is on %1").arg(QString::fromStdString(s.target)));
    return menu;
}

void RunListPanel::selectRun(const QString& runId)
{
    const int row = m_model->rowOf(runId);
    if (row < 0) {
        m_pendingSelection = runId;
        return;
    }
    m_view->selectionModel()->setCurrentIndex(
        m_model->index(row, 0), QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_view->scrollTo(m_model->index(row, 0));
}

void RunListPanel::onCurrentChanged()
{
    const RunRow* run = m_model->runAt(m_view->selectionModel()->currentIndex().row());
    const QString id = run ? QString::fromStdString(run->summary.id) : QString();
    if (id == m_selectedId)
        return;
    m_selectedId = id;
    updateDetails();
    emit runSelected(id, run ? QString::fromStdString(run->summary.name) : QString());
    if (run)
        emit selectedRunPlannedSteps(run->trainIters);
}

void RunListPanel::updateDetails()
{
    const RunRow* run = m_model->runById(m_selectedId);
    if (!run) {
        m_details->setText(m_model->rowCount() == 0
                               ? tr("No runs yet. Start one with <b>Start sample run</b> in the toolbar.")
                               : tr("Select a run to see its charts."));
        return;
    }
    emit selectedRunPlannedSteps(run->trainIters);
    const auto& s = run->summary;
    QString text = tr("<b>%1</b> (%2)<br>Status: <b>%3</b>%4<br>Steps: %5%6<br>Started: %8 on %9"
                      "<br>Run directory: %7")
                       .arg(QString::fromStdString(s.name).toHtmlEscaped(),
                            QString::fromStdString(s.id).toHtmlEscaped(),
                            statusLabel(s.status).toHtmlEscaped(),
                            statusDetail(s.status, run->message).isEmpty()
                                ? QString()
                                : QStringLiteral(" — ") + statusDetail(s.status, run->message).toHtmlEscaped(),
                            QString::number(s.steps),
                            run->trainIters > 0 ? tr(" of %1").arg(run->trainIters) : QString(),
                            QString::fromStdString(s.runDir).toHtmlEscaped(),
                            QDateTime::fromSecsSinceEpoch(static_cast<qint64>(s.createdAt))
                                .toString(QStringLiteral("yyyy-MM-dd HH:mm:ss")),
                            QString::fromStdString(s.target).toHtmlEscaped());
    if (!s.dataSource.empty())
        text += tr("<br>Data: %1").arg(QString::fromStdString(s.dataSource).toHtmlEscaped());
    m_details->setText(text);
}

}  // namespace wb::ui
