// PlanningView: gathers the inputs into a core SearchRequest, runs the search off the GUI thread
// (runInBackground), shows the ranked table, and regenerates the previews for the selected row. The guide's
// recommendation is recomputed at once on every answer (recommend() is a few rules), using facts
// from the selected layout (ETP, full recompute, graphs) and the hardware (GB200-class).
#include "ui/planning_view.h"

#include "core/planner/generators.h"
#include "core/planner/layout_file.h"
#include "core/planner/plan_json.h"
#include "core/planner/plan_artifacts.h"
#include "core/planner/prediction.h"
#include "core/run_prediction.h"
#include "core/text_file.h"
#include "ui/background_task.h"
#include "ui/plan_config_preview.h"
#include "ui/plan_guide_panel.h"
#include "ui/plan_layout_model.h"
#include "ui/plan_memory_bar_delegate.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QFileDialog>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QListWidget>
#include <QPlainTextEdit>
#include <QProgressBar>
#include <QPushButton>
#include <QSaveFile>
#include <QScrollArea>
#include <QSettings>
#include <QSpinBox>
#include <QSplitter>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

#include <map>

namespace wb::ui {

using namespace core::planner;

namespace {

QSpinBox* spin(QWidget* parent, const char* name, int min, int max, int value, int step = 1)
{
    auto* box = new QSpinBox(parent);
    box->setObjectName(QLatin1String(name));
    box->setRange(min, max);
    box->setSingleStep(step);
    box->setValue(value);
    return box;
}

}  // namespace

PlanningView::PlanningView(const QString& catalogDir, const QString& userCatalogDir, QWidget* parent)
    : QWidget(parent)
{
    setWindowTitle(tr("Plan a training run"));
    auto catalog = loadCatalog(catalogDir.toStdString(), userCatalogDir.toStdString());
    if (catalog)
        m_catalog = std::move(*catalog);
    else
        m_catalogError = QString::fromStdString(catalog.error().message + " (" + catalog.error().context + ")");

    auto* left = new QWidget(this);
    auto* leftColumn = new QVBoxLayout(left);
    leftColumn->setContentsMargins(0, 0, 0, 0);
    leftColumn->addWidget(createInputs());
    m_guide = new PlanGuidePanel(left);
    leftColumn->addWidget(m_guide, 1);
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(left);
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    scroll->setMinimumWidth(left->minimumSizeHint().width() + 24);

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(scroll);
    splitter->addWidget(createResults());
    splitter->setStretchFactor(1, 1);
    splitter->setSizes({500, 1100});
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(splitter);

    connect(m_guide, &PlanGuidePanel::answersChanged, this, &PlanningView::updateRecommendation);
    connect(m_guide, &PlanGuidePanel::answersChanged, this, [this] { saveInputs(); });
    // The ranked rows follow the recommendation: once a search has run, a changed answer that
    // changes the path (or the mock-data fact) searches again, so rows and recommendation agree.
    connect(m_guide, &PlanGuidePanel::answersChanged, this, [this] {
        QString error;
        const auto next = currentRequest(error);
        if (m_request && next && (next->path != m_request->path || next->workload.mock != m_request->workload.mock))
            plan();
    });
    hardwareChanged();
    updateRecommendation();
    if (!m_catalog) {
        m_summary->setText(tr("Cannot load the model and hardware catalog: %1").arg(m_catalogError));
        m_planButton->setEnabled(false);
    }
}

PlanningView::~PlanningView()
{
    if (m_cancel)
        m_cancel->store(true);  // closing must not wait for a long search to finish
    // CPU-only work on copies (runInBackground): cancelled searches end within a candidate, and
    // none may outlive the application.
    for (const QPointer<QThread>& search : m_searches)
        if (search)
            search->wait();
}

QWidget* PlanningView::createInputs()
{
    auto* box = new QGroupBox(tr("Model, cluster and workload"), this);
    auto* form = new QFormLayout(box);
    m_modelBox = new QComboBox(box);
    m_modelBox->setObjectName(QStringLiteral("planModel"));
    m_hardwareBox = new QComboBox(box);
    m_hardwareBox->setObjectName(QStringLiteral("planHardware"));
    if (m_catalog) {
        for (const ModelSpec& m : m_catalog->models())
            m_modelBox->addItem(QString::fromStdString(m.displayName), QString::fromStdString(m.name));
        for (const HardwareSpec& h : m_catalog->hardwareList())
            m_hardwareBox->addItem(QString::fromStdString(h.displayName), QString::fromStdString(h.name));
    }
    m_nodes = spin(box, "planNodes", 1, 4096, 1);
    m_gpusPerNode = spin(box, "planGpusPerNode", 1, 72, 8);
    m_worldLabel = new QLabel(box);
    auto* cluster = new QHBoxLayout;
    cluster->addWidget(m_nodes);
    cluster->addWidget(new QLabel(QStringLiteral("×"), box));
    cluster->addWidget(m_gpusPerNode);
    cluster->addWidget(m_worldLabel, 1);
    m_seq = spin(box, "planSeq", 256, 1 << 20, 4096, 1024);
    m_images = spin(box, "planImages", 0, 64, 1);
    m_imageWidth = spin(box, "planImageWidth", 28, 8192, 448, 32);
    m_imageHeight = spin(box, "planImageHeight", 28, 8192, 448, 32);
    auto* images = new QHBoxLayout;
    images->addWidget(m_images);
    images->addWidget(new QLabel(tr("of"), box));
    images->addWidget(m_imageWidth);
    images->addWidget(new QLabel(QStringLiteral("×"), box));
    images->addWidget(m_imageHeight);
    images->addWidget(new QLabel(tr("px"), box));
    m_gbs = spin(box, "planGbs", 1, 1 << 20, 512, 64);
    m_goal = new QComboBox(box);
    m_goal->setObjectName(QStringLiteral("planGoal"));
    m_goal->addItem(tr("Throughput (tokens/s/GPU)"), int(Goal::Throughput));
    m_goal->addItem(tr("Least memory"), int(Goal::Memory));
    m_goal->addItem(tr("First run (FSDP, simple)"), int(Goal::FirstRun));
    m_freezeVision = new QCheckBox(tr("Freeze the vision encoder and projector"), box);
    m_freezeVision->setObjectName(QStringLiteral("planFreezeVision"));
    m_bf16Moments = new QCheckBox(tr("bf16 Adam moments (precision-aware optimizer)"), box);
    m_bf16Moments->setObjectName(QStringLiteral("planBf16Moments"));
    m_bf16Moments->setToolTip(tr("Store Adam's two moments in bf16 (math stays fp32): 8 instead of 12 optimizer bytes "
                                 "per parameter. The generated configs carry it (Megatron's "
                                 "use_precision_aware_optimizer, which needs the distributed optimizer; "
                                 "moe-train's train.exp_avg_dtype / exp_avg_sq_dtype)."));
    m_planButton = new QPushButton(tr("Plan"), box);
    m_planButton->setObjectName(QStringLiteral("planButton"));
    m_planButton->setDefault(true);

    form->addRow(tr("Model"), m_modelBox);
    form->addRow(tr("Hardware"), m_hardwareBox);
    form->addRow(tr("Nodes × GPUs per node"), cluster);
    form->addRow(tr("Sequence length"), m_seq);
    form->addRow(tr("Images per sample"), images);
    form->addRow(tr("Global batch size"), m_gbs);
    form->addRow(tr("Goal"), m_goal);
    form->addRow(m_freezeVision);
    form->addRow(m_bf16Moments);
    m_cancelButton = new QPushButton(tr("Cancel search"), box);
    m_cancelButton->setObjectName(QStringLiteral("planCancelButton"));
    m_cancelButton->setVisible(false);
    m_progress = new QProgressBar(box);
    m_progress->setObjectName(QStringLiteral("planProgress"));
    m_progress->setRange(0, 0);  // indeterminate: the search does not know its size in advance
    m_progress->setMaximumHeight(14);
    m_progress->setVisible(false);
    auto* planRow = new QHBoxLayout;
    planRow->addWidget(m_planButton, 1);
    planRow->addWidget(m_progress, 1);
    planRow->addWidget(m_cancelButton);
    form->addRow(planRow);
    connect(m_cancelButton, &QPushButton::clicked, this, &PlanningView::cancelPlan);
    // Plans as files (issue 18 item 9): the `plan --json` document, both ways.
    auto* openPlanButton = new QPushButton(tr("Open plan…"), box);
    openPlanButton->setObjectName(QStringLiteral("planOpenButton"));
    openPlanButton->setToolTip(tr("Open a plan saved here or written by `moe-workbench-cli plan --json`: its inputs and "
                                  "answers fill this form and it is planned again."));
    auto* savePlanButton = new QPushButton(tr("Save plan…"), box);
    savePlanButton->setObjectName(QStringLiteral("planSaveButton"));
    savePlanButton->setToolTip(tr("Save the inputs, the guide's answers and the ranked layouts as a plan file (the "
                                  "`plan --json` format: `generate --from` takes it)."));
    auto* fileRow = new QHBoxLayout;
    fileRow->addWidget(openPlanButton);
    fileRow->addWidget(savePlanButton);
    form->addRow(fileRow);
    connect(openPlanButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, tr("Open a plan"), QString(),
                                                          tr("Plans (*.json);;All files (*)"));
        if (!path.isEmpty())
            openPlan(path);
    });
    connect(savePlanButton, &QPushButton::clicked, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, tr("Save the plan"), QStringLiteral("plan.json"),
                                                          tr("Plans (*.json)"));
        if (!path.isEmpty())
            savePlan(path);
    });

    const auto updateWorld = [this] {
        m_worldLabel->setText(tr("= %n GPU(s)", nullptr, m_nodes->value() * m_gpusPerNode->value()));
    };
    connect(m_nodes, &QSpinBox::valueChanged, this, updateWorld);
    connect(m_gpusPerNode, &QSpinBox::valueChanged, this, updateWorld);
    updateWorld();
    connect(m_hardwareBox, &QComboBox::currentIndexChanged, this, &PlanningView::hardwareChanged);
    connect(m_images, &QSpinBox::valueChanged, this, &PlanningView::updateRecommendation);
    connect(m_planButton, &QPushButton::clicked, this, &PlanningView::plan);
    // Any input that changes the search marks the shown layouts as someone else's.
    for (QSpinBox* spinBox : {m_nodes, m_gpusPerNode, m_seq, m_images, m_imageWidth, m_imageHeight, m_gbs})
        connect(spinBox, &QSpinBox::valueChanged, this, &PlanningView::updateStale);
    for (QComboBox* combo : {m_modelBox, m_hardwareBox, m_goal})
        connect(combo, &QComboBox::currentIndexChanged, this, &PlanningView::updateStale);
    for (QCheckBox* check : {m_freezeVision, m_bf16Moments})
        connect(check, &QCheckBox::toggled, this, &PlanningView::updateStale);
    return box;
}

