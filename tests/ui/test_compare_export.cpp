// CompareView's exports and chart toggles, offscreen, on a mock-vs-real pair in a temporary store:
// log scale (log axes, no point <= 0), steady-window shading, the charts as PNG (valid images) and
// SVG (well-formed), and the comparison report (the mock-vs-real warning first, the figure rows).
#include "ui/compare_chart_panel.h"
#include "ui/compare_view.h"
#include "ui/metric_chart_view.h"
#include "synthetic_runs.h"
#include "ui_test_main.h"

#include <QCheckBox>
#include <QChart>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QLineSeries>
#include <QListWidget>
#include <QMenu>
#include <QLogValueAxis>
#include <QPushButton>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QValueAxis>
#include <QXmlStreamReader>

using wb::ui::CompareChartPanel;
using wb::ui::CompareView;

namespace {

struct Fixture {
    QTemporaryDir dir;
    QString storePath;
    QString real, mock;
};

void fill(Fixture& f)
{
    f.storePath = f.dir.filePath(QStringLiteral("runs.sqlite"));
    auto store = wb::core::RunStore::open(f.storePath.toStdString());
    QVERIFY(store.ok());
    wb::test::SyntheticRun a;
    a.name = "baseline-real";
    wb::test::SyntheticRun b = a;
    b.name = "candidate-mock";
    b.dataSource = "mock";
    b.stepMs = 50.0;
    f.real = QString::fromStdString(wb::test::addSyntheticRun(**store, a));
    f.mock = QString::fromStdString(wb::test::addSyntheticRun(**store, b));
    QVERIFY(!f.real.isEmpty() && !f.mock.isEmpty());
}

void compareBoth(CompareView& view, const Fixture& f)
{
    view.setSelectedRuns({f.real, f.mock});
    view.setBaseline(f.real);
    QSignalSpy spy(&view, &CompareView::compared);
    QTest::mouseClick(view.findChild<QPushButton*>(QStringLiteral("compareButton")), Qt::LeftButton);
    if (spy.isEmpty())
        QVERIFY(spy.wait(30000));
    QVERIFY(view.comparison());
}

bool wellFormedSvg(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return false;
    QXmlStreamReader xml(&file);
    bool svgRoot = false;
    while (!xml.atEnd())
        if (xml.readNext() == QXmlStreamReader::StartElement && !svgRoot)
            svgRoot = xml.name() == QStringLiteral("svg");
    return svgRoot && !xml.hasError();
}

}  // namespace

class TestCompareExport : public QObject {
    Q_OBJECT

private slots:
    void logScaleAndShading()
    {
        Fixture f;
        fill(f);
        CompareView view(f.storePath);
        view.resize(1400, 900);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        compareBoth(view, f);

        auto* chart = view.charts()->chartView(CompareChartPanel::Chart::StepTime);
        QVERIFY(qobject_cast<QValueAxis*>(chart->axisY()));
        // Shading: one band per run (both have a detected steady window), on every chart.
        QCOMPARE(view.charts()->shadedBands(CompareChartPanel::Chart::StepTime), qsizetype(2));
        QCOMPARE(view.charts()->shadedBands(CompareChartPanel::Chart::Loss), qsizetype(2));
        view.shadeWindowToggle()->setChecked(false);
        QCOMPARE(view.charts()->shadedBands(CompareChartPanel::Chart::StepTime), qsizetype(0));
        view.shadeWindowToggle()->setChecked(true);
        QCOMPARE(view.charts()->shadedBands(CompareChartPanel::Chart::StepTime), qsizetype(2));

        // Log scale: a log axis on every chart, the lines still drawn, nothing at or below 0. The
        // lines for it are computed on a worker; the axes switch when they arrive.
        view.logScaleToggle()->setChecked(true);
        QVERIFY(view.charts()->logScale());
        QTRY_VERIFY(view.charts()->isUpToDate());
        for (int c = 0; c < int(CompareChartPanel::Chart::ChartCount); ++c) {
            auto* v = view.charts()->chartView(static_cast<CompareChartPanel::Chart>(c));
            auto* log = qobject_cast<QLogValueAxis*>(v->axisY());
            QVERIFY(log);
            int visibleY = 0;  // the linear axis stays in the chart, hidden
            for (auto* axis : v->chart()->axes(Qt::Vertical))
                visibleY += axis->isVisible();
            QCOMPARE(visibleY, 1);
            QVERIFY(log->min() > 0.0 && log->max() > log->min());
            const auto* lines = view.charts()->lines(static_cast<CompareChartPanel::Chart>(c));
            QVERIFY(lines && !lines->runs[1].smooth.empty());
            for (const auto& run : lines->runs)
                for (const auto* line : {&run.raw, &run.smooth})
                    for (double y : line->y) {
                        QVERIFY(y > 0.0);
                        QVERIFY(y >= log->min() && y <= log->max());
                    }
        }
        QCOMPARE(view.charts()->shadedBands(CompareChartPanel::Chart::StepTime), qsizetype(2));
        QVERIFY(view.charts()->chartOptions().logY);
        // And back.
        view.logScaleToggle()->setChecked(false);
        QTRY_VERIFY(view.charts()->isUpToDate());
        QVERIFY(qobject_cast<QValueAxis*>(chart->axisY()));
        QVERIFY(chart->axisY()->isVisible());
    }

