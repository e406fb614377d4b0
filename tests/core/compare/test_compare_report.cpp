// The comparison report and the SVG charts (core/compare/compare_report): the report leads with the
// mock-vs-real warning and carries one table row per figure with the deltas; the SVGs are
// well-formed XML with every run's line, the steady-window bands, and a log axis when asked.
#include "core/compare/compare_report.h"
#include "core/compare/run_comparison.h"
#include "synthetic_runs.h"

#include <QDir>
#include <cmath>
#include <limits>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QtTest>

using namespace wb::core;

namespace {

/// What the SVG holds: well-formed (else `ok` false), the root's name, the "series" polylines'
/// point counts and the steady-window bands.
struct SvgSummary {
    bool ok = false;
    QString root;
    QList<int> seriesPoints;
    int bands = 0;
};

SvgSummary parseSvg(const std::string& svg)
{
    SvgSummary out;
    QXmlStreamReader xml(QByteArray::fromStdString(svg));
    while (!xml.atEnd()) {
        if (xml.readNext() != QXmlStreamReader::StartElement)
            continue;
        if (out.root.isEmpty())
            out.root = xml.name().toString();
        const auto cls = xml.attributes().value(QStringLiteral("class"));
        if (xml.name() == QStringLiteral("polyline") && cls == QStringLiteral("series"))
            out.seriesPoints << xml.attributes().value(QStringLiteral("points")).toString().split(' ', Qt::SkipEmptyParts).size();
        if (xml.name() == QStringLiteral("rect") && cls == QStringLiteral("steady-window"))
            ++out.bands;
    }
    out.ok = !xml.hasError();
    return out;
}

QString readAll(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QString::fromUtf8(f.readAll());
}

}  // namespace

