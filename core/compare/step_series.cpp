#include "core/compare/step_series.h"

#include <limits>

namespace wb::core {
namespace {

// Every per-step vector of the series with the store column it comes from, in one table so
// fromColumns / fromRecords / append cannot forget a field.
struct Member {
    StepField field;
    std::vector<double> StepSeries::*series;
};
constexpr Member kMembers[] = {
    {StepField::Time, &StepSeries::time},
    {StepField::StepMs, &StepSeries::stepMs},
    {StepField::Images, &StepSeries::images},
    {StepField::ImageTokens, &StepSeries::imageTokens},
    {StepField::TextTokens, &StepSeries::textTokens},
    {StepField::EffectiveTokens, &StepSeries::effectiveTokens},
    {StepField::Loss, &StepSeries::loss},
    {StepField::MemReservedGib, &StepSeries::memReservedGib},
    {StepField::MemPeakGib, &StepSeries::memPeakGib},
    {StepField::TflopsPerGpu, &StepSeries::tflopsPerGpu},
    {StepField::Mfu, &StepSeries::mfu},
    {StepField::DataMs, &StepSeries::dataMs},
    {StepField::VisionMs, &StepSeries::visionMs},
    {StepField::ProjectorMs, &StepSeries::projectorMs},
    {StepField::DecoderMs, &StepSeries::decoderMs},
    {StepField::BackwardMs, &StepSeries::backwardMs},
    {StepField::OptimizerMs, &StepSeries::optimizerMs},
};

}  // namespace

std::span<const StepField> StepSeries::fields()
{
    // 17 of the 24 columns. Reading all of them made SQLite's row decoding most of a 20-run
    // comparison (docs/benchmarks.md).
    static constexpr StepField kFields[] = {
        StepField::Time,         StepField::StepMs,         StepField::Images,
        StepField::ImageTokens,  StepField::TextTokens,     StepField::EffectiveTokens,
        StepField::Loss,         StepField::MemReservedGib, StepField::MemPeakGib,
        StepField::TflopsPerGpu, StepField::Mfu,            StepField::DataMs,
        StepField::VisionMs,     StepField::ProjectorMs,    StepField::DecoderMs,
        StepField::BackwardMs,   StepField::OptimizerMs,
    };
    return kFields;
}

StepSeries StepSeries::fromColumns(StepColumns&& columns)
{
    StepSeries s;
    const size_t n = columns.size();
    s.step = std::move(columns.step);
    for (const auto& m : kMembers) {
        std::vector<double>& out = s.*(m.series);
        bool found = false;
        for (size_t k = 0; k < columns.fields.size() && !found; ++k)
            if (columns.fields[k] == m.field) {
                out = std::move(columns.values[k]);
                found = true;
            }
        if (!found)
            out.assign(n, std::numeric_limits<double>::quiet_NaN());
    }
    return s;
}

StepSeries StepSeries::fromRecords(const std::vector<StepRecord>& records)
{
    StepSeries s;
    const size_t n = records.size();
    s.step.reserve(n);
    for (const auto& m : kMembers)
        (s.*(m.series)).reserve(n);
    for (const auto& r : records) {
        s.step.push_back(r.step);
        s.time.push_back(r.time);
        s.stepMs.push_back(r.stepMs);
        s.images.push_back(static_cast<double>(r.images));
        s.imageTokens.push_back(static_cast<double>(r.imageTokens));
        s.textTokens.push_back(static_cast<double>(r.textTokens));
        s.effectiveTokens.push_back(static_cast<double>(r.effectiveTokens));
        s.loss.push_back(r.loss);
        s.memReservedGib.push_back(r.memReservedGib);
        s.memPeakGib.push_back(r.memPeakGib);
        s.tflopsPerGpu.push_back(r.tflopsPerGpu);
        s.mfu.push_back(r.mfu);
        s.dataMs.push_back(r.dataMs);
        s.visionMs.push_back(r.visionMs);
        s.projectorMs.push_back(r.projectorMs);
        s.decoderMs.push_back(r.decoderMs);
        s.backwardMs.push_back(r.backwardMs);
        s.optimizerMs.push_back(r.optimizerMs);
    }
    return s;
}

void StepSeries::append(const StepSeries& more)
{
    step.insert(step.end(), more.step.begin(), more.step.end());
    for (const auto& m : kMembers)
        (this->*(m.series)).insert((this->*(m.series)).end(), (more.*(m.series)).begin(), (more.*(m.series)).end());
}

}  // namespace wb::core
