// Megatron training-log reader; formats and their sources in bridge_log.h.
#include "core/bridge/bridge_log.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

namespace wb::core::bridge {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

std::string_view trimView(std::string_view s)
{
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\r'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
        s.remove_suffix(1);
    return s;
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }

std::optional<double> toDouble(std::string_view s)
{
    s = trimView(s);
    if (s.empty())
        return std::nullopt;
    if (s.front() == '+')
        s.remove_prefix(1);
    double v = 0.0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size())
        return std::nullopt;
    return v;
}

std::optional<int64_t> toInt(std::string_view s)
{
    s = trimView(s);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || s.empty())
        return std::nullopt;
    return v;
}

bool validUtf8(std::string_view s)
{
    size_t i = 0;
    while (i < s.size()) {
        const auto c = static_cast<unsigned char>(s[i]);
        int extra = 0;
        if (c < 0x80)
            extra = 0;
        else if (c >= 0xC2 && c <= 0xDF)
            extra = 1;
        else if (c >= 0xE0 && c <= 0xEF)
            extra = 2;
        else if (c >= 0xF0 && c <= 0xF4)
            extra = 3;
        else
            return false;
        if (extra > 0 && i + static_cast<size_t>(extra) >= s.size())
            return false;
        for (int k = 1; k <= extra; ++k)
            if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80)
                return false;
        i += static_cast<size_t>(extra) + 1;
    }
    return true;
}

// Text kept in the store (event messages) is valid UTF-8: a byte that is not becomes U+FFFD.
std::string utf8Safe(std::string_view s)
{
    if (validUtf8(s))
        return std::string(s);
    std::string out;
    for (unsigned char c : s) {
        if (c < 0x80)
            out.push_back(static_cast<char>(c));
        else
            out += "\xEF\xBF\xBD";
    }
    return out;
}

// "3: ", "[default3]:", "[rank3]:", "[1,3]<stdout>:" — what srun -l, torchrun and mpirun put in
// front of a rank's line. Returns the length of the prefix (0: none).
size_t launcherPrefix(std::string_view line, int& rank)
{
    rank = -1;
    size_t i = 0;
    while (i < line.size() && line[i] == ' ')
        ++i;
    size_t digits = i;
    while (digits < line.size() && isDigit(line[digits]))
        ++digits;
    if (digits > i && digits < line.size() && line[digits] == ':' &&
        (digits + 1 == line.size() || line[digits + 1] == ' ')) {
        if (auto r = toInt(line.substr(i, digits - i)); r && *r < 1000000)
            rank = static_cast<int>(*r);
        return std::min(line.size(), digits + 2);
    }
    for (std::string_view tag : {"[default", "[rank"}) {
        if (line.substr(0, tag.size()) == tag) {
            size_t k = tag.size();
            const size_t start = k;
            while (k < line.size() && isDigit(line[k]))
                ++k;
            if (k > start && line.substr(k, 2) == "]:") {
                if (auto r = toInt(line.substr(start, k - start)); r && *r < 1000000)
                    rank = static_cast<int>(*r);
                return k + 2;
            }
        }
    }
    if (!line.empty() && line[0] == '[') {
        const size_t close = line.find("]<std");
        if (close != std::string_view::npos && close < 16) {
            const size_t colon = line.find(">:", close);
            if (colon != std::string_view::npos && colon < close + 10)
                return colon + 2;
        }
    }
    return 0;
}

// "[2025-08-01 07:19:37]" at `s` (21 chars): unix seconds, reading the clock as UTC.
std::optional<double> timestampAt(std::string_view s)
{
    if (s.size() < 21 || s[0] != '[' || s[5] != '-' || s[8] != '-' || s[11] != ' ' || s[14] != ':' ||
        s[17] != ':' || s[20] != ']')
        return std::nullopt;
    for (size_t k : {1, 2, 3, 4, 6, 7, 9, 10, 12, 13, 15, 16, 18, 19})
        if (!isDigit(s[k]))
            return std::nullopt;
    const auto num = [&](size_t at, size_t n) {
        int v = 0;
        for (size_t k = 0; k < n; ++k)
            v = v * 10 + (s[at + k] - '0');
        return v;
    };
    int y = num(1, 4);
    const int m = num(6, 2), d = num(9, 2);
    if (m < 1 || m > 12 || d < 1 || d > 31)
        return std::nullopt;
    // Days from 1970-01-01 (Howard Hinnant's days_from_civil).
    y -= m <= 2 ? 1 : 0;
    const int era = (y >= 0 ? y : y - 399) / 400;
    const int yoe = y - era * 400;
    const int doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    const int64_t days = static_cast<int64_t>(era) * 146097 + doe - 719468;
    return static_cast<double>(days * 86400 + num(12, 2) * 3600 + num(15, 2) * 60 + num(18, 2));
}