QWidget* PlanningView::createResults()
{
    auto* results = new QSplitter(Qt::Vertical, this);
    auto* top = new QWidget(results);
    auto* topColumn = new QVBoxLayout(top);
    topColumn->setContentsMargins(0, 0, 0, 0);
    m_summary = new QLabel(tr("Choose a model and a cluster, answer the guide's questions, then press Plan."), top);
    m_summary->setObjectName(QStringLiteral("planSummary"));
    m_summary->setWordWrap(true);
    m_stale = new QLabel(top);
    m_stale->setObjectName(QStringLiteral("planStale"));
    m_stale->setWordWrap(true);
    m_stale->setStyleSheet(QStringLiteral("background: #fff3cd; color: #664d03; padding: 4px; border: 1px solid #ffe69c;"));
    m_stale->setVisible(false);
    m_model = new PlanLayoutModel(this);
    m_table = new QTableView(top);
    m_table->setObjectName(QStringLiteral("planLayoutTable"));
    m_table->setModel(m_model);
    m_table->setItemDelegateForColumn(PlanLayoutModel::MemoryColumn, new PlanMemoryBarDelegate(m_table));
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->verticalHeader()->hide();
    m_table->setAlternatingRowColors(true);
    m_table->horizontalHeader()->setStretchLastSection(false);
    m_table->setWordWrap(false);
    auto* legend = new QHBoxLayout;
    legend->addWidget(new QLabel(tr("Memory bar:"), top));
    for (int i = 0; i < PlanLayoutModel::memoryCategories().size(); ++i) {
        auto* swatch = new QLabel(top);
        swatch->setFixedSize(12, 12);
        swatch->setStyleSheet(QStringLiteral("background: %1;").arg(PlanMemoryBarDelegate::categoryColor(i).name()));
        legend->addWidget(swatch);
        legend->addWidget(new QLabel(PlanLayoutModel::memoryCategoryLabel(i), top));
    }
    legend->addWidget(new QLabel(tr("(width = the GPU's HBM; dashed: the headroom limit)"), top));
    legend->addStretch(1);
    topColumn->addWidget(m_stale);
    topColumn->addWidget(m_summary);
    topColumn->addWidget(m_table, 1);
    topColumn->addLayout(legend);

    auto* lintBox = new QGroupBox(tr("Lint findings for the selected layout"), results);
    auto* lintColumn = new QVBoxLayout(lintBox);
    m_lint = new QListWidget(lintBox);
    m_lint->setObjectName(QStringLiteral("planLint"));
    m_lint->setWordWrap(true);
    lintColumn->addWidget(m_lint);
    m_launchButton = new QPushButton(tr("Launch…"), lintBox);
    m_launchButton->setObjectName(QStringLiteral("planLaunch"));
    m_launchButton->setToolTip(tr("Launch the selected layout as a run; its predicted step time and memory are stored "
                                  "with the run for comparison."));
    m_launchButton->setEnabled(false);
    connect(m_launchButton, &QPushButton::clicked, this, &PlanningView::requestLaunch);
    m_predictFileButton = new QPushButton(tr("Predict a file…"), lintBox);
    m_predictFileButton->setObjectName(QStringLiteral("planPredictFile"));
    m_predictFileButton->setToolTip(tr("Predict a layout you already have — a runtime config, a Megatron-Bridge YAML or "
                                       "dotlist, or a perf launcher command — on the hardware and GPUs chosen here where "
                                       "the file does not name them: memory by term, step time by term with how sure each "
                                       "term is, and the lint findings."));
    m_predictFileButton->setEnabled(m_catalog.has_value());
    connect(m_predictFileButton, &QPushButton::clicked, this, &PlanningView::choosePredictFile);
    m_statusLabel = new QLabel(lintBox);
    m_statusLabel->setObjectName(QStringLiteral("planStatus"));
    auto* launchRow = new QHBoxLayout;
    launchRow->addWidget(m_predictFileButton);
    launchRow->addWidget(m_statusLabel, 1);
    launchRow->addWidget(m_launchButton);
    lintColumn->addLayout(launchRow);

    m_preview = new PlanConfigPreview(results);
    connect(m_preview, &PlanConfigPreview::status, this, &PlanningView::showStatus);
    results->addWidget(top);
    results->addWidget(lintBox);
    results->addWidget(m_preview);
    results->setStretchFactor(0, 3);
    results->setStretchFactor(1, 0);
    results->setStretchFactor(2, 2);
    results->setSizes({520, 110, 370});

    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) { showLayoutDetails(current.row()); });
    return results;
}

