// Decision guide: the guide's rules as rows (answers → path and fired rules), knobs in the guide's
// order, and cautions that appear exactly when their condition holds.
#include "core/planner/decision_guide.h"

#include <QtTest/QtTest>

#include <algorithm>

using namespace wb::core::planner;

namespace {
std::optional<bool> answer(int v) { return v < 0 ? std::nullopt : std::optional<bool>(v == 1); }

// reference/decision-guide.md, "Choose FSDP when" and "Choose 3D parallel when", one row per
// sentence: the question whose answer decides it (0 first launch, 1 stable under FSDP, 2 clean
// stage boundaries, 3 memory fit first, 4 vision frozen, 5 time for deep testing) and the answer
// (1 yes, 0 no) that makes the sentence true.
struct Sentence {
    const char* id;
    const char* path;
    const char* text;
    int question;
    int holdsOn;
};
const Sentence kGuide[] = {
    {"fsdp-first-launch", "fsdp", "it is the first launch of a new VLM", 0, 1},
    {"fsdp-awkward-stage-boundaries", "fsdp", "stage boundaries between embedding, vision module and decoder are awkward", 2, 0},
    {"fsdp-memory-fit-first", "fsdp", "fitting in memory matters more than absolute throughput", 3, 1},
    {"fsdp-vision-frozen", "fsdp", "the vision module may be frozen during decoder-focused tuning", 4, 1},
    {"3d-stable-under-fsdp", "3d", "the model already runs stably under FSDP", 1, 1},
    {"3d-clean-pp-layout", "3d", "the PP layout is clean and reproducible", 2, 1},
    {"3d-deep-testing", "3d", "MBS, recompute and CUDA-graph scope can be tested together", 5, 1},
    {"3d-steady-state-throughput", "3d", "the goal is best steady-state throughput, not an easy first launch", 3, 0},
};
}  // namespace

class TestPlannerDecisionGuide : public QObject {
    Q_OBJECT
private slots:
    // Every combination of the six answers (yes / no / not answered) and the two facts (mock
    // data, comparing FSDP against 3D runs): 3^6 x 2^2 = 2916 rows, checked against a table written
    // from the guide's text (kGuide, below), not from the engine's own rows.
    void everyCombination_data()
    {
        QTest::addColumn<QVector<int>>("answers");
        QTest::addColumn<bool>("mock");
        QTest::addColumn<bool>("comparing");
        const char* names[] = {"first", "stable", "clean", "memory", "frozen", "deep"};
        for (int code = 0; code < 729; ++code)
            for (int facts = 0; facts < 4; ++facts) {
                QVector<int> answers;
                QString tag;
                for (int q = 0, c = code; q < 6; ++q, c /= 3) {
                    answers << (c % 3) - 1;
                    tag += QStringLiteral("%1=%2 ").arg(QLatin1String(names[q]),
                                                       answers.back() < 0 ? QStringLiteral("-") : answers.back() ? QStringLiteral("yes") : QStringLiteral("no"));
                }
                tag += (facts & 1 ? QStringLiteral("mock ") : QString()) + (facts & 2 ? QStringLiteral("comparing") : QString());
                QTest::newRow(qPrintable(tag)) << answers << bool(facts & 1) << bool(facts & 2);
            }
    }

    void everyCombination()
    {
        QFETCH(QVector<int>, answers);
        QFETCH(bool, mock);
        QFETCH(bool, comparing);
        GuideAnswers a;
        std::optional<bool>* questions[] = {&a.firstLaunch, &a.stableUnderFsdp, &a.cleanStageBoundaries,
                                        &a.memoryFitFirst, &a.visionFrozen, &a.timeForDeepTesting};
        for (int q = 0; q < 6; ++q)
            *questions[q] = answer(answers[q]);
        a.mockData = mock;
        a.comparingRuns = comparing;

        // The guide's table: which of its sentences hold for these answers.
        QStringList fsdpHolds, threeDHolds, threeDMissing;
        for (const Sentence& sentence : kGuide) {
            const bool holds = answers[sentence.question] == sentence.holdsOn;
            if (QLatin1String(sentence.path) == QLatin1String("fsdp")) {
                if (holds)
                    fsdpHolds << QLatin1String(sentence.id);
            } else {
                (holds ? threeDHolds : threeDMissing) << QLatin1String(sentence.id);
            }
        }
        // "Move to 3D parallel only if the throughput headroom is worth it": every "choose 3D"
        // sentence and no "choose FSDP" sentence; else the workflow's first step, FSDP.
        const bool threeD = fsdpHolds.isEmpty() && threeDMissing.isEmpty();
        const QStringList expectedRules = threeD ? threeDHolds : fsdpHolds.isEmpty() ? QStringList{QStringLiteral("fsdp-default-workflow")} : fsdpHolds;

        const GuideRecommendation r = recommend(a);
        QCOMPARE(QString::fromStdString(r.path), threeD ? QStringLiteral("3d") : QStringLiteral("fsdp"));
        QStringList fired;
        for (const GuideRule& rule : r.rules) {
            fired << QString::fromStdString(rule.id);
            QCOMPARE(QString::fromStdString(rule.path), QString::fromStdString(r.path));
            // The text quotes the guide's sentence and says what was answered, never the opposite.
            for (const Sentence& sentence : kGuide)
                if (rule.id == sentence.id) {
                    QVERIFY2(rule.guideText.find(sentence.text) != std::string::npos, rule.guideText.c_str());
                    const int given = answers[sentence.question];
                    QCOMPARE(given, sentence.holdsOn);
                    QVERIFY2(describeRule(rule).find(given == 1 ? "(answered yes" : "(answered no") != std::string::npos,
                             describeRule(rule).c_str());
                }
        }
        QCOMPARE(fired, expectedRules);
        QStringList missing;
        for (const GuideRule& rule : r.missingFor3d) {
            missing << QString::fromStdString(rule.id);
            QVERIFY(describeRule(rule).find(rule.answered) != std::string::npos);
        }
        QCOMPARE(missing, threeD ? QStringList{} : threeDMissing);
        // The facts never change the path; they bring their cautions.
        const auto has = [&](const char* id) {
            return std::any_of(r.cautions.begin(), r.cautions.end(), [&](const GuideCaution& c) { return c.id == id; });
        };
        QCOMPARE(has("mock-data-misleads"), mock);
        QCOMPARE(has("normalize-effective-work"), comparing);
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
        // A text-only model (Qwen3-30B-A3B) has no vision module to freeze, and its mock data is
        // not the guide's "mock multimodal" case.
        GuideAnswers text;
        text.textOnlyModel = true;
        text.mockData = true;
        text.hasImages = false;
        const GuideRecommendation t = recommend(text);
        QVERIFY(!t.nextKnobs[0].applies);
        for (const GuideCaution& c : t.cautions)
            QVERIFY2(c.id != "mock-data-misleads", c.id.c_str());
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
