// parseMetricsLine's fast path for step lines (core/metrics_schema.cpp) must agree with the DOM
// path on every line. The DOM path is forced by appending a nested unknown field ("zz":[0]), which
// the fast scanner declines and the DOM path ignores; both parses must then give the same result.
#include "core/metrics_schema.h"

#include <QtTest>

#include <cmath>
#include <cstring>

using namespace wb::core;

namespace {

std::string forceDomPath(const std::string& line)
{
    const size_t brace = line.rfind('}');
    if (brace == std::string::npos)
        return line;
    std::string out = line;
    out.insert(brace, line.find(':') == std::string::npos ? "\"zz\":[0]" : ",\"zz\":[0]");
    return out;
}

bool sameDouble(double a, double b)
{
    return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

bool sameStep(const StepRecord& a, const StepRecord& b)
{
    return a.step == b.step && sameDouble(a.time, b.time) && sameDouble(a.stepMs, b.stepMs) &&
           sameDouble(a.dataMs, b.dataMs) && sameDouble(a.visionMs, b.visionMs) &&
           sameDouble(a.projectorMs, b.projectorMs) && sameDouble(a.decoderMs, b.decoderMs) &&
           sameDouble(a.backwardMs, b.backwardMs) && sameDouble(a.optimizerMs, b.optimizerMs) &&
           a.images == b.images && a.imageTokens == b.imageTokens && a.textTokens == b.textTokens &&
           a.padTokens == b.padTokens && a.effectiveTokens == b.effectiveTokens &&
           a.skippedImages == b.skippedImages && sameDouble(a.loss, b.loss) && sameDouble(a.auxLoss, b.auxLoss) &&
           sameDouble(a.gradNorm, b.gradNorm) && sameDouble(a.lr, b.lr) && sameDouble(a.memAllocGib, b.memAllocGib) &&
           sameDouble(a.memReservedGib, b.memReservedGib) && sameDouble(a.memPeakGib, b.memPeakGib) &&
           sameDouble(a.tokensPerSPerGpu, b.tokensPerSPerGpu) && sameDouble(a.tflopsPerGpu, b.tflopsPerGpu) &&
           sameDouble(a.mfu, b.mfu);
}

}  // namespace

class TestMetricsFastPath : public QObject {
    Q_OBJECT

private slots:
    void agreesWithDom_data()
    {
        QTest::addColumn<QString>("line");
        QTest::addColumn<bool>("parses");
        StepRecord s;
        s.step = 42;
        s.time = 1764430000.125;
        s.stepMs = 123.456;
        s.loss = std::nan("");
        s.lr = 3e-4;
        s.effectiveTokens = 4096;
        s.mfu = 0.1 + 0.2;
        QTest::newRow("as the writer writes it") << QString::fromStdString(toJsonLine(s)) << true;
        QTest::newRow("minimal") << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1}") << true;
        QTest::newRow("spaces everywhere")
            << QStringLiteral(" { \"v\" : 1 ,\t\"type\" : \"step\" , \"step\" : 7 , \"loss\" : -0.5e+1 } ") << true;
        QTest::newRow("keys in another order") << QStringLiteral("{\"step\":3,\"loss\":2.5,\"type\":\"step\",\"v\":1}") << true;
        QTest::newRow("null in number fields")
            << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1,\"loss\":null,\"images\":null}") << true;
        // Wrong types and values that do not fit their field make the line malformed (issue 20 item 11).
        QTest::newRow("true or a string in a number field")
            << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1,\"lr\":true,\"mfu\":\"x\"}") << false;
        QTest::newRow("a fraction in a count field")
            << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1,\"images\":3.7}") << false;
        QTest::newRow("a negative count") << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1,\"pad_tokens\":-2}") << false;
        QTest::newRow("a whole float in a count field")
            << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1,\"images\":3.0}") << true;
        QTest::newRow("step 0") << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":0}") << false;
        QTest::newRow("int in a double field") << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1,\"loss\":5}") << true;
        QTest::newRow("duplicate key: last wins")
            << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1,\"loss\":1,\"loss\":2}") << true;
        QTest::newRow("v as 1.0") << QStringLiteral("{\"v\":1.0,\"type\":\"step\",\"step\":1}") << true;
        QTest::newRow("negative zero") << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1,\"loss\":-0.0,\"images\":-0}") << true;
        QTest::newRow("unknown fields, escapes in them")
            << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1,\"note\":\"a\\\"b\",\"x\":1e5}") << true;
        QTest::newRow("tiny and huge numbers")
            << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1,\"loss\":1e-320,\"lr\":1.7976931348623157e308}") << true;
        QTest::newRow("step as float") << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1.0}") << false;
        QTest::newRow("step as string") << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":\"1\"}") << false;
        QTest::newRow("step missing") << QStringLiteral("{\"v\":1,\"type\":\"step\"}") << false;
        QTest::newRow("v 2") << QStringLiteral("{\"v\":2,\"type\":\"step\",\"step\":1}") << false;
        QTest::newRow("v missing") << QStringLiteral("{\"type\":\"step\",\"step\":1}") << false;
        QTest::newRow("leading zero (invalid JSON)") << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":01}") << false;
        QTest::newRow("trailing garbage") << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1} x") << false;
        QTest::newRow("torn") << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1,\"loss\":") << false;
        QTest::newRow("trailing comma") << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1,}") << false;
        QTest::newRow("lone minus") << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":-}") << false;
        QTest::newRow("int beyond int64") << QStringLiteral("{\"v\":1,\"type\":\"step\",\"step\":1,\"images\":1e30}") << false;
    }

    void agreesWithDom()
    {
        QFETCH(QString, line);
        QFETCH(bool, parses);
        const std::string text = line.toStdString();
        const auto fast = parseMetricsLine(text);
        const auto dom = parseMetricsLine(forceDomPath(text));
        QCOMPARE(fast.has_value(), dom.has_value());
        QCOMPARE(fast.has_value(), parses);
        if (!fast)
            return;
        QVERIFY(std::holds_alternative<StepRecord>(*fast));
        QVERIFY(std::holds_alternative<StepRecord>(*dom));
        QVERIFY(sameStep(std::get<StepRecord>(*fast), std::get<StepRecord>(*dom)));
    }
};

QTEST_GUILESS_MAIN(TestMetricsFastPath)
#include "test_metrics_fast_path.moc"