void PlanningView::hardwareChanged()
{
    if (!m_catalog)
        return;
    auto hw = m_catalog->hardware(m_hardwareBox->currentData().toString().toStdString());
    if (hw)
        m_gpusPerNode->setValue(hw->gpusPerNode);
    updateRecommendation();
}

bool PlanningView::setModel(const QString& name)
{
    const int i = m_modelBox->findData(name.toLower());
    if (i >= 0)
        m_modelBox->setCurrentIndex(i);
    return i >= 0;
}

bool PlanningView::setHardware(const QString& name)
{
    const int i = m_hardwareBox->findData(name.toLower());
    if (i >= 0)
        m_hardwareBox->setCurrentIndex(i);
    return i >= 0;
}

void PlanningView::setCluster(int nodes, int gpusPerNode)
{
    m_nodes->setValue(nodes);
    m_gpusPerNode->setValue(gpusPerNode);
}

void PlanningView::setWorkload(int seqLength, int imagesPerSample, int imageWidth, int imageHeight, int gbs)
{
    m_seq->setValue(seqLength);
    m_images->setValue(imagesPerSample);
    m_imageWidth->setValue(imageWidth);
    m_imageHeight->setValue(imageHeight);
    m_gbs->setValue(gbs);
}

void PlanningView::setGoal(Goal goal)
{
    m_goal->setCurrentIndex(m_goal->findData(int(goal)));
}

