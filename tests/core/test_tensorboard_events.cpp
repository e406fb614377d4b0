// TensorBoard event files (core/bridge/tensorboard_events.h) as a Megatron-Bridge run leaves them
// under logger.tensorboard_dir. The test writes the files itself and shares no code with the
// reader: Events are encoded by hand in the protobuf wire format (field numbers from TensorFlow's
// event/summary/tensor protos) and framed with a bitwise CRC-32C checked against the published
// vector, so a wrong field number, wire type or CRC in the reader cannot cancel out here.
#include "core/bridge/tensorboard_events.h"

#include <QtTest/QtTest>

#include <bit>
#include <cmath>
#include <fstream>
#include <string>
#include <vector>

using namespace wb::core;
using namespace wb::core::bridge;

namespace {

// --- CRC-32C, bit by bit (the reader uses a table) ---
std::uint32_t crc32cBitwise(std::string_view bytes)
{
    std::uint32_t crc = 0xffffffffu;
    for (const char c : bytes) {
        crc ^= static_cast<unsigned char>(c);
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1u)));
    }
    return ~crc;
}

std::uint32_t masked(std::string_view bytes)
{
    const std::uint32_t crc = crc32cBitwise(bytes);
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string littleEndian(std::uint64_t v, int bytes)
{
    std::string out;
    for (int i = 0; i < bytes; ++i)
        out += static_cast<char>((v >> (8 * i)) & 0xffu);
    return out;
}

// --- protobuf wire format ---
std::string varint(std::uint64_t v)
{
    std::string out;
    while (v >= 0x80) {
        out += static_cast<char>((v & 0x7fu) | 0x80u);
        v >>= 7;
    }
    return out + static_cast<char>(v);
}
std::string key(int field, int wireType) { return varint((static_cast<std::uint64_t>(field) << 3) | wireType); }
std::string varintField(int field, std::uint64_t v) { return key(field, 0) + varint(v); }
std::string doubleField(int field, double v) { return key(field, 1) + littleEndian(std::bit_cast<std::uint64_t>(v), 8); }
std::string floatField(int field, float v) { return key(field, 5) + littleEndian(std::bit_cast<std::uint32_t>(v), 4); }
std::string bytesField(int field, std::string_view bytes)
{
    return key(field, 2) + varint(bytes.size()) + std::string(bytes);
}

// tensorflow.Event: wall_time 1, step 2, file_version 3, summary 5.
std::string fileVersionEvent(double wallTime)
{
    return doubleField(1, wallTime) + bytesField(3, "brain.Event:2");
}
std::string summaryEvent(double wallTime, std::int64_t step, const std::vector<std::string>& values)
{
    std::string summary;
    for (const std::string& value : values)
        summary += bytesField(1, value);  // Summary.value 1
    return doubleField(1, wallTime) + varintField(2, static_cast<std::uint64_t>(step)) + bytesField(5, summary);
}

// Summary.Value: tag 1, simple_value 2, image 4, histo 5, tensor 8, metadata 9.
std::string simpleValue(const std::string& tag, float v)
{
    return bytesField(1, tag) + floatField(2, v);
}
std::string pluginMetadata(const std::string& plugin)
{
    return bytesField(9, bytesField(1, bytesField(1, plugin) + bytesField(2, std::string("\x08\x01", 2))));
}
std::string tensorValue(const std::string& tag, const std::string& plugin, const std::string& tensor)
{
    return bytesField(1, tag) + pluginMetadata(plugin) + bytesField(8, tensor);
}
// TensorProto: dtype 1, tensor_shape 2 (dim 2 {size 1}), tensor_content 4, float_val 5,
// double_val 6, int_val 7, int64_val 10, half_val 13.
std::string shape(const std::vector<std::int64_t>& dims)
{
    std::string s;
    for (const std::int64_t d : dims)
        s += bytesField(2, varintField(1, static_cast<std::uint64_t>(d)));
    return bytesField(2, s);
}
enum DType { DtFloat = 1, DtDouble = 2, DtInt32 = 3, DtString = 7, DtInt64 = 9, DtBfloat16 = 14, DtHalf = 19 };

// --- TFRecord framing ---
std::string frame(std::string_view data)
{
    const std::string length = littleEndian(data.size(), 8);
    return length + littleEndian(masked(length), 4) + std::string(data) + littleEndian(masked(data), 4);
}

struct EventFile {
    std::string bytes;
    std::vector<std::size_t> offsets;  // where each record starts

    void add(const std::string& event)
    {
        offsets.push_back(bytes.size());
        bytes += frame(event);
    }
};

const std::vector<std::string> kPyTorchTags = {"lm loss", "iteration-time", "throughput/tflops/device",
                                               "mem-max-allocated-gigabytes"};

// What Megatron-Bridge's PyTorch SummaryWriter writes: the version record, then per step one
// event per add_scalar (simple_value). Value of tag t at step s: s + t / 10.
EventFile pytorchRun(std::int64_t firstStep, std::int64_t lastStep, double offset = 0)
{
    EventFile f;
    f.add(fileVersionEvent(1700000000.0));
    for (std::int64_t step = firstStep; step <= lastStep; ++step)
        for (std::size_t t = 0; t < kPyTorchTags.size(); ++t)
            f.add(summaryEvent(1700000000.0 + double(step), step,
                               {simpleValue(kPyTorchTags[t], float(double(step) + double(t) / 10 + offset))}));
    return f;
}

void writeFile(const QString& path, const std::string& bytes)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    std::ofstream out(path.toStdString(), std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    QVERIFY(out.good());
}

QByteArray describe(const Error& e)
{
    return QByteArray::fromStdString(e.toString());
}

}  // namespace

