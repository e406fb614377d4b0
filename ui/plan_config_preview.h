// PlanConfigPreview: the generated files of the selected layout, one tab each (runtime JSON,
// Megatron-Bridge YAML overrides, the Hydra dotlist, the sbatch scripts, the launch scripts,
// prediction.json: everything `generate` writes), read-only, with Copy (to
// the clipboard) and Save (a file dialog, or saveCurrent(path) for tests).
// Threading: GUI thread only.
#pragma once

#include "core/planner/generators.h"

#include <QString>
#include <QWidget>

#include <vector>

QT_BEGIN_NAMESPACE
class QPlainTextEdit;
class QPushButton;
class QTabWidget;
QT_END_NAMESPACE

namespace wb::ui {

class PlanConfigPreview : public QWidget {
    Q_OBJECT

public:
    struct Document {
        QString title;     ///< tab label
        QString fileName;  ///< suggested file name for Save
        QString text;
        QString toolTip;  ///< what the file is for; may be empty
    };

    explicit PlanConfigPreview(QWidget* parent = nullptr);

    /// Replaces the tabs' texts (the tab order and the current tab stay).
    void setDocuments(const QList<Document>& documents);
    /// One tab per generated file: the configs first under their names in words (run.json,
    /// overrides.yaml, overrides.dotlist, run.sbatch), then the launch scripts and prediction.json,
    /// then any other file under its own name, in the order given.
    void setFiles(std::vector<core::planner::GeneratedFile> files);
    void clear();
    QTabWidget* tabs() const { return m_tabs; }
    QString currentText() const;
    QString text(int tab) const;
    /// The file the tab shows (as `generate` names it).
    QString fileName(int tab) const;

public slots:
    void copyCurrent();
    void saveCurrentAs();
    /// Writes the current tab to `path`; false (and a message in status()) on failure.
    bool saveCurrent(const QString& path);

signals:
    void status(const QString& message, bool isError);

private:
    QTabWidget* m_tabs = nullptr;
    QList<Document> m_documents;
    QPushButton* m_copy = nullptr;
    QPushButton* m_save = nullptr;
};

}  // namespace wb::ui