std::optional<SearchRequest> PlanningView::currentRequest(QString& error) const
{
    if (!m_catalog) {
        error = m_catalogError;
        return std::nullopt;
    }
    auto model = m_catalog->model(m_modelBox->currentData().toString().toStdString());
    auto hardware = m_catalog->hardware(m_hardwareBox->currentData().toString().toStdString());
    if (!model || !hardware) {
        error = QString::fromStdString(!model ? model.error().message : hardware.error().message);
        return std::nullopt;
    }
    SearchRequest req;
    req.model = *model;
    req.hardware = *hardware;
    req.nodes = m_nodes->value();
    req.gpus = m_nodes->value() * m_gpusPerNode->value();
    req.workload.seqLength = m_seq->value();
    req.workload.imagesPerSample = m_images->value();
    req.workload.imageWidth = m_imageWidth->value();
    req.workload.imageHeight = m_imageHeight->value();
    req.workload.bf16AdamMoments = m_bf16Moments->isChecked();
    req.gbs = m_gbs->value();
    req.goal = Goal(m_goal->currentData().toInt());
    req.freezeVision = m_freezeVision->isChecked();
    applyGuide(m_guide->answers(), req);  // the same as the CLI's plan
    return req;
}

void PlanningView::plan()
{
    QString error;
    auto request = currentRequest(error);
    if (!request) {
        emit planned(error);
        return;
    }
    if (m_cancel)
        m_cancel->store(true);  // a newer search supersedes a running one
    m_cancel = std::make_shared<std::atomic<bool>>(false);
    request->cancel = m_cancel;
    const int generation = ++m_generation;
    m_running = true;
    m_planButton->setEnabled(false);
    m_summary->setText(tr("Searching layouts for %1 on %n GPU(s)…", nullptr, request->gpus)
                           .arg(QString::fromStdString(request->model.displayName)));
    // A search that takes a while (a huge sequence, a count no layout fits and its neighbours
    // probed) shows that it works and can be stopped.
    QTimer::singleShot(kSlowSearchMs, this, [this, generation] {
        if (generation != m_generation || !m_running)
            return;
        m_progress->setVisible(true);
        m_cancelButton->setVisible(true);
    });
    // A newer search supersedes a running one (cancelled above); its result, if any, is dropped.
    m_searches.removeAll(QPointer<QThread>());
    m_searches.append(runInBackground(
        this, QStringLiteral("plan-search"),
        [req = *request] { return std::make_pair(req, searchLayouts(req)); },  // pure
        [this, generation](std::pair<SearchRequest, core::Result<SearchResult>> done) {
            if (generation != m_generation)
                return;  // superseded by a newer plan()
            m_running = false;
            m_planButton->setEnabled(true);
            m_progress->setVisible(false);
            m_cancelButton->setVisible(false);
            auto& [req, result] = done;
            if (!result) {
                const QString error = QString::fromStdString(result.error().message);
                m_summary->setText(error);
                emit planned(error);
                return;
            }
            showResult(req, std::move(*result));
            emit planned({});
        }));
}

