#include "ui/launch_dialog.h"

#include "core/bridge/bridge_launch.h"
#include "core/run_config.h"
#include "core/run_prediction.h"
#include "ui/run_session.h"

#include <QComboBox>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGridLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QRegularExpression>
#include <QVBoxLayout>

#include <algorithm>
#include <filesystem>
#include <utility>

namespace wb::ui {
namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

constexpr int kBarSteps = 1000;

}  // namespace

const char* LaunchDialog::phaseName(int phase)
{
    static const char* const names[kPhaseCount] = {"check", "upload", "build", "start"};
    return phase >= 0 && phase < kPhaseCount ? names[phase] : "";
}

LaunchDialog::LaunchDialog(LaunchDialogOptions options, QWidget* parent)
    : QDialog(parent), m_options(std::move(options))
{
    setObjectName(QStringLiteral("launchDialog"));
    setWindowTitle(tr("Launch a run"));

    m_target = new QComboBox(this);
    m_target->setObjectName(QStringLiteral("targetBox"));
    m_target->setEditable(true);
    m_target->setInsertPolicy(QComboBox::NoInsert);
    m_target->setToolTip(
        tr("local: this machine. ssh:HOST: a host from Remote → SSH hosts. ssh:HOST1,HOST2: "
           "one run over several registered hosts (a launch per node). slurm:HOST: a Slurm "
           "cluster through its login host, for hosts with settings in slurm.json; Megatron-Bridge "
           "jobs go there only."));

    m_configPath = new QLineEdit(this);
    m_configPath->setObjectName(QStringLiteral("configPath"));
    m_configPath->setPlaceholderText(tr("a runtime config (.json), or the planning view's"));
    auto* browse = new QPushButton(tr("&Browse…"), this);
    connect(browse, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Run configuration"), QString(),
                                                          tr("Run configs (*.json);;All files (*)"));
        if (!path.isEmpty())
            loadConfigFile(path);
    });
    connect(m_configPath, &QLineEdit::editingFinished, this, [this] {
        const QString path = m_configPath->text();
        if (path.isEmpty() || !m_configPath->isModified())
            return;
        if (QFileInfo(path).isDir())
            loadBridgeFolder(path);  // a typed folder: a Megatron-Bridge job
        else
            loadConfigFile(path);
    });
    auto* bridge = new QPushButton(tr("Megatron-Bridge &job…"), this);
    bridge->setObjectName(QStringLiteral("bridgeFolderButton"));
    bridge->setToolTip(
        tr("A folder written by `moe-workbench-cli generate --format megatron-bridge` (bridge_job.json, "
           "bridge.sbatch, the overrides): submitted on a slurm:HOST target and followed like any run."));
    connect(bridge, &QPushButton::clicked, this, [this] {
        const QString dir = QFileDialog::getExistingDirectory(this, tr("Megatron-Bridge job folder"));
        if (!dir.isEmpty())
            loadBridgeFolder(dir);
    });
    auto* fileRow = new QHBoxLayout;
    fileRow->addWidget(m_configPath, 1);
    fileRow->addWidget(browse);
    fileRow->addWidget(bridge);
    m_config = new QPlainTextEdit(this);
    m_config->setObjectName(QStringLiteral("configJson"));
    m_config->setPlaceholderText(tr("The config's JSON appears here; you can edit it before launching."));
    m_config->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_prediction = new QLabel(this);
    m_prediction->setObjectName(QStringLiteral("predictionLabel"));
    m_prediction->setWordWrap(true);
    m_prediction->setVisible(false);
    m_fitWarning = new QLabel(this);
    m_fitWarning->setObjectName(QStringLiteral("launchFitWarning"));
    m_fitWarning->setWordWrap(true);
    m_fitWarning->setStyleSheet(QStringLiteral("background: #fff3cd; color: #664d03; padding: 4px; border: 1px solid #ffe69c;"));
    m_fitWarning->setVisible(false);
    m_name = new QLineEdit(this);
    m_name->setObjectName(QStringLiteral("runName"));
    m_name->setPlaceholderText(tr("the config's name"));

    auto* form = new QFormLayout;
    form->addRow(tr("Target:"), m_target);
    form->addRow(tr("Config file:"), fileRow);
    m_configLabel = new QLabel(tr("Config:"), this);
    m_configLabel->setObjectName(QStringLiteral("configLabel"));
    form->addRow(m_configLabel, m_config);
    form->addRow(QString(), m_prediction);
    form->addRow(QString(), m_fitWarning);
    form->addRow(tr("Run name:"), m_name);

    auto* progressBox = new QGroupBox(tr("Progress"), this);
    auto* grid = new QGridLayout(progressBox);
    const QString titles[kPhaseCount] = {tr("Check the node"), tr("Upload the runtime"), tr("Build moe-train"),
                                         tr("Start the run")};
    for (int phase = 0; phase < kPhaseCount; ++phase) {
        m_bars[phase] = new QProgressBar(progressBox);
        m_bars[phase]->setObjectName(QStringLiteral("%1Bar").arg(QLatin1String(phaseName(phase))));
        m_bars[phase]->setRange(0, kBarSteps);
        m_bars[phase]->setMinimumWidth(220);
        m_phaseLabels[phase] = new QLabel(progressBox);
        m_phaseLabels[phase]->setObjectName(QStringLiteral("%1Text").arg(QLatin1String(phaseName(phase))));
        grid->addWidget(new QLabel(titles[phase], progressBox), phase, 0);
        grid->addWidget(m_bars[phase], phase, 1);
        grid->addWidget(m_phaseLabels[phase], phase, 2);
    }
    grid->setColumnStretch(2, 1);

    m_error = new QPlainTextEdit(this);
    m_error->setObjectName(QStringLiteral("launchError"));
    m_error->setReadOnly(true);
    m_error->setStyleSheet(QStringLiteral("color: #d62728;"));
    m_error->setMaximumHeight(m_error->fontMetrics().height() * 7);
    m_error->setVisible(false);

    auto* buttons = new QDialogButtonBox(this);
    m_launch = buttons->addButton(tr("&Launch"), QDialogButtonBox::AcceptRole);
    m_launch->setObjectName(QStringLiteral("launchButton"));
    m_launch->setDefault(true);
    buttons->addButton(QDialogButtonBox::Close);
    // Launch does not close the dialog: the progress is the point. Close only hides it (a launch
    // under way keeps going; its run shows up in the list).
    connect(buttons, &QDialogButtonBox::accepted, this, [this] { launch(); });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form, 1);
    layout->addWidget(progressBox);
    layout->addWidget(m_error);
    layout->addWidget(buttons);
    resize(760, 640);
    reloadTargets();
    resetPhases();
    connect(m_target, &QComboBox::currentTextChanged, this, &LaunchDialog::updateFitWarning);
    if (m_options.session) {
        connect(m_options.session->events(), &RunEvents::launchProgress, this, &LaunchDialog::onProgress);
        connect(m_options.session->events(), &RunEvents::launchFinished, this, &LaunchDialog::onFinished);
    }
}