Q_DECLARE_METATYPE(std::string)

class TestTensorBoardEvents : public QObject {
    Q_OBJECT
private slots:
    void crc32cMatchesThePublishedVectorAndTheBitwiseLoop()
    {
        QCOMPARE(crc32cBitwise("123456789"), 0xE3069283u);
        QCOMPARE(crc32c("123456789"), 0xE3069283u);
        QCOMPARE(crc32c(""), 0u);
        std::string bytes;
        for (int i = 0; i < 1000; ++i) {
            bytes += static_cast<char>((i * 131 + 7) & 0xff);
            QCOMPARE(crc32c(bytes), crc32cBitwise(bytes));
            QCOMPARE(maskedCrc32c(bytes), masked(bytes));
        }
    }

    void simpleValuesAsPyTorchWritesThem()
    {
        EventFile f = pytorchRun(1, 3);
        // A logged 0.0 is a point, not "no value" (simple_value is in a oneof).
        f.add(summaryEvent(1700000010.5, 4, {simpleValue("grad-norm", 0.0f), simpleValue("lm loss", 2.25f)}));
        auto r = readTensorBoardEventBytes(f.bytes, "events.out.tfevents.1700000000.node0");
        QVERIFY2(r, r ? "" : describe(r.error()).constData());
        QCOMPARE(r->files, 1);
        QCOMPARE(r->records, std::int64_t(1 + 3 * 4 + 1));
        QCOMPARE(r->repeatedPoints, std::int64_t(0));
        QCOMPARE(r->nonScalarValues, std::int64_t(0));
        QVERIFY(r->warnings.empty());
        QCOMPARE(r->byTag.size(), std::size_t(5));
        for (std::size_t t = 0; t < kPyTorchTags.size(); ++t) {
            const std::vector<ScalarPoint>& points = r->byTag.at(kPyTorchTags[t]);
            QCOMPARE(points.size(), std::size_t(t == 0 ? 4 : 3));
            for (std::int64_t step = 1; step <= 3; ++step) {
                const ScalarPoint& p = points[std::size_t(step - 1)];
                QCOMPARE(p.step, step);
                QCOMPARE(p.wallTime, 1700000000.0 + double(step));
                QCOMPARE(p.value, double(float(double(step) + double(t) / 10)));  // stored as float
            }
        }
        QCOMPARE(r->byTag.at("lm loss").back().value, 2.25);
        QCOMPARE(r->byTag.at("lm loss").back().wallTime, 1700000010.5);
        QCOMPARE(r->byTag.at("grad-norm").size(), std::size_t(1));
        QCOMPARE(r->byTag.at("grad-norm")[0].value, 0.0);
    }