void PlanningView::cancelPlan()
{
    if (m_cancel && m_running) {
        m_cancel->store(true);
        m_summary->setText(tr("Cancelling the search…"));
    }
}

namespace {

// What a search was for, in words: the stale line names the inputs the shown layouts belong to.
QString describeInputs(const SearchRequest& r)
{
    return PlanningView::tr("%1 on %2 × %3, seq %4, GBS %5")
        .arg(QString::fromStdString(r.model.displayName))
        .arg(r.gpus)
        .arg(QString::fromStdString(r.hardware.displayName))
        .arg(r.workload.seqLength)
        .arg(r.gbs);
}

}  // namespace

bool PlanningView::savePlan(const QString& path)
{
    if (!m_request || !m_result) {
        showStatus(tr("Nothing to save yet: press Plan first."), true);
        return false;
    }
    const Candidate* chosen = m_result->ranked.empty() ? nullptr : &m_result->ranked.front();
    const GuideAnswers answers = m_guide->answers();
    const std::string text =
        planToJson(*m_request, recommendForPlan(answers, *m_request, chosen), *m_result, nullptr, nullptr, &answers);
    QSaveFile file(path);  // all or nothing: a failed write never leaves half a plan
    if (!file.open(QIODevice::WriteOnly) || file.write(QByteArray::fromStdString(text + "\n")) < 0 || !file.commit()) {
        showStatus(tr("Cannot save the plan to %1: %2").arg(path, file.errorString()), true);
        return false;
    }
    showStatus(tr("Saved the plan to %1.").arg(path), false);
    return true;
}

bool PlanningView::openPlan(const QString& path)
{
    auto text = core::readTextFile(path.toStdString(), "plan file");
    if (!text) {
        showStatus(QString::fromStdString(text.error().toString()), true);
        return false;
    }
    auto file = parsePlanJson(*text);
    if (!file) {
        showStatus(tr("%1 is not a plan: %2").arg(path, QString::fromStdString(file.error().toString())), true);
        return false;
    }
    if (!setModel(QString::fromStdString(file->model)) || !setHardware(QString::fromStdString(file->hardware))) {
        showStatus(tr("%1 is for %2 on %3, which the catalog does not have; add it to your catalog folder.")
                       .arg(path, QString::fromStdString(file->model), QString::fromStdString(file->hardware)),
                   true);
        return false;
    }
    const int nodes = std::max(1, file->nodes);
    setCluster(nodes, std::max(1, file->gpus / nodes));
    setWorkload(file->workload.seqLength, file->workload.imagesPerSample, file->workload.imageWidth,
                file->workload.imageHeight, file->gbs);
    if (auto goal = parseGoal(file->goal))
        setGoal(*goal);
    m_freezeVision->setChecked(file->freezeVision);
    m_bf16Moments->setChecked(file->workload.bf16AdamMoments);
    if (file->answers)
        m_guide->setAnswers(*file->answers);
    m_expectedBest = file->layouts.empty() ? QString() : QString::fromStdString(file->layouts.front().describe());
    showStatus(tr("Opened %1; planning it again.").arg(QFileInfo(path).fileName()), false);
    plan();
    return true;
}

void PlanningView::setRemembersInputs(bool remember)
{
    m_remembersInputs = remember;
    if (remember)
        restoreInputs();
}