// "iteration <spaces><digits>/<spaces><digits> |" at `s`: the iteration and train_iters.
bool iterationHeadAt(std::string_view s, int64_t& iteration, int64_t& trainIters, size_t& length)
{
    constexpr std::string_view kWord = "iteration ";
    if (s.substr(0, kWord.size()) != kWord)
        return false;
    size_t k = kWord.size();
    while (k < s.size() && s[k] == ' ')
        ++k;
    const size_t a = k;
    while (k < s.size() && isDigit(s[k]))
        ++k;
    if (k == a || k >= s.size() || s[k] != '/')
        return false;
    const auto it = toInt(s.substr(a, k - a));
    ++k;
    while (k < s.size() && s[k] == ' ')
        ++k;
    const size_t b = k;
    while (k < s.size() && isDigit(s[k]))
        ++k;
    if (k == b)
        return false;
    const auto total = toInt(s.substr(b, k - b));
    while (k < s.size() && s[k] == ' ')
        ++k;
    if (k >= s.size() || s[k] != '|' || !it || !total)
        return false;
    iteration = *it;
    trainIters = *total;
    length = k + 1;
    return true;
}

bool rankHeadAt(std::string_view s)
{
    if (s.substr(0, 6) != "[Rank ")
        return false;
    size_t k = 6;
    while (k < s.size() && isDigit(s[k]))
        ++k;
    return k > 6 && k < s.size() && s[k] == ']';
}

// Where the records on one physical line start: each "[Rank N]" memory report and each
// "[timestamp] iteration" / "iteration N/M |" head. Two ranks writing at once leave two on one line.
std::vector<size_t> recordStarts(std::string_view line)
{
    std::vector<size_t> starts;
    for (size_t pos = line.find('['); pos != std::string_view::npos; pos = line.find('[', pos + 1)) {
        const std::string_view rest = line.substr(pos);
        if (rankHeadAt(rest)) {
            starts.push_back(pos);
        } else if (timestampAt(rest) && rest.substr(21, 11) == " iteration ") {
            starts.push_back(pos);
        }
    }
    // Older Megatron: no timestamp, the line starts with " iteration".
    for (size_t pos = line.find("iteration "); pos != std::string_view::npos;
         pos = line.find("iteration ", pos + 1)) {
        int64_t a = 0, b = 0;
        size_t len = 0;
        if (!iterationHeadAt(line.substr(pos), a, b, len))
            continue;
        const bool stamped = pos >= 22 && timestampAt(line.substr(pos - 22)).has_value();
        if (!stamped)
            starts.push_back(pos);
    }
    std::sort(starts.begin(), starts.end());
    return starts;
}

// The fields of an iteration line that the record keeps, by their name in Megatron's format.
struct DoubleField {
    std::string_view key;
    std::optional<double> IterationRecord::*member;
};
struct CountField {
    std::string_view key;
    std::optional<int64_t> IterationRecord::*member;
};
constexpr DoubleField kDoubleFields[] = {
    {"throughput per GPU (TFLOP/s/GPU)", &IterationRecord::tflopsPerGpu},
    {"learning rate", &IterationRecord::learningRate},
    {"loss scale", &IterationRecord::lossScale},
    {"grad norm", &IterationRecord::gradNorm},
    {"params norm", &IterationRecord::paramsNorm},
};
constexpr CountField kCountFields[] = {
    {"consumed samples", &IterationRecord::consumedSamples},
    {"skipped samples", &IterationRecord::skippedSamples},
    {"global batch size", &IterationRecord::globalBatchSize},
};
// Read, but no step column holds them: energy/power per GPU, counts of zeros, decoupled LR.
bool ignoredField(std::string_view key)
{
    return key == "decoupled learning rate" || key == "num zeros" || key == "consumed tokens" ||
           key == "max attention logit" || key.find("per GPU (") != std::string_view::npos;
}

