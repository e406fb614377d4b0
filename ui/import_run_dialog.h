// ImportRunDialog: "Import Megatron-Bridge run…" — the files a Bridge job left (its log, and the
// resolved ConfigContainer YAML when the job saved one), the model and GPU for the planner's
// prediction, the world size when the log does not state it. Only collects the choice; the import
// runs on the session's worker. GUI thread only.
#pragma once

#include "ui/run_follow_worker.h"

#include <QDialog>

class QComboBox;
class QDialogButtonBox;
class QLabel;
class QLineEdit;
class QSpinBox;

namespace wb::ui {

class ImportRunDialog : public QDialog {
    Q_OBJECT

public:
    /// `catalogDir` / `userCatalogDir`: the planner's catalog, for the model and GPU lists.
    ImportRunDialog(const QString& catalogDir, const QString& userCatalogDir, QWidget* parent = nullptr);

    BridgeImportArgs args() const;
    /// Pre-fills the files (tests, a drop on the window).
    void setFiles(const QString& logPath, const QString& configPath);

private:
    void browse(QLineEdit* edit, const QString& title, const QString& filter);  ///< filter "" = a folder
    void validate();

    QString m_catalogDir, m_userCatalogDir;
    QLineEdit* m_log = nullptr;
    QLineEdit* m_config = nullptr;
    QLineEdit* m_tensorboard = nullptr;
    QLineEdit* m_name = nullptr;
    QComboBox* m_model = nullptr;
    QComboBox* m_hardware = nullptr;
    QSpinBox* m_gpus = nullptr;
    QLabel* m_problem = nullptr;
    QDialogButtonBox* m_buttons = nullptr;
};

}  // namespace wb::ui