void PlanningView::saveInputs() const
{
    if (!m_remembersInputs)
        return;
    QSettings settings(QStringLiteral("moe-workbench"), QStringLiteral("moe-workbench"));  // ~/.config/moe-workbench/moe-workbench.conf
    settings.beginGroup(QStringLiteral("planning"));
    settings.setValue(QStringLiteral("model"), m_modelBox->currentData());
    settings.setValue(QStringLiteral("hardware"), m_hardwareBox->currentData());
    settings.setValue(QStringLiteral("nodes"), m_nodes->value());
    settings.setValue(QStringLiteral("gpusPerNode"), m_gpusPerNode->value());
    settings.setValue(QStringLiteral("seq"), m_seq->value());
    settings.setValue(QStringLiteral("images"), m_images->value());
    settings.setValue(QStringLiteral("imageWidth"), m_imageWidth->value());
    settings.setValue(QStringLiteral("imageHeight"), m_imageHeight->value());
    settings.setValue(QStringLiteral("gbs"), m_gbs->value());
    settings.setValue(QStringLiteral("goal"), m_goal->currentData());
    settings.setValue(QStringLiteral("freezeVision"), m_freezeVision->isChecked());
    settings.setValue(QStringLiteral("bf16Moments"), m_bf16Moments->isChecked());
    settings.setValue(QStringLiteral("answers"), QString::fromStdString(guideAnswersToJson(m_guide->answers())));
}

void PlanningView::restoreInputs()
{
    QSettings settings(QStringLiteral("moe-workbench"), QStringLiteral("moe-workbench"));  // ~/.config/moe-workbench/moe-workbench.conf
    settings.beginGroup(QStringLiteral("planning"));
    if (!settings.contains(QStringLiteral("model")))
        return;  // the first time: the defaults
    const bool remember = m_remembersInputs;
    m_remembersInputs = false;  // the restore itself must not save half-restored inputs
    setModel(settings.value(QStringLiteral("model")).toString());
    setHardware(settings.value(QStringLiteral("hardware")).toString());
    setCluster(settings.value(QStringLiteral("nodes"), 1).toInt(), settings.value(QStringLiteral("gpusPerNode"), 8).toInt());
    setWorkload(settings.value(QStringLiteral("seq"), 4096).toInt(), settings.value(QStringLiteral("images"), 1).toInt(),
                settings.value(QStringLiteral("imageWidth"), 448).toInt(),
                settings.value(QStringLiteral("imageHeight"), 448).toInt(), settings.value(QStringLiteral("gbs"), 512).toInt());
    m_goal->setCurrentIndex(std::max(0, m_goal->findData(settings.value(QStringLiteral("goal")))));
    m_freezeVision->setChecked(settings.value(QStringLiteral("freezeVision"), false).toBool());
    m_bf16Moments->setChecked(settings.value(QStringLiteral("bf16Moments"), false).toBool());
    if (auto answers = parseGuideAnswers(settings.value(QStringLiteral("answers")).toString().toStdString()))
        m_guide->setAnswers(*answers);  // a damaged value keeps the defaults
    m_remembersInputs = remember;
}

void PlanningView::updateStale()
{
    saveInputs();
    if (!m_request || !m_result) {
        m_stale->setVisible(false);
        return;
    }
    QString error;
    const auto current = currentRequest(error);
    // The search's own inputs, compared as the JSON a plan file records (plan_json's request).
    const bool same = current && describeInputs(*current) == describeInputs(*m_request) &&
                      current->workload.imagesPerSample == m_request->workload.imagesPerSample &&
                      current->workload.imageWidth == m_request->workload.imageWidth &&
                      current->workload.imageHeight == m_request->workload.imageHeight &&
                      current->nodes == m_request->nodes && current->goal == m_request->goal &&
                      current->freezeVision == m_request->freezeVision &&
                      current->workload.bf16AdamMoments == m_request->workload.bf16AdamMoments &&
                      current->path == m_request->path && current->workload.mock == m_request->workload.mock;
    m_stale->setText(tr("These layouts are for %1; the inputs have changed since. Press Plan for the current inputs.")
                         .arg(describeInputs(*m_request)));
    m_stale->setVisible(!same);
}

void PlanningView::showStatus(const QString& message, bool isError)
{
    m_statusLabel->setStyleSheet(isError ? QStringLiteral("color: #d62728;") : QString());
    m_statusLabel->setText(message);
    m_statusLabel->setToolTip(message);
    emit status(message, isError);
}