    void aTagThatIsNotUtf8IsStillRead()
    {
        // TensorFlow declares the tag a proto3 string; a parser that enforces UTF-8 would refuse
        // the whole record (found by the fuzz target).
        const std::string tag = "loss \xff\xfe";
        EventFile f;
        f.add(fileVersionEvent(1.0));
        f.add(summaryEvent(2.0, 1, {simpleValue(tag, 1.5f)}));
        auto r = readTensorBoardEventBytes(f.bytes, "latin1.tfevents");
        QVERIFY2(r, r ? "" : describe(r.error()).constData());
        QCOMPARE(r->byTag.at(tag)[0].value, 1.5);
    }

    void scalarTensors_data()
    {
        QTest::addColumn<std::string>("tensor");
        QTest::addColumn<double>("expected");
        const std::string rank0 = shape({});
        QTest::newRow("float, packed float_val")
            << (varintField(1, DtFloat) + rank0 + bytesField(5, littleEndian(std::bit_cast<std::uint32_t>(1.25f), 4)))
            << 1.25;
        QTest::newRow("float, unpacked float_val") << (varintField(1, DtFloat) + rank0 + floatField(5, -3.5f)) << -3.5;
        QTest::newRow("float, tensor_content")
            << (varintField(1, DtFloat) + rank0 + bytesField(4, littleEndian(std::bit_cast<std::uint32_t>(0.5f), 4)))
            << 0.5;
        QTest::newRow("double, packed double_val")
            << (varintField(1, DtDouble) + rank0 + bytesField(6, littleEndian(std::bit_cast<std::uint64_t>(0.1), 8)))
            << 0.1;
        QTest::newRow("double, tensor_content")
            << (varintField(1, DtDouble) + rank0 + bytesField(4, littleEndian(std::bit_cast<std::uint64_t>(1e-7), 8)))
            << 1e-7;
        QTest::newRow("int64, packed int64_val") << (varintField(1, DtInt64) + rank0 + bytesField(10, varint(123456789012)))
                                                 << 123456789012.0;
        QTest::newRow("int32, negative int_val")
            << (varintField(1, DtInt32) + rank0 + bytesField(7, varint(static_cast<std::uint64_t>(std::int64_t(-7)))))
            << -7.0;
        QTest::newRow("half, half_val") << (varintField(1, DtHalf) + rank0 + bytesField(13, varint(0x3E00))) << 1.5;
        QTest::newRow("bfloat16, tensor_content") << (varintField(1, DtBfloat16) + rank0 + bytesField(4, littleEndian(0xC040, 2)))
                                                  << -3.0;
        QTest::newRow("float, shape [1]")
            << (varintField(1, DtFloat) + shape({1}) + bytesField(5, littleEndian(std::bit_cast<std::uint32_t>(4.0f), 4)))
            << 4.0;
    }
    void scalarTensors()
    {
        QFETCH(std::string, tensor);
        QFETCH(double, expected);
        EventFile f;
        f.add(fileVersionEvent(1.0));
        f.add(summaryEvent(2.0, 10, {tensorValue("lm loss", "scalars", tensor)}));
        f.add(summaryEvent(3.0, 20, {bytesField(1, "no plugin") + bytesField(8, tensor)}));
        auto r = readTensorBoardEventBytes(f.bytes, "tf2.tfevents");
        QVERIFY2(r, r ? "" : describe(r.error()).constData());
        QCOMPARE(r->nonScalarValues, std::int64_t(0));
        QCOMPARE(r->byTag.at("lm loss").size(), std::size_t(1));
        QCOMPARE(r->byTag.at("lm loss")[0].step, std::int64_t(10));
        QCOMPARE(r->byTag.at("lm loss")[0].value, expected);
        QCOMPARE(r->byTag.at("no plugin")[0].value, expected);
    }

