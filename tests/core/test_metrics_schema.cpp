// Metrics stream v1: round trip of every record type, and the line reader on torn, malformed and
// interleaved input fed in arbitrary chunks.
#include "core/metrics_schema.h"
#include "core/terminal_text.h"

#include <QtTest/QtTest>

#include <cmath>

using namespace wb::core;

namespace {

StepRecord makeStep(int64_t step)
{
    StepRecord s;
    s.step = step;
    s.time = 1700000000.0 + double(step);
    s.stepMs = 10.5 + double(step);
    s.loss = 5.0 - 0.01 * double(step);
    s.effectiveTokens = 1000 + step;
    s.imageTokens = 64;
    s.textTokens = 936 + step;
    s.mfu = 0.25;
    return s;
}

std::string streamOf(int steps)
{
    MetaRecord meta;
    meta.runId = "r1";
    meta.dataSource = "real";
    meta.worldSize = 2;
    meta.versions["moe-train"] = "0.1.0";
    std::string out = toJsonLine(meta) + "\n";
    for (int i = 1; i <= steps; ++i) {
        out += toJsonLine(makeStep(i)) + "\n";
        if (i % 3 == 0)  // events interleaved with steps
            out += toJsonLine(EventRecord{1.0, "warning", "skipped image " + std::to_string(i), i}) + "\n";
    }
    out += toJsonLine(EndRecord{2.0, "finished", 0, steps}) + "\n";
    return out;
}

int countSteps(const std::vector<MetricsRecord>& records)
{
    int n = 0;
    for (const MetricsRecord& r : records)
        n += std::holds_alternative<StepRecord>(r);
    return n;
}

}  // namespace

class TestMetricsSchema : public QObject {
    Q_OBJECT
private slots:
    void roundTrip()
    {
        StepRecord s = makeStep(7);
        s.auxLoss = 0.125;
        s.skippedImages = 2;
        auto parsed = parseMetricsLine(toJsonLine(s));
        QVERIFY(parsed.has_value());
        const StepRecord& r = std::get<StepRecord>(*parsed);
        QCOMPARE(r.step, int64_t(7));
        QCOMPARE(r.stepMs, s.stepMs);
        QCOMPARE(r.auxLoss, 0.125);
        QCOMPARE(r.skippedImages, int64_t(2));
        QCOMPARE(r.effectiveTokens, s.effectiveTokens);

        MetaRecord m;
        m.dataSource = "mock";
        m.peakTflops = 989.0;
        m.versions["libtorch"] = "2.11";
        auto pm = parseMetricsLine(toJsonLine(m));
        QVERIFY(pm && std::holds_alternative<MetaRecord>(*pm));
        QCOMPARE(std::get<MetaRecord>(*pm).dataSource, std::string("mock"));
        QCOMPARE(std::get<MetaRecord>(*pm).versions.at("libtorch"), std::string("2.11"));
        // moe-train's environment switches: written only when set, read back by name.
        QVERIFY(toJsonLine(m).find("runtime_switches") == std::string::npos);
        m.runtimeSwitches["WB_ROW_KERNELS"] = "1";
        m.runtimeSwitches["WB_OVERLAP_SMS"] = "24";
        auto ps = parseMetricsLine(toJsonLine(m));
        QVERIFY(ps && std::holds_alternative<MetaRecord>(*ps));
        QCOMPARE(std::get<MetaRecord>(*ps).runtimeSwitches, m.runtimeSwitches);

        auto pe = parseMetricsLine(toJsonLine(EndRecord{1.0, "oom", 3, 12}));
        QVERIFY(pe && std::holds_alternative<EndRecord>(*pe));
        QCOMPARE(std::get<EndRecord>(*pe).exitCode, 3);
    }

    void nonFiniteLossSurvivesAsNull()
    {
        StepRecord s = makeStep(1);
        s.loss = std::nan("");
        const std::string line = toJsonLine(s);
        QVERIFY2(line.find("\"loss\":null") != std::string::npos, line.c_str());
        auto parsed = parseMetricsLine(line);
        QVERIFY(parsed);
        QVERIFY(std::isnan(std::get<StepRecord>(*parsed).loss));
    }