void PlanningView::showResult(const SearchRequest& request, SearchResult result)
{
    m_request = request;
    m_result = std::move(result);
    m_model->setResult(m_result->ranked, request.hardware.hbmGib);
    m_table->resizeColumnsToContents();
    m_table->setColumnWidth(PlanLayoutModel::MemoryColumn, std::max(m_table->columnWidth(PlanLayoutModel::MemoryColumn), 190));
    QString summary = tr("%1 layouts considered in %2 ms: %3 cannot tile the GPUs (§3), %4 need more memory than the "
                         "budget, %5 fail lint, %6 fit; %7 ranked below.")
                          .arg(m_result->rejectedStructure + m_result->rejectedMemory + m_result->rejectedLint + m_result->fitted)
                          .arg(m_result->elapsedMs, 0, 'f', 0)
                          .arg(m_result->rejectedStructure)
                          .arg(m_result->rejectedMemory)
                          .arg(m_result->rejectedLint)
                          .arg(m_result->fitted)
                          .arg(m_result->ranked.size());
    if (m_result->ranked.empty()) {
        summary += QLatin1Char(' ') + tr("No layout fits: %1").arg(QString::fromStdString(m_result->noLayoutReason));
        for (const NearbyGpuCount& n : m_result->nearby)
            summary += QStringLiteral("\n• ") + QString::fromStdString(n.why);
    } else {
        // The guide's caution 1 as numbers (the CLI's plan prints the same line).
        const MockRealComparison c = compareMockAndReal(request.model.model, m_result->ranked.front().layout, request.realData(),
                                                        request.hardware, request.throughput);
        const QString line = QString::fromStdString(describeMockRealComparison(c, 3));
        summary += QLatin1Char('\n') + (request.workload.mock ? tr("WARNING: planned for MOCK DATA (%1); row 0: %2")
                                                                      .arg(QString::fromStdString(c.mockDescription), line)
                                                                : tr("Row 0, mock vs real: %1").arg(line));
    }
    m_summary->setText(summary);
    updateStale();
    if (!m_expectedBest.isEmpty()) {
        const QString now = m_result->ranked.empty() ? tr("no layout")
                                                     : QString::fromStdString(m_result->ranked.front().layout.describe());
        if (now != m_expectedBest)
            showStatus(tr("The file ranked %1 first; the planner now ranks %2 first (it has changed since the file "
                          "was written).")
                           .arg(m_expectedBest, now),
                       false);
        m_expectedBest.clear();
    }
    if (!m_result->ranked.empty())
        selectLayout(0);
    else
        showLayoutDetails(-1);
}

void PlanningView::selectLayout(int row)
{
    m_table->selectRow(row);
    m_table->setCurrentIndex(m_model->index(row, 0));
    showLayoutDetails(row);
}

void PlanningView::showLayoutDetails(int row)
{
    m_lint->clear();
    const Candidate* c = m_model->candidate(row);
    m_launchButton->setEnabled(c && m_request);
    if (!c || !m_request) {
        m_preview->clear();
        updateRecommendation();
        return;
    }
    if (c->lint.empty())
        m_lint->addItem(tr("No findings: the layout passes every lint rule."));
    for (const LintFinding& f : c->lint) {
        auto* item = new QListWidgetItem(QString::fromStdString(f.toString()), m_lint);
        item->setToolTip(QString::fromStdString(f.source + ": " + f.fix));
    }
    const core::RunConfig config = runConfigForLayout(m_request->model, c->layout, m_request->workload, "manifest.jsonl");
    std::vector<std::string> runtimeNotes;
    (void)configForMoeTrain(config, runtimeNotes);  // what run.json changes, said in the lint list
    for (const std::string& note : runtimeNotes)
        new QListWidgetItem(tr("run.json: %1").arg(QString::fromStdString(note)), m_lint);
    // Every file `generate --from plan.json --layout N --format F` writes for this layout (the
    // plan as Save plan writes it), made by the same two functions (plan_artifacts.h): byte for
    // byte what the CLI writes.
    std::vector<GeneratedFile> files;  // in the order the formats make them, each name once
    if (m_catalog && m_result) {
        const Candidate* chosen = m_result->ranked.empty() ? nullptr : &m_result->ranked.front();
        const GuideAnswers answers = m_guide->answers();
        auto plan = parsePlanJson(
            planToJson(*m_request, recommendForPlan(answers, *m_request, chosen), *m_result, nullptr, nullptr, &answers));
        PlanArtifactOptions options;
        options.layout = row;
        for (const char* format : {"runtime", "megatron-bridge", "slurm", "ssh"}) {
            auto planned = plan ? planLayout(*m_catalog, *plan, format, options) : core::Result<PlannedLayout>(plan.error());
            auto bundle = planned ? generateArtifacts(format, planned->config, planned->target, planned->prediction)
                                  : core::Result<GeneratedBundle>(planned.error());
            // A format that refuses the layout (moe-train has no CP on CUDA) has no files: no tabs.
            // prediction.json is the runtime format's (moe-train); Bridge's stays with `generate`.
            if (bundle)
                for (GeneratedFile& f : bundle->files)
                    if (std::none_of(files.begin(), files.end(), [&](const GeneratedFile& g) { return g.name == f.name; }))
                        files.push_back(std::move(f));
        }
    }
    m_preview->setFiles(std::move(files));
    updateRecommendation();
}

void PlanningView::choosePredictFile()
{
    const QString path = QFileDialog::getOpenFileName(this, tr("Predict a layout file"), QString(),
                                                      tr("Layout files (*.json *.yaml *.yml *.sh *.txt);;All files (*)"));
    if (!path.isEmpty())
        predictFile(path);
}