    void nonScalarValuesAreSkippedAndCounted()
    {
        const std::string floats3 = varintField(1, DtFloat) + shape({3}) + bytesField(4, std::string(12, '\0'));
        EventFile f;
        f.add(fileVersionEvent(1.0));
        f.add(summaryEvent(2.0, 5,
                           {simpleValue("lm loss", 3.0f),
                            bytesField(1, "image") + bytesField(4, varintField(1, 2) + varintField(2, 2) + bytesField(4, "PNG")),
                            bytesField(1, "histogram") + bytesField(5, doubleField(1, -1.0) + doubleField(2, 1.0) + doubleField(3, 10)),
                            tensorValue("weights", "histograms", varintField(1, DtDouble) + shape({30, 3}) + bytesField(4, std::string(720, '\0'))),
                            tensorValue("vector", "scalars", floats3),
                            tensorValue("args", "text", varintField(1, DtString) + shape({}) + bytesField(8, "--lr 1e-4")),
                            tensorValue("one float, other plugin", "hparams", varintField(1, DtFloat) + shape({}) + floatField(5, 1.0f)),
                            bytesField(1, "no value at all")}));
        auto r = readTensorBoardEventBytes(f.bytes, "mixed.tfevents");
        QVERIFY2(r, r ? "" : describe(r.error()).constData());
        QCOMPARE(r->nonScalarValues, std::int64_t(7));
        QCOMPARE(r->byTag.size(), std::size_t(1));
        QCOMPARE(r->byTag.at("lm loss")[0].value, 3.0);
    }

