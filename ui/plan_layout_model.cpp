// PlanLayoutModel: formatting only; every number comes from core::planner.
#include "ui/plan_layout_model.h"

#include <QLocale>

namespace wb::ui {

using core::planner::Candidate;
using core::planner::MemoryEstimate;

namespace {

QString joined(const std::vector<std::string>& parts, const QString& separator)
{
    QStringList list;
    for (const std::string& p : parts)
        list << QString::fromStdString(p);
    return list.join(separator);
}

QString recomputeText(const core::planner::Layout& l)
{
    if (l.recomputeGranularity == "full")
        return QStringLiteral("full(%1)").arg(l.recomputeNumLayers);
    if (l.recomputeGranularity == "selective")
        return QStringLiteral("sel(%1)").arg(joined(l.recomputeModules, QStringLiteral(",")).remove(QStringLiteral("moe_")));
    return QStringLiteral("none");
}

}  // namespace

PlanLayoutModel::PlanLayoutModel(QObject* parent) : QAbstractTableModel(parent) {}

const QStringList& PlanLayoutModel::memoryCategories()
{
    static const QStringList names = {QStringLiteral("weights"), QStringLiteral("grads"), QStringLiteral("optimizer"),
                                      QStringLiteral("activations"), QStringLiteral("other")};
    return names;
}

QString PlanLayoutModel::memoryCategoryLabel(int index)
{
    switch (index) {
    case 0: return tr("weights");
    case 1: return tr("grads");
    case 2: return tr("optimizer");
    case 3: return tr("activations");
    default: return tr("other");
    }
}

void PlanLayoutModel::setResult(std::vector<Candidate> ranked, double hbmGib)
{
    beginResetModel();
    m_ranked = std::move(ranked);
    m_hbmGib = hbmGib;
    endResetModel();
}

const Candidate* PlanLayoutModel::candidate(int row) const
{
    return row >= 0 && row < int(m_ranked.size()) ? &m_ranked[size_t(row)] : nullptr;
}

int PlanLayoutModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_ranked.size());
}

int PlanLayoutModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant PlanLayoutModel::display(const Candidate& c, int row, int column) const
{
    const core::planner::Layout& l = c.layout;
    const QLocale locale;
    switch (column) {
    case RankColumn: return row;
    case TpColumn: return l.tp;
    case CpColumn: return l.cp;
    case PpColumn:
        if (l.firstStageLayers > 0 || l.lastStageLayers > 0)
            return QStringLiteral("%1 (%2/…/%3)").arg(l.pp).arg(l.firstStageLayers).arg(l.lastStageLayers);
        return l.pp;
    case VppColumn: return l.vpp;
    case EpColumn: return l.ep;
    case EtpColumn: return l.etp;
    case DpColumn: return l.useMegatronFsdp ? QStringLiteral("%1 FSDP").arg(l.dp()) : QString::number(l.dp());
    case MbsColumn: return l.mbs;
    case RecomputeColumn: return recomputeText(l);
    case DispatcherColumn:
        return QString::fromStdString(l.dispatcherName()) +
               (l.overlapMoeExpertParallelComm ? QStringLiteral(" +ovl") : QString());
    case GraphsColumn: {
        // Short form (the tooltip has the layout's full description): TE router+preprocess.
        QString impl = QString::fromStdString(l.cudaGraphImpl);
        if (impl == QLatin1String("transformer_engine"))
            impl = QStringLiteral("TE");
        QStringList scope;
        for (const std::string& s : l.cudaGraphScope)
            scope << QString::fromStdString(s).remove(QStringLiteral("moe_"));
        return scope.isEmpty() ? impl : impl + QLatin1Char(' ') + scope.join(QLatin1Char('+'));
    }
    case MemoryColumn: return QStringLiteral("%1 GiB").arg(MemoryEstimate::gib(c.memory.total()), 0, 'f', 1);
    case StepColumn: return locale.toString(c.throughput.stepMs, 'f', 0);
    case TokensColumn: return locale.toString(c.throughput.tokensPerSecPerGpu, 'f', 0);
    case TflopsColumn: return locale.toString(c.throughput.tflopsPerGpu, 'f', 0);
    case MfuColumn: return QStringLiteral("%1 %").arg(c.throughput.mfu * 100, 0, 'f', 1);
    case LintColumn: return c.lint.empty() ? QStringLiteral("–") : QString::number(c.lint.size());
    default: return {};
    }
}