// Megatron's " key: value |" fields, in order; a field without a colon is passed over.
template <typename Fn>
void forEachField(std::string_view rest, Fn&& fn)
{
    while (!rest.empty()) {
        const size_t bar = rest.find('|');
        const std::string_view field = trimView(rest.substr(0, bar));
        rest = bar == std::string_view::npos ? std::string_view() : rest.substr(bar + 1);
        const size_t colon = field.find(':');
        if (colon != std::string_view::npos)
            fn(trimView(field.substr(0, colon)), trimView(field.substr(colon + 1)));
    }
}

// The `key: value |` fields after an iteration head, in any order; every other numeric field is a
// loss Megatron averaged ("lm loss", "load_balancing_loss", "z_loss", "mtp_1 loss").
void readIterationFields(std::string_view rest, IterationRecord& r, bool& hasElapsed)
{
    forEachField(rest, [&](std::string_view key, std::string_view value) {
        if (key == "elapsed time per iteration (ms)") {
            if (auto v = toDouble(value)) {
                r.elapsedMs = *v;
                hasElapsed = true;
            }
            return;
        }
        if (key == "number of skipped iterations" || key == "number of nan iterations") {
            (key == "number of skipped iterations" ? r.skippedIterations : r.nanIterations) = toInt(value).value_or(0);
            return;
        }
        const auto d = std::find_if(std::begin(kDoubleFields), std::end(kDoubleFields),
                                    [&](const DoubleField& f) { return f.key == key; });
        if (d != std::end(kDoubleFields)) {
            r.*(d->member) = toDouble(value);
            return;
        }
        const auto c = std::find_if(std::begin(kCountFields), std::end(kCountFields),
                                    [&](const CountField& f) { return f.key == key; });
        if (c != std::end(kCountFields)) {
            r.*(c->member) = toInt(value);
            return;
        }
        if (ignoredField(key))
            return;
        if (auto v = toDouble(value))
            r.losses[std::string(key)] = *v;
    });
}

// "[Rank 3] (after 10 iterations) memory (GB) | key: value | ...".
std::optional<MemoryReport> readMemory(std::string_view s)
{
    MemoryReport m;
    const size_t close = s.find(']');
    const auto rank = toInt(s.substr(6, close - 6));
    if (!rank)
        return std::nullopt;
    m.rank = static_cast<int>(*rank);
    const size_t after = s.find("(after ", close);
    const size_t iters = s.find(" iterations)", after);
    const size_t unit = s.find(" memory (", iters);
    if (after == std::string_view::npos || iters == std::string_view::npos || unit == std::string_view::npos)
        return std::nullopt;
    const auto iteration = toInt(s.substr(after + 7, iters - after - 7));
    if (!iteration)
        return std::nullopt;
    m.iteration = *iteration;
    const std::string_view unitText = s.substr(unit + 9, 3);
    // Bridge: GB = 1e9 bytes; Megatron-LM: MB = 2^20 bytes (report_memory's mega_bytes).
    const double toGib = unitText.substr(0, 2) == "GB" ? 1e9 / kGiB : unitText.substr(0, 2) == "MB" ? 1.0 / 1024.0 : 0.0;
    if (toGib == 0.0)
        return std::nullopt;
    std::string_view rest = s.substr(unit);
    bool any = false;
    forEachField(rest, [&](std::string_view key, std::string_view text) {
        const auto value = toDouble(text);
        if (!value)
            return;
        const double gib = *value * toGib;
        if (key == "mem-allocated-gigabytes" || key == "allocated")
            m.allocatedGib = gib;
        else if (key == "mem-max-allocated-gigabytes" || key == "max allocated")
            m.peakAllocatedGib = gib;
        else if (key == "mem-reserved-gigabytes" || key == "reserved")
            m.reservedGib = gib;
        else if (key == "mem-max-reserved-gigabytes" || key == "max reserved")
            m.peakReservedGib = gib;
        else
            return;
        any = true;
    });
    if (!any)
        return std::nullopt;
    return m;
}

