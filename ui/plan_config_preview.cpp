// PlanConfigPreview: texts arrive whole (generated on the GUI thread from one RunConfig: cheap);
// Save writes through QSaveFile so a failed write never leaves half a script behind.
#include "ui/plan_config_preview.h"

#include <QApplication>
#include <QClipboard>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QHBoxLayout>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSaveFile>
#include <QTabWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace wb::ui {

PlanConfigPreview::PlanConfigPreview(QWidget* parent) : QWidget(parent)
{
    m_tabs = new QTabWidget(this);
    m_tabs->setObjectName(QStringLiteral("planPreviewTabs"));
    m_copy = new QPushButton(tr("Copy"), this);
    m_copy->setObjectName(QStringLiteral("planCopyButton"));
    m_save = new QPushButton(tr("Save…"), this);
    m_save->setObjectName(QStringLiteral("planSaveButton"));
    connect(m_copy, &QPushButton::clicked, this, &PlanConfigPreview::copyCurrent);
    connect(m_save, &QPushButton::clicked, this, &PlanConfigPreview::saveCurrentAs);

    auto* buttons = new QHBoxLayout;
    buttons->addStretch(1);
    buttons->addWidget(m_copy);
    buttons->addWidget(m_save);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(m_tabs, 1);
    layout->addLayout(buttons);
    clear();
}

void PlanConfigPreview::setDocuments(const QList<Document>& documents)
{
    const int current = m_tabs->currentIndex();
    m_documents = documents;
    while (m_tabs->count() > documents.size())
        m_tabs->removeTab(m_tabs->count() - 1);
    const QFont mono = QFontDatabase::systemFont(QFontDatabase::FixedFont);
    for (int i = 0; i < documents.size(); ++i) {
        QPlainTextEdit* edit = nullptr;
        if (i < m_tabs->count()) {
            edit = qobject_cast<QPlainTextEdit*>(m_tabs->widget(i));
            m_tabs->setTabText(i, documents[i].title);
        } else {
            edit = new QPlainTextEdit(m_tabs);
            edit->setReadOnly(true);
            edit->setFont(mono);
            edit->setLineWrapMode(QPlainTextEdit::NoWrap);
            m_tabs->addTab(edit, documents[i].title);
        }
        edit->setPlainText(documents[i].text);
        m_tabs->setTabToolTip(i, documents[i].toolTip);
    }
    if (current >= 0 && current < m_tabs->count())
        m_tabs->setCurrentIndex(current);
    const bool any = !documents.isEmpty();
    m_copy->setEnabled(any);
    m_save->setEnabled(any);
}

void PlanConfigPreview::setFiles(std::vector<core::planner::GeneratedFile> files)
{
    static const std::pair<const char*, const char*> kTitled[] = {
        {"run.json", QT_TR_NOOP("Runtime JSON")},
        {"overrides.yaml", QT_TR_NOOP("Megatron-Bridge YAML")},
        {"overrides.dotlist", QT_TR_NOOP("Megatron-Bridge dotlist")},
        {"run.sbatch", QT_TR_NOOP("sbatch")},
        {"perf_launch.sh", nullptr},
        {"env.sh", nullptr},
        {"env.slurm.sh", nullptr},
        {"launch_ssh.sh", nullptr},
        {"prediction.json", nullptr},
    };
    QList<Document> documents;
    const auto take = [&](std::vector<core::planner::GeneratedFile>::iterator it, const char* title) {
        const QString name = QString::fromStdString(it->name);
        documents.append({title ? tr(title) : name, name, QString::fromStdString(it->content)});
        files.erase(it);
    };
    for (const auto& [name, title] : kTitled) {
        const auto it = std::find_if(files.begin(), files.end(), [&](const auto& f) { return f.name == name; });
        if (it != files.end())
            take(it, title);
    }
    while (!files.empty())
        take(files.begin(), nullptr);
    for (Document& d : documents)
        if (d.fileName == u"prediction.json")
            d.toolTip =
                tr("What generate --format runtime writes beside run.json: moe-train's predicted step time and "
                   "memory for this layout (a launch stores it with the run). The table predicts Megatron-Bridge; "
                   "generate --format megatron-bridge writes that prediction beside its files.");
    setDocuments(documents);
}

void PlanConfigPreview::clear()
{
    setDocuments({});
}

QString PlanConfigPreview::text(int tab) const
{
    return tab >= 0 && tab < m_documents.size() ? m_documents[tab].text : QString();
}

QString PlanConfigPreview::fileName(int tab) const
{
    return tab >= 0 && tab < m_documents.size() ? m_documents[tab].fileName : QString();
}

QString PlanConfigPreview::currentText() const
{
    return text(m_tabs->currentIndex());
}

void PlanConfigPreview::copyCurrent()
{
    QApplication::clipboard()->setText(currentText());
    emit status(tr("Copied %1 to the clipboard.").arg(m_tabs->tabText(m_tabs->currentIndex())), false);
}

void PlanConfigPreview::saveCurrentAs()
{
    const int tab = m_tabs->currentIndex();
    if (tab < 0 || tab >= m_documents.size())
        return;
    const QString path =
        QFileDialog::getSaveFileName(this, tr("Save %1").arg(m_documents[tab].title), m_documents[tab].fileName);
    if (!path.isEmpty())
        saveCurrent(path);
}

bool PlanConfigPreview::saveCurrent(const QString& path)
{
    const int tab = m_tabs->currentIndex();
    if (tab < 0 || tab >= m_documents.size())
        return false;
    QSaveFile file(path);
    const QByteArray bytes = m_documents[tab].text.toUtf8();
    if (!file.open(QIODevice::WriteOnly) || file.write(bytes) != bytes.size() || !file.commit()) {
        emit status(tr("Cannot save %1: %2").arg(path, file.errorString()), true);
        return false;
    }
    if (m_documents[tab].fileName.endsWith(QLatin1String(".sh")))
        file.setPermissions(QFileInfo(path).permissions() | QFileDevice::ExeOwner | QFileDevice::ExeUser);
    emit status(tr("Saved %1.").arg(QFileInfo(path).fileName()), false);
    return true;
}

}  // namespace wb::ui