void LaunchDialog::reloadTargets()
{
    const QString current = m_target->currentText();
    QString error;
    QStringList choices = launchTargetChoices(m_options.hostsPath.toStdString(), &error);
    // Several nodes, offered as text to edit (the first two hosts; the user lists the real ones).
    QStringList hosts;
    for (const QString& choice : choices)
        if (choice.startsWith(QStringLiteral("ssh:")))
            hosts << choice.mid(4);
    if (hosts.size() >= 2)
        choices << QStringLiteral("ssh:") + hosts.mid(0, 2).join(QLatin1Char(','));
    m_target->clear();
    m_target->addItems(choices);
    if (!current.isEmpty())
        m_target->setCurrentText(current);
    if (!error.isEmpty())
        showError(tr("The registered hosts cannot be read: %1").arg(error));
}

void LaunchDialog::setTarget(const QString& target)
{
    m_target->setCurrentText(target);
}

void LaunchDialog::setRunName(const QString& name)
{
    m_name->setText(name);
}

void LaunchDialog::setConfigJson(const QString& configJson, const QString& predictionJson)
{
    m_bridgeDir.clear();
    m_configLabel->setText(tr("Config:"));
    m_config->setReadOnly(false);
    m_name->setPlaceholderText(tr("the config's name"));
    m_configPath->setText(QString());
    m_configPath->setPlaceholderText(tr("(from the planning view)"));
    m_config->setPlainText(configJson);
    showPrediction(predictionJson);
    auto parsed = core::parseRunConfig(configJson.toStdString());
    if (m_name->text().isEmpty() && !parsed.config.name.empty())
        m_name->setText(qs(parsed.config.name));
    updateFitWarning();
}

