// RunRow: one run as the GUI shows it — the store's summary plus what the worker knows beyond the
// store (the planned number of steps, the latest status message). Plain data; any thread.
#pragma once

#include "core/run_store.h"

#include <QString>

#include <cstdint>

namespace wb::ui {

struct RunRow {
    core::RunSummary summary;
    int64_t trainIters = 0;  ///< planned steps from the run's config; 0 = unknown
    QString message;         ///< latest status message from the target (may be empty)
    bool followed = false;   ///< the worker is polling this run right now
};

}  // namespace wb::ui
