#include "ui/meta_types.h"

namespace wb::ui {

void registerMetaTypes()
{
    qRegisterMetaType<core::StepRecord>();
    qRegisterMetaType<core::EventRecord>();
    qRegisterMetaType<RunRow>();
    qRegisterMetaType<StepList>();
    qRegisterMetaType<RunRowList>();
    qRegisterMetaType<core::GpuRecord>();
    qRegisterMetaType<GpuList>();
    qRegisterMetaType<core::RunState>();
    qRegisterMetaType<LaunchRequest>();
}

}  // namespace wb::ui