// "using world size: 8, data-parallel size: 1, ..., tensor-model-parallel size: 8, ...".
void readWorldLine(std::string_view line, LogFacts& facts)
{
    const auto sizeAfter = [&](std::string_view name) -> std::optional<int> {
        const size_t at = line.find(name);
        if (at == std::string_view::npos)
            return std::nullopt;
        size_t k = at + name.size();
        const size_t start = k;
        while (k < line.size() && isDigit(line[k]))
            ++k;
        if (auto v = toInt(line.substr(start, k - start)))
            return static_cast<int>(*v);
        return std::nullopt;
    };
    facts.worldSize = sizeAfter("using world size: ");
    facts.dataParallel = sizeAfter("data-parallel size: ");
    facts.contextParallel = sizeAfter(" context-parallel size: ");
    facts.tensorParallel = sizeAfter(" tensor-model-parallel size: ");
    facts.pipelineParallel = sizeAfter(" pipeline-model-parallel size: ");
    if (facts.flavor.empty())
        facts.flavor = "megatron-lm";
}

// Inside Bridge's "Configuration Summary" block: section heads and "  field: value" lines.
void readSummaryLine(std::string_view line, LogState& state)
{
    const std::string_view t = trimView(line);
    if (t.size() >= 20 && t.find_first_not_of('=') == std::string_view::npos) {
        if (state.summarySection != "?")  // the closing rule (the opening one follows the title)
            state.summarySection.clear();
        return;
    }
    if (!t.empty() && t.front() == '[') {
        const size_t close = t.find(']');
        if (close != std::string_view::npos) {
            state.summarySection = std::string(t.substr(1, close - 1));
            return;
        }
    }
    if (state.summarySection == "?" || line.substr(0, 2) != "  ")
        return;
    const size_t colon = t.find(": ");
    if (colon == std::string_view::npos)
        return;
    std::string_view value = t.substr(colon + 2);
    const size_t note = value.find("  (Mcore default: ");
    if (note != std::string_view::npos)
        value = value.substr(0, note);
    state.facts.settings[state.summarySection + "." + std::string(t.substr(0, colon))] =
        utf8Safe(trimView(value));
}

void addEvent(LogChunk& chunk, const char* level, std::string msg, std::optional<int64_t> step)
{
    EventRecord e;
    e.level = level;
    e.msg = std::move(msg);
    e.step = step;
    chunk.events.push_back(std::move(e));
}

// One record (a segment of a physical line). Returns false when it is not one of Megatron's.
bool readRecord(std::string_view seg, int64_t lineNo, bool lastOfFile, LogState& state, LogChunk& chunk)
{
    if (rankHeadAt(seg)) {
        auto m = readMemory(seg);
        if (!m)
            return false;
        if (state.facts.flavor.empty() || state.facts.flavor == "megatron-lm")
            state.facts.flavor = seg.find(" memory (GB)") != std::string_view::npos ? "megatron-bridge" : "megatron-lm";
        ++state.counts.memoryLines;
        chunk.memory.push_back(*m);
        return true;
    }
    IterationRecord r;
    r.line = lineNo;
    std::string_view head = seg;
    if (auto ts = timestampAt(seg)) {
        r.time = ts;
        head = seg.substr(22);
    }
    size_t length = 0;
    if (!iterationHeadAt(head, r.iteration, r.trainIters, length))
        return false;
    bool hasElapsed = false;
    readIterationFields(head.substr(length), r, hasElapsed);
    // A last line cut mid-write (the job was killed) is whole only when its fields end in "|".
    if (!hasElapsed || (lastOfFile && trimView(head).back() != '|')) {
        ++state.counts.unreadableIterationLines;
        return true;
    }
    ++state.counts.iterationLines;
    if (r.iteration <= state.maxIteration) {
        ++state.counts.repeatedIterations;
        if (r.iteration <= state.lastIteration)  // the log jumped back: one event per restart
            addEvent(chunk, "warning",
                     "iteration " + std::to_string(r.iteration) + " logged again (line " + std::to_string(lineNo) +
                         "): the job restarted from an earlier checkpoint; the later values are kept",
                     r.iteration);
    }
    if (r.nanIterations > 0 || r.skippedIterations > 0) {
        state.counts.nanIterations += r.nanIterations;
        state.counts.skippedIterations += r.skippedIterations;
        addEvent(chunk, "warning",
                 std::to_string(r.nanIterations) + " NaN and " + std::to_string(r.skippedIterations) +
                     " skipped iteration(s) in the interval ending at iteration " + std::to_string(r.iteration),
                 r.iteration);
    }
    state.lastIteration = r.iteration;
    state.maxIteration = std::max(state.maxIteration, r.iteration);
    state.trainIters = r.trainIters;
    chunk.iterations.push_back(std::move(r));
    return true;
}

