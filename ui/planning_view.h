// PlanningView: the planner's window. Inputs (model and hardware from the catalog, nodes × GPUs per
// node, sequence length, images per sample and their size, GBS, goal, frozen vision), the decision
// guide (PlanGuidePanel), the ranked layouts (PlanLayoutModel + PlanMemoryBarDelegate) with the
// selected layout's lint findings, and its generated configs (PlanConfigPreview). "Launch…" hands
// the selected layout's runtime config and the planner's prediction to whoever launches runs
// (launchRequested; main_window connects the launch dialog).
// Threading: GUI thread only. plan() runs core::planner::searchLayouts on a thread of its own
// (runInBackground; a 235B search takes ~0.2 s) and gets the result back on the GUI thread; a
// newer plan() cancels and supersedes an older one; the destructor waits for the searches.
#pragma once

#include "core/planner/catalog.h"
#include "core/planner/layout_search.h"

#include <QList>
#include <QPointer>
#include <QString>
#include <QThread>
#include <QWidget>

#include <atomic>
#include <memory>
#include <optional>

QT_BEGIN_NAMESPACE
class QCheckBox;
class QComboBox;
class QDialog;
class QLabel;
class QListWidget;
class QPlainTextEdit;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QTableView;
QT_END_NAMESPACE

namespace wb::ui {

class PlanConfigPreview;
class PlanGuidePanel;
class PlanLayoutModel;

class PlanningView : public QWidget {
    Q_OBJECT

public:
    /// `catalogDir`: the built-in catalog; `userCatalogDir` (may be empty) adds or replaces entries.
    explicit PlanningView(const QString& catalogDir, const QString& userCatalogDir = {}, QWidget* parent = nullptr);
    ~PlanningView() override;

    bool hasCatalog() const { return m_catalog.has_value(); }
    bool isPlanning() const { return m_running; }
    /// Selects by catalog name ("qwen3-vl-30b-a3b", "gb200"); false if unknown.
    bool setModel(const QString& name);
    bool setHardware(const QString& name);
    void setCluster(int nodes, int gpusPerNode);
    void setWorkload(int seqLength, int imagesPerSample, int imageWidth, int imageHeight, int gbs);
    void setGoal(core::planner::Goal goal);

    PlanGuidePanel* guidePanel() const { return m_guide; }
    PlanLayoutModel* layoutModel() const { return m_model; }
    QTableView* layoutTable() const { return m_table; }
    QListWidget* lintList() const { return m_lint; }
    PlanConfigPreview* preview() const { return m_preview; }
    QLabel* summaryLabel() const { return m_summary; }
    const core::planner::SearchResult* lastResult() const { return m_result ? &*m_result : nullptr; }
    QPushButton* launchButton() const { return m_launchButton; }
    QPushButton* predictFileButton() const { return m_predictFileButton; }
    /// Shown while the ranked layouts belong to other inputs than the form's (issue 18 item 4).
    QLabel* staleLabel() const { return m_stale; }
    /// Copy / Save / predict feedback, inside this window (also sent out as status()).
    QLabel* statusLabel() const { return m_statusLabel; }
    /// Visible once a search has run for kSlowSearchMs; stops it.
    QPushButton* cancelButton() const { return m_cancelButton; }
    static constexpr int kSlowSearchMs = 300;

    /// Predicts one given layout file (a runtime config, Megatron-Bridge YAML or dotlist, or a perf
    /// launcher command: what `moe-workbench-cli predict` reads) for the hardware, GPUs and model
    /// chosen here where the file does not name them, and shows the prediction beside the ranked
    /// layouts (a window of its own). Returns the text shown; false in `ok` when it could not be
    /// predicted (the text then says why and what to change).
    QString predictFile(const QString& path, bool* ok = nullptr);

