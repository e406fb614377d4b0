// Decision guide: the guide's rules as rows (answers → path and fired rules), knobs in the guide's
// order, and cautions that appear exactly when their condition holds.
#include "core/planner/decision_guide.h"

#include <QtTest/QtTest>

using namespace wb::core::planner;

namespace {
std::optional<bool> answer(int v) { return v < 0 ? std::nullopt : std::optional<bool>(v == 1); }
}  // namespace

class TestPlannerDecisionGuide : public QObject {
    Q_OBJECT
private slots:
    void rules_data()
    {
        // -1 unanswered, 0 no, 1 yes: firstLaunch, stableUnderFsdp, cleanStages, memoryFirst, visionFrozen, deepTesting
        QTest::addColumn<QVector<int>>("answers");
        QTest::addColumn<QString>("path");
        QTest::addColumn<QStringList>("rules");
        QTest::newRow("no answers → FSDP workflow") << QVector<int>{-1, -1, -1, -1, -1, -1} << "fsdp" << QStringList{"fsdp-default-workflow"};
        QTest::newRow("first launch") << QVector<int>{1, -1, -1, -1, -1, -1} << "fsdp" << QStringList{"fsdp-first-launch"};
        QTest::newRow("first launch beats clean PP") << QVector<int>{1, -1, 1, 0, -1, 1} << "fsdp" << QStringList{"fsdp-first-launch"};
        QTest::newRow("awkward stages") << QVector<int>{-1, -1, 0, -1, -1, -1} << "fsdp" << QStringList{"fsdp-awkward-stage-boundaries"};
        QTest::newRow("memory fit first") << QVector<int>{-1, -1, -1, 1, -1, -1} << "fsdp" << QStringList{"fsdp-memory-fit-first"};
        QTest::newRow("vision frozen") << QVector<int>{-1, -1, -1, -1, 1, -1} << "fsdp" << QStringList{"fsdp-vision-frozen"};
        QTest::newRow("stable, clean, deep testing, throughput")
            << QVector<int>{0, 1, 1, 0, 0, 1} << "3d"
            << QStringList{"3d-stable-under-fsdp", "3d-clean-pp-layout", "3d-deep-testing", "3d-steady-state-throughput"};
        QTest::newRow("stable but memory first and frozen vision")
            << QVector<int>{0, 1, -1, 1, 1, -1} << "fsdp" << QStringList{"fsdp-memory-fit-first", "fsdp-vision-frozen"};
        QTest::newRow("tie goes to FSDP") << QVector<int>{-1, -1, 1, 1, -1, -1} << "fsdp" << QStringList{"fsdp-memory-fit-first"};
    }
    void rules()
    {
        QFETCH(QVector<int>, answers);
        QFETCH(QString, path);
        QFETCH(QStringList, rules);
        GuideAnswers a;
        a.firstLaunch = answer(answers[0]);
        a.stableUnderFsdp = answer(answers[1]);
        a.cleanStageBoundaries = answer(answers[2]);
        a.memoryFitFirst = answer(answers[3]);
        a.visionFrozen = answer(answers[4]);
        a.timeForDeepTesting = answer(answers[5]);
        const GuideRecommendation r = recommend(a);
        QCOMPARE(QString::fromStdString(r.path), path);
        QStringList fired;
        for (const GuideRule& rule : r.rules) {
            fired << QString::fromStdString(rule.id);
            QVERIFY(!rule.guideText.empty() && !rule.guideTextZh.empty());
            QCOMPARE(QString::fromStdString(rule.path), path);
        }
        QCOMPARE(fired, rules);
    }

    void knobsInTheGuidesOrder()
    {
        const GuideRecommendation r = recommend({});
        QCOMPARE(int(r.nextKnobs.size()), 5);
        const char* ids[] = {"freeze-vision", "test-mbs", "prefer-selective-recompute", "match-cuda-graph-scope", "etp-only-if-ep-insufficient"};
        for (int i = 0; i < 5; ++i) {
            QCOMPARE(r.nextKnobs[size_t(i)].order, i + 1);
            QCOMPARE(r.nextKnobs[size_t(i)].id, std::string(ids[i]));
        }
        GuideAnswers notFrozen;
        notFrozen.visionFrozen = false;
        QVERIFY(!recommend(notFrozen).nextKnobs[0].applies);
    }

    void cautions_data()
    {
        QTest::addColumn<QString>("fact");
        QTest::addColumn<QString>("caution");
        QTest::newRow("mock") << "mock" << "mock-data-misleads";
        QTest::newRow("images") << "images" << "vision-encoder-dominance";
        QTest::newRow("comparing") << "compare" << "normalize-effective-work";
        QTest::newRow("etp") << "etp" << "etp-not-free";
        QTest::newRow("full recompute") << "full" << "recompute-graph-coupling";
        QTest::newRow("graphs") << "graphs" << "recompute-graph-coupling";
        QTest::newRow("gb200") << "gb200" << "hybridep-default";
    }
    void cautions()
    {
        QFETCH(QString, fact);
        QFETCH(QString, caution);
        auto has = [&](const GuideAnswers& a) {
            for (const GuideCaution& c : recommend(a).cautions)
                if (c.id == caution.toStdString())
                    return true;
            return false;
        };
        GuideAnswers off;
        off.hasImages = false;
        QVERIFY(!has(off));
        GuideAnswers on = off;
        if (fact == "mock") on.mockData = true;
        if (fact == "images") on.hasImages = true;
        if (fact == "compare") on.comparingRuns = true;
        if (fact == "etp") on.usesEtp = true;
        if (fact == "full") on.fullRecompute = true;
        if (fact == "graphs") on.cudaGraphs = true;
        if (fact == "gb200") on.gb200Class = true;
        QVERIFY(has(on));
    }
};

QTEST_GUILESS_MAIN(TestPlannerDecisionGuide)
#include "test_decision_guide.moc"
