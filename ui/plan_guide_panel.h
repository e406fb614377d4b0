// PlanGuidePanel: the decision guide step by step — each question (unanswered / yes / no) with the
// guide's short explanation, two facts about the run (mock data, comparing runs) — and the
// recommendation: the path, the rules that fired (quoting the guide), the next knobs in the guide's
// order and the cautions. The rules engine is core::planner::recommend; this only shows it.
// Threading: GUI thread only.
#pragma once

#include "core/planner/decision_guide.h"

#include <QWidget>

#include <array>

QT_BEGIN_NAMESPACE
class QCheckBox;
class QComboBox;
class QLabel;
class QListWidget;
QT_END_NAMESPACE

namespace wb::ui {

class PlanGuidePanel : public QWidget {
    Q_OBJECT

public:
    static constexpr int kQuestionCount = 6;

    explicit PlanGuidePanel(QWidget* parent = nullptr);

    /// The answers (questions and the two user facts); the run facts stay false (the view adds them).
    core::planner::GuideAnswers answers() const;
    /// Question `i` (guide order): -1 unanswered, 0 no, 1 yes.
    void setAnswer(int question, int value);
    /// Every question and the two user facts at once (a plan file's or the saved session's).
    void setAnswers(const core::planner::GuideAnswers& answers);
    QComboBox* questionBox(int question) const { return m_questions[size_t(question)]; }

    void showRecommendation(const core::planner::GuideRecommendation& recommendation);
    QString pathText() const;
    QListWidget* rulesList() const { return m_rules; }
    QListWidget* knobsList() const { return m_knobs; }
    QListWidget* cautionsList() const { return m_cautions; }

signals:
    void answersChanged();

private:
    std::array<QComboBox*, kQuestionCount> m_questions{};
    QCheckBox* m_mockData = nullptr;
    QCheckBox* m_comparingRuns = nullptr;
    QLabel* m_path = nullptr;
    QListWidget* m_rules = nullptr;
    QListWidget* m_knobs = nullptr;
    QListWidget* m_cautions = nullptr;
};

}  // namespace wb::ui