QVariant PlanLayoutModel::data(const QModelIndex& index, int role) const
{
    const Candidate* c = index.isValid() ? candidate(index.row()) : nullptr;
    if (!c)
        return {};
    switch (role) {
    case Qt::DisplayRole: return display(*c, index.row(), index.column());
    case Qt::TextAlignmentRole:
        return index.column() == RecomputeColumn || index.column() == DispatcherColumn || index.column() == GraphsColumn
                   ? QVariant(Qt::AlignLeft | Qt::AlignVCenter)
                   : QVariant(Qt::AlignRight | Qt::AlignVCenter);
    case MemoryTotalRole: return MemoryEstimate::gib(c->memory.total());
    case MemoryRole: {
        if (index.column() != MemoryColumn)
            return {};
        QVariantList parts;
        for (const QString& name : memoryCategories())
            parts << MemoryEstimate::gib(c->memory.category(name.toStdString()));
        parts << m_hbmGib;
        return parts;
    }
    case Qt::ToolTipRole:
        if (index.column() == MemoryColumn) {
            // Memory is never calibrated from runs: every term is the model's, with its assumption.
            QStringList lines{tr("Most-loaded rank %1 GiB, every term modelled (none calibrated from runs):")
                                  .arg(MemoryEstimate::gib(c->memory.total()), 0, 'f', 1)};
            for (const auto& term : c->memory.terms)
                lines << QStringLiteral("%1 [%2]: %3 GiB — %4")
                             .arg(QString::fromStdString(term.name), QString::fromStdString(term.category))
                             .arg(MemoryEstimate::gib(term.bytes), 0, 'f', 2)
                             .arg(QString::fromStdString(term.assumption));
            return lines.join(QLatin1Char('\n'));
        }
        if (index.column() == LintColumn) {
            QStringList lines;
            for (const auto& f : c->lint)
                lines << QString::fromStdString(f.toString());
            return lines.join(QLatin1Char('\n'));
        }
        {
            const QString family = c->family == "fsdp" ? tr("FSDP-first family")
                                   : c->family == "3d" ? tr("3D-parallel family")
                                                       : tr("FSDP with TP/CP (neither guide family)");
            QStringList knobs;
            for (const std::string& k : c->guideKnobs)
                knobs << QString::fromStdString(k);
            // What the step time is made of, each term with how sure it is (measured on this
            // hardware, calibrated from runs, or assumed) and its assumption.
            QStringList terms;
            for (const TimeTerm& t : c->throughput.terms)
                terms << QStringLiteral("  %1: %2 ms [%3] — %4")
                             .arg(QString::fromStdString(t.name))
                             .arg(t.ms, 0, 'f', 1)
                             .arg(QString::fromLatin1(termBasisName(t.basis)), QString::fromStdString(t.assumption));
            return QString::fromStdString(c->layout.describe()) + QLatin1Char('\n') + family + QLatin1Char('\n') +
                   tr("Guide knobs applied: %1").arg(knobs.isEmpty() ? tr("none") : knobs.join(QStringLiteral(", "))) +
                   QLatin1Char('\n') +
                   tr("Step %1 ms: %2").arg(c->throughput.stepMs, 0, 'f', 1).arg(QString::fromStdString(describeTermBases(c->throughput.terms))) +
                   QLatin1Char('\n') + terms.join(QLatin1Char('\n'));
        }
    default: return {};
    }
}

QVariant PlanLayoutModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == Qt::ToolTipRole && section == RankColumn)
        return tr("The layout's number, as `moe-workbench-cli plan` prints it and `generate --layout N` takes it (0 = the best)");
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case RankColumn: return tr("#");
    case TpColumn: return QStringLiteral("TP");
    case CpColumn: return QStringLiteral("CP");
    case PpColumn: return QStringLiteral("PP");
    case VppColumn: return QStringLiteral("VPP");
    case EpColumn: return QStringLiteral("EP");
    case EtpColumn: return QStringLiteral("ETP");
    case DpColumn: return QStringLiteral("DP");
    case MbsColumn: return QStringLiteral("MBS");
    case RecomputeColumn: return tr("Recompute");
    case DispatcherColumn: return tr("Dispatcher");
    case GraphsColumn: return tr("CUDA graphs");
    case MemoryColumn: return tr("Memory (of HBM)");
    case StepColumn: return tr("Step ms");
    case TokensColumn: return tr("Tokens/s/GPU");
    case TflopsColumn: return tr("TFLOP/s/GPU");
    case MfuColumn: return tr("MFU");
    case LintColumn: return tr("Lint");
    default: return {};
    }
}

}  // namespace wb::ui
