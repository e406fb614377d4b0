// The HTML comparison report (core/compare/html_report): one well-formed XHTML file (parsed here
// with QXmlStreamReader) whose first element in <body> is the warnings banner, with every run in
// the figures table, every warning, predicted vs measured, the config diff and four inline <svg>
// charts — and run names full of <, &, quotes that stay text.
#include "core/compare/html_report.h"
#include "core/compare/run_comparison.h"
#include "synthetic_runs.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QXmlStreamReader>
#include <QtTest>

using namespace wb::core;

namespace {

/// What the parsed document holds.
struct HtmlSummary {
    bool ok = false;
    QString error;
    QStringList bodyOrder;        ///< element names (or name#id / name.class) of <body>'s children
    QStringList runHeaders;       ///< <th class="run"> texts of the figures table
    QStringList warningItems;     ///< <li class="warning-item"> texts
    QStringList predictionCells;  ///< <td> texts of table#predictions
    QStringList configKeys;       ///< first <td> texts of table#config-diff rows
    int svgs = 0;
    int svgSeries = 0;
};

HtmlSummary parseHtml(const std::string& html)
{
    HtmlSummary out;
    QXmlStreamReader xml(QByteArray::fromStdString(html));
    int depth = 0, bodyDepth = -1;
    QString table;
    bool firstCellOfRow = false;
    while (!xml.atEnd()) {
        const auto token = xml.readNext();
        if (token == QXmlStreamReader::EndElement) {
            --depth;
            if (xml.name() == QStringLiteral("table"))
                table.clear();
            continue;
        }
        if (token != QXmlStreamReader::StartElement)
            continue;
        ++depth;
        const QString name = xml.name().toString();
        const QString id = xml.attributes().value(QStringLiteral("id")).toString();
        const QString cls = xml.attributes().value(QStringLiteral("class")).toString();
        if (name == QStringLiteral("body"))
            bodyDepth = depth;
        else if (depth == bodyDepth + 1)
            out.bodyOrder << name + (id.isEmpty() ? QString() : QLatin1Char('#') + id);
        if (name == QStringLiteral("svg"))
            ++out.svgs;
        if (name == QStringLiteral("polyline") && cls == QStringLiteral("series"))
            ++out.svgSeries;
        if (name == QStringLiteral("table"))
            table = id;
        if (name == QStringLiteral("tr"))
            firstCellOfRow = true;
        if (name == QStringLiteral("th") && cls == QStringLiteral("run")) {
            out.runHeaders << xml.readElementText(QXmlStreamReader::IncludeChildElements);
            --depth;
        } else if (name == QStringLiteral("li") && cls == QStringLiteral("warning-item")) {
            out.warningItems << xml.readElementText(QXmlStreamReader::IncludeChildElements);
            --depth;
        } else if (name == QStringLiteral("td") && (table == QStringLiteral("predictions") || table == QStringLiteral("config-diff"))) {
            const QString text = xml.readElementText(QXmlStreamReader::IncludeChildElements);
            --depth;
            if (table == QStringLiteral("predictions"))
                out.predictionCells << text;
            else if (firstCellOfRow)
                out.configKeys << text;
            firstCellOfRow = false;
        }
    }
    out.ok = !xml.hasError();
    out.error = xml.errorString();
    return out;
}

}  // namespace

class TestHtmlReport : public QObject {
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    Comparison m_comparison;

private slots:
    void initTestCase()
    {
        auto store = RunStore::open(QDir(m_dir.path()).filePath(QStringLiteral("runs.sqlite")).toStdString());
        QVERIFY(store.ok());
        wb::test::SyntheticRun real;
        real.name = "real <b>\"bold\"</b> & co";
        real.steps = 500;
        wb::test::SyntheticRun mock = real;
        mock.name = "mock 'quoted' <run>";
        mock.dataSource = "mock";
        mock.stepMs = 50.0;
        const std::string realId = wb::test::addSyntheticRun(**store, real);
        const std::string mockId = wb::test::addSyntheticRun(**store, mock);
        QVERIFY(!realId.empty() && !mockId.empty());
        RunPrediction p;
        p.source = "planner <test>";
        p.hardware = "h200";
        p.gpus = 2;
        p.stepMs = 80.0;
        p.memoryGib = 12.0;
        p.tokensPerSPerGpu = 25000.0;
        p.mfu = 0.4;
        QVERIFY((*store)->setPrediction(realId, p).ok());
        CompareRequest request;
        request.runs = {realId, mockId};
        auto c = compareRuns(**store, request);
        QVERIFY(c.ok());
        m_comparison = std::move(*c);
        QVERIFY(m_comparison.hasCritical());
    }

