// Schema v1 of metrics.jsonl. The step field list below is the single place where a StepRecord
// member meets its JSON key, used by both the writer and the reader.
#include "core/metrics_schema.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace wb::core {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

struct DoubleField {
    const char* key;
    double StepRecord::*member;
};
struct IntField {
    const char* key;
    int64_t StepRecord::*member;
};

constexpr DoubleField kStepDoubles[] = {
    {"time", &StepRecord::time},
    {"step_ms", &StepRecord::stepMs},
    {"data_ms", &StepRecord::dataMs},
    {"vision_ms", &StepRecord::visionMs},
    {"projector_ms", &StepRecord::projectorMs},
    {"decoder_ms", &StepRecord::decoderMs},
    {"backward_ms", &StepRecord::backwardMs},
    {"optimizer_ms", &StepRecord::optimizerMs},
    {"loss", &StepRecord::loss},
    {"aux_loss", &StepRecord::auxLoss},
    {"grad_norm", &StepRecord::gradNorm},
    {"lr", &StepRecord::lr},
    {"mem_alloc_gib", &StepRecord::memAllocGib},
    {"mem_reserved_gib", &StepRecord::memReservedGib},
    {"mem_peak_gib", &StepRecord::memPeakGib},
    {"tokens_per_s_per_gpu", &StepRecord::tokensPerSPerGpu},
    {"tflops_per_gpu", &StepRecord::tflopsPerGpu},
    {"mfu", &StepRecord::mfu},
};

constexpr IntField kStepInts[] = {
    {"images", &StepRecord::images},
    {"image_tokens", &StepRecord::imageTokens},
    {"text_tokens", &StepRecord::textTokens},
    {"pad_tokens", &StepRecord::padTokens},
    {"effective_tokens", &StepRecord::effectiveTokens},
    {"skipped_images", &StepRecord::skippedImages},
};

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

int64_t readInt(const Json& obj, const char* key, int64_t fallback = 0)
{
    auto it = obj.find(key);
    return it != obj.end() && it->is_number() ? it->get<int64_t>() : fallback;
}

std::string readString(const Json& obj, const char* key)
{
    auto it = obj.find(key);
    return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<int64_t> readOptionalInt(const Json& obj, const char* key)
{
    auto it = obj.find(key);
    if (it == obj.end() || !it->is_number())
        return std::nullopt;
    return it->get<int64_t>();
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
    m.worldSize = static_cast<int>(readInt(j, "world_size", 1));
    m.layout = readString(j, "layout");
    m.device = readString(j, "device");
    m.dataSource = readString(j, "data_source");
    m.peakTflops = readDouble(j, "peak_tflops");
    m.modelFlopsPerSample = readDouble(j, "model_flops_per_sample");
    m.seqLength = static_cast<int>(readInt(j, "seq_length"));
    m.microBatchSize = static_cast<int>(readInt(j, "micro_batch_size"));
    m.globalBatchSize = static_cast<int>(readInt(j, "global_batch_size"));
    if (auto it = j.find("versions"); it != j.end() && it->is_object())
        for (auto v = it->begin(); v != it->end(); ++v)
            if (v->is_string())
                m.versions[v.key()] = v->get<std::string>();
    return m;
}

std::optional<StepRecord> stepFromJson(const Json& j)
{
    // A step without its number cannot be stored or ordered: treat it as malformed.
    auto stepIt = j.find("step");
    if (stepIt == j.end() || !stepIt->is_number_integer())
        return std::nullopt;
    StepRecord s;
    s.step = stepIt->get<int64_t>();
    for (const DoubleField& f : kStepDoubles)
        s.*f.member = readDouble(j, f.key);
    for (const IntField& f : kStepInts)
        s.*f.member = readInt(j, f.key);
    return s;
}

}  // namespace

std::string toJsonLine(const MetricsRecord& record)
{
    return std::visit(ToJson{}, record).dump();
}

std::optional<MetricsRecord> parseMetricsLine(std::string_view line)
{
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
                                       static_cast<int>(readInt(j, "exit_code", -1)), readOptionalInt(j, "step")});
    return std::nullopt;
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