void LaunchDialog::showPrediction(const QString& predictionJson)
{
    m_predictionJson = predictionJson;
    m_prediction->setVisible(!predictionJson.isEmpty());
    if (!predictionJson.isEmpty()) {
        auto prediction = core::parsePrediction(predictionJson.toStdString());
        if (!prediction)
            m_prediction->setText(tr("The plan's prediction is unusable and will not be stored: %1")
                                      .arg(qs(prediction.error().toString())));
        else
            m_prediction->setText(tr("Predicted by the plan (stored with the run): %1 ms per step, %2 tokens/s "
                                     "per GPU, MFU %3%, %4 GiB on the most-loaded GPU")
                                      .arg(QLocale().toString(prediction->stepMs, 'f', 1),
                                           QLocale().toString(prediction->tokensPerSPerGpu, 'f', 0),
                                           QLocale().toString(prediction->mfu * 100.0, 'f', 1),
                                           QLocale().toString(prediction->memoryGib, 'f', 1)));
    }
}

namespace {

// The NVIDIA GPUs of this machine: /dev/nvidiaN device nodes (0 on a machine without the driver).
int localGpuCount()
{
    const QStringList nodes = QDir(QStringLiteral("/dev")).entryList({QStringLiteral("nvidia*")}, QDir::System);
    static const QRegularExpression device(QStringLiteral("^nvidia[0-9]+$"));
    return static_cast<int>(std::count_if(nodes.begin(), nodes.end(), [](const QString& n) { return device.match(n).hasMatch(); }));
}

}  // namespace

void LaunchDialog::updateFitWarning()
{
    // Issue 18 item 6: a plan for 128 B200 launched on `local` used to start without a word.
    auto prediction = core::parsePrediction(m_predictionJson.toStdString());
    const bool local = m_target->currentText().trimmed() == QStringLiteral("local");
    const int gpus = localGpuCount();
    if (!local || m_predictionJson.isEmpty() || !prediction || prediction->gpus <= std::max(1, gpus)) {
        m_fitWarning->setVisible(false);
        return;
    }
    m_fitWarning->setText(
        tr("This plan is for %1 × %2, but the target \u201clocal\u201d is this machine (%3). The run will not be "
           "what the plan predicts, if it starts at all: launch it on an SSH host or a Slurm cluster with those GPUs.")
            .arg(prediction->gpus)
            .arg(qs(prediction->hardware))
            .arg(gpus == 0 ? tr("no NVIDIA GPU") : tr("%n NVIDIA GPU(s)", nullptr, gpus)));
    m_fitWarning->setVisible(true);
}

bool LaunchDialog::loadConfigFile(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        showError(tr("Cannot read %1: %2").arg(path, file.errorString()));
        return false;
    }
    const QString json = QString::fromUtf8(file.readAll());
    m_configPath->setText(path);
    m_configPath->setModified(false);
    m_name->clear();
    setConfigJson(json);
    m_configPath->setText(path);  // setConfigJson clears it (planning-view JSON has no file)
    m_error->setVisible(false);
    return true;
}

bool LaunchDialog::loadBridgeFolder(const QString& dir)
{
    // A few small files (the folder is refused above 1 MiB): read here, checked as the launch will.
    auto folder = core::bridge::readBridgeLaunchFolder(dir.toStdString());
    if (!folder) {
        showError(qs(folder.error().toString()));
        return false;
    }
    QString shown;
    for (const auto& [name, content] : folder->files)
        if (folder->configPath && std::filesystem::path(*folder->configPath).filename() == name)
            shown = qs(content);
    if (shown.isEmpty())
        for (const auto& [name, content] : folder->files)
            if (name == folder->script)
                shown = qs(content);
    m_bridgeDir = dir;
    m_configPath->setText(dir);
    m_configPath->setModified(false);
    m_config->setPlainText(shown);
    m_config->setReadOnly(true);  // the folder is sent as it is: edit its files, not this view
    m_configLabel->setText(tr("Bridge job:"));
    showPrediction(folder->prediction ? qs(core::predictionToJson(*folder->prediction)) : QString());
    m_name->clear();
    m_name->setPlaceholderText(QFileInfo(dir).fileName());
    // Bridge jobs go to a Slurm cluster: preselect the first one registered.
    if (!m_target->currentText().startsWith(QStringLiteral("slurm:")))
        for (int i = 0; i < m_target->count(); ++i)
            if (m_target->itemText(i).startsWith(QStringLiteral("slurm:"))) {
                m_target->setCurrentIndex(i);
                break;
            }
    showError(QString());
    updateFitWarning();
    return true;
}

QString LaunchDialog::phaseText(int phase) const
{
    return phase >= 0 && phase < kPhaseCount ? m_phaseLabels[phase]->text() : QString();
}

QString LaunchDialog::errorText() const
{
    return m_error->isVisibleTo(this) ? m_error->toPlainText() : QString();
}