class TestCompareReport : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::unique_ptr<RunStore> m_store;
    std::string m_realId, m_mockId;

    Comparison compareMockAndReal()
    {
        CompareRequest request;
        request.runs = {m_realId, m_mockId};
        auto c = compareRuns(*m_store, request);
        if (!c.ok())
            qFatal("%s", c.error().toString().c_str());
        return std::move(*c);
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        auto store = RunStore::open(QDir(m_dir.path()).filePath(QStringLiteral("runs.sqlite")).toStdString());
        QVERIFY(store.ok());
        m_store = std::move(*store);
        wb::test::SyntheticRun real;
        real.name = "real-run";
        real.steps = 3000;  // more steps than pixel columns: decimation must kick in
        wb::test::SyntheticRun mock = real;
        mock.name = "mock-run";
        mock.dataSource = "mock";
        mock.stepMs = 50.0;
        m_realId = wb::test::addSyntheticRun(*m_store, real);
        m_mockId = wb::test::addSyntheticRun(*m_store, mock);
        QVERIFY(!m_realId.empty() && !m_mockId.empty());
    }

    void markdownLeadsWithTheCriticalWarning()
    {
        const Comparison c = compareMockAndReal();
        const std::string md = comparisonToMarkdown(c, {"step_time.svg"});
        const auto warnings = md.find("## Warnings");
        const auto critical = md.find("CRITICAL (data_source)");
        const auto figures = md.find("## Figures");
        QVERIFY(warnings != std::string::npos && critical != std::string::npos && figures != std::string::npos);
        QVERIFY(warnings < critical && critical < figures);
        QVERIFY(md.find("No throughput conclusion is possible") < figures);
        QVERIFY(md.find("mock") != std::string::npos && md.find("real") != std::string::npos);
        // One row per figure, with the delta of the mock run (2x faster: +100 % tokens/s/GPU).
        for (const auto& spec : figureSpecs())
            QVERIFY2(md.find(std::string("| ") + spec.label + " (") != std::string::npos, spec.label);
        const auto row = md.find("| effective tokens/s/GPU (tok/s) |");
        const auto rowEnd = md.find('\n', row);
        const std::string line = md.substr(row, rowEnd - row);
        QVERIFY2(line.find("(+100.") != std::string::npos || line.find("(+99.") != std::string::npos, line.c_str());
        QVERIFY(md.find("real-run (baseline)") != std::string::npos);
        // Config diff and the chart link.
        QVERIFY(md.find("## Config diff") != std::string::npos);
        QVERIFY(md.find("`data.source`") != std::string::npos);
        QVERIFY(md.find("![step_time](step_time.svg)") != std::string::npos);
    }

    // A run name is anyone's text (issue 20 item 12): in report.md it stays text — no raw HTML
    // (Markdown passes it through), no forged table row or heading line.
    void markdownEscapesRunNames()
    {
        wb::test::SyntheticRun hostile;
        hostile.name = "<script>alert(1)</script>|x\n# forged & more";
        hostile.steps = 50;
        const std::string id = wb::test::addSyntheticRun(*m_store, hostile);
        CompareRequest request;
        request.runs = {id, m_realId};
        auto c = compareRuns(*m_store, request);
        QVERIFY(c.ok());
        const std::string md = comparisonToMarkdown(*c, {});
        QVERIFY2(md.find("<script>") == std::string::npos, md.c_str());
        QVERIFY(md.find("&lt;script&gt;alert(1)&lt;/script&gt;\\|x # forged &amp; more") != std::string::npos);
        QVERIFY(md.find("\n# forged") == std::string::npos);
    }

    void svgIsWellFormedWithEveryRun()
    {
        const Comparison c = compareMockAndReal();
        for (ChartMetric metric : chartMetrics()) {
            for (bool logY : {false, true}) {
                ChartOptions options;
                options.logY = logY;
                const std::string svg = renderChartSvg(c, metric, options);
                const SvgSummary parsed = parseSvg(svg);
                QVERIFY2(parsed.ok, chartMetricKey(metric));
                QCOMPARE(parsed.root, QStringLiteral("svg"));
                QCOMPARE(parsed.seriesPoints.size(), 2);
                for (int points : parsed.seriesPoints)  // 3000 steps on ~800 columns: decimated, not emptied
                    QVERIFY2(points > 10 && points < 3000, qPrintable(QString::number(points)));
                QCOMPARE(parsed.bands, 2);
                QCOMPARE(svg.find("(log scale)") != std::string::npos, logY);
            }
        }
        ChartOptions noShade;
        noShade.shadeSteadyWindow = false;
        noShade.xAxis = ChartXAxis::EffectiveTokens;
        QVERIFY(renderChartSvg(c, ChartMetric::Throughput, noShade).find("steady-window") == std::string::npos);
    }

    void logScaleLeavesOutNonPositiveValues()
    {
        Comparison c = compareMockAndReal();
        auto steps = c.runs[0].steps();
        for (auto& loss : steps.loss)
            loss = 0.0;  // nothing to draw on a log axis for run 0
        c.runs[0].setSteps(std::move(steps));
        ChartOptions options;
        options.logY = true;
        const SvgSummary parsed = parseSvg(renderChartSvg(c, ChartMetric::Loss, options));
        QVERIFY(parsed.ok);
        QCOMPARE(parsed.seriesPoints.size(), 1);
    }

    void writesTheReportFolder()
    {
        const Comparison c = compareMockAndReal();
        const QString dir = QDir(m_dir.path()).filePath(QStringLiteral("report/nested"));
        auto written = writeComparisonReport(c, dir.toStdString());
        QVERIFY2(written.ok(), written.ok() ? "" : written.error().toString().c_str());
        QCOMPARE(written->size(), size_t(1 + chartMetrics().size()));
        for (const auto& path : *written)
            QVERIFY2(QFileInfo(QString::fromStdString(path)).size() > 100, path.c_str());
        const QString md = readAll(QDir(dir).filePath(QStringLiteral("report.md")));
        QVERIFY(md.contains(QStringLiteral("CRITICAL")));
        for (ChartMetric metric : chartMetrics())
            QVERIFY(md.contains(QStringLiteral("(%1.svg)").arg(QString::fromLatin1(chartMetricKey(metric)))));
        // Another image extension is only a link (the GUI writes the PNGs itself).
        ReportOptions options;
        options.imageExtension = "png";
        QVERIFY(writeComparisonReport(c, dir.toStdString(), options).ok());
        QVERIFY(readAll(QDir(dir).filePath(QStringLiteral("report.md"))).contains(QStringLiteral("(step_time.png)")));
        // An unwritable folder is an error, not a crash.
        auto bad = writeComparisonReport(c, "/proc/no-such-dir/report");
        QVERIFY(!bad.ok());
    }

    // RunStore::steps reads a REAL column with one call when it is not 0.0 (read performance):
    // a stored 0.0 must stay 0.0 and a NULL (a diverged loss) must read back as NaN.
    void storeKeepsZeroAndNaNApart()
    {
        auto id = m_store->createRun({"", "zeros", "local", "", "{}", ""});
        QVERIFY(id.ok());
        StepRecord a;
        a.step = 1;
        a.time = 1.7e9;
        a.stepMs = 12.5;
        a.loss = std::numeric_limits<double>::quiet_NaN();
        a.dataMs = 0.0;
        a.lr = -0.0;
        a.gradNorm = -3.25;
        StepRecord b = a;
        b.step = 2;
        b.loss = 0.0;
        b.mfu = 1e-300;
        const std::string stream = toJsonLine(a) + "\n" + toJsonLine(b) + "\n";
        QVERIFY(m_store->ingest(*id, 0, stream).ok());
        auto steps = m_store->steps(*id);
        QVERIFY(steps.ok());
        QCOMPARE(steps->size(), size_t(2));
        QVERIFY(std::isnan((*steps)[0].loss));
        QCOMPARE((*steps)[0].dataMs, 0.0);
        QCOMPARE((*steps)[0].gradNorm, -3.25);
        QCOMPARE((*steps)[0].stepMs, 12.5);
        QCOMPARE((*steps)[1].loss, 0.0);
        QVERIFY(!std::isnan((*steps)[1].loss));
        QCOMPARE((*steps)[1].mfu, 1e-300);
        auto tail = m_store->steps(*id, 1);  // after step 1: sized by the COUNT, still right
        QVERIFY(tail.ok());
        QCOMPARE(tail->size(), size_t(1));
        QCOMPARE(tail->front().step, int64_t(2));
    }
};

QTEST_GUILESS_MAIN(TestCompareReport)
#include "test_compare_report.moc"