void readPhysicalLine(std::string_view line, int64_t lineNo, bool lastOfFile, LogState& state, LogChunk& chunk)
{
    ++state.counts.lines;
    if (!validUtf8(line))
        ++state.counts.nonUtf8Lines;
    int rank = -1;
    if (const size_t prefix = launcherPrefix(line, rank); prefix > 0) {
        ++state.counts.rankPrefixedLines;
        state.facts.highestRankPrefix = std::max(state.facts.highestRankPrefix, rank);
        line = line.substr(prefix);
    }
    // Megatron-LM's argument dump: "  name ........ value" between its two rules.
    if (line.find("------------------------ arguments ------------------------") != std::string_view::npos) {
        state.inArguments = true;
        return;
    }
    if (state.inArguments) {
        if (line.find("end of arguments") != std::string_view::npos || state.facts.arguments.size() > 4000) {
            state.inArguments = false;
            return;
        }
        const std::string_view t = trimView(line);
        const size_t dots = t.find(" ..");
        const size_t last = t.rfind(". ");
        if (dots != std::string_view::npos && last != std::string_view::npos && last > dots)
            state.facts.arguments[std::string(t.substr(0, dots))] = utf8Safe(trimView(t.substr(last + 2)));
        return;
    }
    if (line.find("Configuration Summary (Non-Default Values vs Megatron Core)") != std::string_view::npos) {
        state.summarySection = "?";
        state.facts.flavor = "megatron-bridge";
        return;
    }
    if (!state.summarySection.empty()) {
        // Another rank's record inside the block ends it (the summary is printed before training).
        if (recordStarts(line).empty()) {
            readSummaryLine(line, state);
            return;
        }
        state.summarySection.clear();
    }
    if (line.find("using world size: ") != std::string_view::npos) {
        readWorldLine(line, state.facts);
        return;
    }
    const std::vector<size_t> starts = recordStarts(line);
    if (starts.empty()) {
        ++state.counts.otherLines;
        if (line.find("CUDA out of memory") != std::string_view::npos ||
            line.find("OutOfMemoryError") != std::string_view::npos)
            addEvent(chunk, "error", "out of memory (line " + std::to_string(lineNo) + "): " +
                                          utf8Safe(trimView(line).substr(0, 300)), std::nullopt);
        else if (line.find("Traceback (most recent call last)") != std::string_view::npos)
            addEvent(chunk, "error", "a Python traceback starts at line " + std::to_string(lineNo), std::nullopt);
        else if (const size_t at = line.find("successfully saved checkpoint from iteration"); at != std::string_view::npos) {
            std::string_view rest = trimView(line.substr(at + 44));
            size_t k = 0;
            while (k < rest.size() && isDigit(rest[k]))
                ++k;
            addEvent(chunk, "info", utf8Safe(trimView(line.substr(at))), toInt(rest.substr(0, k)));
        }
        return;
    }
    if (starts.size() > 1)
        ++state.counts.sharedLines;
    if (starts.front() > 0 && !trimView(line.substr(0, starts.front())).empty())
        ++state.counts.otherLines;  // another rank's text before the first record
    for (size_t i = 0; i < starts.size(); ++i) {
        const size_t end = i + 1 < starts.size() ? starts[i + 1] : line.size();
        const std::string_view seg = line.substr(starts[i], end - starts[i]);
        if (!readRecord(seg, lineNo, lastOfFile && i + 1 == starts.size(), state, chunk))
            ++state.counts.otherLines;
    }
}

}  // namespace