void LaunchDialog::resetPhases()
{
    for (int phase = 0; phase < kPhaseCount; ++phase) {
        m_bars[phase]->setRange(0, kBarSteps);
        m_bars[phase]->setValue(0);
        m_bars[phase]->setTextVisible(false);
        m_bars[phase]->setEnabled(false);
        m_phaseLabels[phase]->setText(QStringLiteral("—"));
    }
    m_lastPhase = -1;
}

void LaunchDialog::showError(const QString& message)
{
    m_error->setPlainText(message);
    m_error->setVisible(!message.isEmpty());
}

bool LaunchDialog::launch()
{
    if (m_launching)
        return false;
    const QString target = m_target->currentText().trimmed();
    const QString configJson = m_config->toPlainText();
    if (target.isEmpty()) {
        showError(tr("Pick a target: local, or ssh:HOST for a host registered under Remote → SSH hosts."));
        return false;
    }
    if (m_bridgeDir.isEmpty() && configJson.trimmed().isEmpty()) {
        showError(
            tr("Choose a config file (Browse…), a Megatron-Bridge job folder, or open this dialog from the "
               "planning view."));
        return false;
    }
    if (!m_bridgeDir.isEmpty() && !target.startsWith(QStringLiteral("slurm:"))) {
        showError(
            tr("A Megatron-Bridge job is submitted with sbatch: choose a slurm:HOST target (a host registered "
               "under Remote → SSH hosts, with its Slurm settings)."));
        return false;
    }
    if (!m_options.session) {
        showError(tr("This window has no run session to launch with."));
        return false;
    }
    showError(QString());
    resetPhases();
    m_launching = true;
    m_launch->setEnabled(false);
    LaunchRequest request;
    request.target = target;
    request.name = m_name->text().trimmed();
    request.configJson = configJson;
    request.predictionJson = m_predictionJson;
    request.bridgeDir = m_bridgeDir;
    request.catalogDir = m_options.catalogDir;
    request.userCatalogDir = m_options.userCatalogDir;
    m_request = m_options.session->launch(std::move(request));
    return true;
}

void LaunchDialog::onProgress(quint64 requestId, const QString& phase, const QString& node, double fraction,
                              const QString& detail)
{
    if (requestId != m_request)
        return;  // another launch's (the sample run, an earlier one of this dialog)
    int index = -1;
    for (int i = 0; i < kPhaseCount; ++i)
        if (phase == QLatin1String(phaseName(i)))
            index = i;
    if (index < 0)
        return;  // a phase this dialog does not know: the next version's; nothing to draw
    // Phases come in order: a later phase means the earlier reported ones are complete.
    for (int earlier = 0; earlier < index; ++earlier)
        if (m_bars[earlier]->isEnabled()) {
            m_bars[earlier]->setRange(0, kBarSteps);
            m_bars[earlier]->setValue(kBarSteps);
        }
    QProgressBar* bar = m_bars[index];
    bar->setEnabled(true);
    if (fraction < 0) {
        bar->setRange(0, 0);  // indeterminate
    } else {
        bar->setRange(0, kBarSteps);
        bar->setValue(static_cast<int>(std::clamp(fraction, 0.0, 1.0) * kBarSteps));
        bar->setTextVisible(true);
    }
    QString text = detail.isEmpty() ? tr("working…") : detail;
    if (!node.isEmpty())
        text = QStringLiteral("%1: %2").arg(node, text);
    m_phaseLabels[index]->setText(text);
    m_lastPhase = std::max(m_lastPhase, index);
}

void LaunchDialog::onFinished(quint64 requestId, const QString& runId, const QString& error)
{
    if (requestId != m_request)
        return;
    m_launching = false;
    m_launch->setEnabled(true);
    if (!error.isEmpty()) {
        // The phase that was under way stops; its row keeps its last words.
        for (auto* bar : m_bars)
            if (bar->maximum() == 0)
                bar->setRange(0, kBarSteps);
        QString text = error;
        if (error.contains(QStringLiteral("host key is not known")))  // SshSession's words (remote/)
            text += QStringLiteral("\n\n") +
                    tr("To review and accept the key: Remote → SSH hosts, select the host, Test connection.");
        showError(text);
        return;
    }
    // The launch ends once the process exists, so every phase the target went through is done,
    // and "start" is, whether or not the target reported it.
    for (int phase = 0; phase < kPhaseCount; ++phase) {
        if (!m_bars[phase]->isEnabled() && phase != kPhaseCount - 1)
            continue;
        m_bars[phase]->setEnabled(true);
        m_bars[phase]->setRange(0, kBarSteps);
        m_bars[phase]->setValue(kBarSteps);
        m_bars[phase]->setTextVisible(true);
    }
    m_phaseLabels[kPhaseCount - 1]->setText(tr("started: run %1").arg(runId));
}

}  // namespace wb::ui
