#include "ui/sample_run_launcher.h"

#include "core/log.h"
#include "core/paths.h"
#include "core/run_config.h"
#include "core/run_store.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>

#include <utility>

namespace wb::ui {
namespace {

constexpr int kKeptOutputChars = 2000;

}  // namespace

SampleRunLauncher::SampleRunLauncher(SampleRunOptions options, QObject* parent)
    : QObject(parent), m_options(std::move(options))
{
    if (m_options.samplesDir.isEmpty())
        m_options.samplesDir = QString::fromStdString(core::defaultSamplesDir()) + QStringLiteral("/openclipart");
    if (m_options.sampleSetTool.isEmpty())
        m_options.sampleSetTool = QCoreApplication::applicationDirPath() + QStringLiteral("/moe-sample-set");
}

SampleRunLauncher::~SampleRunLauncher()
{
    if (m_process) {
        m_process->disconnect(this);
        m_process->kill();
        m_process->waitForFinished(2000);
    }
}

QString SampleRunLauncher::manifestPath() const
{
    return QDir(m_options.samplesDir).filePath(QStringLiteral("manifest.jsonl"));
}

void SampleRunLauncher::start()
{
    if (m_process) {
        emit progress(tr("The sample image set is still being built…"));
        return;
    }
    // A mock-data config trains on noise images: no sample set to build or check (issue 18 item
    // 13: a mock run's status bar said the image set was being built, or was missing).
    if (QFileInfo::exists(manifestPath()) || configIsMock()) {
        emitConfig();
        return;
    }
    buildSampleSet();
}

bool SampleRunLauncher::configIsMock() const
{
    QFile file(m_options.configResource);
    if (!file.open(QIODevice::ReadOnly))
        return false;  // emitConfig reports the missing file
    const QByteArray json = file.readAll();
    const auto parsed = core::parseRunConfig(std::string_view(json.constData(), static_cast<size_t>(json.size())));
    return parsed.config.data.source == "mock";
}

void SampleRunLauncher::buildSampleSet()
{
    if (!QFileInfo(m_options.sampleSetTool).isExecutable()) {
        emit failed(tr("The sample image set is missing (%1) and the tool that builds it was not found at "
                       "%2. Build the runtime (cmake -DWB_BUILD_RUNTIME=ON) so moe-sample-set sits beside "
                       "moe-workbench, or run it yourself: moe-sample-set --from %3 --out %4")
                        .arg(manifestPath(), m_options.sampleSetTool, m_options.imageSource,
                             m_options.samplesDir));
        return;
    }
    if (!QDir().mkpath(m_options.samplesDir)) {
        emit failed(tr("Cannot create the sample folder %1; check its permissions.").arg(m_options.samplesDir));
        return;
    }
    m_processOutput.clear();
    m_process = new QProcess(this);
    m_process->setProcessChannelMode(QProcess::MergedChannels);
    connect(m_process, &QProcess::readyRead, this, [this] {
        const QString chunk = QString::fromLocal8Bit(m_process->readAll());
        m_processOutput.append(chunk);
        m_processOutput = m_processOutput.right(kKeptOutputChars);
        const auto lines = chunk.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        if (!lines.isEmpty())
            emit progress(tr("Building the sample image set: %1").arg(lines.last().trimmed()));
    });
    connect(m_process, &QProcess::finished, this, [this](int exitCode, QProcess::ExitStatus status) {
        onSampleSetFinished(exitCode, status == QProcess::CrashExit);
    });
    connect(m_process, &QProcess::errorOccurred, this, [this](QProcess::ProcessError error) {
        if (error == QProcess::FailedToStart)
            onSampleSetFinished(-1, true);
    });
    const QStringList args{QStringLiteral("--from"), m_options.imageSource, QStringLiteral("--out"),
                           m_options.samplesDir, QStringLiteral("--count"),
                           QString::number(m_options.sampleCount)};
    wb::log::get("ui")->info("building the sample set: {} {}", m_options.sampleSetTool.toStdString(),
                             args.join(QLatin1Char(' ')).toStdString());
    emit progress(tr("Building the sample image set in %1 (first run only)…").arg(m_options.samplesDir));
    m_process->start(m_options.sampleSetTool, args);
}

void SampleRunLauncher::onSampleSetFinished(int exitCode, bool crashed)
{
    if (!m_process)
        return;  // FailedToStart and finished can both arrive
    m_process->deleteLater();
    const QString errorText = m_process->errorString();
    m_process = nullptr;
    if (crashed || exitCode != 0 || !QFileInfo::exists(manifestPath())) {
        emit failed(tr("Building the sample image set failed (%1). Output:\n%2")
                        .arg(crashed ? errorText : tr("exit code %1").arg(exitCode),
                             m_processOutput.trimmed()));
        return;
    }
    emit progress(tr("Sample image set ready: %1").arg(manifestPath()));
    emitConfig();
}

void SampleRunLauncher::emitConfig()
{
    QFile file(m_options.configResource);
    if (!file.open(QIODevice::ReadOnly)) {
        emit failed(tr("The embedded sample configuration %1 is missing from this build.")
                        .arg(m_options.configResource));
        return;
    }
    const QByteArray json = file.readAll();
    auto parsed = core::parseRunConfig(std::string_view(json.constData(), static_cast<size_t>(json.size())));
    // The manifest is filled in below, so a complaint about it now is expected; everything is
    // validated again once it is set.
    std::erase_if(parsed.problems, [](const core::ConfigProblem& p) { return p.path.starts_with("data.manifest"); });
    if (!parsed.ok()) {
        emit failed(tr("The sample configuration %1 is invalid:\n%2")
                        .arg(m_options.configResource,
                             QString::fromStdString(core::formatProblems(parsed.problems))));
        return;
    }
    if (parsed.config.data.source != "mock")
        parsed.config.data.manifest = manifestPath().toStdString();
    if (m_options.trainIters) {
        parsed.config.train.trainIters = *m_options.trainIters;
        parsed.config.train.lrWarmupIters = std::min(parsed.config.train.lrWarmupIters, *m_options.trainIters);
    }
    if (auto problems = core::validateRunConfig(parsed.config); !problems.empty()) {
        emit failed(tr("The sample configuration is invalid after setting its data:\n%1")
                        .arg(QString::fromStdString(core::formatProblems(problems))));
        return;
    }
    emit readyToLaunch(m_options.runName, QString::fromStdString(core::runConfigToJson(parsed.config)));
}

}  // namespace wb::ui