    void exportsChartsAndReport()
    {
        Fixture f;
        fill(f);
        CompareView view(f.storePath);
        view.resize(1400, 900);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        auto* exportReport = view.findChild<QPushButton*>(QStringLiteral("compareExportReport"));
        QVERIFY(exportReport && !exportReport->isEnabled());
        QTemporaryDir out;
        if (qEnvironmentVariableIsSet("WB_TEST_KEEP_EXPORTS")) {  // to look at the images by hand
            out.setAutoRemove(false);
            qInfo("exports in %s", qPrintable(out.path()));
        }
        QVERIFY(!view.exportCharts(out.path()).ok());  // nothing compared yet
        compareBoth(view, f);
        QVERIFY(exportReport->isEnabled());

        const QString charts = QDir(out.path()).filePath(QStringLiteral("charts"));
        auto written = view.exportCharts(charts);
        QVERIFY2(written.ok(), written.ok() ? "" : written.error().toString().c_str());
        QCOMPARE(written->size(), 8);  // 4 charts × (PNG + SVG)
        for (const QString& path : *written) {
            QVERIFY2(QFileInfo(path).size() > 0, qPrintable(path));
            if (path.endsWith(QStringLiteral(".png"))) {
                QImage image(path);
                QVERIFY2(!image.isNull() && image.width() >= 640, qPrintable(path));
                // The chart was drawn: not a blank page.
                QSet<QRgb> colours;
                for (int y = 0; y < image.height(); y += 7)
                    for (int x = 0; x < image.width(); x += 7)
                        colours.insert(image.pixel(x, y));
                QVERIFY2(colours.size() > 5, qPrintable(path));
            } else {
                QVERIFY2(wellFormedSvg(path), qPrintable(path));
            }
        }

        const QString reportDir = QDir(out.path()).filePath(QStringLiteral("report"));
        auto report = view.exportReport(reportDir);
        QVERIFY2(report.ok(), report.ok() ? "" : report.error().toString().c_str());
        QVERIFY(report->first().endsWith(QStringLiteral("report.md")));
        QFile md(report->first());
        QVERIFY(md.open(QIODevice::ReadOnly));
        const QString text = QString::fromUtf8(md.readAll());
        const qsizetype critical = text.indexOf(QStringLiteral("CRITICAL (data_source)"));
        QVERIFY(critical > 0 && critical < text.indexOf(QStringLiteral("## Figures")));
        QVERIFY(text.contains(QStringLiteral("| effective tokens/s/GPU (tok/s) |")));
        QVERIFY(text.contains(QStringLiteral("| step time (ms) |")));
        QVERIFY(text.contains(QStringLiteral("baseline-real (baseline)")));
        QVERIFY(text.contains(QStringLiteral("![step_time](step_time.png)")));
        for (const char* stem : {"step_time", "throughput", "loss", "peak_memory"}) {
            QVERIFY(QFileInfo(QDir(reportDir).filePath(QString::fromLatin1(stem) + QStringLiteral(".png"))).size() > 0);
            QVERIFY(wellFormedSvg(QDir(reportDir).filePath(QString::fromLatin1(stem) + QStringLiteral(".svg"))));
        }

        // The export menu offers the HTML report; it is one well-formed file with the banner
        // first, both runs, and the charts inline with the view's settings.
        QVERIFY(exportReport->menu());
        QStringList actions;
        for (QAction* action : exportReport->menu()->actions())
            actions << action->objectName();
        QVERIFY2(actions.contains(QStringLiteral("compareExportHtml")) && actions.contains(QStringLiteral("compareExportMarkdown")),
                 qPrintable(actions.join(u',')));
        const QString htmlPath = QDir(out.path()).filePath(QStringLiteral("comparison.html"));
        QVERIFY(view.exportHtmlReport(htmlPath).ok());
        QFile html(htmlPath);
        QVERIFY(html.open(QIODevice::ReadOnly));
        QXmlStreamReader xml(&html);
        int svgs = 0;
        QString firstInBody;
        bool inBody = false;
        QString htmlText;
        while (!xml.atEnd()) {
            const auto token = xml.readNext();
            if (token == QXmlStreamReader::Characters)
                htmlText += xml.text();
            if (token != QXmlStreamReader::StartElement)
                continue;
            if (inBody && firstInBody.isEmpty())
                firstInBody = xml.attributes().value(QStringLiteral("id")).toString();
            inBody = inBody || xml.name() == QStringLiteral("body");
            svgs += xml.name() == QStringLiteral("svg");
        }
        QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        QCOMPARE(firstInBody, QStringLiteral("warnings"));
        QCOMPARE(svgs, 4);
        QVERIFY(htmlText.contains(QStringLiteral("baseline-real")) && htmlText.contains(QStringLiteral("candidate-mock")));
        QVERIFY(htmlText.contains(QStringLiteral("MOCK vs REAL")));

        // With log scale and tokens on the x axis: the same files, drawn that way.
        view.logScaleToggle()->setChecked(true);
        view.charts()->setXAxis(CompareChartPanel::XAxis::EffectiveTokens);
        auto logCharts = view.exportCharts(QDir(out.path()).filePath(QStringLiteral("charts-log")));
        QVERIFY(logCharts.ok());
        for (const QString& path : *logCharts)
            if (path.endsWith(QStringLiteral(".svg"))) {
                QVERIFY(wellFormedSvg(path));
                QFile svg(path);
                QVERIFY(svg.open(QIODevice::ReadOnly));
                const QByteArray bytes = svg.readAll();
                QVERIFY(bytes.contains("(log scale)"));
                QVERIFY(bytes.contains("Effective tokens seen"));
            }
    }
};

WB_UI_TEST_MAIN(TestCompareExport)
#include "test_compare_export.moc"