QString PlanningView::predictFile(const QString& path, bool* ok)
{
    using namespace core::planner;
    QString shown;
    bool predictedOk = false;
    if (!m_catalog) {
        shown = tr("Cannot load the model and hardware catalog: %1").arg(m_catalogError);
    } else if (auto text = core::readTextFile(path.toStdString(), "file"); !text) {
        shown = QString::fromStdString(text.error().toString());
    } else {
        LayoutFileRequest request;
        request.path = path.toStdString();
        request.text = *text;
        // What the file names itself (a perf command's -mr, -g, -ng) wins over this view's choices.
        const LayoutFileKind kind = layoutFileKind(request.path, request.text);
        if (!(kind.perfLaunch && !kind.perf.model.empty()) && kind.bridge())
            request.model = m_modelBox->currentData().toString().toStdString();
        if (!(kind.perfLaunch && !kind.perf.hardware.empty()))
            request.hardware = m_hardwareBox->currentData().toString().toStdString();
        if (!(kind.perfLaunch && kind.perf.gpus > 0))
            request.gpus = m_nodes->value() * m_gpusPerNode->value();
        auto predicted = predictLayoutFile(*m_catalog, request);
        if (!predicted) {
            shown = QString::fromStdString(predicted.error().toString());
        } else {
            predictedOk = true;
            const QString canonical = QFileInfo(path).canonicalFilePath();
            shown = (canonical.isEmpty() ? path : canonical) + QStringLiteral(": ") +
                    QString::fromStdString(describeLayoutFilePrediction(*predicted, {}));
        }
    }
    if (!m_filePrediction) {
        m_filePrediction = new QDialog(this);
        m_filePrediction->setObjectName(QStringLiteral("planFilePrediction"));
        m_filePrediction->resize(1000, 640);
        auto* column = new QVBoxLayout(m_filePrediction);
        m_filePredictionText = new QPlainTextEdit(m_filePrediction);
        m_filePredictionText->setReadOnly(true);
        m_filePredictionText->setLineWrapMode(QPlainTextEdit::NoWrap);
        m_filePredictionText->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
        column->addWidget(m_filePredictionText);
    }
    m_filePrediction->setWindowTitle(tr("Prediction for %1").arg(QFileInfo(path).fileName()));
    m_filePredictionText->setPlainText(shown);
    m_filePrediction->show();
    showStatus(predictedOk ? tr("Predicted %1").arg(QFileInfo(path).fileName()) : shown, !predictedOk);
    if (ok)
        *ok = predictedOk;
    return shown;
}

void PlanningView::requestLaunch()
{
    const Candidate* c = m_model->candidate(m_table->currentIndex().row());
    if (!c || !m_request)
        return;
    std::vector<std::string> runtimeNotes;  // shown in the lint list when the row was selected
    const core::RunConfig config =
        configForMoeTrain(runConfigForLayout(m_request->model, c->layout, m_request->workload, "manifest.jsonl"),
                          runtimeNotes);
    const double factor = m_request->throughput.eff.stepTimeFactor;
    // The launch runs moe-train: its memory and step predictions are the runtime's, not Megatron's.
    core::planner::MemoryOptions memory = m_request->memory;
    memory.moeTrain = true;
    core::planner::ThroughputOptions throughput = m_request->throughput;
    throughput.runtime = core::planner::TrainingRuntime::MoeTrain;
    if (m_catalog)
        throughput.rates = m_catalog->runtimeRates("moe-train", m_request->hardware.name);
    Candidate launched = *c;
    launched.memory = estimateMemory(m_request->model.model, c->layout, m_request->workload, memory);
    throughput.predictedPeakBytes = launched.memory.total();  // train.overlap_optimizer "auto"
    launched.throughput = estimateThroughput(m_request->model.model, c->layout, m_request->workload, m_request->hardware,
                                             throughput);
    const core::RunPrediction prediction = predictionForCandidate(
        launched, m_request->hardware, factor == 1.0 ? std::string() : "step time × " + std::to_string(factor),
        launched.throughput.stepMs / factor);
    emit launchRequested(QString::fromStdString(core::runConfigToJson(config)),
                         QString::fromStdString(core::predictionToJson(prediction)));
}

void PlanningView::updateRecommendation()
{
    // The same call as the CLI's plan: answers as given, facts from the request and the row.
    QString error;
    const auto current = m_request ? m_request : currentRequest(error);
    if (!current) {
        m_guide->showRecommendation(recommend(m_guide->answers()));
        return;
    }
    const Candidate* chosen = m_model->candidate(std::max(0, m_table->currentIndex().row()));
    m_guide->showRecommendation(recommendForPlan(m_guide->answers(), *current, chosen));
}

}  // namespace wb::ui
