// Schema v1 of metrics.jsonl. The step field list below is the single place where a StepRecord
// member meets its JSON key, used by both the writer and the reader.
#include "core/metrics_schema.h"

#include "core/json_number.h"

#include <charconv>
#include <cstdint>
#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

#include <nlohmann/json.hpp>

namespace wb::core {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// The step field tables live in the header (one list for the JSON stream and the CSV export).
using DoubleField = StepDoubleField;
using IntField = StepIntField;
constexpr const auto& kStepDoubles = kStepDoubleFields;
constexpr const auto& kStepInts = kStepIntFields;

// JSON has no NaN/inf; a diverged loss must still be written, as null.
OrderedJson finiteOrNull(double v)
{
    return std::isfinite(v) ? OrderedJson(v) : OrderedJson(nullptr);
}

double readDouble(const Json& obj, const char* key, double fallback = 0.0)
{
    auto it = obj.find(key);
    if (it == obj.end())
        return fallback;
    if (it->is_null())
        return std::nan("");
    return it->is_number() ? it->get<double>() : fallback;
}

int64_t readInt(const Json& obj, const char* key, int64_t fallback = 0,
                int64_t lo = std::numeric_limits<int64_t>::min(), int64_t hi = std::numeric_limits<int64_t>::max())
{
    auto it = obj.find(key);
    if (it == obj.end())
        return fallback;
    return jsonWholeNumber(*it, lo, hi).value_or(fallback);
}

// An int field of a header (world size, sequence length, batch sizes).
int readIntField(const Json& obj, const char* key, int fallback = 0)
{
    return static_cast<int>(readInt(obj, key, fallback, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

std::string readString(const Json& obj, const char* key)
{
    auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<int64_t> readOptionalInt(const Json& obj, const char* key)
{
    auto it = obj.find(key);
    if (it == obj.end())
        return std::nullopt;
    return jsonWholeNumber(*it);
}

OrderedJson header(const char* type)
{
    OrderedJson j = OrderedJson::object();
    j["v"] = kMetricsSchemaVersion;
    j["type"] = type;
    return j;
}

struct ToJson {
    OrderedJson operator()(const MetaRecord& m) const
    {
        OrderedJson j = header("meta");
        j["run_id"] = m.runId;
        j["config_hash"] = m.configHash;
        j["name"] = m.name;
        j["world_size"] = m.worldSize;
        j["layout"] = m.layout;
        j["device"] = m.device;
        j["data_source"] = m.dataSource;
        j["peak_tflops"] = finiteOrNull(m.peakTflops);
        j["model_flops_per_sample"] = finiteOrNull(m.modelFlopsPerSample);
        j["seq_length"] = m.seqLength;
        j["micro_batch_size"] = m.microBatchSize;
        j["global_batch_size"] = m.globalBatchSize;
        j["versions"] = m.versions;
        if (!m.tokenCounting.empty())
            j["token_counting"] = m.tokenCounting;
        if (!m.runtimeSwitches.empty())
            j["runtime_switches"] = m.runtimeSwitches;
        return j;
    }
    OrderedJson operator()(const StepRecord& s) const
    {
        OrderedJson j = header("step");
        j["step"] = s.step;
        for (const DoubleField& f : kStepDoubles)
            j[f.key] = finiteOrNull(s.*f.member);
        for (const IntField& f : kStepInts)
            j[f.key] = s.*f.member;
        return j;
    }
    OrderedJson operator()(const GpuRecord& g) const
    {
        OrderedJson j = header("gpu");
        j["time"] = g.time;
        if (g.step)
            j["step"] = *g.step;
        OrderedJson gpus = OrderedJson::array();
        for (const GpuSample& s : g.gpus)
            gpus.push_back({{"index", s.index},
                            {"util_pct", finiteOrNull(s.utilPct)},
                            {"mem_used_gib", finiteOrNull(s.memUsedGib)},
                            {"mem_total_gib", finiteOrNull(s.memTotalGib)},
                            {"power_w", finiteOrNull(s.powerW)},
                            {"temp_c", finiteOrNull(s.tempC)},
                            {"sm_clock_mhz", finiteOrNull(s.smClockMhz)}});
        j["gpus"] = std::move(gpus);
        return j;
    }
    OrderedJson operator()(const EventRecord& e) const
    {
        OrderedJson j = header("event");
        j["time"] = e.time;
        j["level"] = e.level;
        j["msg"] = e.msg;
        if (e.step)
            j["step"] = *e.step;
        return j;
    }
    OrderedJson operator()(const EndRecord& e) const
    {
        OrderedJson j = header("end");
        j["time"] = e.time;
        j["status"] = e.status;
        j["exit_code"] = e.exitCode;
        if (e.step)
            j["step"] = *e.step;
        return j;
    }
};

MetaRecord metaFromJson(const Json& j)
{
    MetaRecord m;
    m.runId = readString(j, "run_id");
    m.configHash = readString(j, "config_hash");
    m.name = readString(j, "name");
    m.worldSize = readIntField(j, "world_size", 1);
    m.layout = readString(j, "layout");
    m.device = readString(j, "device");
    m.dataSource = readString(j, "data_source");
    m.peakTflops = readDouble(j, "peak_tflops");
    m.modelFlopsPerSample = readDouble(j, "model_flops_per_sample");
    m.seqLength = readIntField(j, "seq_length");
    m.microBatchSize = readIntField(j, "micro_batch_size");
    m.globalBatchSize = readIntField(j, "global_batch_size");
    m.tokenCounting = readString(j, "token_counting");
    for (const auto& [key, target] :
         {std::pair{"versions", &m.versions}, std::pair{"runtime_switches", &m.runtimeSwitches}})
        if (auto it = j.find(key); it != j.end() && it->is_object())
            for (auto v = it->begin(); v != it->end(); ++v)
                if (v->is_string())
                    (*target)[v.key()] = v->get<std::string>();
    return m;
}

// A count of a step record (images, tokens): a whole number in [0, 2^63), written as an integer
// or as a float without a fraction; anything else makes the line malformed rather than a silent
// wrong number (a float beyond int64 used to become −9223372036854775808).
std::optional<int64_t> countValue(const Json& v)
{
    return jsonWholeNumber(v, 0);
}

std::optional<StepRecord> stepFromJson(const Json& j)
{
    // A step without its number cannot be stored or ordered: treat it as malformed. Steps count
    // from 1 (moe-train's and Megatron's iterations).
    auto stepIt = j.find("step");
    if (stepIt == j.end() || !stepIt->is_number_integer())
        return std::nullopt;
    StepRecord s;
    s.step = stepIt->get<int64_t>();
    if ((stepIt->is_number_unsigned() && stepIt->get<uint64_t>() > uint64_t(INT64_MAX)) || s.step < 1)
        return std::nullopt;
    // A field of the wrong type (a string where a number belongs) makes the line malformed; an
    // absent field keeps its default, null is NaN (a diverged loss).
    for (const DoubleField& f : kStepDoubles) {
        auto it = j.find(f.key);
        if (it != j.end() && !it->is_number() && !it->is_null())
            return std::nullopt;
        s.*f.member = readDouble(j, f.key);
    }
    for (const IntField& f : kStepInts) {
        auto it = j.find(f.key);
        if (it == j.end() || it->is_null())  // null: not known, as absent
            continue;
        auto value = countValue(*it);
        if (!value)
            return std::nullopt;
        s.*f.member = *value;
    }
    return s;
}


// ---- Fast path for step lines ------------------------------------------------------------------
// A step line arrives once per step, 100k+ times per run; building a DOM (nlohmann) for each made
// parsing the store's ingest bottleneck (~100-200k lines/s). Step lines are flat objects of numbers,
// so a scanner for exactly that shape produces the StepRecord directly. It accepts only a strict
// subset of JSON (flat object; numbers, null, true/false, strings without escapes or non-ASCII) and
// applies the same field rules as stepFromJson + parseMetricsLine (null -> NaN, ints truncate floats,
// last duplicate wins). Anything else — another record type, nesting, escapes, invalid JSON — is
// left to the DOM path, which therefore still decides every case the fast path does not claim.

struct FlatValue {
    enum Kind : unsigned char { Absent, Null, Int, Float, Other } kind = Absent;
    int64_t i = 0;
    double d = 0.0;
    std::string_view text;  // strings only (kind Other)
    bool isString = false;
};

constexpr std::string_view kFlatV = "v";
constexpr std::string_view kFlatType = "type";
constexpr std::string_view kFlatStep = "step";
constexpr size_t kDoubleCount = std::size(kStepDoubles);
constexpr size_t kIntCount = std::size(kStepInts);
constexpr size_t kSlotCount = 3 + kDoubleCount + kIntCount;  // v, type, step, doubles..., ints...

std::string_view slotName(size_t slot)
{
    if (slot == 0)
        return kFlatV;
    if (slot == 1)
        return kFlatType;
    if (slot == 2)
        return kFlatStep;
    if (slot < 3 + kDoubleCount)
        return kStepDoubles[slot - 3].key;
    return kStepInts[slot - 3 - kDoubleCount].key;
}

class FlatScanner {
public:
    explicit FlatScanner(std::string_view text) : m_p(text.data()), m_end(text.data() + text.size()) {}

    /// Fills `slots`; false when the line is not a flat object this scanner handles.
    bool scan(FlatValue (&slots)[kSlotCount])
    {
        skipSpace();
        if (!eat('{'))
            return false;
        skipSpace();
        size_t expected = 0;  // writers emit keys in a fixed order: try the next slot first
        if (!eat('}')) {
            while (true) {
                std::string_view key;
                if (!string(key))
                    return false;
                skipSpace();
                if (!eat(':'))
                    return false;
                skipSpace();
                FlatValue value;
                if (!scalar(value))
                    return false;
                const size_t slot = find(key, expected);
                if (slot < kSlotCount) {
                    slots[slot] = value;
                    expected = slot + 1;
                }
                skipSpace();
                if (eat(','))
                    skipSpace();
                else if (eat('}'))
                    break;
                else
                    return false;
            }
        }
        skipSpace();
        return m_p == m_end;
    }

private:
    static size_t find(std::string_view key, size_t expected)
    {
        if (expected < kSlotCount && slotName(expected) == key)
            return expected;
        for (size_t slot = 0; slot < kSlotCount; ++slot)
            if (slotName(slot) == key)
                return slot;
        return kSlotCount;
    }

    void skipSpace()
    {
        while (m_p != m_end && (*m_p == ' ' || *m_p == '\t' || *m_p == '\n' || *m_p == '\r'))
            ++m_p;
    }
    bool eat(char c)
    {
        if (m_p != m_end && *m_p == c) {
            ++m_p;
            return true;
        }
        return false;
    }
    bool literal(std::string_view word)
    {
        if (static_cast<size_t>(m_end - m_p) < word.size() || std::string_view(m_p, word.size()) != word)
            return false;
        m_p += word.size();
        return true;
    }
    bool string(std::string_view& out)
    {
        if (!eat('"'))
            return false;
        const char* start = m_p;
        while (m_p != m_end && *m_p != '"') {
            const auto c = static_cast<unsigned char>(*m_p);
            if (c == '\\' || c < 0x20 || c >= 0x80)
                return false;  // escapes, control bytes, UTF-8: the DOM path validates those
            ++m_p;
        }
        if (m_p == m_end)
            return false;
        out = std::string_view(start, static_cast<size_t>(m_p - start));
        ++m_p;
        return true;
    }
    bool digits()
    {
        const char* start = m_p;
        while (m_p != m_end && *m_p >= '0' && *m_p <= '9')
            ++m_p;
        return m_p != start;
    }
    bool number(FlatValue& v)
    {
        // JSON's grammar exactly: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
        const char* start = m_p;
        eat('-');
        if (eat('0')) {
            if (m_p != m_end && *m_p >= '0' && *m_p <= '9')
                return false;
        } else if (!digits()) {
            return false;
        }
        bool integer = true;
        if (eat('.')) {
            integer = false;
            if (!digits())
                return false;
        }
        if (m_p != m_end && (*m_p == 'e' || *m_p == 'E')) {
            integer = false;
            ++m_p;
            if (!eat('+'))
                eat('-');
            if (!digits())
                return false;
        }
        if (integer) {
            const auto [ptr, ec] = std::from_chars(start, m_p, v.i);
            v.kind = FlatValue::Int;
            return ec == std::errc() && ptr == m_p;  // out of int64 range: the DOM path
        }
        const auto [ptr, ec] = std::from_chars(start, m_p, v.d);
        v.kind = FlatValue::Float;
        return ec == std::errc() && ptr == m_p && std::isfinite(v.d);
    }
    bool scalar(FlatValue& v)
    {
        if (m_p == m_end)
            return false;
        switch (*m_p) {
        case '"':
            v.kind = FlatValue::Other;
            v.isString = true;
            return string(v.text);
        case 'n':
            v.kind = FlatValue::Null;
            return literal("null");
        case 't':
            v.kind = FlatValue::Other;
            return literal("true");
        case 'f':
            v.kind = FlatValue::Other;
            return literal("false");
        default:
            return number(v);
        }
    }

    const char* m_p;
    const char* m_end;
};

// stepFromJson's rules on a scanned value; nullopt declines (the DOM path decides, and rejects).
std::optional<double> flatDouble(const FlatValue& v)
{
    switch (v.kind) {
    case FlatValue::Absent: return 0.0;
    case FlatValue::Null: return std::nan("");
    case FlatValue::Int: return static_cast<double>(v.i);
    case FlatValue::Float: return v.d;
    default: return std::nullopt;
    }
}

std::optional<int64_t> flatInt(const FlatValue& v, int64_t fallback)
{
    switch (v.kind) {
    case FlatValue::Absent: return fallback;
    case FlatValue::Int: return v.i;
    case FlatValue::Float:
        if (!(std::abs(v.d) < 9.2e18) || v.d != std::floor(v.d))
            return std::nullopt;
        return static_cast<int64_t>(v.d);
    default: return std::nullopt;
    }
}

/// The step record, or nullopt when the DOM path must decide (not a v1 step line in this shape).
std::optional<StepRecord> parseFlatStep(std::string_view line)
{
    FlatValue slots[kSlotCount];
    if (!FlatScanner(line).scan(slots))
        return std::nullopt;
    const auto version = flatInt(slots[0], -1);
    if (!version || *version != kMetricsSchemaVersion)
        return std::nullopt;
    if (!slots[1].isString || slots[1].text != "step" || slots[2].kind != FlatValue::Int)
        return std::nullopt;
    StepRecord s;
    s.step = slots[2].i;
    if (s.step < 1)
        return std::nullopt;
    for (size_t i = 0; i < kDoubleCount; ++i) {
        const auto value = flatDouble(slots[3 + i]);
        if (!value)
            return std::nullopt;
        s.*kStepDoubles[i].member = *value;
    }
    for (size_t i = 0; i < kIntCount; ++i) {
        const auto value = flatInt(slots[3 + kDoubleCount + i], 0);
        if (!value || *value < 0)
            return std::nullopt;
        s.*kStepInts[i].member = *value;
    }
    return s;
}

}  // namespace

std::string switchesText(const std::map<std::string, std::string>& switches)
{
    std::string text;
    for (const auto& [name, value] : switches)
        text += (text.empty() ? "" : ", ") + name + "=" + value;
    return text;
}

std::string toJsonLine(const MetricsRecord& record)
{
    // Text from outside (a log file's name, a user's run name) may not be UTF-8: replaced, never thrown.
    return std::visit(ToJson{}, record).dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
}

std::optional<MetricsRecord> parseMetricsLine(std::string_view line)
{
    if (auto step = parseFlatStep(line))
        return MetricsRecord(*step);
    Json j = Json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object())
        return std::nullopt;
    if (readInt(j, "v", -1) != kMetricsSchemaVersion)
        return std::nullopt;
    const std::string type = readString(j, "type");
    if (type == "step") {
        if (auto s = stepFromJson(j))
            return MetricsRecord(*s);
        return std::nullopt;
    }
    if (type == "meta")
        return MetricsRecord(metaFromJson(j));
    if (type == "event")
        return MetricsRecord(EventRecord{readDouble(j, "time"), readString(j, "level"), readString(j, "msg"),
                                         readOptionalInt(j, "step")});
    if (type == "end")
        return MetricsRecord(EndRecord{readDouble(j, "time"), readString(j, "status"),
                                       readIntField(j, "exit_code", -1), readOptionalInt(j, "step")});
    if (type == "gpu") {
        GpuRecord g{readDouble(j, "time"), readOptionalInt(j, "step"), {}};
        const auto list = j.find("gpus");
        if (list == j.end() || !list->is_array())
            return std::nullopt;
        for (const Json& o : *list) {
            if (!o.is_object())
                return std::nullopt;
            const double nan = std::numeric_limits<double>::quiet_NaN();
            g.gpus.push_back({readIntField(o, "index", 0), readDouble(o, "util_pct", nan), readDouble(o, "mem_used_gib", nan),
                              readDouble(o, "mem_total_gib", nan), readDouble(o, "power_w", nan),
                              readDouble(o, "temp_c", nan), readDouble(o, "sm_clock_mhz", nan)});
        }
        return MetricsRecord(std::move(g));
    }
    return std::nullopt;
}

GpuSummary summarizeGpus(const GpuRecord& record)
{
    GpuSummary out;
    double util = 0, power = 0;
    int utilCount = 0, powerCount = 0;
    for (const GpuSample& g : record.gpus) {
        if (std::isfinite(g.utilPct))
            util += g.utilPct, ++utilCount;
        if (std::isfinite(g.powerW))
            power += g.powerW, ++powerCount;
        if (std::isfinite(g.tempC))
            out.tempC = std::isnan(out.tempC) ? g.tempC : std::max(out.tempC, g.tempC);
        if (std::isfinite(g.smClockMhz))
            out.smClockMhz = std::isnan(out.smClockMhz) ? g.smClockMhz : std::min(out.smClockMhz, g.smClockMhz);
    }
    if (utilCount)
        out.utilPct = util / utilCount;
    if (powerCount)
        out.powerW = power / powerCount;
    return out;
}

MetricsLineReader::Chunk MetricsLineReader::feed(std::string_view bytes)
{
    Chunk chunk;
    size_t start = 0;
    while (true) {
        const size_t newline = bytes.find('\n', start);
        if (newline == std::string_view::npos)
            break;
        std::string_view piece = bytes.substr(start, newline - start);
        // The first complete line may begin in an earlier feed.
        std::string joined;
        if (!m_pending.empty()) {
            joined = m_pending;
            joined.append(piece);
            piece = joined;
        }
        const int64_t lineBytes = static_cast<int64_t>(piece.size()) + 1;
        m_pending.clear();
        if (!piece.empty() && piece.back() == '\r')
            piece.remove_suffix(1);
        if (piece.find_first_not_of(" \t") != std::string_view::npos) {
            if (auto record = parseMetricsLine(piece))
                chunk.records.push_back(std::move(*record));
            else
                ++chunk.malformedLines;
        }
        chunk.consumedBytes += lineBytes;
        start = newline + 1;
    }
    m_pending.append(bytes.substr(start));
    m_consumed += chunk.consumedBytes;
    m_malformed += chunk.malformedLines;
    return chunk;
}

std::string statusForExitCode(int exitCode)
{
    switch (exitCode) {
    case 0: return "finished";
    case 2: return "bad_config";
    case 3: return "oom";
    case 4: return "comm_error";
    case 5: return "stopped";
    default: return "failed";
    }
}

}  // namespace wb::core
