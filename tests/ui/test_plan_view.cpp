// PlanningView, offscreen, on the built-in catalog: choose a model, hardware and cluster through
// the widgets, press Plan (the search runs on a worker), read back the recommendation and the ranked
// rows with their memory; switch guide answers and watch the path change; check the previews carry
// Megatron-Bridge's field names and that Save writes them; check the memory bar is painted.
#include "core/run_config.h"
#include "core/run_prediction.h"
#include "ui/plan_config_preview.h"
#include "ui/plan_guide_panel.h"
#include "ui/plan_layout_model.h"
#include "ui/plan_memory_bar_delegate.h"
#include "ui/planning_view.h"
#include "ui_test_main.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLabel>
#include <QLocale>
#include <QMap>
#include <QListWidget>
#include <QProgressBar>
#include <QProcess>
#include <QPushButton>
#include <QSet>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <QTranslator>

using wb::ui::PlanConfigPreview;
using wb::ui::PlanGuidePanel;
using wb::ui::PlanLayoutModel;
using wb::ui::PlanningView;

namespace {

const QString kCatalog = QStringLiteral(WB_TEST_CATALOG_DIR);

template <typename T>
T* child(QObject& parent, const char* name)
{
    return parent.findChild<T*>(QLatin1String(name));
}

void choose(QComboBox* box, const QString& data)
{
    QVERIFY(box);
    const int i = box->findData(data);
    QVERIFY2(i >= 0, qPrintable(data));
    box->setCurrentIndex(i);
}

/// Sets the inputs through the widgets and presses Plan; waits for planned().
void planThrough(PlanningView& view, const QString& model, const QString& hardware, int nodes, int perNode)
{
    choose(child<QComboBox>(view, "planModel"), model);
    choose(child<QComboBox>(view, "planHardware"), hardware);
    child<QSpinBox>(view, "planNodes")->setValue(nodes);
    child<QSpinBox>(view, "planGpusPerNode")->setValue(perNode);
    QSignalSpy spy(&view, &PlanningView::planned);
    QTest::mouseClick(child<QPushButton>(view, "planButton"), Qt::LeftButton);
    QVERIFY(view.isPlanning());  // off the GUI thread: the click returns before the result
    QVERIFY(spy.wait(30000));
    QCOMPARE(spy.first().first().toString(), QString());
    QVERIFY(!view.isPlanning());
}

}  // namespace

