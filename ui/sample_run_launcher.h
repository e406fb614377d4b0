// SampleRunLauncher: "Start sample run". Loads the embedded sample config (a Qt resource), points
// its data at the bundled sample image set, builds that set first if it is missing (by running
// `moe-sample-set` in a background QProcess — the GUI stays live), then hands the canonical config
// to whoever launches runs (readyToLaunch -> RunSession::startRun).
// Threading: GUI thread only (QProcess is asynchronous; nothing here blocks).
#pragma once

#include <QObject>
#include <QString>

#include <cstdint>
#include <optional>

QT_BEGIN_NAMESPACE
class QProcess;
QT_END_NAMESPACE

namespace wb::ui {

struct SampleRunOptions {
    QString configResource = QStringLiteral(":/configs/sample-tiny.json");
    QString runName = QStringLiteral("sample-tiny");
    QString samplesDir;      ///< holds manifest.jsonl; empty = core::defaultSamplesDir() + "/openclipart"
    QString sampleSetTool;   ///< moe-sample-set; empty = beside this executable
    QString imageSource = QStringLiteral("/usr/share/openclipart/png");
    int sampleCount = 2000;  // as scripts/start.sh: ~1.5 s to build, ~40 MB
    std::optional<int64_t> trainIters;  ///< override the config's train.train_iters (tests, demos)
};

class SampleRunLauncher : public QObject {
    Q_OBJECT

public:
    explicit SampleRunLauncher(SampleRunOptions options, QObject* parent = nullptr);
    ~SampleRunLauncher() override;

    bool isBusy() const { return m_process != nullptr; }
    const SampleRunOptions& options() const { return m_options; }
    QString manifestPath() const;
    /// The sample config trains on mock data (no image set needed).
    bool configIsMock() const;

public slots:
    /// Prepares the sample run; ends in exactly one of readyToLaunch / failed.
    void start();

signals:
    void progress(const QString& message);
    void readyToLaunch(const QString& name, const QString& configJson);
    void failed(const QString& message);

private:
    void buildSampleSet();
    void onSampleSetFinished(int exitCode, bool crashed);
    void emitConfig();

    SampleRunOptions m_options;
    QProcess* m_process = nullptr;  // while the sample set is being built
    QString m_processOutput;        // its last lines, for the error message
};

}  // namespace wb::ui
