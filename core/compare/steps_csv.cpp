#include "core/compare/steps_csv.h"

#include "core/atomic_file.h"


#include <charconv>
#include <cmath>
#include <unordered_map>
#include <variant>

namespace wb::core {
namespace {

// One column: a StepRecord member of either type.
using Member = std::variant<double StepRecord::*, int64_t StepRecord::*>;
struct Column {
    const char* name;
    Member member;
};

// "step" first, then the schema's step fields in their order (metrics_schema.h).
const std::vector<Column>& columns()
{
    static const std::vector<Column> kColumns = [] {
        std::vector<Column> all{{"step", &StepRecord::step}};
        for (const StepDoubleField& f : kStepDoubleFields)
            all.push_back({f.key, f.member});
        for (const StepIntField& f : kStepIntFields)
            all.push_back({f.key, f.member});
        return all;
    }();
    return kColumns;
}

void appendCell(std::string& out, const StepRecord& s, const Member& member)
{
    char buffer[32];
    std::to_chars_result r{};
    if (auto d = std::get_if<double StepRecord::*>(&member)) {
        const double v = s.**d;
        if (!std::isfinite(v))
            return;  // empty cell: JSON's null, a diverged value
        r = std::to_chars(buffer, buffer + sizeof buffer, v);  // shortest round-trip form
    } else {
        r = std::to_chars(buffer, buffer + sizeof buffer, s.*std::get<int64_t StepRecord::*>(member));
    }
    out.append(buffer, r.ptr);
}

bool parseCell(std::string_view cell, StepRecord& s, const Member& member)
{
    const char* end = cell.data() + cell.size();
    if (auto d = std::get_if<double StepRecord::*>(&member)) {
        if (cell.empty()) {
            s.**d = std::nan("");
            return true;
        }
        const auto [ptr, ec] = std::from_chars(cell.data(), end, s.**d);
        return ec == std::errc() && ptr == end;
    }
    const auto [ptr, ec] = std::from_chars(cell.data(), end, s.*std::get<int64_t StepRecord::*>(member));
    return ec == std::errc() && ptr == end;
}

std::vector<std::string_view> splitLine(std::string_view line)
{
    std::vector<std::string_view> cells;
    size_t start = 0;
    while (true) {
        const size_t comma = line.find(',', start);
        cells.push_back(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
        if (comma == std::string_view::npos)
            return cells;
        start = comma + 1;
    }
}

}  // namespace

const std::vector<std::string>& stepCsvColumns()
{
    static const std::vector<std::string> kNames = [] {
        std::vector<std::string> names;
        for (const auto& c : columns())
            names.emplace_back(c.name);
        return names;
    }();
    return kNames;
}

std::string stepsToCsv(const std::vector<StepRecord>& steps)
{
    std::string out;
    out.reserve(64 + steps.size() * 200);
    for (size_t i = 0; i < columns().size(); ++i) {
        out += i ? "," : "";
        out += columns()[i].name;
    }
    out += '\n';
    for (const auto& s : steps) {
        for (size_t i = 0; i < columns().size(); ++i) {
            if (i)
                out += ',';
            appendCell(out, s, columns()[i].member);
        }
        out += '\n';
    }
    return out;
}

Result<std::vector<StepRecord>> stepsFromCsv(std::string_view csv)
{
    std::vector<StepRecord> steps;
    std::vector<const Column*> layout;  // header position -> column (nullptr: ignored)
    size_t lineNumber = 0;
    size_t start = 0;
    while (start < csv.size()) {
        size_t newline = csv.find('\n', start);
        if (newline == std::string_view::npos)
            newline = csv.size();
        std::string_view line = csv.substr(start, newline - start);
        start = newline + 1;
        ++lineNumber;
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);
        if (line.empty())
            continue;
        const auto cells = splitLine(line);
        if (layout.empty()) {
            bool hasStep = false;
            for (auto cell : cells) {
                const Column* match = nullptr;
                for (const auto& c : columns())
                    if (cell == c.name)
                        match = &c;
                hasStep = hasStep || cell == "step";
                layout.push_back(match);
            }
            if (!hasStep)
                return makeError(ErrorCode::Corrupt, "the header row has no \"step\" column; is this a step CSV?",
                                 "line 1");
            continue;
        }
        if (cells.size() != layout.size())
            return makeError(ErrorCode::Corrupt,
                             "expected " + std::to_string(layout.size()) + " cells, found " +
                                 std::to_string(cells.size()),
                             "line " + std::to_string(lineNumber));
        StepRecord s;
        for (size_t i = 0; i < cells.size(); ++i)
            if (layout[i] && !parseCell(cells[i], s, layout[i]->member))
                return makeError(ErrorCode::Corrupt,
                                 std::string("not a number in column \"") + layout[i]->name + "\": " +
                                     std::string(cells[i]),
                                 "line " + std::to_string(lineNumber));
        steps.push_back(s);
    }
    return steps;
}

Result<void> writeStepsCsv(const std::string& path, const std::vector<StepRecord>& steps)
{
    return writeFileAtomically(path, stepsToCsv(steps));
}

}  // namespace wb::core
