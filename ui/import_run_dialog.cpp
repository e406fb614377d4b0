#include "ui/import_run_dialog.h"

#include "core/planner/catalog.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace wb::ui {

ImportRunDialog::ImportRunDialog(const QString& catalogDir, const QString& userCatalogDir, QWidget* parent)
    : QDialog(parent), m_catalogDir(catalogDir), m_userCatalogDir(userCatalogDir)
{
    setWindowTitle(tr("Import Megatron-Bridge run"));
    auto* intro = new QLabel(tr("A finished Megatron-Bridge (or Megatron-LM) job into the run store: its log "
                                "(the Slurm output file, or where its stdout went) and, when the job saved it, "
                                "the resolved config (logger.save_config_filepath). With the model and the GPU, "
                                "the planner's prediction for its layout is stored beside what it measured."),
                             this);
    intro->setWordWrap(true);

    const auto fileRow = [this](QLineEdit*& edit, const QString& placeholder, const QString& title, const QString& filter) {
        auto* row = new QWidget(this);
        auto* h = new QHBoxLayout(row);
        h->setContentsMargins(0, 0, 0, 0);
        edit = new QLineEdit(row);
        edit->setPlaceholderText(placeholder);
        auto* browseButton = new QPushButton(tr("Browse…"), row);
        h->addWidget(edit, 1);
        h->addWidget(browseButton);
        QLineEdit* target = edit;
        connect(browseButton, &QPushButton::clicked, this, [this, target, title, filter] { browse(target, title, filter); });
        connect(edit, &QLineEdit::textChanged, this, &ImportRunDialog::validate);
        return row;
    };

    auto* form = new QFormLayout;
    form->addRow(tr("&Log:"), fileRow(m_log, tr("slurm-1234.out, train.log …"), tr("The job's log"),
                                      tr("Logs (*.out *.log *.txt *.err);;All files (*)")));
    form->addRow(tr("&Config (optional):"), fileRow(m_config, tr("the resolved ConfigContainer YAML"),
                                                   tr("The job's resolved config"),
                                                   tr("YAML (*.yaml *.yml);;All files (*)")));
    form->addRow(tr("&TensorBoard (optional):"), fileRow(m_tensorboard, tr("logger.tensorboard_dir"),
                                                        tr("The job's TensorBoard folder"), QString()));
    m_name = new QLineEdit(this);
    m_name->setPlaceholderText(tr("the log's file name"));
    form->addRow(tr("&Name:"), m_name);

    m_model = new QComboBox(this);
    m_hardware = new QComboBox(this);
    m_model->addItem(tr("(not known: no prediction)"), QString());
    m_hardware->addItem(tr("(not known: no MFU, no prediction)"), QString());
    if (auto catalog = core::planner::loadCatalog(m_catalogDir.toStdString(), m_userCatalogDir.toStdString())) {
        for (const std::string& name : catalog->modelNames())
            m_model->addItem(QString::fromStdString(name), QString::fromStdString(name));
        for (const std::string& name : catalog->hardwareNames())
            m_hardware->addItem(QString::fromStdString(name), QString::fromStdString(name));
    }
    form->addRow(tr("&Model:"), m_model);
    form->addRow(tr("&GPU:"), m_hardware);
    m_gpus = new QSpinBox(this);
    m_gpus->setRange(0, 1 << 20);
    m_gpus->setSpecialValueText(tr("from the log"));
    m_gpus->setToolTip(tr("The world size. Megatron-LM logs it; Bridge does not, then the highest rank prefix "
                          "(srun -l, torchrun) is used and the import says so."));
    form->addRow(tr("GP&Us:"), m_gpus);

    m_problem = new QLabel(this);
    m_problem->setWordWrap(true);
    m_problem->setStyleSheet(QStringLiteral("color: palette(link);"));
    m_buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    m_buttons->button(QDialogButtonBox::Ok)->setText(tr("&Import"));
    connect(m_buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(m_buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->addWidget(intro);
    layout->addLayout(form);
    layout->addWidget(m_problem);
    layout->addWidget(m_buttons);
    resize(640, sizeHint().height());
    validate();
}

void ImportRunDialog::setFiles(const QString& logPath, const QString& configPath)
{
    m_log->setText(logPath);
    m_config->setText(configPath);
}

BridgeImportArgs ImportRunDialog::args() const
{
    BridgeImportArgs a;
    a.logPath = m_log->text().trimmed();
    a.configPath = m_config->text().trimmed();
    a.tensorboardDir = m_tensorboard->text().trimmed();
    a.name = m_name->text().trimmed();
    a.model = m_model->currentData().toString();
    a.hardware = m_hardware->currentData().toString();
    a.gpus = m_gpus->value();
    a.catalogDir = m_catalogDir;
    a.userCatalogDir = m_userCatalogDir;
    return a;
}

void ImportRunDialog::browse(QLineEdit* edit, const QString& title, const QString& filter)
{
    const QString start = edit->text().isEmpty() ? QFileInfo(m_log->text()).absolutePath() : edit->text();
    const QString path = filter.isEmpty() ? QFileDialog::getExistingDirectory(this, title, start)
                                          : QFileDialog::getOpenFileName(this, title, start, filter);
    if (!path.isEmpty())
        edit->setText(path);
}

void ImportRunDialog::validate()
{
    QString problem;
    const QString log = m_log->text().trimmed();
    const QString config = m_config->text().trimmed();
    if (log.isEmpty())
        problem = tr("Choose the job's log.");
    else if (!QFileInfo(log).isFile())
        problem = tr("No file %1: choose the log the job wrote.").arg(log);
    else if (!config.isEmpty() && !QFileInfo(config).isFile())
        problem = tr("No file %1: choose the YAML the job saved, or leave the config empty.").arg(config);
    const QString tensorboard = m_tensorboard->text().trimmed();
    if (problem.isEmpty() && !tensorboard.isEmpty() && !QFileInfo::exists(tensorboard))
        problem = tr("No folder %1: choose the run's logger.tensorboard_dir, or leave it empty.").arg(tensorboard);
    m_problem->setText(problem);
    m_problem->setVisible(!problem.isEmpty());
    m_buttons->button(QDialogButtonBox::Ok)->setEnabled(problem.isEmpty());
}

}  // namespace wb::ui
