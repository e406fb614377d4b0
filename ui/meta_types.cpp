#include "ui/meta_types.h"

namespace wb::ui {

void registerMetaTypes()
{
    qRegisterMetaType<core::StepRecord>();
    qRegisterMetaType<core::EventRecord>();
    qRegisterMetaType<RunRow>();
    qRegisterMetaType<StepList>();
    qRegisterMetaType<RunRowList>();
}

}  // namespace wb::ui