    void rejects_data()
    {
        QTest::addColumn<QByteArray>("line");
        QTest::newRow("not json") << QByteArray("{\"v\":1,\"type\":\"step\",\"step\":");
        QTest::newRow("array") << QByteArray("[1,2]");
        QTest::newRow("future version") << QByteArray(R"({"v":2,"type":"step","step":1})");
        QTest::newRow("no version") << QByteArray(R"({"type":"step","step":1})");
        QTest::newRow("unknown type") << QByteArray(R"({"v":1,"type":"blob"})");
        QTest::newRow("step without number") << QByteArray(R"({"v":1,"type":"step","loss":1.0})");
        QTest::newRow("step as string") << QByteArray(R"({"v":1,"type":"step","step":"3"})");
        // Value conversions (issue 20 item 11): malformed, never a silent wrong number.
        QTest::newRow("step 0") << QByteArray(R"({"v":1,"type":"step","step":0,"loss":1.0})");
        QTest::newRow("step -3") << QByteArray(R"({"v":1,"type":"step","step":-3,"loss":1.0})");
        QTest::newRow("step beyond int64") << QByteArray(R"({"v":1,"type":"step","step":18446744073709551615})");
        QTest::newRow("loss as text") << QByteArray(R"({"v":1,"type":"step","step":1,"loss":"abc"})");
        QTest::newRow("loss as bool") << QByteArray(R"({"v":1,"type":"step","step":1,"loss":true})");
        QTest::newRow("images 1e20") << QByteArray(R"({"v":1,"type":"step","step":1,"images":1e20})");
        QTest::newRow("images negative") << QByteArray(R"({"v":1,"type":"step","step":1,"images":-1})");
        QTest::newRow("images fractional") << QByteArray(R"({"v":1,"type":"step","step":1,"images":2.5})");
        QTest::newRow("tokens as text") << QByteArray(R"({"v":1,"type":"step","step":1,"text_tokens":"12"})");
        QTest::newRow("images as text, escaped") << QByteArray(R"({"v":1,"type":"step","step":1,"images":"\u0031"})");
    }
    void rejects()
    {
        QFETCH(QByteArray, line);
        QVERIFY(!parseMetricsLine(std::string_view(line.constData(), size_t(line.size()))).has_value());
    }

    // What the rules still accept: a count written as a whole float, a null loss (diverged).
    void acceptsWholeFloatCounts()
    {
        auto r = parseMetricsLine(R"({"v":1,"type":"step","step":2,"images":3.0,"loss":null,"text_tokens":7})");
        QVERIFY(r && std::holds_alternative<StepRecord>(*r));
        const auto& s = std::get<StepRecord>(*r);
        QCOMPARE(s.images, int64_t(3));
        QCOMPARE(s.textTokens, int64_t(7));
        QVERIFY(std::isnan(s.loss));
    }

    // A float where a header's integer belongs, beyond the integer's range (found by tests/fuzz:
    // the conversion was undefined behaviour): the field keeps its default, the record stands.
    void outOfRangeHeaderIntegersKeepTheirDefault()
    {
        auto r = parseMetricsLine(R"({"v":1,"type":"meta","run_id":"r","world_size":1.88889e+34,)"
                                  R"("seq_length":-1e300,"micro_batch_size":2.5,"global_batch_size":8.0})");
        QVERIFY(r && std::holds_alternative<MetaRecord>(*r));
        const auto& m = std::get<MetaRecord>(*r);
        QCOMPARE(m.worldSize, 1);
        QCOMPARE(m.seqLength, 0);
        QCOMPARE(m.microBatchSize, 0);
        QCOMPARE(m.globalBatchSize, 8);
        auto end = parseMetricsLine(R"({"v":1,"type":"end","exit_code":4294967296,"step":1e40})");
        QVERIFY(end && std::holds_alternative<EndRecord>(*end));
        QCOMPARE(std::get<EndRecord>(*end).exitCode, -1);
        QVERIFY(!parseMetricsLine(R"({"v":1e300,"type":"step","step":1})").has_value());
    }