    void parsesWithEverythingInIt()
    {
        const std::string html = comparisonToHtml(m_comparison);
        const HtmlSummary doc = parseHtml(html);
        QVERIFY2(doc.ok, qPrintable(doc.error));
        // The banner comes first in <body>, before the heading and every table.
        QVERIFY2(!doc.bodyOrder.isEmpty() && doc.bodyOrder.first() == QStringLiteral("div#warnings"),
                 qPrintable(doc.bodyOrder.join(u',')));
        QVERIFY(doc.bodyOrder.indexOf(QStringLiteral("table#figures")) > 0);
        // Every run, by its name as typed (escaping undone by the parser), the baseline marked.
        QCOMPARE(doc.runHeaders.size(), 2);
        QCOMPARE(doc.runHeaders[0], QStringLiteral("real <b>\"bold\"</b> & co (baseline)"));
        QCOMPARE(doc.runHeaders[1], QStringLiteral("mock 'quoted' <run>"));
        // Every warning, critical first.
        QCOMPARE(doc.warningItems.size(), static_cast<qsizetype>(m_comparison.warnings.size()));
        for (size_t i = 0; i < m_comparison.warnings.size(); ++i)
            QVERIFY2(doc.warningItems[static_cast<qsizetype>(i)].contains(QString::fromStdString(m_comparison.warnings[i].message)),
                     qPrintable(doc.warningItems[static_cast<qsizetype>(i)]));
        QVERIFY(doc.warningItems.first().startsWith(QStringLiteral("CRITICAL")));
        // Predicted vs measured: the planned run's step time, the other run says it has none.
        QVERIFY2(doc.predictionCells.contains(QStringLiteral("no prediction (not launched from a plan)")),
                 qPrintable(doc.predictionCells.join(u'|')));
        QVERIFY(std::any_of(doc.predictionCells.begin(), doc.predictionCells.end(),
                            [](const QString& cell) { return cell.startsWith(QStringLiteral("80.0 / ")); }));
        // The config diff, and four charts inline, each with both runs.
        QVERIFY(doc.configKeys.contains(QStringLiteral("data.source")));
        QCOMPARE(doc.svgs, 4);
        QCOMPARE(doc.svgSeries, 4 * 2);  // one "series" line per run per chart (the raw one has its own class)
        // Nothing from a run name reaches the markup unescaped; no external resource is linked.
        const QString text = QString::fromStdString(html);
        QVERIFY(!text.contains(QStringLiteral("<b>\"bold\"")));
        QVERIFY(!text.contains(QStringLiteral("<run>")));
        QVERIFY(!text.contains(QStringLiteral("src=")) && !text.contains(QStringLiteral("href=")));
        QVERIFY(!text.contains(QStringLiteral("<?xml")));  // only documents open with a declaration
    }

    void writesOneFile()
    {
        const QString path = QDir(m_dir.path()).filePath(QStringLiteral("comparison.HTML"));
        QVERIFY(isHtmlReportPath(path.toStdString()));
        QVERIFY(!isHtmlReportPath(QDir(m_dir.path()).filePath(QStringLiteral("report")).toStdString()));
        QVERIFY(!isHtmlReportPath(".html"));
        QVERIFY(writeComparisonHtml(m_comparison, path.toStdString()).ok());
        QFile f(path);
        QVERIFY(f.open(QIODevice::ReadOnly));
        QVERIFY(parseHtml(f.readAll().toStdString()).ok);
        QVERIFY(!writeComparisonHtml(m_comparison, QDir(m_dir.path()).filePath(QStringLiteral("no/such/dir/r.html")).toStdString()).ok());
    }
};

QTEST_GUILESS_MAIN(TestHtmlReport)
#include "test_html_report.moc"
