#include "core/bridge/tensorboard_events.h"

// Generated from core/bridge/tensorboard_event.proto into the build tree; reachable from core's
// own sources only (core/CMakeLists.txt), so no consumer of the header sees protobuf.
#include "core/bridge/tensorboard_event.pb.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <utility>

namespace wb::core::bridge {

namespace {

namespace pb = wb::tensorboard;

// TFRecord framing (tensorflow/core/lib/io/record_writer.cc): per record
//   uint64 length | uint32 masked_crc32c(length bytes) | data[length] | uint32 masked_crc32c(data)
// all little-endian.
constexpr std::size_t kHeaderBytes = 12;
constexpr std::size_t kFooterBytes = 4;
constexpr std::string_view kEventFilePrefix = "events.out.tfevents.";

constexpr std::array<std::uint32_t, 256> makeCrc32cTable()
{
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t i = 0; i < 256; ++i) {
        std::uint32_t c = i;
        for (int bit = 0; bit < 8; ++bit)
            c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // Castagnoli, reflected
        table[i] = c;
    }
    return table;
}
constexpr std::array<std::uint32_t, 256> kCrc32cTable = makeCrc32cTable();

std::uint32_t mask(std::uint32_t crc)
{
    return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::uint64_t loadLe(const char* at, int bytes)
{
    std::uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i)
        v = (v << 8) | static_cast<unsigned char>(at[i]);
    return v;
}

std::string hex32(std::uint32_t v)
{
    char text[11];
    std::snprintf(text, sizeof text, "0x%08x", v);
    return text;
}

std::string recordAt(std::int64_t index, std::size_t offset)
{
    return "record " + std::to_string(index) + " (at byte " + std::to_string(offset) + ")";
}

// A record header at `at` whose length CRC matches: its data length, else nothing.
std::optional<std::uint64_t> validHeaderAt(std::string_view bytes, std::size_t at)
{
    if (bytes.size() - at < kHeaderBytes)
        return std::nullopt;
    if (mask(crc32c(bytes.substr(at, 8))) != loadLe(bytes.data() + at + 8, 4))
        return std::nullopt;
    return loadLe(bytes.data() + at, 8);
}

// Whether a whole record (both CRCs matching) starts at `at`.
bool wholeRecordAt(std::string_view bytes, std::size_t at)
{
    const std::optional<std::uint64_t> length = validHeaderAt(bytes, at);
    const std::size_t left = bytes.size() - at;
    if (!length || left < kHeaderBytes + kFooterBytes || *length > left - kHeaderBytes - kFooterBytes)
        return false;
    const std::string_view data = bytes.substr(at + kHeaderBytes, *length);
    return mask(crc32c(data)) == loadLe(bytes.data() + at + kHeaderBytes + *length, 4);
}

// Where a whole record starts inside (from, to), if one does: the sign that the record at `from`
// lost bytes and the next one follows early (a file cut in the middle and appended to). Requiring a
// whole record, both CRCs, makes a false find in random data a 2^-64 event. Error paths only.
std::optional<std::size_t> wholeRecordInside(std::string_view bytes, std::size_t from, std::size_t to)
{
    to = std::min(to, bytes.size());
    for (std::size_t at = from + 1; at + kHeaderBytes + kFooterBytes <= to; ++at)
        if (wholeRecordAt(bytes, at))
            return at;
    return std::nullopt;
}

double halfToDouble(std::uint16_t h)
{
    const int exponent = (h >> 10) & 0x1f;
    const int mantissa = h & 0x3ff;
    double v = 0;
    if (exponent == 0)
        v = std::ldexp(mantissa, -24);  // subnormal
    else if (exponent == 31)
        v = mantissa ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    else
        v = std::ldexp(mantissa + 1024, exponent - 25);
    return (h & 0x8000) ? -v : v;
}

double bfloat16ToDouble(std::uint16_t b)
{
    return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

// The one value of a one-element tensor: from the typed repeated field, or else from
// tensor_content (TensorFlow's writers use either). Other dtypes (string, bool, complex) are no
// scalar a chart can draw.
std::optional<double> tensorScalar(const pb::TensorProto& t)
{
    if (t.tensor_shape().unknown_rank())
        return std::nullopt;
    std::int64_t elements = 1;  // rank 0: one element
    for (const auto& dim : t.tensor_shape().dim())
        elements *= dim.size();
    if (elements != 1)
        return std::nullopt;
    const std::string& content = t.tensor_content();
    auto packed = [&](std::size_t width) -> std::optional<std::uint64_t> {
        if (content.size() != width)
            return std::nullopt;
        return loadLe(content.data(), static_cast<int>(width));
    };
    switch (t.dtype()) {
    case pb::DT_FLOAT:
        if (t.float_val_size() > 0)
            return t.float_val(0);
        if (auto bits = packed(4))
            return std::bit_cast<float>(static_cast<std::uint32_t>(*bits));
        break;
    case pb::DT_DOUBLE:
        if (t.double_val_size() > 0)
            return t.double_val(0);
        if (auto bits = packed(8))
            return std::bit_cast<double>(*bits);
        break;
    case pb::DT_INT32:
        if (t.int_val_size() > 0)
            return t.int_val(0);
        if (auto bits = packed(4))
            return static_cast<double>(static_cast<std::int32_t>(*bits));
        break;
    case pb::DT_INT64:
        if (t.int64_val_size() > 0)
            return static_cast<double>(t.int64_val(0));
        if (auto bits = packed(8))
            return static_cast<double>(static_cast<std::int64_t>(*bits));
        break;
    case pb::DT_HALF:
    case pb::DT_BFLOAT16: {
        const bool half = t.dtype() == pb::DT_HALF;
        std::optional<std::uint64_t> bits;
        if (t.half_val_size() > 0)
            bits = static_cast<std::uint16_t>(t.half_val(0));
        else
            bits = packed(2);
        if (bits)
            return half ? halfToDouble(static_cast<std::uint16_t>(*bits)) : bfloat16ToDouble(static_cast<std::uint16_t>(*bits));
        break;
    }
    default:
        break;
    }
    return std::nullopt;
}

// A summary value as a scalar: PyTorch's simple_value, or a one-element numeric tensor that is
// not some other plugin's (a text or hparams tensor can hold one element too).
std::optional<double> scalarOf(const pb::Summary::Value& value)
{
    switch (value.value_case()) {
    case pb::Summary::Value::kSimpleValue:
        return value.simple_value();
    case pb::Summary::Value::kTensor: {
        const std::string& plugin = value.metadata().plugin_data().plugin_name();
        if (!plugin.empty() && plugin != "scalars")
            return std::nullopt;
        return tensorScalar(value.tensor());
    }
    default:
        return std::nullopt;
    }
}

// The points of all files read so far; a step seen again replaces the earlier point.
class ScalarCollector {
public:
    void add(const std::string& tag, std::int64_t step, double wallTime, double value)
    {
        const auto [it, inserted] = m_byTag[tag].insert_or_assign(step, ScalarPoint{step, wallTime, value});
        (void)it;
        if (!inserted)
            ++m_out.repeatedPoints;
    }
    TensorBoardScalars& counters() { return m_out; }

    TensorBoardScalars finish() &&
    {
        for (auto& [tag, points] : m_byTag) {
            std::vector<ScalarPoint>& series = m_out.byTag[tag];
            series.reserve(points.size());
            for (const auto& [step, point] : points)
                series.push_back(point);
        }
        return std::move(m_out);
    }

private:
    std::map<std::string, std::map<std::int64_t, ScalarPoint>> m_byTag;
    TensorBoardScalars m_out;
};

// One record's framing at `at`: its data, or `torn` saying how the file ends inside it, or an
// error for a CRC that does not match.
struct Frame {
    std::string_view data;
    std::string torn;  // not empty: the file ends inside this record
};

Result<Frame> frameAt(std::string_view bytes, std::size_t at, std::int64_t index, const std::string& name)
{
    const std::size_t left = bytes.size() - at;
    if (left < kHeaderBytes)
        return Frame{{}, std::to_string(left) + " of its 12 header bytes are there"};
    const std::uint64_t length = loadLe(bytes.data() + at, 8);
    const auto storedLengthCrc = static_cast<std::uint32_t>(loadLe(bytes.data() + at + 8, 4));
    const std::uint32_t lengthCrc = mask(crc32c(bytes.substr(at, 8)));
    if (lengthCrc != storedLengthCrc)
        return makeError(ErrorCode::Corrupt,
                         recordAt(index, at) + ": the CRC of its length field does not match (expected " +
                             hex32(lengthCrc) + " for length " + std::to_string(length) + ", the file has " +
                             hex32(storedLengthCrc) + "); the file is corrupt from this record on",
                         name);
    if (length > left - kHeaderBytes || left - kHeaderBytes - length < kFooterBytes)
        return Frame{{}, "it needs " + std::to_string(kHeaderBytes + length + kFooterBytes) + " bytes, " +
                             std::to_string(left) + " are there"};
    const std::string_view data = bytes.substr(at + kHeaderBytes, length);
    const auto storedDataCrc = static_cast<std::uint32_t>(loadLe(data.data() + length, 4));
    const std::uint32_t dataCrc = mask(crc32c(data));
    if (dataCrc == storedDataCrc)
        return Frame{data, {}};
    if (const auto next = wholeRecordInside(bytes, at, at + kHeaderBytes + length + kFooterBytes))
        return makeError(ErrorCode::Corrupt,
                         recordAt(index, at) + " is cut short: its length says " + std::to_string(length) +
                             " data bytes, but a whole record starts at byte " + std::to_string(*next) +
                             ", inside them; bytes are missing in the middle of the file",
                         name);
    return makeError(ErrorCode::Corrupt,
                     recordAt(index, at) + ": the CRC of its " + std::to_string(length) +
                         " data bytes does not match (expected " + hex32(dataCrc) + ", the file has " +
                         hex32(storedDataCrc) + "); the file is corrupt",
                     name);
}

void collect(const pb::Event& event, ScalarCollector& into)
{
    if (!event.has_summary())
        return;  // file_version, graph, session log
    for (const pb::Summary::Value& value : event.summary().value()) {
        if (const std::optional<double> scalar = scalarOf(value))
            into.add(value.tag(), event.step(), event.wall_time(), *scalar);
        else
            ++into.counters().nonScalarValues;
    }
}

// One file's records into `into`. Stops with an error at the first bad record. A file that ends
// inside its last record adds a warning and keeps what came before: the writer appends whole
// records, so while it writes (or after it was killed) only the end can be incomplete. The same
// shortfall with a whole record after it means bytes went missing mid-file: an error.
Result<void> readRecords(std::string_view bytes, const std::string& name, ScalarCollector& into)
{
    pb::Event event;
    std::size_t at = 0;
    for (std::int64_t index = 1; at < bytes.size(); ++index) {
        auto frame = frameAt(bytes, at, index, name);
        if (!frame)
            return frame.error();
        if (!frame->torn.empty()) {
            if (const auto next = wholeRecordInside(bytes, at, bytes.size()))
                return makeError(ErrorCode::Corrupt,
                                 recordAt(index, at) + " is cut short: " + frame->torn +
                                     ", yet a whole record starts at byte " + std::to_string(*next) +
                                     "; bytes are missing in the middle of the file",
                                 name);
            into.counters().warnings.push_back(
                name + ": ends inside " + recordAt(index, at) + ": " + frame->torn +
                "; the writer may still be writing it (or stopped mid-record); kept the " +
                std::to_string(index - 1) + " records before it");
            return {};
        }
        const std::string_view data = frame->data;
        if (data.size() > static_cast<std::size_t>(INT_MAX) || !event.ParseFromArray(data.data(), static_cast<int>(data.size())))
            return makeError(ErrorCode::Corrupt,
                             recordAt(index, at) + ": its " + std::to_string(data.size()) +
                                 " bytes (CRCs match) do not parse as a TensorFlow Event; is this a TensorBoard event file?",
                             name);
        ++into.counters().records;
        collect(event, into);
        at += kHeaderBytes + data.size() + kFooterBytes;
    }
    return {};
}

Result<std::string> readWholeFile(const std::string& path)
{
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return makeError(ErrorCode::NotFound,
                         std::string("cannot read the event file (") + std::strerror(errno) + "); check the path", path);
    if (!S_ISREG(st.st_mode))
        return makeError(ErrorCode::InvalidArgument, "not a regular file; give an event file or its directory", path);
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(ErrorCode::IoError, "cannot open the event file; check its permissions", path);
    std::string bytes;
    bytes.resize(static_cast<std::size_t>(st.st_size));
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    // A writer may have appended since stat: the records up to st_size are whole or a torn tail,
    // which the framing handles. Fewer bytes than st_size means the read failed.
    if (in.gcount() != static_cast<std::streamsize>(bytes.size()))
        return makeError(ErrorCode::IoError, "reading the event file failed", path);
    return bytes;
}

// Event files under `dir`, in the order their writers started them: by file name (after the
// prefix comes the writer's unix time in seconds, ten digits until 2286), then by path for two
// started in the same second.
Result<std::vector<std::filesystem::path>> eventFilesUnder(const std::filesystem::path& dir)
{
    namespace fs = std::filesystem;
    std::vector<fs::path> files;
    std::error_code ec;
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        const std::string fileName = it->path().filename().string();
        std::error_code fileError;  // an entry that cannot be stat-ed (a dangling link) is skipped
        if (fileName.compare(0, kEventFilePrefix.size(), kEventFilePrefix) == 0 && it->is_regular_file(fileError))
            files.push_back(it->path());
    }
    if (ec)
        return makeError(ErrorCode::IoError, "cannot list the directory (" + ec.message() + ")", dir.string());
    std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) {
        const std::string an = a.filename().string(), bn = b.filename().string();
        return an != bn ? an < bn : a < b;
    });
    return files;
}

}  // namespace