class TestPlanView : public QObject {
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY2(QFile::exists(kCatalog + QStringLiteral("/models.json")), qPrintable(kCatalog));
    }

    void plansAndRanksLayouts()
    {
        PlanningView view(kCatalog);
        view.resize(1600, 1000);
        view.show();
        QVERIFY(view.hasCatalog());
        planThrough(view, QStringLiteral("qwen3-vl-30b-a3b"), QStringLiteral("h100"), 2, 8);

        // Recommendation: nothing answered → the guide's workflow starts with FSDP.
        QCOMPARE(view.guidePanel()->pathText(), QStringLiteral("FSDP first"));
        QVERIFY(view.guidePanel()->rulesList()->count() >= 1);
        QCOMPARE(view.guidePanel()->knobsList()->count(), 5);

        // Ranked rows, best first, each within HBM; the memory cell shows the model's total.
        const PlanLayoutModel* model = view.layoutModel();
        QVERIFY(model->rowCount() >= 1);
        QCOMPARE(model->hbmGib(), 79.6);  // H100 in resources/catalog/hardware.json
        for (int row = 0; row < model->rowCount(); ++row) {
            const double total = model->index(row, 0).data(PlanLayoutModel::MemoryTotalRole).toDouble();
            QVERIFY(total > 1.0);
            QVERIFY2(total <= model->hbmGib(), qPrintable(QString::number(total)));
            const QVariantList parts = model->index(row, PlanLayoutModel::MemoryColumn).data(PlanLayoutModel::MemoryRole).toList();
            QCOMPARE(parts.size(), 6);
            double sum = 0;
            for (int i = 0; i < 5; ++i)
                sum += parts[i].toDouble();
            QVERIFY(qAbs(sum - total) < 1e-6 * total);  // the five categories make up the total
            QVERIFY(parts[0].toDouble() > 0);             // weights
            QVERIFY(parts[3].toDouble() > 0);             // activations
        }
        const QString cell = model->index(0, PlanLayoutModel::MemoryColumn).data().toString();
        QCOMPARE(cell, QStringLiteral("%1 GiB").arg(model->index(0, 0).data(PlanLayoutModel::MemoryTotalRole).toDouble(), 0, 'f', 1));
        // World = TP·CP·PP·DP for every row, and the step time is positive.
        for (int row = 0; row < model->rowCount(); ++row) {
            const auto* c = model->candidate(row);
            QCOMPARE(c->layout.worldSize, 16);
            QCOMPARE(c->layout.tp * c->layout.cp * c->layout.pp * c->layout.dp(), 16);
            QVERIFY(model->index(row, PlanLayoutModel::StepColumn).data().toString().size() > 0);
            QVERIFY(c->throughput.stepMs > 0);
        }
        // A row's tooltip says how sure its step time is: the share by basis, and every term with
        // its basis and assumption (the planning view predicts Megatron-Bridge: catalog factors).
        const QString tip = model->index(0, PlanLayoutModel::StepColumn).data(Qt::ToolTipRole).toString();
        QVERIFY2(tip.contains(QStringLiteral("of the step")) && tip.contains(QStringLiteral("expert GEMMs: ")) &&
                     tip.contains(QStringLiteral("[assumed]")),
                 qPrintable(tip));
        // The first row is selected; its lint list is filled (findings or "no findings").
        QCOMPARE(view.layoutTable()->currentIndex().row(), 0);
        QVERIFY(view.lintList()->count() >= 1);
        QVERIFY(view.summaryLabel()->text().contains(QStringLiteral("ranked")));

        if (const QString shot = qEnvironmentVariable("WB_PLAN_SCREENSHOT"); !shot.isEmpty())
            QVERIFY(view.grab().save(shot));

        // Issue 18 item 4: rows numbered as `plan` prints them and `generate --layout N` takes
        // them (0 = best); the predictions come before the layout's sizes.
        QCOMPARE(model->index(0, PlanLayoutModel::RankColumn).data().toInt(), 0);
        QCOMPARE(model->index(1, PlanLayoutModel::RankColumn).data().toInt(), 1);
        for (int column : {PlanLayoutModel::StepColumn, PlanLayoutModel::TokensColumn, PlanLayoutModel::TflopsColumn,
                           PlanLayoutModel::MfuColumn, PlanLayoutModel::MemoryColumn})
            QVERIFY(column < PlanLayoutModel::TpColumn);
        // The counts add up: considered = cannot tile + over memory + fail lint + fit.
        const auto* r = view.lastResult();
        const QString counts = view.summaryLabel()->text();
        QVERIFY2(counts.startsWith(QString::number(r->rejectedStructure + r->rejectedMemory + r->rejectedLint + r->fitted) +
                                   QStringLiteral(" layouts considered")),
                 qPrintable(counts));

        // Inputs changed after the search: the rows are marked as the old inputs'; changed back: not.
        QVERIFY(!view.staleLabel()->isVisible());
        auto* seq = child<QSpinBox>(view, "planSeq");
        seq->setValue(8192);
        QVERIFY(view.staleLabel()->isVisible());
        QVERIFY2(view.staleLabel()->text().contains(QStringLiteral("on 16 × NVIDIA H100")) &&
                     view.staleLabel()->text().contains(QStringLiteral("seq 4096")),
                 qPrintable(view.staleLabel()->text()));
        seq->setValue(4096);
        QVERIFY(!view.staleLabel()->isVisible());

        // Copy gives its feedback in this window.
        QTest::mouseClick(view.findChild<QPushButton*>(QStringLiteral("planCopyButton")), Qt::LeftButton);
        QVERIFY2(view.statusLabel()->text().startsWith(QStringLiteral("Copied")), qPrintable(view.statusLabel()->text()));
    }

    void plansAreFilesAndInputsSurviveARestart()
    {
        // Issue 18 item 9: save a plan, open it in a fresh view (its inputs and answers come back
        // and it is planned again to the same best row), open what `plan --json` writes, refuse a
        // file that is not a plan; and the inputs and answers of a remembering view survive it.
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("plan.json"));
        QString best;
        {
            PlanningView view(kCatalog);
            QVERIFY(!view.savePlan(path));  // nothing planned yet: says so
            QVERIFY(view.statusLabel()->text().contains(QStringLiteral("Plan first")));
            view.guidePanel()->setAnswer(0, 0);  // first launch: no
            view.guidePanel()->setAnswer(1, 1);  // stable under FSDP: yes
            child<QSpinBox>(view, "planSeq")->setValue(8192);
            planThrough(view, QStringLiteral("qwen3-vl-30b-a3b"), QStringLiteral("h100"), 2, 8);
            best = QString::fromStdString(view.layoutModel()->candidate(0)->layout.describe());
            QVERIFY(view.savePlan(path));
            QVERIFY(view.statusLabel()->text().contains(QStringLiteral("Saved the plan")));
        }
        QFile saved(path);
        QVERIFY(saved.open(QIODevice::ReadOnly));
        const QJsonObject request = QJsonDocument::fromJson(saved.readAll()).object().value(QStringLiteral("request")).toObject();
        QCOMPARE(request.value(QStringLiteral("answers")).toObject().value(QStringLiteral("stable_under_fsdp")).toBool(), true);

        PlanningView reopened(kCatalog);
        QSignalSpy spy(&reopened, &PlanningView::planned);
        QVERIFY(reopened.openPlan(path));
        QVERIFY(spy.wait(30000));
        QCOMPARE(child<QSpinBox>(reopened, "planSeq")->value(), 8192);
        QCOMPARE(child<QSpinBox>(reopened, "planNodes")->value(), 2);
        QCOMPARE(reopened.guidePanel()->answers().stableUnderFsdp, std::optional<bool>(true));
        QCOMPARE(reopened.guidePanel()->answers().firstLaunch, std::optional<bool>(false));
        QCOMPARE(QString::fromStdString(reopened.layoutModel()->candidate(0)->layout.describe()), best);
        QVERIFY(!reopened.staleLabel()->isVisible());

        // Not a plan: the status says why, the form stays.
        const QString bad = dir.filePath(QStringLiteral("bad.json"));
        QFile badFile(bad);
        QVERIFY(badFile.open(QIODevice::WriteOnly));
        badFile.write("{\"train\": {}}");
        badFile.close();
        QVERIFY(!reopened.openPlan(bad));
        QVERIFY2(reopened.statusLabel()->text().contains(QStringLiteral("is not a plan")), qPrintable(reopened.statusLabel()->text()));
        QCOMPARE(child<QSpinBox>(reopened, "planSeq")->value(), 8192);

        // A remembering view saves every change; a new one starts where it was left.
        {
            PlanningView first(kCatalog);
            first.setRemembersInputs(true);
            choose(child<QComboBox>(first, "planHardware"), QStringLiteral("b200"));
            child<QSpinBox>(first, "planGbs")->setValue(1024);
            first.guidePanel()->setAnswer(4, 1);  // vision frozen: yes
        }
        PlanningView second(kCatalog);
        second.setRemembersInputs(true);
        QCOMPARE(child<QComboBox>(second, "planHardware")->currentData().toString(), QStringLiteral("b200"));
        QCOMPARE(child<QSpinBox>(second, "planGbs")->value(), 1024);
        QCOMPARE(second.guidePanel()->answers().visionFrozen, std::optional<bool>(true));
        PlanningView forgetful(kCatalog);  // not remembering: the defaults
        QCOMPARE(child<QSpinBox>(forgetful, "planGbs")->value(), 512);
    }

    void slowSearchShowsProgressAndCancels()
    {
        // Issue 18 item 4: a 999,999-token sequence searched for seconds with no feedback.
        PlanningView view(kCatalog);
        view.show();
        choose(child<QComboBox>(view, "planModel"), QStringLiteral("qwen3-vl-30b-a3b"));
        choose(child<QComboBox>(view, "planHardware"), QStringLiteral("gb200"));
        child<QSpinBox>(view, "planSeq")->setValue(999999);
        QSignalSpy spy(&view, &PlanningView::planned);
        QVERIFY(!view.cancelButton()->isVisible());
        QTest::mouseClick(child<QPushButton>(view, "planButton"), Qt::LeftButton);
        QTRY_VERIFY_WITH_TIMEOUT(view.cancelButton()->isVisible() || !spy.isEmpty(), 10000);
        if (!spy.isEmpty())
            QSKIP("the search ended within 300 ms on this machine: nothing to cancel");
        QVERIFY(view.findChild<QProgressBar*>(QStringLiteral("planProgress"))->isVisible());
        QTest::mouseClick(view.cancelButton(), Qt::LeftButton);
        QVERIFY(spy.wait(30000) || !spy.isEmpty());
        QVERIFY2(spy.first().first().toString().contains(QStringLiteral("cancelled")), qPrintable(spy.first().first().toString()));
        QVERIFY(!view.cancelButton()->isVisible());
        QVERIFY(!view.isPlanning());
        QVERIFY(child<QPushButton>(view, "planButton")->isEnabled());
    }

    void guideAnswersChangeTheRecommendation()
    {
        PlanningView view(kCatalog);
        PlanGuidePanel* guide = view.guidePanel();
        QCOMPARE(guide->pathText(), QStringLiteral("FSDP first"));
        // Stable under FSDP, clean stages, time to test, throughput over memory → 3D parallel.
        guide->questionBox(0)->setCurrentIndex(guide->questionBox(0)->findData(0));
        guide->questionBox(1)->setCurrentIndex(guide->questionBox(1)->findData(1));
        guide->questionBox(2)->setCurrentIndex(guide->questionBox(2)->findData(1));
        guide->questionBox(3)->setCurrentIndex(guide->questionBox(3)->findData(0));
        guide->questionBox(5)->setCurrentIndex(guide->questionBox(5)->findData(1));
        QCOMPARE(guide->pathText(), QStringLiteral("3D parallel (TP/PP/EP/ETP)"));
        QStringList rules;
        for (int i = 0; i < guide->rulesList()->count(); ++i)
            rules << guide->rulesList()->item(i)->data(Qt::UserRole).toString();
        QVERIFY2(rules.contains(QStringLiteral("3d-clean-pp-layout")), qPrintable(rules.join(QLatin1Char(','))));
        QVERIFY(rules.contains(QStringLiteral("3d-deep-testing")));
        // Flip one answer: a first launch is decisive → FSDP.
        guide->setAnswer(0, 1);
        QCOMPARE(guide->pathText(), QStringLiteral("FSDP first"));
        QCOMPARE(guide->rulesList()->item(0)->data(Qt::UserRole).toString(), QStringLiteral("fsdp-first-launch"));
        // The mock-data fact adds the guide's first caution (and the images caution goes: no images reach the encoder).
        const auto cautions = [guide] {
            QStringList ids;
            for (int i = 0; i < guide->cautionsList()->count(); ++i)
                ids << guide->cautionsList()->item(i)->data(Qt::UserRole).toString();
            return ids;
        };
        QVERIFY(!cautions().contains(QStringLiteral("mock-data-misleads")));
        QVERIFY(cautions().contains(QStringLiteral("vision-encoder-dominance")));
        child<QCheckBox>(*guide, "guideMockData")->setChecked(true);
        QVERIFY(cautions().contains(QStringLiteral("mock-data-misleads")));
        QVERIFY(!cautions().contains(QStringLiteral("vision-encoder-dominance")));
    }

    // One decision for both faces: the same answers give the same path, the same fired rules and
    // the same first-ranked row (and its family) in the planning view and in the CLI's plan --json.
    void cliAndGuiAgree_data()
    {
        // -1 not answered, 0 no, 1 yes: first launch, stable under FSDP, clean stages, memory
        // first, vision frozen, deep testing; then the mock-data fact.
        QTest::addColumn<QVector<int>>("answers");
        QTest::addColumn<bool>("mock");
        QTest::addColumn<QString>("path");
        QTest::newRow("nothing answered") << QVector<int>{-1, -1, -1, -1, -1, -1} << false << "fsdp";
        QTest::newRow("not stable under FSDP, not a first launch") << QVector<int>{0, 0, -1, -1, -1, -1} << false << "fsdp";
        QTest::newRow("every 3D condition") << QVector<int>{0, 1, 1, 0, -1, 1} << false << "3d";
        QTest::newRow("every 3D condition, vision frozen") << QVector<int>{0, 1, 1, 0, 1, 1} << false << "fsdp";
        QTest::newRow("every 3D condition, mock data") << QVector<int>{0, 1, 1, 0, -1, 1} << true << "3d";
    }

    void cliAndGuiAgree()
    {
        QFETCH(QVector<int>, answers);
        QFETCH(bool, mock);
        QFETCH(QString, path);
        PlanningView view(kCatalog);
        PlanGuidePanel* guide = view.guidePanel();
        const char* keys[] = {"first_launch", "stable_under_fsdp", "clean_stage_boundaries", "memory_fit_first",
                              "vision_frozen", "time_for_deep_testing"};
        QJsonObject file;
        for (int i = 0; i < 6; ++i) {
            guide->questionBox(i)->setCurrentIndex(guide->questionBox(i)->findData(answers[i]));
            file[QLatin1String(keys[i])] = answers[i] < 0 ? QJsonValue(QJsonValue::Null) : QJsonValue(answers[i] == 1);
        }
        child<QCheckBox>(*guide, "guideMockData")->setChecked(mock);
        file[QStringLiteral("mock_data")] = mock;
        planThrough(view, QStringLiteral("qwen3-vl-235b-a22b"), QStringLiteral("gb200"), 16, 4);

        QTemporaryDir dir;
        const QString answersPath = dir.filePath(QStringLiteral("answers.json"));
        QFile out(answersPath);
        QVERIFY(out.open(QIODevice::WriteOnly));
        out.write(QJsonDocument(file).toJson());
        out.close();
        QProcess cli;
        cli.start(QStringLiteral(WB_TEST_CLI),
                  {QStringLiteral("plan"), QStringLiteral("--model"), QStringLiteral("qwen3-vl-235b-a22b"), QStringLiteral("--hardware"),
                   QStringLiteral("gb200"), QStringLiteral("--gpus"), QStringLiteral("64"), QStringLiteral("--answers"), answersPath,
                   QStringLiteral("--catalog"), kCatalog, QStringLiteral("--json")});
        QVERIFY(cli.waitForFinished(60000));
        QCOMPARE(cli.exitCode(), 0);
        const QJsonObject plan = QJsonDocument::fromJson(cli.readAllStandardOutput()).object();
        const QJsonObject rec = plan[QStringLiteral("recommendation")].toObject();

        QCOMPARE(rec[QStringLiteral("path")].toString(), path);
        QCOMPARE(guide->pathText(), path == QStringLiteral("3d") ? QStringLiteral("3D parallel (TP/PP/EP/ETP)") : QStringLiteral("FSDP first"));
        QStringList cliRules, guiRules;
        for (const QJsonValue& r : rec[QStringLiteral("rules")].toArray())
            cliRules << r.toObject()[QStringLiteral("id")].toString();
        for (int i = 0; i < guide->rulesList()->count(); ++i)
            if (const QString id = guide->rulesList()->item(i)->data(Qt::UserRole).toString(); !id.startsWith(QStringLiteral("missing:")))
                guiRules << id;
        QCOMPARE(guiRules, cliRules);

        // The rows follow the path: the first row is of the recommended family, in both.
        const QJsonArray layouts = plan[QStringLiteral("layouts")].toArray();
        QVERIFY(!layouts.isEmpty());
        const auto* first = view.layoutModel()->candidate(0);
        QVERIFY(first);
        QCOMPARE(QString::fromStdString(first->family), path);
        QCOMPARE(layouts.first().toObject()[QStringLiteral("family")].toString(), path);
        QCOMPARE(QString::fromStdString(first->layout.describe()), layouts.first().toObject()[QStringLiteral("describe")].toString());
        // GB200: HybridEP is the guide's default dispatcher, so the first row uses it.
        if (first->layout.ep > 1)
            QCOMPARE(first->layout.dispatcherBackend, std::string("hybridep"));
        // No row of the other family ranks above one of the recommended family.
        bool other = false;
        for (int row = 0; row < view.layoutModel()->rowCount(); ++row) {
            const bool same = view.layoutModel()->candidate(row)->family == path.toStdString();
            QVERIFY2(!(other && same), qPrintable(QStringLiteral("row %1 of the recommended family below another family's row").arg(row)));
            other = other || !same;
        }
    }

    void previewsCarryBridgeFieldNames()
    {
        PlanningView view(kCatalog);
        view.resize(1600, 1000);
        view.show();
        planThrough(view, QStringLiteral("qwen3-vl-235b-a22b"), QStringLiteral("h100"), 32, 8);
        PlanConfigPreview* preview = view.preview();
        QTabWidget* tabs = preview->tabs();
        // Every file generate writes (issue 18 item 9), made as the CLI makes them (plan_artifacts.h).
        QCOMPARE(tabs->count(), 11);  // + bridge.sbatch, bridge_job.json
        QCOMPARE(tabs->tabText(1), QStringLiteral("Megatron-Bridge YAML"));
        QCOMPARE(tabs->tabText(4), QStringLiteral("perf_launch.sh"));
        QCOMPARE(tabs->tabText(5), QStringLiteral("env.sh"));
        QVERIFY2(preview->text(4).contains(QStringLiteral("setup_experiment.py")), qPrintable(preview->text(4)));
        const QString yaml = preview->text(1);
        for (const char* key : {"tensor_model_parallel_size", "pipeline_model_parallel_size",
                                "expert_model_parallel_size", "expert_tensor_parallel_size", "micro_batch_size",
                                "global_batch_size", "moe_token_dispatcher_type", "seq_length"})
            QVERIFY2(yaml.contains(QLatin1String(key)), key);
        const QString dotlist = preview->text(2);
        const auto* best = view.layoutModel()->candidate(0);
        QVERIFY2(dotlist.contains(QStringLiteral("model.expert_model_parallel_size=%1").arg(best->layout.ep)),
                 qPrintable(dotlist));
        QVERIFY(dotlist.contains(QStringLiteral("train.global_batch_size=")));
        QVERIFY(preview->text(3).contains(QStringLiteral("#SBATCH --nodes=32")));
        QJsonParseError error{};
        QJsonDocument::fromJson(preview->text(0).toUtf8(), &error);
        QCOMPARE(error.error, QJsonParseError::NoError);

        // Another row → the previews follow it.
        if (view.layoutModel()->rowCount() > 1) {
            view.selectLayout(1);
            const auto* second = view.layoutModel()->candidate(1);
            QVERIFY(preview->text(2).contains(QStringLiteral("train.micro_batch_size=%1").arg(second->layout.mbs)));
        }
        // Save writes the current tab.
        QTemporaryDir dir;
        tabs->setCurrentIndex(1);
        const QString path = dir.filePath(QStringLiteral("overrides.yaml"));
        QVERIFY(preview->saveCurrent(path));
        QFile file(path);
        QVERIFY(file.open(QIODevice::ReadOnly));
        QCOMPARE(QString::fromUtf8(file.readAll()), preview->text(1));
    }

    // Issue 19 item 4: the preview is byte for byte what `generate --from PLAN --layout N
    // --format F` writes, for every format and file, from the plan the view saves.
    void previewIsWhatGenerateWrites()
    {
        PlanningView view(kCatalog);
        planThrough(view, QStringLiteral("qwen3-vl-30b-a3b"), QStringLiteral("h100"), 2, 8);
        QVERIFY(view.layoutModel()->rowCount() > 1);
        const int row = 1;  // not only the best row: the index must mean the same in both
        view.selectLayout(row);
        QTemporaryDir dir;
        const QString planPath = dir.filePath(QStringLiteral("plan.json"));
        QVERIFY(view.savePlan(planPath));
        QMap<QString, QString> preview;  // file name -> text, as the tabs show them
        QTabWidget* tabs = view.preview()->tabs();
        for (int tab = 0; tab < tabs->count(); ++tab)
            preview.insert(view.preview()->fileName(tab), view.preview()->text(tab));
        QSet<QString> compared;  // several formats write run.json: each copy is compared
        for (const char* format : {"runtime", "megatron-bridge", "slurm", "ssh"}) {
            const QString out = dir.filePath(QLatin1String(format));
            QProcess cli;
            cli.start(QStringLiteral(WB_TEST_CLI),
                      {QStringLiteral("generate"), QStringLiteral("--from"), planPath, QStringLiteral("--layout"),
                       QString::number(row), QStringLiteral("--format"), QLatin1String(format), QStringLiteral("--out"), out,
                       QStringLiteral("--catalog"), kCatalog});
            QVERIFY(cli.waitForFinished(60000));
            QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
            for (const QString& name : QDir(out).entryList(QDir::Files)) {
                QFile file(QDir(out).filePath(name));
                QVERIFY(file.open(QIODevice::ReadOnly));
                const QString written = QString::fromUtf8(file.readAll());
                // prediction.json: the tab shows the runtime format's (moe-train); Bridge's is its own.
                if (name == u"prediction.json" && QLatin1String(format) != u"runtime")
                    continue;
                QVERIFY2(preview.contains(name), qPrintable(QStringLiteral("no tab for %1 (%2)").arg(name, QLatin1String(format))));
                QVERIFY2(preview.value(name) == written, qPrintable(QStringLiteral("%1 (%2) differs from the preview").arg(name, QLatin1String(format))));
                compared.insert(name);
            }
        }
        QCOMPARE(compared.size(), tabs->count());  // every tab is a file generate writes
    }

    void launchEmitsConfigAndPrediction()
    {
        PlanningView view(kCatalog);
        view.resize(1600, 1000);
        view.show();
        QPushButton* launch = child<QPushButton>(view, "planLaunch");
        QVERIFY(launch);
        QVERIFY(!launch->isEnabled());  // nothing planned, nothing selected
        planThrough(view, QStringLiteral("qwen3-vl-30b-a3b"), QStringLiteral("h100"), 2, 8);
        QVERIFY(view.layoutModel()->rowCount() > 1);
        view.selectLayout(1);
        QVERIFY(launch->isEnabled());
        QSignalSpy spy(&view, &PlanningView::launchRequested);
        QTest::mouseClick(launch, Qt::LeftButton);
        QCOMPARE(spy.count(), 1);
        const wb::core::RunConfigParse parsed = wb::core::parseRunConfig(spy.first().at(0).toString().toStdString());
        QVERIFY2(parsed.ok(), parsed.problems.empty() ? "" : parsed.problems.front().toString().c_str());
        const wb::core::RunConfig* config = &parsed.config;
        const auto prediction = wb::core::parsePrediction(spy.first().at(1).toString().toStdString());
        QVERIFY2(prediction.ok(), prediction ? "" : prediction.error().toString().c_str());
        // Both describe the selected row (1), not the best one.
        const auto* selected = view.layoutModel()->candidate(1);
        QCOMPARE(config->parallel.expertModelParallelSize, selected->layout.ep);
        QCOMPARE(config->train.microBatchSize, selected->layout.mbs);
        QCOMPARE(prediction->hardware, std::string("h100"));
        QCOMPARE(prediction->gpus, 16);
        // The launch runs moe-train: its step is the runtime's prediction for the row, not the
        // planned (Megatron-Bridge) one, and the prediction says so.
        QVERIFY(prediction->stepMs > 0 && prediction->stepMs != selected->throughput.stepMs);
        QVERIFY2(prediction->detailJson.find("\"runtime\":\"moe-train\"") != std::string::npos, prediction->detailJson.c_str());
        // Its memory is moe-train's too: the LM head over the target tokens only keeps fewer logits
        // than Megatron's s·b·V (the planned row's).
        QVERIFY2(prediction->memoryGib > 0 && prediction->memoryGib < selected->memory.total() / double(1ull << 30),
                 QByteArray::number(prediction->memoryGib) + " GiB launched vs " +
                     QByteArray::number(selected->memory.total() / double(1ull << 30)) + " planned");

        // A row planned with Megatron's CUDA graphs launches with the graphs moe-train runs
        // (local over moe_router), and its lint list says what run.json changed.
        int graphed = -1;
        for (int row = 0; row < view.layoutModel()->rowCount() && graphed < 0; ++row)
            if (view.layoutModel()->candidate(row)->layout.cudaGraphImpl == "transformer_engine")
                graphed = row;
        QVERIFY2(graphed >= 0, "the plan offers no layout with CUDA graphs");
        view.selectLayout(graphed);
        QTest::mouseClick(launch, Qt::LeftButton);
        QCOMPARE(spy.count(), 2);
        const auto graphedConfig = wb::core::parseRunConfig(spy.at(1).at(0).toString().toStdString());
        QVERIFY(graphedConfig.ok());
        QCOMPARE(graphedConfig.config.cudaGraph.impl, std::string("local"));
        QCOMPARE(graphedConfig.config.cudaGraph.scope, std::vector<std::string>{"moe_router"});
        bool noted = false;
        for (int i = 0; i < view.lintList()->count(); ++i)
            noted = noted || view.lintList()->item(i)->text().startsWith(QStringLiteral("run.json: cuda_graph transformer_engine"));
        QVERIFY(noted);
    }

    void memoryBarIsPainted()
    {
        PlanningView view(kCatalog);
        view.resize(1600, 1000);
        view.show();
        planThrough(view, QStringLiteral("qwen3-vl-30b-a3b"), QStringLiteral("h100"), 2, 8);
        QVERIFY(view.layoutModel()->rowCount() >= 1);
        QTableView* table = view.layoutTable();
        const QRect cell = table->visualRect(view.layoutModel()->index(0, PlanLayoutModel::MemoryColumn));
        QVERIFY(cell.isValid());
        const QImage image = table->viewport()->grab(cell).toImage();
        const QRgb weights = wb::ui::PlanMemoryBarDelegate::categoryColor(0).rgb();
        const QRgb activations = wb::ui::PlanMemoryBarDelegate::categoryColor(3).rgb();
        int weightPixels = 0, activationPixels = 0;
        for (int y = 0; y < image.height(); ++y)
            for (int x = 0; x < image.width(); ++x) {
                weightPixels += image.pixel(x, y) == weights;
                activationPixels += image.pixel(x, y) == activations;
            }
        QVERIFY2(weightPixels > 20, qPrintable(QString::number(weightPixels)));
        QVERIFY2(activationPixels > 20, qPrintable(QString::number(activationPixels)));
    }

    void chineseTranslation()
    {
        const QString dir = QStringLiteral(WB_TEST_TRANSLATIONS_DIR);
        QTranslator translator;
        if (!translator.load(QStringLiteral("moe_workbench_zh_CN"), dir))
            QSKIP("moe_workbench_zh_CN.qm not built (lrelease from qt6-l10n-tools missing)");
        QCoreApplication::installTranslator(&translator);
        QLocale::setDefault(QLocale(QLocale::Chinese, QLocale::China));
        {
            PlanningView view(kCatalog);
            QCOMPARE(child<QPushButton>(view, "planButton")->text(), QStringLiteral("规划"));
            QCOMPARE(view.guidePanel()->pathText(), QStringLiteral("先用 FSDP"));
            view.guidePanel()->setAnswer(0, 1);
            // The fired rule in the guide's original wording (from core), the knobs translated here.
            QCOMPARE(view.guidePanel()->rulesList()->item(0)->text(), QStringLiteral("首次启动新的视觉语言模型"));
            QVERIFY(view.guidePanel()->knobsList()->item(0)->text().contains(QStringLiteral("冻结视觉模块")));
            QCOMPARE(view.layoutModel()->headerData(PlanLayoutModel::RecomputeColumn, Qt::Horizontal).toString(),
                     QStringLiteral("重计算"));
        }
        QCoreApplication::removeTranslator(&translator);
        QLocale::setDefault(QLocale::c());
    }

    void impossibleClusterSaysWhy()
    {
        PlanningView view(kCatalog);
        planThrough(view, QStringLiteral("qwen3-vl-235b-a22b"), QStringLiteral("h100"), 1, 2);
        QCOMPARE(view.layoutModel()->rowCount(), 0);
        QVERIFY2(view.summaryLabel()->text().contains(QStringLiteral("No layout fits")),
                 qPrintable(view.summaryLabel()->text()));
        QCOMPARE(view.preview()->tabs()->count(), 0);
    }

    // "Predict a file…": a layout the user already has, predicted with the same code as the CLI's
    // predict (core/planner/layout_file.h) on the hardware and GPUs chosen here; a file that
    // cannot be predicted says why, nothing crashes.
    void predictsAGivenFile()
    {
        PlanningView view(kCatalog);
        QVERIFY(view.setHardware(QStringLiteral("h200")));
        view.setCluster(1, 1);
        QVERIFY(view.predictFileButton()->isEnabled());
        bool ok = false;
        const QString text = view.predictFile(kCatalog + QStringLiteral("/../../benchmarks/configs/qwen3vl-30b-slice.json"), &ok);
        QVERIFY2(ok, qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("predicted for moe-train")) && text.contains(QStringLiteral("memory, most-loaded rank")) &&
                     text.contains(QStringLiteral("core attention")) && text.contains(QStringLiteral("measured")) &&
                     text.contains(QStringLiteral("of the step")),
                 qPrintable(text));
        auto* window = view.findChild<QDialog*>(QStringLiteral("planFilePrediction"));
        QVERIFY(window && window->isVisible());
        if (const QString shot = qEnvironmentVariable("WB_PLAN_PREDICT_SCREENSHOT"); !shot.isEmpty())
            QVERIFY(window->grab().save(shot));
        QTemporaryDir dir;
        const QString bad = dir.filePath(QStringLiteral("bad.json"));
        QFile f(bad);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(R"({"data": {"source": "mock"}, "parallel": {"tensor_model_parallel_size": 3}})");
        f.close();
        const QString why = view.predictFile(bad, &ok);
        QVERIFY(!ok);
        QVERIFY2(why.contains(QStringLiteral("tensor_model_parallel_size")), qPrintable(why));
        QVERIFY(!view.predictFile(dir.filePath(QStringLiteral("missing.json")), &ok).isEmpty() && !ok);
    }
};

WB_UI_TEST_MAIN(TestPlanView)
#include "test_plan_view.moc"
