// PlanGuidePanel: question texts and explanations restate reference/decision-guide.md; the knob and
// caution texts come from core in English, and have Chinese here (keyed by their ids) so the
// translated UI does not mix languages. Rules carry the guide's original Chinese in core itself.
#include "ui/plan_guide_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QGroupBox>
#include <QLabel>
#include <QListWidget>
#include <QLocale>
#include <QVBoxLayout>

namespace wb::ui {

using core::planner::GuideAnswers;
using core::planner::GuideRecommendation;
using core::planner::describeRule;

namespace {

bool chineseUi()
{
    return QLocale().language() == QLocale::Chinese;
}

std::optional<bool> answerOf(const QComboBox* box)
{
    const int v = box->currentData().toInt();
    return v < 0 ? std::nullopt : std::optional<bool>(v == 1);
}

}  // namespace

PlanGuidePanel::PlanGuidePanel(QWidget* parent) : QWidget(parent)
{
    const std::array<std::pair<QString, QString>, kQuestionCount> questions = {{
        {tr("Is this the first launch of this VLM?"),
         tr("The guide's workflow starts with a first reliable run under FSDP, the simplest way to get "
            "multimodal training running.")},
        {tr("Does the model already run stably under FSDP?"),
         tr("3D parallel has the higher ceiling once tuned; move to it after FSDP is stable.")},
        {tr("Are the pipeline stage boundaries clean and reproducible?"),
         tr("Awkward boundaries between embedding, vision module and decoder favour FSDP; a clean PP layout "
            "favours 3D parallel.")},
        {tr("Does fitting in memory matter more than throughput?"),
         tr("FSDP fits best when memory is the constraint; 3D parallel when the goal is steady-state "
            "throughput.")},
        {tr("Decoder-focused tuning with the vision module frozen?"),
         tr("Frozen vision is a natural fit for FSDP (about +5% throughput and less memory pressure).")},
        {tr("Is there time to test MBS, recompute and CUDA-graph scope together?"),
         tr("3D parallel is more sensitive to these knobs; it pays off only with time for deeper testing.")},
    }};
    const std::array<const char*, kQuestionCount> names = {"guideFirstLaunch", "guideStableUnderFsdp",
                                                           "guideCleanStages", "guideMemoryFirst",
                                                           "guideVisionFrozen", "guideDeepTesting"};

    auto* questionsBox = new QGroupBox(tr("Decision guide: FSDP first or 3D parallel?"), this);
    auto* form = new QVBoxLayout(questionsBox);
    for (int i = 0; i < kQuestionCount; ++i) {
        auto* box = new QComboBox(questionsBox);
        box->setObjectName(QLatin1String(names[size_t(i)]));
        box->addItem(tr("not answered"), -1);
        box->addItem(tr("yes"), 1);
        box->addItem(tr("no"), 0);
        connect(box, &QComboBox::currentIndexChanged, this, &PlanGuidePanel::answersChanged);
        m_questions[size_t(i)] = box;
        // Question and answer on one line, the guide's explanation below in a smaller, muted font.
        auto* title = new QLabel(QStringLiteral("%1. %2").arg(i + 1).arg(questions[size_t(i)].first), questionsBox);
        title->setWordWrap(true);
        title->setBuddy(box);
        auto* row = new QHBoxLayout;
        row->addWidget(title, 1);
        row->addWidget(box);
        auto* help = new QLabel(questions[size_t(i)].second, questionsBox);
        help->setWordWrap(true);
        QPalette muted = help->palette();
        const QColor text = muted.color(QPalette::WindowText), window = muted.color(QPalette::Window);
        muted.setColor(QPalette::WindowText, QColor((text.red() * 2 + window.red()) / 3, (text.green() * 2 + window.green()) / 3,
                                                    (text.blue() * 2 + window.blue()) / 3));
        help->setPalette(muted);
        QFont small = help->font();
        small.setPointSizeF(small.pointSizeF() * 0.9);
        help->setFont(small);
        help->setContentsMargins(12, 0, 0, 4);
        form->addLayout(row);
        form->addWidget(help);
    }
    m_mockData = new QCheckBox(tr("Throughput will be measured on mock data"), questionsBox);
    m_mockData->setObjectName(QStringLiteral("guideMockData"));
    m_mockData->setToolTip(tr("The layouts are ranked for what a mock-data run trains (Megatron-Bridge: one 256×256 noise image "
                              "per sample, padded, router force-balanced; moe-train: text only), and the summary says how much "
                              "slower layout 0 is predicted on the real workload, term by term."));
    m_comparingRuns = new QCheckBox(tr("I will compare FSDP runs against 3D runs"), questionsBox);
    for (QCheckBox* c : {m_mockData, m_comparingRuns}) {
        connect(c, &QCheckBox::toggled, this, &PlanGuidePanel::answersChanged);
        form->addWidget(c);
    }

    auto* recommendationBox = new QGroupBox(tr("Recommendation"), this);
    auto* rec = new QVBoxLayout(recommendationBox);
    m_path = new QLabel(recommendationBox);
    m_path->setObjectName(QStringLiteral("guidePath"));
    QFont bold = m_path->font();
    bold.setBold(true);
    bold.setPointSizeF(bold.pointSizeF() * 1.2);
    m_path->setFont(bold);
    m_rules = new QListWidget(recommendationBox);
    m_rules->setObjectName(QStringLiteral("guideRules"));
    m_knobs = new QListWidget(recommendationBox);
    m_knobs->setObjectName(QStringLiteral("guideKnobs"));
    m_cautions = new QListWidget(recommendationBox);
    m_cautions->setObjectName(QStringLiteral("guideCautions"));
    for (QListWidget* list : {m_rules, m_knobs, m_cautions}) {
        list->setWordWrap(true);
        list->setMinimumHeight(60);
    }
    rec->addWidget(m_path);
    rec->addWidget(new QLabel(tr("Rules that fired:"), recommendationBox));
    rec->addWidget(m_rules, 2);
    rec->addWidget(new QLabel(tr("Next knobs, in the guide's order:"), recommendationBox));
    rec->addWidget(m_knobs, 3);
    rec->addWidget(new QLabel(tr("Cautions:"), recommendationBox));
    rec->addWidget(m_cautions, 2);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(questionsBox);
    layout->addWidget(recommendationBox, 1);
}

GuideAnswers PlanGuidePanel::answers() const
{
    GuideAnswers a;
    a.firstLaunch = answerOf(m_questions[0]);
    a.stableUnderFsdp = answerOf(m_questions[1]);
    a.cleanStageBoundaries = answerOf(m_questions[2]);
    a.memoryFitFirst = answerOf(m_questions[3]);
    a.visionFrozen = answerOf(m_questions[4]);
    a.timeForDeepTesting = answerOf(m_questions[5]);
    a.mockData = m_mockData->isChecked();
    a.comparingRuns = m_comparingRuns->isChecked();
    return a;
}

void PlanGuidePanel::setAnswer(int question, int value)
{
    QComboBox* box = m_questions.at(size_t(question));
    box->setCurrentIndex(box->findData(value));
}

void PlanGuidePanel::setAnswers(const GuideAnswers& a)
{
    const std::optional<bool> values[kQuestionCount] = {a.firstLaunch,    a.stableUnderFsdp, a.cleanStageBoundaries,
                                                        a.memoryFitFirst, a.visionFrozen,    a.timeForDeepTesting};
    for (int i = 0; i < kQuestionCount; ++i)
        setAnswer(i, values[i] ? (*values[i] ? 1 : 0) : -1);
    m_mockData->setChecked(a.mockData);
    m_comparingRuns->setChecked(a.comparingRuns);
}

QString PlanGuidePanel::pathText() const
{
    return m_path->text();
}

void PlanGuidePanel::showRecommendation(const GuideRecommendation& r)
{
    const bool zh = chineseUi();
    m_path->setText(r.path == "fsdp" ? tr("FSDP first") : tr("3D parallel (TP/PP/EP/ETP)"));
    m_rules->clear();
    // What was answered goes with each rule (core's describeRule), so a rule never reads as if
    // the opposite had been answered; the 3D conditions that do not hold yet follow, muted.
    for (const auto& rule : r.rules) {
        auto* item = new QListWidgetItem(QString::fromStdString(zh ? rule.guideTextZh : describeRule(rule)), m_rules);
        item->setData(Qt::UserRole, QString::fromStdString(rule.id));
        item->setToolTip(QString::fromStdString(rule.id + "\n" + describeRule(rule) + "\n" + rule.guideTextZh));
    }
    for (const auto& rule : r.missingFor3d) {
        auto* item = new QListWidgetItem(tr("3D needs: %1").arg(QString::fromStdString(zh ? rule.guideTextZh + " (" + rule.answered + ")"
                                                                                           : describeRule(rule))),
                                         m_rules);
        item->setData(Qt::UserRole, QString::fromStdString("missing:" + rule.id));
        item->setForeground(palette().color(QPalette::Disabled, QPalette::Text));
    }
    // Chinese for core's knob/caution texts, by id; the English always comes from core.
    const auto localized = [zh](const std::string& id, const std::string& english) {
        static const std::pair<const char*, const char*> ids[] = {
            {"freeze-vision", QT_TR_NOOP("Freeze the vision module when the work is decoder-focused: a small but real throughput gain (about +5%) and less memory pressure.")},
            {"test-mbs", QT_TR_NOOP("Test MBS aggressively: VLMs are more MBS-sensitive than text-only MoE (MBS 4 nearly doubled 3D-parallel throughput vs MBS 1), as long as the vision encoder does not become the new bottleneck.")},
            {"prefer-selective-recompute", QT_TR_NOOP("Once the model fits, prefer selective recompute; full recompute is a bring-up tool.")},
            {"match-cuda-graph-scope", QT_TR_NOOP("Match the CUDA-graph scope to the workload: attn moe_router moe_preprocess is the safer MoE default; for Qwen3-VL in Megatron-Bridge use moe_router moe_preprocess.")},
            {"etp-only-if-ep-insufficient", QT_TR_NOOP("Use ETP only when EP is not enough: it unlocks some layouts but adds communication and tuning dimensions.")},
            {"mock-data-misleads", QT_TR_NOOP("Mock multimodal data misleads: runs without images looked about 2x faster than real multimodal input.")},
            {"vision-encoder-dominance", QT_TR_NOOP("The vision encoder can dominate unexpectedly: profile encoder, projector and decoder separately before blaming the dispatcher.")},
            {"normalize-effective-work", QT_TR_NOOP("Never compare FSDP and 3D runs whose effective work differs: normalize by effective tokens and workload shape, not step time alone.")},
            {"etp-not-free", QT_TR_NOOP("ETP is not free: a fitting/topology tool, not a default.")},
            {"recompute-graph-coupling", QT_TR_NOOP("Recompute and CUDA-graph choices are coupled: the setting that makes a model fit is often not the fastest steady-state setting.")},
            {"hybridep-default", QT_TR_NOOP("HybridEP is the reliable default dispatcher on GB200-class systems.")},
        };
        if (zh)
            for (const auto& [key, source] : ids)
                if (id == key)
                    return tr(source);
        return QString::fromStdString(english);
    };
    m_knobs->clear();
    for (const auto& knob : r.nextKnobs) {
        auto* item = new QListWidgetItem(QStringLiteral("%1. %2").arg(knob.order).arg(localized(knob.id, knob.text)), m_knobs);
        item->setData(Qt::UserRole, QString::fromStdString(knob.id));
        if (!knob.applies) {
            item->setForeground(palette().color(QPalette::Disabled, QPalette::Text));
            item->setToolTip(tr("Listed for completeness; not relevant to these answers."));
        }
    }
    m_cautions->clear();
    for (const auto& caution : r.cautions) {
        auto* item = new QListWidgetItem(QStringLiteral("⚠ ") + localized(caution.id, caution.text), m_cautions);
        item->setData(Qt::UserRole, QString::fromStdString(caution.id));
    }
}

}  // namespace wb::ui
