// Prediction vs measurement (core/compare/prediction_check) on hand-computed cases, through the
// store (a prediction kept with a run, read back by compareRuns, in JSON and Markdown), and the
// step-column read the comparison loads with (RunStore::stepColumns, topping up loaded runs).
#include "core/compare/compare_report.h"
#include "core/compare/prediction_check.h"
#include "core/compare/run_comparison.h"
#include "synthetic_runs.h"

#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

#include <cmath>

#include <nlohmann/json.hpp>

using namespace wb::core;

namespace {

RunFigures measured(double stepMs, double memGib, double tokens, double mfu)
{
    RunFigures f;
    f.stepMs = robustStats({stepMs});
    f.peakMemGib = memGib;
    f.tokensPerSPerGpu = robustStats({tokens});
    f.mfu = robustStats({mfu});
    return f;
}

RunPrediction predicted(double stepMs, double memGib, double tokens, double mfu, int gpus = 2)
{
    RunPrediction p;
    p.source = "moe-workbench planner test";
    p.hardware = "h200";
    p.gpus = gpus;
    p.stepMs = stepMs;
    p.memoryGib = memGib;
    p.tokensPerSPerGpu = tokens;
    p.mfu = mfu;
    return p;
}

bool near(double a, double b)
{
    return std::abs(a - b) < 1e-9 * std::max(1.0, std::abs(b));
}

}  // namespace

class TestPredictionCheck : public QObject {
    Q_OBJECT

private slots:
    void handComputedErrors()
    {
        // error = (predicted - measured) / measured: 90 vs 100 ms = -10 %, 12 vs 10 GiB = +20 %,
        // 25600 vs 20480 tok/s = +25 %, MFU 0.40 vs 0.50 = -20 % (shown in %: 40 vs 50).
        const auto check = checkPrediction(predicted(90.0, 12.0, 25600.0, 0.40), measured(100.0, 10.0, 20480.0, 0.50), 2);
        QCOMPARE(check.rows.size(), size_t(4));
        QCOMPARE(std::string(check.rows[0].key), std::string("step_ms"));
        QVERIFY(near(check.rows[0].predicted, 90.0) && near(check.rows[0].measured, 100.0));
        QVERIFY(check.rows[0].errorPct && near(*check.rows[0].errorPct, -10.0));
        QCOMPARE(std::string(check.rows[1].key), std::string("peak_mem_gib"));
        QVERIFY(check.rows[1].errorPct && near(*check.rows[1].errorPct, 20.0));
        QCOMPARE(std::string(check.rows[2].key), std::string("tokens_per_s_per_gpu"));
        QVERIFY(check.rows[2].errorPct && near(*check.rows[2].errorPct, 25.0));
        QCOMPARE(std::string(check.rows[3].key), std::string("mfu"));
        QVERIFY(near(check.rows[3].predicted, 40.0) && near(check.rows[3].measured, 50.0));
        QVERIFY(check.rows[3].errorPct && near(*check.rows[3].errorPct, -20.0));
        QVERIFY(check.note.empty());
    }

    void unknownFiguresHaveNoError()
    {
        // The planner gave no MFU; the run recorded no peak memory (a CPU run): no error, not 0 %.
        const auto check = checkPrediction(predicted(100.0, 8.0, 1000.0, 0.0), measured(100.0, 0.0, 1000.0, 0.3), 2);
        QVERIFY(check.rows[0].errorPct && near(*check.rows[0].errorPct, 0.0));
        QVERIFY(std::isnan(check.rows[1].measured));
        QVERIFY(!check.rows[1].errorPct);
        QVERIFY(std::isnan(check.rows[3].predicted));
        QVERIFY(!check.rows[3].errorPct);
    }

    void otherWorldSizeIsNoted()
    {
        const auto check = checkPrediction(predicted(100.0, 8.0, 1000.0, 0.3, 8), measured(100.0, 8.0, 1000.0, 0.3), 1);
        QVERIFY(check.note.find("8 GPU") != std::string::npos);
        QVERIFY(checkPrediction(predicted(100.0, 8.0, 1000.0, 0.3, 8), measured(100.0, 8.0, 1000.0, 0.3), 0).note.empty());
    }