LogChunk parseLogChunk(std::string_view bytes, LogState& state, bool atEnd, int64_t firstLine)
{
    LogChunk chunk;
    size_t pos = 0;
    int64_t lineNo = firstLine;
    while (pos < bytes.size()) {
        const size_t nl = bytes.find('\n', pos);
        if (nl == std::string_view::npos) {
            if (!atEnd)
                break;
            const std::string_view tail = bytes.substr(pos);
            const int64_t before = state.counts.iterationLines + state.counts.memoryLines;
            readPhysicalLine(tail, lineNo, true, state, chunk);
            const bool readSomething = state.counts.iterationLines + state.counts.memoryLines > before;
            chunk.tornTail = !readSomething && !trimView(tail).empty();
            pos = bytes.size();
            break;
        }
        std::string_view line = bytes.substr(pos, nl - pos);
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        readPhysicalLine(line, lineNo, false, state, chunk);
        pos = nl + 1;
        ++lineNo;
    }
    chunk.consumedBytes = static_cast<int64_t>(pos);
    return chunk;
}

StepRecord toStepRecord(const IterationRecord& it, const StepContext& context)
{
    StepRecord s;
    s.step = it.iteration;
    s.time = it.time.value_or(0.0);
    s.stepMs = it.elapsedMs;
    const auto loss = it.losses.find("lm loss");
    s.loss = loss != it.losses.end() ? loss->second : kNaN;
    s.auxLoss = kNaN;
    for (const char* key : {"load_balancing_loss", "seq_load_balancing_loss", "global_load_balancing_loss"}) {
        if (auto aux = it.losses.find(key); aux != it.losses.end()) {
            s.auxLoss = aux->second;
            break;
        }
    }
    s.gradNorm = it.gradNorm.value_or(kNaN);
    s.lr = it.learningRate.value_or(kNaN);
    s.memAllocGib = s.memReservedGib = s.memPeakGib = kNaN;
    const int64_t gbs = it.globalBatchSize.value_or(context.globalBatchSize);
    if (context.seqLength > 0 && gbs > 0) {
        // Token slots: every position of every sequence, padding included (Bridge logs no count).
        s.effectiveTokens = gbs * context.seqLength;
        if (context.worldSize > 0 && it.elapsedMs > 0.0)
            s.tokensPerSPerGpu = static_cast<double>(s.effectiveTokens) / (it.elapsedMs / 1000.0) / context.worldSize;
    }
    s.tflopsPerGpu = it.tflopsPerGpu.value_or(kNaN);
    s.mfu = context.peakTflops > 0.0 && it.tflopsPerGpu ? *it.tflopsPerGpu / context.peakTflops : kNaN;
    return s;
}

std::string describeCounts(const LogCounts& c)
{
    std::string out = std::to_string(c.lines) + " lines: " + std::to_string(c.iterationLines) +
                      " iteration lines, " + std::to_string(c.memoryLines) + " memory reports";
    const auto add = [&](int64_t n, const char* what) {
        if (n > 0)
            out += ", " + std::to_string(n) + " " + what;
    };
    add(c.repeatedIterations, "iterations logged again after a restart (later kept)");
    add(c.nanIterations, "NaN iterations");
    add(c.skippedIterations, "skipped iterations");
    add(c.rankPrefixedLines, "lines with a rank prefix");
    add(c.sharedLines, "lines holding two ranks' output (split)");
    add(c.unreadableIterationLines, "iteration lines cut short (not stored)");
    add(c.nonUtf8Lines, "lines with bytes that are not UTF-8");
    add(c.otherLines, "other lines (not Megatron's metrics)");
    return out;
}