    /// The shown plan as `plan --json` writes it (request with the guide's answers, the ranked
    /// layouts, the search counts), written atomically. False (and the status line says why) when
    /// there is no plan yet or the file cannot be written.
    bool savePlan(const QString& path);
    /// A `plan --json` file (or one saved here): its inputs and answers fill the form and the plan
    /// is searched again (the planner may have changed since); the status line says when its best
    /// layout is not the file's. False, with the reason in the status line, for a file that is
    /// not a plan or names a model or hardware the catalog lacks.
    bool openPlan(const QString& path);
    /// Keep the inputs and answers across restarts (~/.config/moe-workbench/moe-workbench.conf,
    /// group "planning"): restores them
    /// now, saves them on every change. Off by default (tests construct many views).
    void setRemembersInputs(bool remember);

public slots:
    /// Starts the search; planned() follows (with an empty error on success).
    void plan();
    /// Stops a running search (planned() follows with "the search was cancelled").
    void cancelPlan();
    void selectLayout(int row);

signals:
    void planned(const QString& error);
    /// "Launch…" on the selected layout: its canonical runtime config JSON (parseRunConfig) and
    /// the planner's prediction for it (core/run_prediction.h, parsePrediction).
    void launchRequested(const QString& configJson, const QString& predictionJson);
    void status(const QString& message, bool isError);

private:
    QWidget* createInputs();
    QWidget* createResults();
    std::optional<core::planner::SearchRequest> currentRequest(QString& error) const;
    void updateRecommendation();
    void showResult(const core::planner::SearchRequest& request, core::planner::SearchResult result);
    void showLayoutDetails(int row);
    void hardwareChanged();
    /// Compares the form with the inputs of the shown layouts; shows or hides the stale line.
    void updateStale();
    void saveInputs() const;
    void restoreInputs();
    void showStatus(const QString& message, bool isError);
    void requestLaunch();
    void choosePredictFile();

    std::optional<core::planner::Catalog> m_catalog;
    QList<QPointer<QThread>> m_searches;  // searches not yet ended (runInBackground), newest last
    QString m_catalogError;
    std::optional<core::planner::SearchRequest> m_request;  // of m_result
    std::optional<core::planner::SearchResult> m_result;
    int m_generation = 0;  // bumped by each plan(); stale results are dropped
    bool m_running = false;
    bool m_remembersInputs = false;
    QString m_expectedBest;  // an opened plan's best layout (describe()), compared after the search
    std::shared_ptr<std::atomic<bool>> m_cancel;  // of the running search; set by cancelPlan

    QComboBox* m_modelBox = nullptr;
    QComboBox* m_hardwareBox = nullptr;
    QSpinBox* m_nodes = nullptr;
    QSpinBox* m_gpusPerNode = nullptr;
    QLabel* m_worldLabel = nullptr;
    QSpinBox* m_seq = nullptr;
    QSpinBox* m_images = nullptr;
    QSpinBox* m_imageWidth = nullptr;
    QSpinBox* m_imageHeight = nullptr;
    QSpinBox* m_gbs = nullptr;
    QComboBox* m_goal = nullptr;
    QCheckBox* m_freezeVision = nullptr;
    QCheckBox* m_bf16Moments = nullptr;  // Workload::bf16AdamMoments
    QPushButton* m_planButton = nullptr;

    PlanGuidePanel* m_guide = nullptr;
    PlanLayoutModel* m_model = nullptr;
    QTableView* m_table = nullptr;
    QLabel* m_summary = nullptr;
    QLabel* m_stale = nullptr;
    QLabel* m_statusLabel = nullptr;
    QPushButton* m_cancelButton = nullptr;
    QProgressBar* m_progress = nullptr;
    QListWidget* m_lint = nullptr;
    QPushButton* m_predictFileButton = nullptr;
    QDialog* m_filePrediction = nullptr;
    QPlainTextEdit* m_filePredictionText = nullptr;
    QPushButton* m_launchButton = nullptr;
    PlanConfigPreview* m_preview = nullptr;
};

}  // namespace wb::ui