    void meanAbsoluteErrorAcrossRuns()
    {
        // Step time: -10 % and +30 % -> mean |error| 20 % over 2 runs. Memory: +20 % and unknown
        // (measured 0) -> 20 % over 1 run. MFU: unknown in both -> NaN over 0 runs.
        std::vector<PredictionCheck> checks = {
            checkPrediction(predicted(90.0, 12.0, 1100.0, 0.0), measured(100.0, 10.0, 1000.0, 0.5), 2),
            checkPrediction(predicted(130.0, 12.0, 900.0, 0.0), measured(100.0, 0.0, 1000.0, 0.5), 2),
        };
        const auto accuracy = predictionAccuracy(checks);
        QCOMPARE(accuracy.size(), size_t(4));
        QVERIFY(near(accuracy[0].meanAbsErrorPct, 20.0));
        QCOMPARE(accuracy[0].runs, size_t(2));
        QVERIFY(near(accuracy[1].meanAbsErrorPct, 20.0));
        QCOMPARE(accuracy[1].runs, size_t(1));
        QVERIFY(near(accuracy[2].meanAbsErrorPct, 10.0));
        QCOMPARE(accuracy[3].runs, size_t(0));
        QVERIFY(std::isnan(accuracy[3].meanAbsErrorPct));
        QVERIFY(predictionAccuracy({}).empty());
    }

    void predictionThroughTheStore()
    {
        QTemporaryDir dir;
        const std::string path = QDir(dir.path()).filePath(QStringLiteral("runs.sqlite")).toStdString();
        auto store = RunStore::open(path);
        QVERIFY(store.ok());
        wb::test::SyntheticRun run;
        run.name = "planned";
        run.noise = 0.0;  // steady step time exactly 100 ms, memory 10 GiB, 20480 tok/s/GPU, MFU 0.5
        const std::string planned = wb::test::addSyntheticRun(**store, run);
        run.name = "ad hoc";
        const std::string adHoc = wb::test::addSyntheticRun(**store, run);
        QVERIFY(!planned.empty() && !adHoc.empty());
        QVERIFY((*store)->setPrediction(planned, predicted(80.0, 12.6, 25600.0, 0.55)).ok());

        CompareRequest request;
        request.runs = {planned, adHoc};
        auto c = compareRuns(path, request);
        QVERIFY2(c.ok(), c.ok() ? "" : c.error().toString().c_str());
        QVERIFY(c->runs[0].predictionCheck.has_value());
        QVERIFY(!c->runs[1].predictionCheck.has_value());
        const auto& rows = c->runs[0].predictionCheck->rows;
        QVERIFY(rows[0].errorPct && near(*rows[0].errorPct, -20.0));           // 80 vs 100 ms
        QVERIFY(rows[1].errorPct && near(*rows[1].errorPct, 20.0));            // 12.6 vs 10.5 GiB
        QVERIFY(near(rows[1].measured, 10.5));                                 // whole run: warm-up included
        QVERIFY(rows[2].errorPct && near(*rows[2].errorPct, 25.0));            // 25600 vs 20480
        QVERIFY(rows[3].errorPct && near(*rows[3].errorPct, 10.0));            // 55 vs 50 %
        QCOMPARE(c->predictionAccuracy[0].runs, size_t(1));
        QVERIFY(near(c->predictionAccuracy[0].meanAbsErrorPct, 20.0));

        const auto json = nlohmann::json::parse(comparisonToJson(*c));
        const auto& p = json["runs"][0]["prediction"];
        QCOMPARE(p["hardware"].get<std::string>(), std::string("h200"));
        QCOMPARE(p["gpus"].get<int>(), 2);
        QVERIFY(near(p["figures"]["step_ms"]["predicted"].get<double>(), 80.0));
        QVERIFY(near(p["figures"]["step_ms"]["measured"].get<double>(), 100.0));
        QVERIFY(near(p["figures"]["step_ms"]["error_pct"].get<double>(), -20.0));
        QVERIFY(json["runs"][1]["prediction"].is_null());
        QVERIFY(near(json["prediction_accuracy"]["step_ms"]["mean_abs_error_pct"].get<double>(), 20.0));

        const std::string md = comparisonToMarkdown(*c, {});
        QVERIFY(md.find("## Predicted vs measured") != std::string::npos);
        QVERIFY(md.find("80.0 / 100.0 (-20.0%)") != std::string::npos);
        QVERIFY(md.find("no prediction (not launched from a plan)") != std::string::npos);
    }