std::string toJson(const LogState& s)
{
    nlohmann::json facts = {{"settings", s.facts.settings},
                            {"arguments", s.facts.arguments},
                            {"flavor", s.facts.flavor},
                            {"highest_rank_prefix", s.facts.highestRankPrefix}};
    const auto opt = [&](const char* key, const std::optional<int>& v) {
        if (v)
            facts[key] = *v;
    };
    opt("world_size", s.facts.worldSize);
    opt("data_parallel", s.facts.dataParallel);
    opt("tensor_parallel", s.facts.tensorParallel);
    opt("pipeline_parallel", s.facts.pipelineParallel);
    opt("context_parallel", s.facts.contextParallel);
    const LogCounts& c = s.counts;
    nlohmann::json counts = {
        {"lines", c.lines}, {"iteration_lines", c.iterationLines}, {"memory_lines", c.memoryLines},
        {"rank_prefixed_lines", c.rankPrefixedLines}, {"shared_lines", c.sharedLines},
        {"repeated_iterations", c.repeatedIterations}, {"non_utf8_lines", c.nonUtf8Lines},
        {"unreadable_iteration_lines", c.unreadableIterationLines}, {"other_lines", c.otherLines},
        {"nan_iterations", c.nanIterations}, {"skipped_iterations", c.skippedIterations}};
    return nlohmann::json{{"facts", facts}, {"counts", counts}, {"last_iteration", s.lastIteration},
                          {"max_iteration", s.maxIteration},
                          {"train_iters", s.trainIters},
                          {"summary_section", s.summarySection},
                          {"in_arguments", s.inArguments}}
        .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);  // a log's bytes may not be UTF-8
}

LogState logStateFromJson(std::string_view text)
{
    LogState s;
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object())
        return s;
    const auto intOf = [](const nlohmann::json& o, const char* key) -> int64_t {
        return o.contains(key) && o[key].is_number_integer() ? o[key].get<int64_t>() : 0;
    };
    const auto optOf = [](const nlohmann::json& o, const char* key) -> std::optional<int> {
        if (o.contains(key) && o[key].is_number_integer())
            return o[key].get<int>();
        return std::nullopt;
    };
    if (j.contains("facts") && j["facts"].is_object()) {
        const auto& f = j["facts"];
        s.facts.worldSize = optOf(f, "world_size");
        s.facts.dataParallel = optOf(f, "data_parallel");
        s.facts.tensorParallel = optOf(f, "tensor_parallel");
        s.facts.pipelineParallel = optOf(f, "pipeline_parallel");
        s.facts.contextParallel = optOf(f, "context_parallel");
        if (f.contains("flavor") && f["flavor"].is_string())
            s.facts.flavor = f["flavor"].get<std::string>();
        if (f.contains("highest_rank_prefix") && f["highest_rank_prefix"].is_number_integer())
            s.facts.highestRankPrefix = f["highest_rank_prefix"].get<int>();
        if (f.contains("arguments") && f["arguments"].is_object())
            for (const auto& [k, v] : f["arguments"].items())
                if (v.is_string())
                    s.facts.arguments[k] = v.get<std::string>();
        if (f.contains("settings") && f["settings"].is_object())
            for (const auto& [k, v] : f["settings"].items())
                if (v.is_string())
                    s.facts.settings[k] = v.get<std::string>();
    }
    if (j.contains("counts") && j["counts"].is_object()) {
        const auto& c = j["counts"];
        s.counts.lines = intOf(c, "lines");
        s.counts.iterationLines = intOf(c, "iteration_lines");
        s.counts.memoryLines = intOf(c, "memory_lines");
        s.counts.rankPrefixedLines = intOf(c, "rank_prefixed_lines");
        s.counts.sharedLines = intOf(c, "shared_lines");
        s.counts.repeatedIterations = intOf(c, "repeated_iterations");
        s.counts.nonUtf8Lines = intOf(c, "non_utf8_lines");
        s.counts.unreadableIterationLines = intOf(c, "unreadable_iteration_lines");
        s.counts.otherLines = intOf(c, "other_lines");
        s.counts.nanIterations = intOf(c, "nan_iterations");
        s.counts.skippedIterations = intOf(c, "skipped_iterations");
    }
    if (j.contains("last_iteration") && j["last_iteration"].is_number_integer())
        s.lastIteration = j["last_iteration"].get<int64_t>();
    if (j.contains("train_iters") && j["train_iters"].is_number_integer())
        s.trainIters = j["train_iters"].get<int64_t>();
    if (j.contains("max_iteration") && j["max_iteration"].is_number_integer())
        s.maxIteration = j["max_iteration"].get<int64_t>();
    if (j.contains("summary_section") && j["summary_section"].is_string())
        s.summarySection = j["summary_section"].get<std::string>();
    if (j.contains("in_arguments") && j["in_arguments"].is_boolean())
        s.inArguments = j["in_arguments"].get<bool>();
    return s;
}

}  // namespace wb::core::bridge