    void readerChunkSizes_data()
    {
        QTest::addColumn<int>("chunk");
        for (int c : {1, 2, 7, 64, 1000, 1 << 20})
            QTest::newRow(qPrintable(QStringLiteral("chunk %1").arg(c))) << c;
    }
    void readerChunkSizes()
    {
        QFETCH(int, chunk);
        const std::string stream = streamOf(25);
        MetricsLineReader reader;
        std::vector<MetricsRecord> all;
        for (size_t i = 0; i < stream.size(); i += size_t(chunk)) {
            auto c = reader.feed(std::string_view(stream).substr(i, size_t(chunk)));
            all.insert(all.end(), c.records.begin(), c.records.end());
            QCOMPARE(reader.consumedBytes() + reader.pendingBytes(), int64_t(std::min(stream.size(), i + size_t(chunk))));
        }
        QCOMPARE(countSteps(all), 25);
        QCOMPARE(int(all.size()), 1 + 25 + 8 + 1);
        QCOMPARE(reader.consumedBytes(), int64_t(stream.size()));
        QCOMPARE(reader.malformedLines(), int64_t(0));
        QVERIFY(std::holds_alternative<EndRecord>(all.back()));
    }

    void tornLastLineIsHeldBack()
    {
        const std::string stream = streamOf(3);
        const std::string torn = stream + R"({"v":1,"type":"step","step":4,"loss")";
        MetricsLineReader reader;
        auto c = reader.feed(torn);
        QCOMPARE(countSteps(c.records), 3);
        QCOMPARE(c.consumedBytes, int64_t(stream.size()));  // a safe resume offset: before the torn line
        QCOMPARE(reader.malformedLines(), int64_t(0));      // torn is not malformed
        auto rest = reader.feed(":1.5}\n");
        QCOMPARE(countSteps(rest.records), 1);
        QCOMPARE(std::get<StepRecord>(rest.records[0]).loss, 1.5);
        QCOMPARE(reader.consumedBytes(), int64_t(torn.size() + 6));
    }

    void malformedLinesAreCountedNotFatal()
    {
        std::string stream = toJsonLine(makeStep(1)) + "\n";
        stream += "garbage line\n";
        stream += "\n";           // blank: skipped, not malformed
        stream += "{\"v\":1,\"type\":\"step\"}\r\n";  // no step number, CRLF ending
        stream += toJsonLine(makeStep(2)) + "\r\n";
        MetricsLineReader reader;
        auto c = reader.feed(stream);
        QCOMPARE(countSteps(c.records), 2);
        QCOMPARE(c.malformedLines, int64_t(2));
        QCOMPARE(reader.consumedBytes(), int64_t(stream.size()));
    }

    // Run names as the CLI prints them (issue 20 item 12): control characters visible, UTF-8 kept.
    void terminalSafeNames()
    {
        QCOMPARE(terminalSafe("plain name"), std::string("plain name"));
        QCOMPARE(terminalSafe("a\nb\tc\rd"), std::string("a\\nb\\tc\\rd"));
        QCOMPARE(terminalSafe("\x1b[31mred\x07"), std::string("\\e[31mred\\x07"));
        QCOMPARE(terminalSafe("r\xC3\xA9sum\xC3\xA9 \xE2\x9C\x93"), std::string("r\xC3\xA9sum\xC3\xA9 \xE2\x9C\x93"));
        QCOMPARE(terminalSafe("csi\xC2\x9B"), std::string("csi\\xc2\\x9b"));
        QCOMPARE(terminalSafe(std::string("nul\0x", 5)), std::string("nul\\x00x"));
    }

    void exitCodeWords()
    {
        QCOMPARE(statusForExitCode(0), std::string("finished"));
        QCOMPARE(statusForExitCode(3), std::string("oom"));
        QCOMPARE(statusForExitCode(5), std::string("stopped"));
        QCOMPARE(statusForExitCode(42), std::string("failed"));
    }
};

QTEST_GUILESS_MAIN(TestMetricsSchema)
#include "test_metrics_schema.moc"