std::uint32_t crc32c(std::string_view bytes)
{
    std::uint32_t c = 0xffffffffu;
    for (const char byte : bytes)
        c = kCrc32cTable[(c ^ static_cast<unsigned char>(byte)) & 0xffu] ^ (c >> 8);
    return ~c;
}

std::uint32_t maskedCrc32c(std::string_view bytes)
{
    return mask(crc32c(bytes));
}

Result<TensorBoardScalars> readTensorBoardEventBytes(std::string_view bytes, const std::string& nameForErrors)
{
    ScalarCollector collector;
    if (auto read = readRecords(bytes, nameForErrors, collector); !read)
        return read.error();
    collector.counters().files = 1;
    return std::move(collector).finish();
}

Result<TensorBoardScalars> readTensorBoardEvents(const std::string& fileOrDir)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status status = fs::status(fileOrDir, ec);
    if (!fs::exists(status))
        return makeError(ErrorCode::NotFound, "no such file or directory; give logger.tensorboard_dir or an event file in it",
                         fileOrDir);
    if (ec)
        return makeError(ErrorCode::IoError, "cannot read it (" + ec.message() + "); check its permissions", fileOrDir);
    std::vector<fs::path> files;
    if (fs::is_directory(status)) {
        auto found = eventFilesUnder(fileOrDir);
        if (!found)
            return found.error();
        files = std::move(*found);
        if (files.empty())
            return makeError(ErrorCode::NotFound,
                             "no " + std::string(kEventFilePrefix) + "* file under " + fileOrDir +
                                 "; is this logger.tensorboard_dir?",
                             fileOrDir);
    } else {
        files.emplace_back(fileOrDir);  // named by the user: read whatever its name
    }

    ScalarCollector collector;
    for (const fs::path& file : files) {
        auto bytes = readWholeFile(file.string());
        if (!bytes)
            return bytes.error();
        if (auto read = readRecords(*bytes, file.string(), collector); !read)
            return read.error();
        ++collector.counters().files;
    }
    return std::move(collector).finish();
}

}  // namespace wb::core::bridge