    void aRestartReplaysStepsAndTheLaterFileWins()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        // The first attempt ran steps 1..5; the restart resumed from a checkpoint at step 3 and ran
        // 4..7 again with other values. The paths sort the other way round from the names: the
        // reader must order by file name (the writer's start time), not by folder.
        writeFile(dir.filePath("z-first/events.out.tfevents.1700000000.node0.1234.0"), pytorchRun(1, 5).bytes);
        writeFile(dir.filePath("a-restart/events.out.tfevents.1700000900.node0.5678.0"), pytorchRun(4, 7, 100).bytes);
        writeFile(dir.filePath("notes.txt"), "not an event file");
        // A dangling link under an event file's name (a copy that moved away) is no file to read.
        QVERIFY(QFile::link(dir.filePath("gone"), dir.filePath("events.out.tfevents.1600000000.gone")));
        auto r = readTensorBoardEvents(dir.path().toStdString());
        QVERIFY2(r, r ? "" : describe(r.error()).constData());
        QCOMPARE(r->files, 2);
        QCOMPARE(r->records, std::int64_t((1 + 5 * 4) + (1 + 4 * 4)));
        QCOMPARE(r->repeatedPoints, std::int64_t(2 * 4));  // steps 4 and 5 of each tag
        QVERIFY(r->warnings.empty());
        for (std::size_t t = 0; t < kPyTorchTags.size(); ++t) {
            const std::vector<ScalarPoint>& points = r->byTag.at(kPyTorchTags[t]);
            QCOMPARE(points.size(), std::size_t(7));
            for (std::int64_t step = 1; step <= 7; ++step) {
                QCOMPARE(points[std::size_t(step - 1)].step, step);
                const double offset = step >= 4 ? 100 : 0;
                QCOMPARE(points[std::size_t(step - 1)].value, double(float(double(step) + double(t) / 10 + offset)));
            }
        }
    }

    void aStepTwiceInOneFileKeepsTheLaterValue()
    {
        EventFile f;
        f.add(fileVersionEvent(1.0));
        f.add(summaryEvent(2.0, 8, {simpleValue("lm loss", 1.0f)}));
        f.add(summaryEvent(3.0, 7, {simpleValue("lm loss", 0.5f)}));
        f.add(summaryEvent(4.0, 8, {simpleValue("lm loss", 2.0f)}));
        auto r = readTensorBoardEventBytes(f.bytes, "twice.tfevents");
        QVERIFY2(r, r ? "" : describe(r.error()).constData());
        QCOMPARE(r->repeatedPoints, std::int64_t(1));
        const std::vector<ScalarPoint>& points = r->byTag.at("lm loss");
        QCOMPARE(points.size(), std::size_t(2));
        QCOMPARE(points[0].step, std::int64_t(7));  // sorted by step, not by arrival
        QCOMPARE(points[1].step, std::int64_t(8));
        QCOMPARE(points[1].value, 2.0);
        QCOMPARE(points[1].wallTime, 4.0);
    }

    void aCorruptDataByteNamesTheRecordAndOffset()
    {
        EventFile f = pytorchRun(1, 2);
        std::string bytes = f.bytes;
        const std::size_t third = f.offsets[2];
        bytes[third + 12 + 5] ^= 0x20;  // inside record 3's data
        auto r = readTensorBoardEventBytes(bytes, "run/events.out.tfevents.1700000000.node0");
        QVERIFY(!r);
        const std::string message = r.error().message;
        QCOMPARE(r.error().code, ErrorCode::Corrupt);
        QCOMPARE(r.error().context, std::string("run/events.out.tfevents.1700000000.node0"));
        QVERIFY2(message.find("record 3 (at byte " + std::to_string(third) + ")") != std::string::npos, message.c_str());
        QVERIFY2(message.find("CRC of its " + std::to_string(f.offsets[3] - third - 16) + " data bytes") != std::string::npos,
                 message.c_str());
        QVERIFY2(message.find("expected 0x") != std::string::npos, message.c_str());
    }

    void aCorruptLengthCrcNamesTheRecordAndOffset()
    {
        EventFile f = pytorchRun(1, 2);
        std::string bytes = f.bytes;
        const std::size_t second = f.offsets[1];
        bytes[second + 9] ^= 0x01;  // record 2's length CRC
        auto r = readTensorBoardEventBytes(bytes, "events.out.tfevents.1");
        QVERIFY(!r);
        QCOMPARE(r.error().code, ErrorCode::Corrupt);
        const std::string message = r.error().message;
        QVERIFY2(message.find("record 2 (at byte " + std::to_string(second) + ")") != std::string::npos, message.c_str());
        QVERIFY2(message.find("CRC of its length field") != std::string::npos, message.c_str());
    }

    void aRecordThatIsNoEventIsAnError()
    {
        EventFile f;
        f.add(fileVersionEvent(1.0));
        f.add(std::string("\xff\xff\xff", 3));  // a varint key that never ends; CRCs are fine
        auto r = readTensorBoardEventBytes(f.bytes, "events.out.tfevents.2");
        QVERIFY(!r);
        QCOMPARE(r.error().code, ErrorCode::Corrupt);
        QVERIFY2(r.error().message.find("record 2 (at byte " + std::to_string(f.offsets[1]) + ")") != std::string::npos,
                 describe(r.error()).constData());
        QVERIFY2(r.error().message.find("do not parse as a TensorFlow Event") != std::string::npos, describe(r.error()).constData());
    }

    void aTruncatedLastRecordIsAWarning_data()
    {
        QTest::addColumn<int>("keep");  // bytes of the last record left; <0: cut that many from its end
        QTest::newRow("inside the length") << 5;
        QTest::newRow("inside the length CRC") << 10;
        QTest::newRow("header only") << 12;
        QTest::newRow("inside the data") << 20;
        QTest::newRow("inside the data CRC") << -2;
    }
    void aTruncatedLastRecordIsAWarning()
    {
        QFETCH(int, keep);
        EventFile f = pytorchRun(1, 3);
        const std::size_t last = f.offsets.back();
        const std::size_t cut = keep >= 0 ? last + std::size_t(keep) : f.bytes.size() - std::size_t(-keep);
        auto r = readTensorBoardEventBytes(std::string_view(f.bytes).substr(0, cut), "events.out.tfevents.3.node0");
        QVERIFY2(r, r ? "" : describe(r.error()).constData());
        QCOMPARE(r->records, std::int64_t(f.offsets.size() - 1));
        QCOMPARE(r->warnings.size(), std::size_t(1));
        const std::string& warning = r->warnings[0];
        QVERIFY2(warning.find("events.out.tfevents.3.node0") != std::string::npos, warning.c_str());
        QVERIFY2(warning.find("record " + std::to_string(f.offsets.size()) + " (at byte " + std::to_string(last) + ")") !=
                     std::string::npos,
                 warning.c_str());
        // Everything before it is kept: the last tag lost its step 3, the others have all three.
        QCOMPARE(r->byTag.at(kPyTorchTags.back()).size(), std::size_t(2));
        QCOMPARE(r->byTag.at(kPyTorchTags.front()).size(), std::size_t(3));
    }

    void aTruncationInsideTheFileIsAnError_data()
    {
        QTest::addColumn<bool>("beyondTheEnd");  // the cut record's length reaches past the file's end
        QTest::newRow("the next record lands inside its data") << false;
        QTest::newRow("its length reaches past the end") << true;
    }
    void aTruncationInsideTheFileIsAnError()
    {
        QFETCH(bool, beyondTheEnd);
        EventFile f;
        f.add(fileVersionEvent(1.0));
        // Record 2 is large (a histogram as tensor_content), so cutting 300 of its bytes reaches
        // past the end when only one small record follows.
        f.add(summaryEvent(2.0, 1,
                           {tensorValue("weights", "histograms",
                                        varintField(1, DtDouble) + shape({40, 3}) + bytesField(4, std::string(960, '\x01')))}));
        f.add(summaryEvent(3.0, 1, {simpleValue("lm loss", 1.0f)}));
        if (!beyondTheEnd)
            for (int step = 2; step <= 20; ++step)
                f.add(summaryEvent(3.0 + step, step, {simpleValue("lm loss", 1.0f)}));
        std::string bytes = f.bytes;
        bytes.erase(f.offsets[1] + 100, 300);  // 300 bytes of record 2's data are gone
        auto r = readTensorBoardEventBytes(bytes, "events.out.tfevents.4");
        QVERIFY(!r);
        QCOMPARE(r.error().code, ErrorCode::Corrupt);
        const std::string message = r.error().message;
        QVERIFY2(message.find("record 2 (at byte " + std::to_string(f.offsets[1]) + ") is cut short") != std::string::npos,
                 message.c_str());
        QVERIFY2(message.find("a whole record starts at byte " + std::to_string(f.offsets[2] - 300)) != std::string::npos,
                 message.c_str());
    }

    void anEmptyDirectoryIsAnError()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        writeFile(dir.filePath("checkpoints/latest_checkpointed_iteration.txt"), "100");
        auto r = readTensorBoardEvents(dir.path().toStdString());
        QVERIFY(!r);
        QCOMPARE(r.error().code, ErrorCode::NotFound);
        QVERIFY2(r.error().message == "no events.out.tfevents.* file under " + dir.path().toStdString() +
                                          "; is this logger.tensorboard_dir?",
                 describe(r.error()).constData());

        auto missing = readTensorBoardEvents(dir.filePath("no-such-dir").toStdString());
        QVERIFY(!missing);
        QCOMPARE(missing.error().code, ErrorCode::NotFound);
    }

    void aFileNamedDirectlyIsReadWhateverItsName()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString path = dir.filePath("copied.bin");
        writeFile(path, pytorchRun(1, 2).bytes);
        auto r = readTensorBoardEvents(path.toStdString());
        QVERIFY2(r, r ? "" : describe(r.error()).constData());
        QCOMPARE(r->files, 1);
        QCOMPARE(r->byTag.at("lm loss").size(), std::size_t(2));
    }

    void aCorruptFileInADirectoryIsNamed()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        std::string bad = pytorchRun(1, 2).bytes;
        bad[bad.size() - 1] ^= 0x10;  // last record's data CRC
        writeFile(dir.filePath("events.out.tfevents.1700000000.node0"), pytorchRun(1, 2).bytes);
        writeFile(dir.filePath("events.out.tfevents.1700000500.node0"), bad);
        auto r = readTensorBoardEvents(dir.path().toStdString());
        QVERIFY(!r);
        QCOMPARE(r.error().context, dir.filePath("events.out.tfevents.1700000500.node0").toStdString());
        QVERIFY2(r.error().message.find("record 9 ") != std::string::npos, describe(r.error()).constData());
    }
};

QTEST_GUILESS_MAIN(TestTensorBoardEvents)
#include "test_tensorboard_events.moc"