    void stepColumnsReadASubset()
    {
        QTemporaryDir dir;
        auto store = RunStore::open(QDir(dir.path()).filePath(QStringLiteral("runs.sqlite")).toStdString());
        QVERIFY(store.ok());
        wb::test::SyntheticRun run;
        run.steps = 50;
        const std::string id = wb::test::addSyntheticRun(**store, run);
        // A NaN loss is stored as NULL and must come back as NaN.
        StepRecord diverged;
        diverged.step = 51;
        diverged.stepMs = 100.0;
        diverged.loss = std::numeric_limits<double>::quiet_NaN();
        diverged.effectiveTokens = 7;
        const std::string line = toJsonLine(diverged) + "\n";
        QVERIFY((*store)->ingest(id, (*store)->run(id)->streamOffset, line).ok());

        const StepField fields[] = {StepField::Loss, StepField::EffectiveTokens, StepField::StepMs};
        auto columns = (*store)->stepColumns(id, fields);
        QVERIFY(columns.ok());
        auto all = (*store)->steps(id);
        QCOMPARE(columns->size(), all->size());
        QCOMPARE(columns->size(), size_t(51));
        QVERIFY(!columns->column(StepField::Time));
        for (size_t i = 0; i < all->size(); ++i) {
            QCOMPARE(columns->step[i], (*all)[i].step);
            QCOMPARE((*columns->column(StepField::StepMs))[i], (*all)[i].stepMs);
            QCOMPARE((*columns->column(StepField::EffectiveTokens))[i], double((*all)[i].effectiveTokens));
        }
        QVERIFY(std::isnan(columns->column(StepField::Loss)->back()));
        QCOMPARE(columns->column(StepField::EffectiveTokens)->back(), 7.0);

        auto tail = (*store)->stepColumns(id, fields, 48);  // steps 49, 50, 51
        QVERIFY(tail.ok());
        QCOMPARE(tail->size(), size_t(3));
        QCOMPARE(tail->step.front(), int64_t(49));

        const StepField twice[] = {StepField::Loss, StepField::Loss};
        QCOMPARE((*store)->stepColumns(id, twice).error().code, ErrorCode::InvalidArgument);

        // The comparison's series from the columns: the fields read are moved in, the others NaN;
        // from records, every field it holds.
        const StepSeries series = StepSeries::fromColumns(std::move(*columns));
        QCOMPARE(series.size(), size_t(51));
        QCOMPARE(series.stepMs[10], (*all)[10].stepMs);
        QCOMPARE(series.effectiveTokens[10], double((*all)[10].effectiveTokens));
        QVERIFY(std::isnan(series.memPeakGib[10]));
        QVERIFY(std::isnan(series.loss.back()));
        const StepSeries fromRecords = StepSeries::fromRecords(*all);
        QCOMPARE(fromRecords.memPeakGib[10], (*all)[10].memPeakGib);
        QCOMPARE(fromRecords.images[10], double((*all)[10].images));
        QCOMPARE(fromRecords.step, series.step);
    }

    void loadedRunsAreToppedUp()
    {
        // A comparison handed the runs it loaded before reads only the newer steps, and ends up
        // with what a fresh load gives.
        QTemporaryDir dir;
        const std::string path = QDir(dir.path()).filePath(QStringLiteral("runs.sqlite")).toStdString();
        auto store = RunStore::open(path);
        QVERIFY(store.ok());
        wb::test::SyntheticRun run;
        run.steps = 120;
        RunConfig config = run.config;
        config.name = run.name;
        auto id = (*store)->createRun({"", run.name, "local", "", runConfigToJson(config), runConfigHash(config)});
        QVERIFY(id.ok());
        const std::string stream = wb::test::syntheticStream(run);
        const size_t half = stream.find('\n', stream.size() / 2) + 1;
        QVERIFY((*store)->ingest(*id, 0, std::string_view(stream).substr(0, half)).ok());
        CompareRequest request;
        request.runs = {*id};
        auto first = compareRuns(path, request);
        QVERIFY(first.ok());
        const size_t before = first->runs[0].steps().size();
        QVERIFY(before > 20 && before < 120);

        auto same = compareRuns(path, request, first->runs);  // nothing new: the steps are shared
        QVERIFY(same.ok());
        QCOMPARE(same->runs[0].stepData.get(), first->runs[0].stepData.get());

        QVERIFY((*store)->ingest(*id, static_cast<int64_t>(half), std::string_view(stream).substr(half)).ok());
        auto topped = compareRuns(path, request, first->runs);
        auto fresh = compareRuns(path, request);
        QVERIFY(topped.ok() && fresh.ok());
        QCOMPARE(topped->runs[0].steps().size(), size_t(120));
        QCOMPARE(first->runs[0].steps().size(), before);  // the earlier comparison is untouched
        for (size_t i = 0; i < 120; ++i) {
            QCOMPARE(topped->runs[0].steps().step[i], fresh->runs[0].steps().step[i]);
            QCOMPARE(topped->runs[0].steps().stepMs[i], fresh->runs[0].steps().stepMs[i]);
            QCOMPARE(topped->runs[0].steps().loss[i], fresh->runs[0].steps().loss[i]);
        }
        QCOMPARE(topped->runs[0].figures.stepMs.median, fresh->runs[0].figures.stepMs.median);
    }
};

QTEST_GUILESS_MAIN(TestPredictionCheck)
#include "test_prediction_check.moc"
